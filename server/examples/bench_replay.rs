//! Benchmark of counterfactual replay (a documented command, not a test):
//!
//!     cargo run --release -p server --example bench_replay
//!
//! Runs the `credulous` and `explorer` baselines over the 150 forum tasks at L3 (with the
//! L0 twins the planner adds) on a SQLite file, then replays every exposed trial once
//! without the party's text (`strip-spans`) from its first exposure, and reports the wall
//! time per replay beside the time per original trial. Baselines make no model call, so
//! this is the harness's own cost: loading the trial and its run, rebuilding the agent,
//! rendering pages, and storing the replay with its steps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use server::db::{CorpusStore, SqlStore, Store, database_url};
use server::env::World;
use server::runs::replay::{ReplayPlan, replay_exposed};
use server::runs::{PoolOptions, RunSpec, create_run, execute};

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = database_url(dir.path().join("replay.db").to_str().expect("utf-8 path")).expect("url");
    let store = SqlStore::connect(&url).await.expect("connect");
    server::db::seed_if_empty(&store).await.expect("seed");
    let world = Arc::new(World::build(store.all_tasks().await.expect("tasks")).expect("world"));
    let store: Arc<dyn Store> = Arc::new(store);

    let mut spec = RunSpec::basic("forum", &["credulous", "explorer"], &["L3"], &["raw"], vec![0]);
    spec.replay = vec!["strip-spans:1".parse::<ReplayPlan>().expect("plan")];
    let run = create_run(store.as_ref(), &world, &spec, "bench").await.expect("run");
    let options = PoolOptions { concurrency: 1, lease: Duration::from_secs(60), ..Default::default() };
    let started = Instant::now();
    execute(store.clone(), world.clone(), &run, options, Arc::new(|_, _| {})).await.expect("execute");
    let trials = store.progress(&run).await.expect("progress").done;
    let per_trial = started.elapsed().as_secs_f64() / trials as f64;

    let started = Instant::now();
    let made = replay_exposed(store.clone(), &world, &run).await.expect("replays");
    let per_replay = started.elapsed().as_secs_f64() / made.max(1) as f64;
    let stored = store.replays_in_run(&run).await.expect("stored").len();
    assert_eq!(stored, made, "every replay is stored");
    println!(
        "{trials} trials (one at a time): {:.2} ms per trial; {made} strip-spans replays: {:.2} ms per replay ({:.1}x a trial)",
        per_trial * 1e3,
        per_replay * 1e3,
        per_replay / per_trial
    );
}
