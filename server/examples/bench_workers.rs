//! Benchmark of scale-out: one run executed by 1, 2 and 4 `mirage worker` processes sharing
//! one database, against a scripted endpoint with a fixed latency (a documented command,
//! not a test):
//!
//! ```sh
//! cargo build --release -p server
//! MIRAGE_BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:55433/postgres \
//!     cargo run --release -p server --example bench_workers
//! ```
//!
//! Without `MIRAGE_BENCH_POSTGRES_URL` the workers share a SQLite file instead. For each
//! worker count a fresh database gets one planned run (`TRIALS` trials of an LLM agent, five
//! model calls each, at `LATENCY` per call); the workers (`--concurrency PER_WORKER --once`)
//! are started together and timed until the last one exits, process start included. The
//! ideal is workers × PER_WORKER / (5 × LATENCY) trials per second.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use server::db::{CorpusStore, RunStore, SqlStore, database_url};
use server::llm::EndpointSpec;
use server::llm::scripted::{ScriptedServer, five_calls};
use server::runs::{RunSpec, create_run};

const TRIALS_PER_SEED: usize = 750;
const SEEDS: i64 = 2;
const PER_WORKER: usize = 16;
const LATENCY: Duration = Duration::from_millis(100);

/// A fresh database: a new PostgreSQL database on the server of `base`, or a SQLite file.
async fn fresh_url(base: Option<&str>, dir: &tempfile::TempDir, workers: usize) -> String {
    match base {
        Some(base) => {
            let name = format!("mirage_bench_workers_{workers}_{}", std::process::id());
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(base).await.expect("connect");
            sqlx::query(&format!("drop database if exists {name}")).execute(&mut conn).await.expect("drop");
            sqlx::query(&format!("create database {name}")).execute(&mut conn).await.expect("create database");
            let (prefix, _) = base.rsplit_once('/').expect("the URL ends with a database name");
            format!("{prefix}/{name}")
        }
        None => database_url(dir.path().join(format!("w{workers}.db")).to_str().expect("utf-8")).expect("url"),
    }
}

#[tokio::main]
async fn main() {
    let mirage = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join("mirage")))
        .filter(|p| p.exists())
        .expect("the mirage binary beside target/release/examples (run `cargo build --release -p server` first)");
    let base = std::env::var("MIRAGE_BENCH_POSTGRES_URL").ok();
    println!("database: {}", if base.is_some() { "PostgreSQL" } else { "SQLite file" });
    let mock = ScriptedServer::responding(LATENCY, five_calls).await;
    let endpoints: std::collections::BTreeMap<String, EndpointSpec> =
        [("bench".to_string(), EndpointSpec::new(&mock.base_url, "bench"))].into_iter().collect();
    let dir = tempfile::tempdir().expect("tempdir");
    for workers in [1usize, 2, 4] {
        let url = fresh_url(base.as_deref(), &dir, workers).await;
        let store = SqlStore::connect(&url).await.expect("connect");
        server::db::seed_if_empty(&store).await.expect("seed");
        let world = server::env::World::build(store.all_tasks().await.expect("tasks")).expect("world");
        let spec = RunSpec {
            seeds: (0..SEEDS).collect(),
            endpoints: endpoints.clone(),
            ..RunSpec::basic("all", &["bench"], &["L0"], &["raw"], vec![0])
        };
        let run = create_run(&store, &world, &spec, "bench").await.expect("run");
        let trials = store.run(&run).await.expect("run").trials_total;
        assert_eq!(usize::try_from(trials).expect("count"), TRIALS_PER_SEED * usize::try_from(SEEDS).expect("seeds"));
        let started = Instant::now();
        let children: Vec<_> = (0..workers)
            .map(|_| {
                Command::new(&mirage)
                    .args(["--db", &url, "worker", "--once", "--concurrency", &PER_WORKER.to_string()])
                    .env("RUST_LOG", "warn")
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .expect("spawn mirage worker")
            })
            .collect();
        for mut child in children {
            assert!(child.wait().expect("worker ends").success(), "a worker failed");
        }
        let secs = started.elapsed().as_secs_f64();
        let p = store.progress(&run).await.expect("progress");
        assert_eq!((p.done, p.error, p.queued, p.running), (trials, 0, 0, 0), "every trial done");
        let twice = store.trials(&run).await.expect("trials").iter().filter(|t| t.attempts != 1).count();
        #[allow(clippy::cast_precision_loss)]
        let rate = trials as f64 / secs;
        #[allow(clippy::cast_precision_loss)]
        let ideal = (workers * PER_WORKER) as f64 / (5.0 * LATENCY.as_secs_f64());
        println!(
            "{workers} worker(s) x {PER_WORKER} in flight: {trials} trials in {secs:.1} s = {rate:.1} trials/s; \
             ideal {ideal:.1} trials/s; {:.1} % of ideal; {twice} trials claimed more than once",
            100.0 * rate / ideal
        );
    }
}
