//! The SQL store on SQLite, and on PostgreSQL when `MIRAGE_TEST_POSTGRES_URL` names a
//! server (CI starts one): the same queries must work on both.

use server::corpus::generate::corpus;
use server::db::{SqlStore, Store, StoreError};

async fn exercise(store: &SqlStore) {
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

    let ep = store.create_episode(&tasks[0].id, "L0", "raw", None, 0).await.expect("episode");
    assert_eq!(ep.status, "open");
    assert_eq!(store.append_event(&ep.episode_id, "visit", Some("/a"), None).await.expect("event"), 1);
    assert_eq!(store.append_event(&ep.episode_id, "visit", Some("/b"), Some("200")).await.expect("event"), 2);
    assert!(store.finish_episode(&ep.episode_id, "DENY", "because").await.expect("finish"));
    assert!(!store.finish_episode(&ep.episode_id, "APPROVE", "again").await.expect("finish"));
    let ep = store.episode(&ep.episode_id).await.expect("episode");
    assert_eq!((ep.status.as_str(), ep.verdict.as_deref()), ("done", Some("DENY")));
    let events = store.episode_events(&ep.episode_id).await.expect("events");
    assert_eq!(events.iter().map(|e| e.url.clone().unwrap_or_default()).collect::<Vec<_>>(), ["/a", "/b"]);
    assert!(matches!(store.episode("missing").await, Err(StoreError::NotFound(_))));
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

async fn exercise_queue(store: &SqlStore) {
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
    store.create_run("r1", "{}", "v1", &trials).await.expect("run");
    assert_eq!(store.runs().await.expect("runs")[0].trials_total, 2);
    let now = server::db::now_ms();
    let a = store.claim_trial("r1", "w1", now + 60_000).await.expect("claim").expect("a trial");
    let b = store.claim_trial("r1", "w2", now - 1).await.expect("claim").expect("another trial");
    assert_ne!(a.trial_id, b.trial_id, "a claimed trial is not claimed twice");
    assert!(store.claim_trial("r1", "w3", now).await.expect("claim").is_none());
    assert!(store.heartbeat(&a.trial_id, "w1", now + 90_000).await.expect("beat"));
    assert!(!store.heartbeat(&a.trial_id, "w2", now + 90_000).await.expect("beat"), "only the holder extends");
    assert_eq!(store.requeue_expired("r1", now).await.expect("reap"), 1, "b's lease had expired");
    store.append_step(&a.trial_id, 0, "{\"t\":0}").await.expect("step");
    assert!(matches!(store.append_step(&a.trial_id, 0, "{}").await, Err(StoreError::Conflict(_))));
    assert_eq!(store.steps(&a.trial_id).await.expect("steps"), vec!["{\"t\":0}".to_string()]);
    let end =
        TrialEnd::Done { verdict: Some("APPROVE".into()), rationale: Some("ok".into()), appeal: Some("{}".into()) };
    assert!(store.finish_trial(&a.trial_id, "w1", &end).await.expect("finish"));
    assert!(!store.finish_trial(&a.trial_id, "w1", &end).await.expect("finish"), "finalising is idempotent");
    let p = store.progress("r1").await.expect("progress");
    assert_eq!((p.done, p.queued), (1, 1));
    store.cancel_run("r1").await.expect("cancel");
    let p = store.progress("r1").await.expect("progress");
    assert_eq!((p.done, p.cancelled, p.queued), (1, 1, 0));
    assert_eq!(store.run("r1").await.expect("run").status, "cancelled");
    let rows = store.trials("r1").await.expect("trials");
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
async fn exercise_dashboard(store: &SqlStore) {
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
    store.create_run("r1", "{}", "v", &trials).await.expect("run");
    let first = store.claim_trial("r1", "w", now_ms() + 60_000).await.expect("claim").expect("a trial");
    store.append_step(&first.trial_id, 0, "{}").await.expect("step");
    let end = TrialEnd::Done { verdict: Some("APPROVE".into()), rationale: Some("ok".into()), appeal: None };
    assert!(store.finish_trial(&first.trial_id, "w", &end).await.expect("finish"));

    let all = TrialFilter::default();
    let (page, total) = store.trial_page("r1", &all, 0, 3).await.expect("page");
    assert_eq!((page.len(), total), (3, 4));
    let (page, total) = store.trial_page("r1", &all, 3, 3).await.expect("page");
    assert_eq!((page.len(), total), (1, 4));
    let only_b = TrialFilter { agent: Some("b".into()), ..TrialFilter::default() };
    let (page, total) = store.trial_page("r1", &only_b, 0, 10).await.expect("page");
    assert_eq!(total, 2);
    assert!(page.iter().all(|t| t.agent == "b"));
    let done = TrialFilter { state: Some("done".into()), level: Some("L0".into()), ..TrialFilter::default() };
    assert_eq!(store.trial_page("r1", &done, 0, 10).await.expect("page").1, 1);
    let coverage = store.coverage("r1").await.expect("coverage");
    assert!(coverage.contains(&("a".into(), "L0".into(), "raw".into(), "done".into(), 1)), "{coverage:?}");
    assert_eq!(coverage.iter().map(|c| c.4).sum::<i64>(), 4);

    let finished = store.finished_after((i64::MIN, ""), 10).await.expect("finished");
    assert_eq!(finished.len(), 1);
    let cursor = (finished[0].1, finished[0].0.trial_id.as_str());
    assert!(store.finished_after(cursor, 10).await.expect("after").is_empty());
    assert!(store.score_judges("r1").await.expect("judges").is_empty());
    assert_eq!(store.trial_score(&first.trial_id).await.expect("score"), None);

    assert_eq!(store.label_generation().await.expect("generation"), 0);
    let event = LabelEvent {
        event_id: 0,
        trial_id: first.trial_id.clone(),
        kind: "recovery".into(),
        value: true,
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
    assert_eq!(store.user("ann").await.expect("user"), Some(("h2".into(), "operator".into())));
    assert!(store.has_users().await.expect("users"));
    store.create_session("tok", "ann", now_ms() + 60_000).await.expect("session");
    store.create_session("old", "ann", now_ms() - 1).await.expect("session");
    assert_eq!(store.session("tok", now_ms()).await.expect("session"), Some(("ann".into(), "operator".into())));
    assert_eq!(store.session("old", now_ms()).await.expect("expired"), None);
    store.end_session("tok").await.expect("end");
    assert_eq!(store.session("tok", now_ms()).await.expect("ended"), None);

    let now = now_ms();
    assert_eq!(store.lock_label("t1", "recovery", "ann", now, now + 1_000).await.expect("lock"), None);
    assert_eq!(
        store.lock_label("t1", "recovery", "ann", now, now + 2_000).await.expect("again"),
        None,
        "own lock extends"
    );
    let refused = store.lock_label("t1", "recovery", "bob", now, now + 1_000).await.expect("refused");
    assert_eq!(refused.map(|r| r.0).as_deref(), Some("ann"));
    assert_eq!(store.label_locks(now).await.expect("locks").len(), 1);
    assert_eq!(store.lock_label("t1", "recovery", "bob", now + 3_000, now + 4_000).await.expect("expired"), None);
    store.unlock_label("t1", "recovery", "ann").await.expect("not ann's any more");
    assert_eq!(store.label_locks(now + 3_000).await.expect("locks")[0].2, "bob");
    store.unlock_label("t1", "recovery", "bob").await.expect("unlock");
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
