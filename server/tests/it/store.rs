//! The SQL store on SQLite, and on PostgreSQL when `MIRAGE_TEST_POSTGRES_URL` names a
//! server (CI starts one): the same queries must work on both.

use app::model::{RunId, TrialId};
use server::corpus::generate::corpus;
use server::db::{Account, CorpusStore, Credentials, LabelKind, NewEvent, SqlStore, Store, StoreError, TrialState};

async fn exercise(store: &dyn Store) {
    let tasks: Vec<_> = corpus().into_iter().take(5).collect();
    store.insert_tasks(&tasks[..3], "test").await.expect("insert");
    assert_eq!(store.task_count().await.expect("count"), 3);
    let err = store.insert_tasks(&tasks[2..], "test").await.expect_err("duplicate");
    assert!(matches!(err, StoreError::Conflict(ref m) if m.contains(&tasks[2].id)), "{err}");
    assert_eq!(store.task_count().await.expect("count"), 3, "a failed insert stores nothing");
    store.insert_tasks(&tasks[3..], "test").await.expect("insert rest");
    let back = store.all_tasks().await.expect("all");
    assert_eq!(back, tasks, "tasks come back whole and in order");
    let ids = vec![tasks[0].id.clone(), "nope".to_string()];
    assert_eq!(store.existing_task_ids(&ids).await.expect("ids"), vec![tasks[0].id.clone()]);

    assert_eq!(store.meta("k").await.expect("meta"), None);
    store.set_meta("k", "1").await.expect("set");
    store.set_meta("k", "2").await.expect("set again");
    assert_eq!(store.meta("k").await.expect("meta").as_deref(), Some("2"));

    let ep = store.create_episode(&tasks[0].id, ("L0", "raw"), None, 0, None).await.expect("episode");
    assert_eq!(ep.status, "open");
    assert_eq!(
        store
            .append_event(&ep.episode_id, NewEvent { kind: "visit", url: Some("/a"), ..NewEvent::default() }, 2)
            .await
            .expect("event"),
        Some(1)
    );
    assert_eq!(
        store
            .append_event(
                &ep.episode_id,
                NewEvent { kind: "visit", url: Some("/b"), detail: Some("200"), ..NewEvent::default() },
                2
            )
            .await
            .expect("event"),
        Some(2)
    );
    // The log is at its cap of two: a third page is not logged.
    let third = NewEvent { kind: "visit", url: Some("/c"), ..NewEvent::default() };
    assert_eq!(store.append_event(&ep.episode_id, third, 2).await.expect("event"), None);
    assert!(store.finish_episode(&ep.episode_id, "DENY", "because").await.expect("finish"));
    assert!(!store.finish_episode(&ep.episode_id, "APPROVE", "again").await.expect("finish"));
    let ep = store.episode(&ep.episode_id).await.expect("episode");
    assert_eq!((ep.status.as_str(), ep.verdict.as_deref()), ("done", Some("DENY")));
    let events = store.episode_events(&ep.episode_id).await.expect("events");
    assert_eq!(events.iter().map(|e| e.url.clone().unwrap_or_default()).collect::<Vec<_>>(), ["/a", "/b"]);
    assert!(matches!(store.episode("missing").await, Err(StoreError::NotFound(_))));
    // Retention: a standalone episode last touched before the cut goes, with its log.
    assert_eq!(store.prune_episodes(0).await.expect("prune"), 0, "nothing is that old");
    assert_eq!(store.prune_episodes(server::db::now_ms() + 1).await.expect("prune"), 1);
    assert!(matches!(store.episode(&ep.episode_id).await, Err(StoreError::NotFound(_))));
    assert!(store.episode_events(&ep.episode_id).await.expect("events").is_empty());
}

#[tokio::test]
async fn sqlite_store_round_trips_tasks_meta_and_episodes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(dir.path().join("s.db").to_str().expect("utf-8")).expect("url");
    exercise(&SqlStore::connect(&url).await.expect("connect")).await;
}

#[tokio::test]
async fn in_memory_sqlite_works_for_quick_tries() {
    exercise(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

/// A fresh database on the PostgreSQL test server named by `MIRAGE_TEST_POSTGRES_URL`
/// (scripts/test.sh starts one); `None` when the variable is unset.
async fn fresh_postgres() -> Option<SqlStore> {
    let url = crate::support::fresh_postgres_url().await?;
    Some(SqlStore::connect(&url).await.expect("connect"))
}

#[tokio::test]
async fn postgres_store_round_trips_tasks_meta_and_episodes() {
    if let Some(store) = fresh_postgres().await {
        exercise(&store).await;
    }
}

async fn exercise_queue(store: &dyn Store) {
    use server::db::{NewTrial, TrialEnd};
    let tasks: Vec<_> = corpus().into_iter().take(2).collect();
    store.insert_tasks(&tasks, "test").await.expect("tasks");
    let trials: Vec<NewTrial> = tasks
        .iter()
        .map(|t| NewTrial {
            task_id: t.id.clone(),
            agent: "oracle".into(),
            level: "L0".into(),
            condition: "raw".into(),
            seed: 0,
        })
        .collect();
    store.create_run(&RunId::from("r1"), "{}", "v1", &trials).await.expect("run");
    assert_eq!(store.runs().await.expect("runs")[0].trials_total, 2);
    let now = server::db::now_ms();
    let a = store.claim_trial(&RunId::from("r1"), "w1", now + 60_000).await.expect("claim").expect("a trial");
    let b = store.claim_trial(&RunId::from("r1"), "w2", now - 1).await.expect("claim").expect("another trial");
    assert_ne!(a.trial_id, b.trial_id, "a claimed trial is not claimed twice");
    assert!(store.claim_trial(&RunId::from("r1"), "w3", now).await.expect("claim").is_none());
    assert!(store.heartbeat(&a.trial_id, "w1", now + 90_000).await.expect("beat"));
    assert!(!store.heartbeat(&a.trial_id, "w2", now + 90_000).await.expect("beat"), "only the holder extends");
    assert_eq!(store.requeue_expired(&RunId::from("r1"), now).await.expect("reap"), 1, "b's lease had expired");
    store.append_step(&a.trial_id, 0, "{\"t\":0}").await.expect("step");
    assert!(matches!(store.append_step(&a.trial_id, 0, "{}").await, Err(StoreError::Conflict(_))));
    assert_eq!(store.steps(&a.trial_id).await.expect("steps"), vec!["{\"t\":0}".to_string()]);
    let end =
        TrialEnd::Done { verdict: Some("APPROVE".into()), rationale: Some("ok".into()), appeal: Some("{}".into()) };
    assert!(store.finish_trial(&a.trial_id, "w1", &end).await.expect("finish"));
    assert!(!store.finish_trial(&a.trial_id, "w1", &end).await.expect("finish"), "finalising is idempotent");
    let p = store.progress(&RunId::from("r1")).await.expect("progress");
    assert_eq!((p.done, p.queued), (1, 1));
    assert!(!store.close_if_finished(&RunId::from("r1")).await.expect("close"), "a trial is still queued");
    assert_eq!(store.run(&RunId::from("r1")).await.expect("run").status, server::db::RunStatus::Active);
    // The runs list's one query agrees with the per-run queries.
    store.create_run(&RunId::from("r0"), "{}", "v1", &[]).await.expect("an empty run");
    let overview = store.run_overview(now - 1_000, None).await.expect("overview");
    let r1 = overview.iter().find(|o| o.run.run_id == "r1").expect("r1");
    assert_eq!((r1.progress, r1.recent, r1.run.trials_total), (p, 1, 2));
    let later = store.run_overview(server::db::now_ms() + 60_000, None).await.expect("overview");
    assert_eq!(later.iter().find(|o| o.run.run_id == "r1").expect("r1").recent, 0, "nothing finished after that");
    let r0 = overview.iter().find(|o| o.run.run_id == "r0").expect("a run without trials is listed");
    assert_eq!(r0.progress, server::db::Progress::default());
    assert_eq!(
        overview.iter().map(|o| o.run.run_id.clone()).collect::<Vec<_>>(),
        store.runs().await.expect("runs").into_iter().map(|r| r.run_id).collect::<Vec<_>>(),
        "the same order as the runs list"
    );
    // The progress hub asks only for the runs that can move.
    let one = store.run_overview(now - 1_000, Some(&[RunId::from("r1")])).await.expect("overview");
    assert_eq!(one, vec![r1.clone()]);
    assert!(store.run_overview(now - 1_000, Some(&[])).await.expect("overview").is_empty());
    store.cancel_run(&RunId::from("r1")).await.expect("cancel");
    let p = store.progress(&RunId::from("r1")).await.expect("progress");
    assert_eq!((p.done, p.cancelled, p.queued), (1, 1, 0));
    // A worker holds a trial and dies: the cancel ends it too (nothing would ever requeue a
    // cancelled run's trial), and a late finish from that worker is refused.
    store.create_run(&RunId::from("r2"), "{}", "v1", &trials[..1]).await.expect("run");
    let c = store.claim_trial(&RunId::from("r2"), "w4", now + 60_000).await.expect("claim").expect("a trial");
    store.cancel_run(&RunId::from("r2")).await.expect("cancel");
    let p = store.progress(&RunId::from("r2")).await.expect("progress");
    assert_eq!((p.cancelled, p.running), (1, 0));
    assert!(!store.close_if_finished(&RunId::from("r2")).await.expect("close"), "a cancelled run stays cancelled");
    assert!(!store.finish_trial(&c.trial_id, "w4", &end).await.expect("finish"), "the cancelled trial stays cancelled");
    // The run whose last trial finishes is closed, once.
    store.create_run(&RunId::from("r3"), "{}", "v1", &trials[..1]).await.expect("run");
    let c3 = store.claim_trial(&RunId::from("r3"), "w5", now + 60_000).await.expect("claim").expect("a trial");
    assert!(!store.close_if_finished(&RunId::from("r3")).await.expect("close"), "a trial is running");
    assert!(store.finish_trial(&c3.trial_id, "w5", &end).await.expect("finish"));
    assert!(store.close_if_finished(&RunId::from("r3")).await.expect("close"));
    assert!(!store.close_if_finished(&RunId::from("r3")).await.expect("close"), "closing is idempotent");
    assert_eq!(store.run(&RunId::from("r3")).await.expect("run").status, server::db::RunStatus::Done);
    assert_eq!(store.run(&RunId::from("r1")).await.expect("run").status, server::db::RunStatus::Cancelled);
    let rows = store.trials(&RunId::from("r1")).await.expect("trials");
    assert_eq!(rows[0].verdict.as_deref(), Some("APPROVE"));
    assert_eq!(rows[0].appeal.as_deref(), Some("{}"));
}

#[tokio::test]
async fn sqlite_queue_claims_leases_and_finalises_once() {
    exercise_queue(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_queue_claims_leases_and_finalises_once() {
    if let Some(store) = fresh_postgres().await {
        exercise_queue(&store).await;
    }
}

/// What the dashboard reads and writes: trial pages, coverage, the search cursor, accounts,
/// sessions, annotation locks and label generations.
async fn exercise_dashboard(store: &dyn Store) {
    use server::db::{LabelEvent, NewTrial, TrialEnd, TrialFilter, now_ms};

    let tasks: Vec<_> = corpus().into_iter().take(2).collect();
    store.insert_tasks(&tasks, "test").await.expect("insert");
    let trials: Vec<NewTrial> = ["a", "b"]
        .iter()
        .flat_map(|agent| {
            tasks.iter().map(move |t| NewTrial {
                task_id: t.id.clone(),
                agent: (*agent).to_string(),
                level: "L0".into(),
                condition: "raw".into(),
                seed: 0,
            })
        })
        .collect();
    store.create_run(&RunId::from("r1"), "{}", "v", &trials).await.expect("run");
    let first = store.claim_trial(&RunId::from("r1"), "w", now_ms() + 60_000).await.expect("claim").expect("a trial");
    store.append_step(&first.trial_id, 0, "{}").await.expect("step");
    let end = TrialEnd::Done { verdict: Some("APPROVE".into()), rationale: Some("ok".into()), appeal: None };
    assert!(store.finish_trial(&first.trial_id, "w", &end).await.expect("finish"));

    let all = TrialFilter::default();
    let (page, total) = store.trial_page(&RunId::from("r1"), &all, 0, 3).await.expect("page");
    assert_eq!((page.len(), total), (3, 4));
    let (page, total) = store.trial_page(&RunId::from("r1"), &all, 3, 3).await.expect("page");
    assert_eq!((page.len(), total), (1, 4));
    let only_b = TrialFilter { agent: Some("b".into()), ..TrialFilter::default() };
    let (page, total) = store.trial_page(&RunId::from("r1"), &only_b, 0, 10).await.expect("page");
    assert_eq!(total, 2);
    assert!(page.iter().all(|t| t.agent == "b"));
    let done = TrialFilter { state: Some(TrialState::Done), level: Some("L0".into()), ..TrialFilter::default() };
    assert_eq!(store.trial_page(&RunId::from("r1"), &done, 0, 10).await.expect("page").1, 1);
    let coverage = store.coverage(&RunId::from("r1")).await.expect("coverage");
    assert!(
        coverage.iter().any(|c| (c.agent.as_str(), c.level.as_str(), c.condition.as_str(), c.state, c.n)
            == ("a", "L0", "raw", TrialState::Done, 1)),
        "{coverage:?}"
    );
    assert_eq!(coverage.iter().map(|c| c.n).sum::<i64>(), 4);

    let finished = store.finished_after((i64::MIN, ""), 10).await.expect("finished");
    assert_eq!(finished.len(), 1);
    let cursor = (finished[0].1, finished[0].0.trial_id.as_str());
    assert!(store.finished_after(cursor, 10).await.expect("after").is_empty());
    assert!(store.score_judges(&RunId::from("r1")).await.expect("judges").is_empty());
    assert_eq!(store.trial_score(&first.trial_id).await.expect("score"), None);

    assert_eq!(store.label_generation().await.expect("generation"), 0);
    let event = LabelEvent {
        event_id: 0,
        trial_id: first.trial_id.clone(),
        kind: LabelKind::Recovery,
        value: true.into(),
        turn: Some(0),
        source: "human".into(),
        confidence: 1.0,
        reason: "note".into(),
        author: Some("ann".into()),
        judge_version: None,
        created_at: now_ms(),
    };
    let id = store.add_label(&event).await.expect("label");
    assert_eq!(store.label_generation().await.expect("generation"), id);
    assert_eq!(store.trial_label_events(&first.trial_id).await.expect("events").len(), 1);

    assert!(!store.has_users().await.expect("users"));
    assert!(store.put_user("ann", "h1", "annotator").await.expect("add"));
    assert!(!store.put_user("ann", "h2", "operator").await.expect("update"));
    assert_eq!(
        store.user("ann").await.expect("user"),
        Some(Credentials { password_hash: "h2".into(), role: "operator".into() })
    );
    assert!(store.has_users().await.expect("users"));
    store.create_session("tok", "ann", now_ms() + 60_000).await.expect("session");
    store.create_session("old", "ann", now_ms() - 1).await.expect("session");
    assert_eq!(
        store.session("tok", now_ms()).await.expect("session"),
        Some(Account { name: "ann".into(), role: "operator".into() })
    );
    assert_eq!(store.users().await.expect("users"), vec![Account { name: "ann".into(), role: "operator".into() }]);
    assert_eq!(store.session("old", now_ms()).await.expect("expired"), None);
    store.end_session("tok").await.expect("end");
    assert_eq!(store.session("tok", now_ms()).await.expect("ended"), None);

    let now = now_ms();
    assert_eq!(
        store.lock_label(&TrialId::from("t1"), LabelKind::Recovery, "ann", now, now + 1_000).await.expect("lock"),
        None
    );
    assert_eq!(
        store.lock_label(&TrialId::from("t1"), LabelKind::Recovery, "ann", now, now + 2_000).await.expect("again"),
        None,
        "own lock extends"
    );
    let refused =
        store.lock_label(&TrialId::from("t1"), LabelKind::Recovery, "bob", now, now + 1_000).await.expect("refused");
    assert_eq!(refused.map(|r| r.0).as_deref(), Some("ann"));
    assert_eq!(store.label_locks(now).await.expect("locks").len(), 1);
    assert_eq!(
        store
            .lock_label(&TrialId::from("t1"), LabelKind::Recovery, "bob", now + 3_000, now + 4_000)
            .await
            .expect("expired"),
        None
    );
    store.unlock_label(&TrialId::from("t1"), LabelKind::Recovery, "ann").await.expect("not ann's any more");
    assert_eq!(store.label_locks(now + 3_000).await.expect("locks")[0].holder, "bob");
    store.unlock_label(&TrialId::from("t1"), LabelKind::Recovery, "bob").await.expect("unlock");
    assert!(store.label_locks(now).await.expect("locks").is_empty());
    assert!(store.remove_user("ann").await.expect("remove"));
    assert!(!store.remove_user("ann").await.expect("gone"));
}

#[tokio::test]
async fn sqlite_store_serves_the_dashboard() {
    exercise_dashboard(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_store_serves_the_dashboard() {
    if let Some(store) = fresh_postgres().await {
        exercise_dashboard(&store).await;
    }
}

/// What scoring, the L4 search, the progress line and the answer cache read and write:
/// stored scores with their label events, run steps in one query, single trials, run
/// status, finished-trial counts, search nodes and cached answers; and a run larger than
/// one bulk insert.
async fn exercise_scores(store: &dyn Store) {
    use server::db::{LabelEvent, NewTrial, RunStatus, StoredScore, TrialEnd, now_ms};

    let tasks: Vec<_> = corpus().into_iter().take(3).collect();
    store.insert_tasks(&tasks, "test").await.expect("insert");
    // 2,500 trials: three bulk statements on both backends, in plan order.
    let trials: Vec<NewTrial> = (0..2_500)
        .map(|i| NewTrial {
            task_id: tasks[i % 3].id.clone(),
            agent: "oracle".into(),
            level: "L0".into(),
            condition: "raw".into(),
            seed: i64::try_from(i).expect("seed"),
        })
        .collect();
    store.create_run(&RunId::from("big"), "{}", "v", &trials).await.expect("run");
    let rows = store.trials(&RunId::from("big")).await.expect("trials");
    assert_eq!(rows.len(), 2_500);
    assert!(rows.iter().enumerate().all(|(i, t)| t.ordinal == i64::try_from(i).expect("i") && t.seed == t.ordinal));
    assert!(rows.iter().all(|t| t.state == TrialState::Queued));
    let one = store.trial(&rows[1_234].trial_id).await.expect("trial");
    assert_eq!(one, rows[1_234]);
    assert!(matches!(store.trial(&TrialId::from("missing")).await, Err(StoreError::NotFound(_))));

    let before = now_ms();
    let mut finished = Vec::new();
    for _ in 0..2 {
        let t = store.claim_trial(&RunId::from("big"), "w", now_ms() + 60_000).await.expect("claim").expect("queued");
        store.append_step(&t.trial_id, 0, "{\"t\":0}").await.expect("step");
        store.append_step(&t.trial_id, 1, "{\"t\":1}").await.expect("step");
        let end = TrialEnd::Done { verdict: Some("APPROVE".into()), rationale: None, appeal: None };
        assert!(store.finish_trial(&t.trial_id, "w", &end).await.expect("finish"));
        finished.push(t.trial_id);
    }
    assert_eq!(store.finished_since(&RunId::from("big"), before).await.expect("since"), 2);
    assert_eq!(store.finished_since(&RunId::from("big"), now_ms() + 60_000).await.expect("since"), 0);
    let steps = store.run_steps(&RunId::from("big")).await.expect("run steps");
    assert_eq!(steps.len(), 2, "only trials with steps appear");
    assert_eq!(steps[&finished[0]], vec!["{\"t\":0}".to_string(), "{\"t\":1}".to_string()]);
    // A chunk's steps, read one joined row per trial: every body back whole and in order
    // (an escaped record separator inside a body stays text).
    store.append_step(&finished[1], 2, "{\"t\":2,\"x\":\"a\\u001eb, c\"}").await.expect("step");
    let ids = [finished[1].clone(), finished[0].clone(), TrialId::from("missing")];
    let some = store.trials_with_steps(&ids).await.expect("trials with steps");
    assert_eq!(some.len(), 2, "a trial that is not stored is absent");
    let (trial, joined) = &some[&finished[1]];
    assert_eq!(trial, &store.trial(&finished[1]).await.expect("trial"), "the whole trial row");
    assert_eq!(
        server::db::split_steps(joined).collect::<Vec<_>>(),
        ["{\"t\":0}", "{\"t\":1}", "{\"t\":2,\"x\":\"a\\u001eb, c\"}"]
    );
    assert_eq!(server::db::split_steps(&some[&finished[0]].1).collect::<Vec<_>>(), steps[&finished[0]]);
    // Every trial of the run (more than one query's worth); one without steps comes with none.
    let rows = store.trials(&RunId::from("big")).await.expect("trials");
    let all_ids: Vec<TrialId> = rows.iter().map(|t| t.trial_id.clone()).collect();
    let all = store.trials_with_steps(&all_ids).await.expect("every trial");
    assert_eq!(all.len(), 2_500);
    let bare = rows.iter().find(|t| !steps.contains_key(&t.trial_id)).expect("a trial without steps");
    assert_eq!(all[&bare.trial_id].0, *bare);
    assert_eq!(server::db::split_steps(&all[&bare.trial_id].1).count(), 0);
    let keys = store.trial_keys(&RunId::from("big")).await.expect("keys");
    assert_eq!(
        keys.iter().map(|k| (&k.trial_id, &k.task_id, k.state)).collect::<Vec<_>>(),
        rows.iter().map(|t| (&t.trial_id, &t.task_id, t.state)).collect::<Vec<_>>(),
        "the keys are the trials' in plan order"
    );

    store.set_run_status(&RunId::from("big"), RunStatus::Done).await.expect("status");
    assert_eq!(store.run(&RunId::from("big")).await.expect("run").status, RunStatus::Done);

    let label = |trial: &str, kind: LabelKind, value: bool| LabelEvent {
        event_id: 0,
        trial_id: TrialId::from(trial.to_string()),
        kind,
        value: value.into(),
        turn: None,
        source: "rule".into(),
        confidence: 0.9,
        reason: "r".into(),
        author: None,
        judge_version: Some("j1".into()),
        created_at: 0,
    };
    // Scores, stored and read back.
    let scores: Vec<StoredScore> = finished
        .iter()
        .map(|t| StoredScore { trial_id: t.clone(), judge_version: "j1".into(), body: "{}".into() })
        .collect();
    store.put_scores(&RunId::from("big"), &scores).await.expect("scores");
    let mut back = store.scores(&RunId::from("big")).await.expect("scores");
    back.sort_by(|a, b| a.trial_id.cmp(&b.trial_id));
    assert_eq!(back, scores);
    for i in 0..3 {
        store.add_label(&label(&finished[i % 2], LabelKind::Adoption, i == 1)).await.expect("label");
    }
    let stored = store.label_events(&RunId::from("big")).await.expect("labels");
    assert_eq!(stored.len(), 3);
    assert!(stored.windows(2).all(|w| w[0].event_id < w[1].event_id), "oldest first");
    assert_eq!(stored[1].kind, LabelKind::Adoption);
    assert!(stored[1].value.0 && !stored[0].value.0, "values survive the round trip");
    // Scoring again replaces the score.
    let rescored =
        vec![StoredScore { trial_id: finished[0].clone(), judge_version: "j2".into(), body: "{\"x\":1}".into() }];
    store.put_scores(&RunId::from("big"), &rescored).await.expect("rescore");
    assert_eq!(store.trial_score(&finished[0]).await.expect("score"), Some(rescored[0].clone()));
    assert_eq!(store.score_judges(&RunId::from("big")).await.expect("judges"), ["j1", "j2"]);
    // People's events alone, of this run only.
    assert!(store.people_label_events(&RunId::from("big")).await.expect("people").is_empty());
    let person = LabelEvent {
        source: "human".into(),
        author: Some("ann".into()),
        ..label(&finished[1], LabelKind::Exposure, true)
    };
    store.add_label(&person).await.expect("human");
    store.add_label(&LabelEvent { source: "adjudication".into(), ..person.clone() }).await.expect("adjudication");
    let people = store.people_label_events(&RunId::from("big")).await.expect("people");
    assert_eq!(people.iter().map(|e| e.source.as_str()).collect::<Vec<_>>(), ["human", "adjudication"]);
    assert!(store.people_label_events(&RunId::from("no-such-run")).await.expect("none").is_empty());

    let body = |id: i64| format!("{{\"id\":{id}}}");
    store.add_tap_node(&finished[0], 0, None, 0, 0.5, &body(0)).await.expect("node");
    store.add_tap_node(&finished[0], 1, Some(0), 1, 1.0, &body(1)).await.expect("node");
    assert_eq!(store.tap_nodes(&finished[0]).await.expect("nodes"), vec![body(0), body(1)]);
    assert!(store.tap_nodes(&finished[1]).await.expect("nodes").is_empty());
    store.reset_tap(&finished[0]).await.expect("reset");
    assert!(store.tap_nodes(&finished[0]).await.expect("nodes").is_empty());

    let grade = server::db::ReasoningGrade {
        grade_id: 0,
        trial_id: finished[1].clone(),
        author: "ann".into(),
        acc_rsn: 0.7,
        decision: server::db::DecisionClass::Acceptable,
        note: "cites the chargeback".into(),
        created_at: 0,
    };
    let first = store.add_grade(&grade).await.expect("grade");
    let second = store.add_grade(&server::db::ReasoningGrade { acc_rsn: 0.4, ..grade.clone() }).await.expect("again");
    assert!(second > first, "grades are appended");
    let grades = store.grades(&RunId::from("big")).await.expect("grades");
    assert_eq!(
        grades.iter().map(|g| (g.acc_rsn, g.decision)).collect::<Vec<_>>(),
        [(0.7, server::db::DecisionClass::Acceptable), (0.4, server::db::DecisionClass::Acceptable)]
    );
    assert!(store.grades(&RunId::from("no-such-run")).await.expect("none").is_empty());

    assert_eq!(store.cache_get("k").await.expect("get"), None);
    store.cache_put("k", "llm:m/p1", "first", Some((12, 3))).await.expect("put");
    store.cache_put("k", "llm:m/p1", "second", None).await.expect("put again");
    assert_eq!(store.cache_get("k").await.expect("get").as_deref(), Some("first"), "the first answer wins");
    assert_eq!(
        store.cache_get_used("k").await.expect("get"),
        Some(("first".to_string(), Some((12, 3)))),
        "with what it cost"
    );
    store.cache_put("k2", "logprobs:m", "0.5", None).await.expect("put");
    assert_eq!(store.cache_get_used("k2").await.expect("get"), Some(("0.5".to_string(), None)), "cost unknown");

    server::db::seed_if_empty(store).await.expect("seed");
    assert_eq!(store.task_count().await.expect("count"), 3, "a corpus that is not empty is left alone");
}

#[tokio::test]
async fn sqlite_store_keeps_scores_labels_search_nodes_and_answers() {
    exercise_scores(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_store_keeps_scores_labels_search_nodes_and_answers() {
    if let Some(store) = fresh_postgres().await {
        exercise_scores(&store).await;
    }
}

#[tokio::test]
async fn seeding_an_empty_store_stores_the_built_in_corpus_with_its_fingerprint() {
    let store = SqlStore::connect("sqlite::memory:").await.expect("connect");
    server::db::seed_if_empty(&store).await.expect("seed");
    let tasks = store.all_tasks().await.expect("tasks");
    assert_eq!(tasks.len(), 750);
    assert_eq!(store.meta("builtin_corpus_version").await.expect("meta"), Some(server::corpus::fingerprint(&tasks)));
}

/// Stores run `run` of two queued trials (seeds 0 and 1) of the corpus's first task.
async fn two_trial_run(store: &dyn Store, run: &RunId) {
    use server::db::NewTrial;
    let tasks: Vec<_> = corpus().into_iter().take(1).collect();
    store.insert_tasks(&tasks, "test").await.expect("tasks");
    let trial = |seed| NewTrial {
        task_id: tasks[0].id.clone(),
        agent: "a".into(),
        level: "L0".into(),
        condition: "raw".into(),
        seed,
    };
    store.create_run(run, "{}", "v", &[trial(0), trial(1)]).await.expect("run");
}

/// A trial whose lease keeps expiring waits longer each time and ends in `error` after the
/// last allowed attempt.
async fn exercise_retries(store: &dyn Store) {
    use server::db::{MAX_ATTEMPTS, now_ms};
    two_trial_run(store, &RunId::from("r")).await;
    // The first trial's worker dies: it is requeued, but may not be claimed before its backoff.
    let a = store.claim_trial(&RunId::from("r"), "w", now_ms() - 20_000).await.expect("claim").expect("a");
    assert_eq!(store.requeue_expired(&RunId::from("r"), now_ms()).await.expect("requeue"), 1);
    let b = store.claim_trial(&RunId::from("r"), "w", now_ms() - 20_000).await.expect("claim").expect("b");
    assert_ne!(a.trial_id, b.trial_id, "the requeued trial waits out its backoff");
    // The second trial's lease expires again and again (times in the past: no waiting).
    for attempt in 1..MAX_ATTEMPTS {
        assert_eq!(store.requeue_expired(&RunId::from("r"), now_ms() - 10_000).await.expect("requeue"), 1);
        let again =
            store.claim_trial(&RunId::from("r"), "w", now_ms() - 20_000).await.expect("claim").expect("b again");
        assert_eq!((again.trial_id.as_str(), again.attempts), (b.trial_id.as_str(), attempt + 1));
    }
    assert_eq!(store.requeue_expired(&RunId::from("r"), now_ms() - 10_000).await.expect("give up"), 1);
    let b = store.trial(&b.trial_id).await.expect("trial");
    assert_eq!(b.state, TrialState::Error);
    assert!(b.error.as_deref().is_some_and(|e| e.contains(&format!("gave up after {MAX_ATTEMPTS} attempts"))), "{b:?}");
    assert_eq!(store.progress(&RunId::from("r")).await.expect("progress").error, 1);
}

#[tokio::test]
async fn sqlite_retries_back_off_and_give_up() {
    exercise_retries(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_retries_back_off_and_give_up() {
    if let Some(store) = fresh_postgres().await {
        exercise_retries(&store).await;
    }
}

async fn exercise_imports(store: &dyn Store) {
    use server::db::{FinishedTrial, NewTrial, TrialEnd};
    let trial = |task: &str| NewTrial {
        task_id: task.into(),
        agent: "m".into(),
        level: "L0".into(),
        condition: "raw".into(),
        seed: 1,
    };
    store.create_run(&RunId::from("i"), "{}", "v", &[trial("inspect:t/a"), trial("inspect:t/b")]).await.expect("run");
    let ids: Vec<TrialId> =
        store.trials(&RunId::from("i")).await.expect("trials").into_iter().map(|t| t.trial_id).collect();
    let batch = vec![
        FinishedTrial {
            trial_id: ids[0].clone(),
            steps: vec![r#"{"t":0}"#.into(), r#"{"t":1}"#.into()],
            end: TrialEnd::Done { verdict: None, rationale: Some("the answer".into()), appeal: None },
            origin: Some(("t/a".into(), r#"{"harness":"inspect"}"#.into())),
        },
        FinishedTrial { trial_id: ids[1].clone(), steps: vec![], end: TrialEnd::Error("boom".into()), origin: None },
    ];
    store.store_finished(&RunId::from("i"), &batch).await.expect("store");
    let rows = store.trials(&RunId::from("i")).await.expect("trials");
    assert_eq!((rows[0].state, rows[0].rationale.as_deref()), (TrialState::Done, Some("the answer")));
    assert_eq!((rows[1].state, rows[1].error.as_deref()), (TrialState::Error, Some("boom")));
    assert_eq!(store.steps(&ids[0]).await.expect("steps").len(), 2);
    assert_eq!(store.origin(&ids[0]).await.expect("origin").as_deref(), Some(r#"{"harness":"inspect"}"#));
    assert_eq!(store.origin(&ids[1]).await.expect("origin"), None);
    assert_eq!(store.origins_of(&ids).await.expect("origins").len(), 1);
    let found =
        store.trials_of_samples(&RunId::from("i"), &["t/a".to_string(), "t/z".to_string()]).await.expect("samples");
    assert_eq!(found, [("t/a".to_string(), ids[0].clone())]);
    // A trial already finished is not finished again, and the whole batch is undone.
    let again = vec![FinishedTrial { trial_id: ids[0].clone(), steps: vec![], end: TrialEnd::Cancelled, origin: None }];
    assert!(store.store_finished(&RunId::from("i"), &again).await.is_err());
    assert_eq!(store.trial(&ids[0]).await.expect("trial").state, TrialState::Done);
}

#[tokio::test]
async fn sqlite_stores_imported_trials_with_their_origin() {
    exercise_imports(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_stores_imported_trials_with_their_origin() {
    if let Some(store) = fresh_postgres().await {
        exercise_imports(&store).await;
    }
}

/// Scores made from a trial's steps are stored only for the finish they were made from;
/// those made as trials finish never over a stored score, those of a run scored again over it.
async fn exercise_finish_scores(store: &dyn Store) {
    use server::db::{StoredScore, TrialEnd, now_ms};
    let run = RunId::from("f");
    two_trial_run(store, &run).await;
    let a = store.claim_trial(&run, "w", now_ms() + 60_000).await.expect("claim").expect("a");
    let b = store.claim_trial(&run, "w", now_ms() + 60_000).await.expect("claim").expect("b");
    let ids = [a.trial_id.clone(), b.trial_id.clone()];
    assert!(store.finish_times(&ids).await.expect("times").is_empty(), "nothing has finished");
    assert!(store.finish_trial(&a.trial_id, "w", &TrialEnd::Error("down".into())).await.expect("finish"));
    let first = store.finish_times(&ids).await.expect("times");
    assert_eq!(first.keys().collect::<Vec<_>>(), [&a.trial_id], "only the finished trial");
    let score = |body: &str| StoredScore { trial_id: a.trial_id.clone(), judge_version: "j".into(), body: body.into() };
    // Queued again before its score is stored: the score is not stored.
    assert_eq!(store.retry_errors(&run).await.expect("retry"), 1);
    assert!(store.finish_times(&ids).await.expect("times").is_empty());
    let stale = [(score("{\"attempt\":1}"), first[&a.trial_id])];
    assert_eq!(store.put_finish_scores(&run, &stale, false).await.expect("put"), 0);
    assert_eq!(store.trial_score(&a.trial_id).await.expect("score"), None);
    // Finished again (a later time): the first finish's score is still refused, the second's stored.
    let again = store.claim_trial(&run, "w", now_ms() + 60_000).await.expect("claim").expect("again");
    assert_eq!(again.trial_id, a.trial_id);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert!(store.finish_trial(&a.trial_id, "w", &TrialEnd::Error("down again".into())).await.expect("finish"));
    let second = store.finish_times(&ids).await.expect("times")[&a.trial_id];
    assert_ne!(second, first[&a.trial_id]);
    assert_eq!(store.put_finish_scores(&run, &stale, false).await.expect("put"), 0);
    let fresh = [(score("{\"attempt\":2}"), second)];
    assert_eq!(store.put_finish_scores(&run, &fresh, false).await.expect("put"), 1);
    assert_eq!(store.trial_score(&a.trial_id).await.expect("score"), Some(fresh[0].0.clone()));
    // A stored score stands: another made as the trial finished does not replace it.
    assert_eq!(store.put_finish_scores(&run, &[(score("{\"other\":1}"), second)], false).await.expect("put"), 0);
    assert_eq!(store.trial_score(&a.trial_id).await.expect("score"), Some(fresh[0].0.clone()));
    // A run scored again (another judge version) replaces it, for the same finish alone: a
    // score made from the first attempt's steps, read before the retry, is not stored.
    let rescored = |body: &str| StoredScore { judge_version: "j2".into(), ..score(body) };
    assert_eq!(
        store.put_finish_scores(&run, &[(rescored("{\"attempt\":1}"), first[&a.trial_id])], true).await.expect("put"),
        0
    );
    assert_eq!(store.trial_score(&a.trial_id).await.expect("score"), Some(fresh[0].0.clone()));
    let replaced = [(rescored("{\"attempt\":2}"), second)];
    assert_eq!(store.put_finish_scores(&run, &replaced, true).await.expect("put"), 1);
    assert_eq!(store.trial_score(&a.trial_id).await.expect("score"), Some(replaced[0].0.clone()));
    // Queued again: nothing is stored for it, whatever the finish.
    assert_eq!(store.retry_errors(&run).await.expect("retry"), 1);
    assert_eq!(store.put_finish_scores(&run, &replaced, true).await.expect("put"), 0);
}

#[tokio::test]
async fn sqlite_stores_scores_made_as_trials_finish_for_that_finish_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(dir.path().join("f.db").to_str().expect("utf-8")).expect("url");
    exercise_finish_scores(&SqlStore::connect(&url).await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_stores_scores_made_as_trials_finish_for_that_finish_alone() {
    if let Some(store) = fresh_postgres().await {
        exercise_finish_scores(&store).await;
    }
}
