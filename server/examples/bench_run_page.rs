//! Benchmark of a run's page on the server, at the two run sizes of the issue's targets
//! (release build: under 0.3 s at 1,800 trials, under 1 s at 30,000).
//!
//! ```sh
//! cargo run --release -p server --example bench_run_page
//! ```
//!
//! Two runs of real baseline trials on a SQLite file: 1,800 (credulous, explorer and surface
//! over the 150 forum tasks at L0–L3, raw) and 30,000 (five configurations over all 750
//! tasks at L0–L3, raw and hint). Served on loopback; each page is asked for whole
//! (`GET /runs/RUN`, rendered on the server with its data, as a browser's first load gets
//! it) and through the two server functions it calls, 30 times each, after one warm-up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use leptos::prelude::LeptosOptions;
use server::db::{RunStore, SqlStore, Store, database_url};
use server::runs::{PoolOptions, RunSpec, create_run, execute};

const SAMPLES: usize = 30;

/// A server function's URL and form.
type Post<'a> = (&'a str, &'a [(&'a str, String)]);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p95 of `samples` in ms.
fn spread(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let i = ((samples.len() - 1) as f64 * q).round() as usize;
        ms(samples[i])
    };
    (at(0.5), at(0.95))
}

async fn time(client: &reqwest::Client, get: Option<&str>, post: Option<Post<'_>>) -> Duration {
    let start = Instant::now();
    let resp = match (get, post) {
        (Some(url), _) => client.get(url).send().await,
        (None, Some((url, form))) => client.post(url).form(form).send().await,
        (None, None) => unreachable!("a request"),
    }
    .expect("request");
    assert!(resp.status().is_success(), "{}", resp.status());
    let _ = resp.bytes().await.expect("body");
    start.elapsed()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = database_url(dir.path().join("bench.db").to_str().expect("utf-8")).expect("url");
    let store = Arc::new(SqlStore::connect(&url).await.expect("connect"));
    server::db::seed_if_empty(store.as_ref()).await.expect("seed");
    let options = LeptosOptions::builder().output_name("mirage").site_root("target/site").site_pkg_dir("pkg").build();
    let state = server::app_state(store.clone() as Arc<dyn Store>, options, server::config::Config::default())
        .await
        .expect("state");
    let runs = [
        RunSpec::basic("forum", &["credulous", "explorer", "surface"], &["L0", "L1", "L2", "L3"], &["raw"], vec![0]),
        RunSpec::basic(
            "all",
            &["surface", "explorer", "oracle", "credulous", "explorer+keyword"],
            &["L0", "L1", "L2", "L3"],
            &["raw", "hint"],
            vec![0],
        ),
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let app = server::router(state.clone());
    let limits = server::http::listen::Limits::of(&server::config::Config::default().server);
    tokio::spawn(async move {
        server::http::listen::serve(listener, app, limits, std::future::pending()).await.expect("serve")
    });
    // Writes (server functions are POSTs) carry the server's Origin, as a browser's do.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::ORIGIN, base.parse().expect("origin"));
    let client = server::llm::client_builder().default_headers(headers).build().expect("client");

    for spec in runs {
        let run = create_run(store.as_ref(), &state.world, &spec, &state.corpus_version).await.expect("run");
        let total = store.run(&run).await.expect("run").trials_total;
        let started = Instant::now();
        let pool = PoolOptions { concurrency: 32, ..PoolOptions::default() };
        execute(store.clone(), state.world.clone(), &run, pool, Arc::new(|_, _| {})).await.expect("execute");
        println!("{total} trials executed in {:.1} s", started.elapsed().as_secs_f64());

        let page = format!("{base}/runs/{run}");
        let detail = [("id", run.to_string())];
        let rows = [("query[run]", run.to_string()), ("query[page]", "0".to_string())];
        let (get_run, list_trials) = (format!("{base}/api/get_run"), format!("{base}/api/list_trials"));
        let asks: [(&str, Option<&str>, Option<Post<'_>>); 3] = [
            ("page (GET /runs/RUN)", Some(&page), None),
            ("get_run", None, Some((&get_run, &detail[..]))),
            ("list_trials", None, Some((&list_trials, &rows[..]))),
        ];
        for (name, get, post) in asks {
            time(&client, get, post).await;
            let mut samples = Vec::new();
            for _ in 0..SAMPLES {
                samples.push(time(&client, get, post).await);
            }
            let (p50, p95) = spread(samples);
            println!("{total:>6} trials  {name:<22} p50 {p50:8.1} ms   p95 {p95:8.1} ms");
        }
    }
}
