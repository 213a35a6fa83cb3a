//! Benchmark of the run harness (a documented command, not a test):
//!
//!     cargo run --release -p server --example bench_runs
//!
//! 1. Harness overhead per step: the explorer baseline (no model) over the whole corpus,
//!    one trial at a time, on a SQLite file: render + agent + persist per step.
//! 2. Throughput against the scripted endpoint at 200 ms per call, 256 trials in flight,
//!    each trial 5 model calls, compared with the bound concurrency / (calls × latency).
//! 3. Peak resident memory with 1,000 trials in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use server::db::{CorpusStore, SqlStore, Store, database_url};
use server::env::World;
use server::llm::EndpointSpec;
use server::llm::scripted::{ScriptedServer, five_calls};
use server::runs::{PoolOptions, RunSpec, create_run, execute};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn fresh(dir: &tempfile::TempDir, name: &str) -> (Arc<dyn Store>, Arc<World>) {
    let url = database_url(dir.path().join(name).to_str().expect("utf-8 path")).expect("url");
    let store = SqlStore::connect(&url).await.expect("connect");
    server::db::seed_if_empty(&store).await.expect("seed");
    let world = Arc::new(World::build(store.all_tasks().await.expect("tasks")).expect("world"));
    (Arc::new(store), world)
}

/// Wall time, trials finished, and the steady-state rate: trials per second between the
/// 10th and the 90th percentile of finishing times (leaving out ramp-up and the last wave).
async fn timed_run(store: &Arc<dyn Store>, world: &Arc<World>, spec: &RunSpec, concurrency: usize) -> (f64, u64, f64) {
    let run = create_run(store.as_ref(), world, spec, "bench").await.expect("run");
    let trials = Arc::new(AtomicU64::new(0));
    let counter = trials.clone();
    let finishes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let times = finishes.clone();
    let on_finish = Arc::new(move |_: &server::db::TrialRow, _: &server::db::TrialEnd| {
        counter.fetch_add(1, Ordering::Relaxed);
        times.lock().expect("finish times").push(Instant::now());
    });
    let options = PoolOptions { concurrency, lease: Duration::from_secs(60), ..Default::default() };
    let started = Instant::now();
    execute(store.clone(), world.clone(), &run, options, on_finish).await.expect("execute");
    let p = store.progress(&run).await.expect("progress");
    assert_eq!(p.error, 0, "benchmark trials must not error");
    let times = finishes.lock().expect("finish times").clone();
    let (a, b) = (times.len() / 10, times.len() * 9 / 10);
    let steady = (b - a) as f64 / times[b - 1].duration_since(times[a]).as_secs_f64();
    (started.elapsed().as_secs_f64(), trials.load(Ordering::Relaxed), steady)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");

    // 1. Overhead per step.
    let (store, world) = fresh(&dir, "overhead.db").await;
    let spec = |agents: Vec<String>, tasks: &str, endpoints| RunSpec {
        agents,
        endpoints,
        ..RunSpec::basic(tasks, &[], &["L0"], &["raw"], vec![0])
    };
    let explorer = spec(vec!["explorer".into()], "all", Default::default());
    let run = create_run(store.as_ref(), &world, &explorer, "bench").await.expect("run");
    let started = Instant::now();
    let noop = Arc::new(|_: &server::db::TrialRow, _: &server::db::TrialEnd| {});
    execute(
        store.clone(),
        world.clone(),
        &run,
        PoolOptions { concurrency: 1, lease: Duration::from_secs(60), ..Default::default() },
        noop,
    )
    .await
    .expect("execute");
    let secs = started.elapsed().as_secs_f64();
    let mut steps = 0usize;
    for t in store.trials(&run).await.expect("trials") {
        steps += store.steps(&t.trial_id).await.expect("steps").len();
    }
    println!(
        "overhead: {steps} steps in {secs:.2} s, one at a time: {:.3} ms per step (render + agent + persist)",
        secs * 1000.0 / steps as f64
    );

    // 2. Throughput at 256 in flight against a 200 ms endpoint.
    let latency = Duration::from_millis(200);
    let mock = ScriptedServer::responding(latency, five_calls).await;
    let endpoints: std::collections::BTreeMap<String, EndpointSpec> =
        [("bench".to_string(), EndpointSpec::new(&mock.base_url, "bench"))].into_iter().collect();
    let (store, world) = fresh(&dir, "throughput.db").await;
    let mut llm = spec(vec!["bench".into()], "all", endpoints.clone());
    llm.seeds = (0..8).collect();
    let (secs, trials, steady) = timed_run(&store, &world, &llm, 256).await;
    let bound = 256.0 / (5.0 * latency.as_secs_f64());
    let rate = trials as f64 / secs;
    println!(
        "throughput: {trials} trials x 5 calls in {secs:.2} s = {rate:.1} trials/s; bound 256 / (5 x 0.2 s) = {bound:.1} trials/s; {:.1} % of the bound",
        100.0 * rate / bound
    );
    println!(
        "steady state (10th to 90th percentile of finishes): {steady:.1} trials/s = {:.1} % of the bound",
        100.0 * steady / bound
    );

    // 3. Memory with 1,000 trials in flight.
    let (store, world) = fresh(&dir, "memory.db").await;
    let mut many = spec(vec!["bench".into()], "all", endpoints);
    many.seeds = vec![0, 1];
    let (secs, trials, _) = timed_run(&store, &world, &many, 1000).await;
    println!("memory: {trials} trials with 1000 in flight in {secs:.2} s; peak RSS {:.0} MiB", peak_rss_mib());
}
