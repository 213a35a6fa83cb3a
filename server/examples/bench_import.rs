//! Benchmark of importing another harness's log, and of the trajectory pages of what was
//! imported beside Mirage's own (issue target: a 10,000-sample Inspect log in under a
//! minute with bounded memory; its pages as fast as Mirage's).
//!
//! ```sh
//! python3 scripts/fixtures/make_inspect.py eval /tmp/big 10000   # Inspect AI writes the log
//! cargo run --release -p server --example bench_import -- /tmp/big/*.eval
//! ```
//!
//! The log is imported into a fresh SQLite file, timed, with the process's resident memory
//! before and its peak after (`VmHWM`); then 750 of Mirage's own baseline trials are run into
//! the same database, the app is served on loopback, and 200 trajectory pages of each kind
//! are asked for over HTTP (`get_trajectory`, the server function the page calls).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leptos::prelude::LeptosOptions;
use server::db::{RunStore, SqlStore, Store, database_url};
use server::runs::{PoolOptions, RunSpec, create_run, execute};

const SAMPLES: usize = 200;

/// A line of `/proc/self/status` in MiB (`VmRSS`, `VmHWM`).
fn mem_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.trim_start_matches(':').trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

async fn pages(client: &reqwest::Client, base: &str, trials: &[server::db::TrialRow]) -> (f64, f64) {
    let mut samples = Vec::new();
    for i in 0..SAMPLES {
        let t = &trials[(i * 7919) % trials.len()];
        let form = [("trial", t.trial_id.to_string()), ("page", "0".to_string())];
        let start = Instant::now();
        let resp = client.post(format!("{base}/api/get_trajectory")).form(&form).send().await.expect("request");
        assert!(resp.status().is_success(), "{}: {}", t.trial_id, resp.status());
        let _ = resp.bytes().await.expect("body");
        samples.push(start.elapsed());
    }
    samples.sort();
    (percentile(&samples, 0.5), percentile(&samples, 0.95))
}

#[tokio::main]
async fn main() {
    let log = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: bench_import LOG"));
    let dir = tempfile::tempdir().expect("tempdir");
    let url = database_url(dir.path().join("bench.db").to_str().expect("utf-8")).expect("url");
    let store = Arc::new(SqlStore::connect(&url).await.expect("connect"));
    server::db::seed_if_empty(store.as_ref()).await.expect("seed");
    let options = LeptosOptions::builder()
        .output_name("mirage")
        .site_root("target/site")
        .site_pkg_dir("pkg")
        .site_addr("127.0.0.1:0".parse::<std::net::SocketAddr>().expect("addr"))
        .build();
    let state = server::app_state(store.clone() as Arc<dyn Store>, options, server::config::Config::default())
        .await
        .expect("state");

    let before = mem_mib("VmRSS");
    let started = Instant::now();
    let (imported, n) = server::runs::harness::import_files(
        &state.store,
        &state.world,
        std::slice::from_ref(&log),
        None,
        (&server::foreign::Mapping::default(), server::foreign::Limits::default()),
        &state.corpus_version,
    )
    .await
    .expect("import");
    let took = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    println!(
        "imported {n} samples from {} ({:.1} MB) in {took:.2} s ({:.0} samples/s); resident memory {before:.0} MiB before, peak {:.0} MiB",
        log.display(),
        size as f64 / 1e6,
        n as f64 / took,
        mem_mib("VmHWM")
    );

    let spec = RunSpec::basic("all", &["explorer"], &["L0"], &["raw"], vec![0]);
    let own = create_run(store.as_ref(), &state.world, &spec, &state.corpus_version).await.expect("run");
    execute(
        store.clone(),
        state.world.clone(),
        &own,
        PoolOptions { concurrency: 16, ..PoolOptions::default() },
        Arc::new(|_, _| {}),
    )
    .await
    .expect("execute");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let app = server::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    let client = server::llm::client_builder().build().expect("client");
    for (what, run) in [("imported Inspect samples", &imported), ("Mirage's own trials", &own)] {
        let trials = store.trials(run).await.expect("trials");
        let (p50, p95) = pages(&client, &base, &trials).await;
        println!("trajectory pages of {what} ({} trials): p50 {p50:.1} ms, p95 {p95:.1} ms", trials.len());
    }
}
