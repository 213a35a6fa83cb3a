//! Each trial's step count and tokens, kept by the database as steps are stored, replaced
//! and imported, add up to what a parse of every step would give, on SQLite and PostgreSQL.

use app::model::RunId;
use server::corpus::generate::corpus;
use server::db::{FinishedTrial, NewTrial, SqlStore, Store, TrialEnd};

fn step(t: usize, usage: Option<(u64, u64)>) -> String {
    match usage {
        Some((p, c)) => serde_json::json!({"t": t, "usage": {"prompt_tokens": p, "completion_tokens": c}}),
        None => serde_json::json!({"t": t}),
    }
    .to_string()
}

async fn exercise(store: &dyn Store) {
    let tasks: Vec<_> = corpus().into_iter().take(3).collect();
    store.insert_tasks(&tasks, "test").await.expect("tasks");
    let trial = |i: usize, agent: &str| NewTrial {
        task_id: tasks[i].id.clone(),
        agent: agent.into(),
        level: "L0".into(),
        condition: "raw".into(),
        seed: 0,
    };
    let run = RunId::from("tok");
    store.create_run(&run, "{}", "v", &[trial(0, "a"), trial(1, "a"), trial(2, "b")]).await.expect("run");
    let now = server::db::now_ms();
    // Trial 1 of a: three steps, two reporting usage; one of them is replaced on finishing.
    let x = store.claim_trial(&run, "w", now + 60_000).await.expect("claim").expect("trial");
    store.append_step(&x.trial_id, 0, &step(0, Some((100, 10)))).await.expect("step");
    store.append_step(&x.trial_id, 1, &step(1, None)).await.expect("step");
    store.append_step(&x.trial_id, 2, &step(2, Some((5, 1)))).await.expect("step");
    let replaced = [step(0, Some((100, 10))), step(1, Some((7, 3)))];
    let end = TrialEnd::Done {
        verdict: Some("APPROVE".into()),
        rationale: Some("ok".into()),
        appeal: Some(serde_json::json!({"usage": {"prompt_tokens": 40, "completion_tokens": 4}}).to_string()),
    };
    assert!(store.finish_with_steps(&x.trial_id, "w", &replaced, &end).await.expect("finish"));
    // Trial 2 of a: under way, one step without usage.
    let y = store.claim_trial(&run, "w", now + 60_000).await.expect("claim").expect("trial");
    store.append_step(&y.trial_id, 0, &step(0, None)).await.expect("step");
    // A body that is not JSON is stored, and counts as a step without usage.
    store.append_step(&y.trial_id, 1, "not json").await.expect("a body that is not JSON");
    // The trial of b, imported whole.
    let z = store.claim_trial(&run, "w", now + 60_000).await.expect("claim").expect("trial");
    store.finish_trial(&z.trial_id, "w", &TrialEnd::Cancelled).await.expect("finish");
    store.create_run(&RunId::from("imp"), "{}", "v", &[trial(2, "b")]).await.expect("run");
    let id = store.trials(&RunId::from("imp")).await.expect("trials").remove(0).trial_id;
    let batch = [FinishedTrial {
        trial_id: id,
        steps: vec![step(0, Some((1, 2))), step(1, Some((3, 4)))],
        end: TrialEnd::Done { verdict: None, rationale: None, appeal: None },
        origin: None,
    }];
    store.store_finished(&RunId::from("imp"), &batch).await.expect("import");

    let uses = store.token_use(&run).await.expect("tokens");
    let a = uses.iter().find(|u| u.agent == "a").expect("a");
    // The finished trial's two steps kept and its appeal, and the two steps under way;
    // three of them report usage.
    assert_eq!((a.trials, a.steps, a.reported), (2, 5, 3), "{a:?}");
    assert_eq!((a.prompt_tokens, a.completion_tokens), (100 + 7 + 40, 10 + 3 + 4), "{a:?}");
    assert!(uses.iter().all(|u| u.agent != "b"), "a cancelled trial with no step is not counted: {uses:?}");
    let imported = store.token_use(&RunId::from("imp")).await.expect("tokens");
    assert_eq!(
        (imported[0].steps, imported[0].reported, imported[0].prompt_tokens, imported[0].completion_tokens),
        (2, 2, 4, 6)
    );
}

#[tokio::test]
async fn sqlite_counts_each_trials_steps_and_tokens_as_they_are_stored() {
    exercise(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_counts_each_trials_steps_and_tokens_as_they_are_stored() {
    if let Some(url) = crate::support::fresh_postgres_url().await {
        exercise(&SqlStore::connect(&url).await.expect("connect")).await;
    }
}
