//! What the dashboard benchmarks share: a seeded SQLite store and the server's state over
//! it, a baseline run executed at full pace, the dashboard served on loopback with a client
//! that writes as a browser does, and percentiles of timings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use leptos::prelude::LeptosOptions;
use server::db::{RunStore, SqlStore, Store, database_url};
use server::runs::{PoolOptions, RunSpec, create_run, execute};
use vocab::RunId;

/// A store in `dir` holding the built-in corpus, and the server's state over it.
pub async fn seeded_state(dir: &std::path::Path) -> (Arc<SqlStore>, server::AppState) {
    let url = database_url(dir.join("bench.db").to_str().expect("utf-8")).expect("url");
    let store = Arc::new(SqlStore::connect(&url).await.expect("connect"));
    server::db::seed_if_empty(store.as_ref()).await.expect("seed");
    let options = LeptosOptions::builder().output_name("mirage").site_root("target/site").site_pkg_dir("pkg").build();
    let state = server::app_state(store.clone() as Arc<dyn Store>, options, server::config::Config::default())
        .await
        .expect("state");
    (store, state)
}

/// Plans and executes `spec` (32 at a time), printing how long it took: (run, trials).
pub async fn executed_run(store: &Arc<SqlStore>, state: &server::AppState, spec: &RunSpec) -> (RunId, i64) {
    let run = create_run(store.as_ref(), &state.world, spec, &state.corpus_version).await.expect("run");
    let total = store.run(&run).await.expect("run").trials_total;
    let started = Instant::now();
    let pool = PoolOptions { concurrency: 32, ..PoolOptions::default() };
    execute(store.clone(), state.world.clone(), &run, pool, Arc::new(|_, _| {})).await.expect("execute");
    println!("{total} trials executed in {:.1} s", started.elapsed().as_secs_f64());
    (run, total)
}

/// Serves the dashboard on a free loopback port: (its base URL, a client whose writes carry
/// the server's Origin, as a browser's server-function POSTs do).
pub async fn served(state: &server::AppState) -> (String, reqwest::Client) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let app = server::router(state.clone());
    let limits = server::http::listen::Limits::of(&server::config::Config::default().server);
    tokio::spawn(async move {
        server::http::listen::serve(listener, app, limits, std::future::pending()).await.expect("serve")
    });
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::ORIGIN, base.parse().expect("origin"));
    let client = server::llm::client_builder().default_headers(headers).build().expect("client");
    (base, client)
}

/// The `q` quantile of sorted timings, in ms.
pub fn percentile(sorted: &[Duration], q: f64) -> f64 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}
