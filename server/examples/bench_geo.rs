//! Benchmark of the GEO ranking track (issue targets: harness overhead ≤ 2 ms per ranker
//! call; the full aggregate with its intervals < 2 s).
//!
//! ```sh
//! cargo run --release -p server --example bench_geo
//! ```
//!
//! 1. Offline BM25 over every built-in method (clean, stuff, strip, the ten C-SEO
//!    templates, Zero-Shot) on all 529 targets × 10 orders, in process.
//! 2. Harness overhead per ranker call: a durable GEO run on a SQLite file whose chat
//!    ranker is a scripted endpoint answering at once, so the time is the harness's own
//!    (prompt, HTTP round trip, cache, parsing, one stored step per order).
//! 3. The full aggregate of a stored run of every target under BM25 with four methods
//!    (report: equal-dataset intervals of eight figures per row and per dataset, paired
//!    comparisons with Holm, bands).

use std::sync::Arc;
use std::time::{Duration, Instant};

use server::db::{SqlStore, Store, database_url};
use server::geo::data::lists;
use server::geo::plan::GeoSpec;
use server::geo::rank::Bm25;
use server::geo::{Protocol, evaluate, methods};
use server::llm::scripted::{Reply, ScriptedServer};

fn spec(datasets: &[&str], rankers: &[&str], methods: &[&str]) -> GeoSpec {
    GeoSpec::offline(datasets, rankers, methods)
}

async fn store(dir: &tempfile::TempDir, name: &str) -> Arc<dyn Store> {
    let url = database_url(dir.path().join(name).to_str().expect("utf-8")).expect("url");
    Arc::new(SqlStore::connect(&url).await.expect("connect"))
}

async fn execute(store: Arc<dyn Store>, run: &app::model::RunId, concurrency: usize) {
    let world = Arc::new(server::env::World::build(Vec::new()).expect("world"));
    let options = server::runs::PoolOptions { concurrency, ..Default::default() };
    server::runs::execute(store, world, run, options, Arc::new(|_, _| {})).await.expect("execute");
}

/// The benchmark's steps in the order they run, each printing its figure as it is measured
/// (long by design: one script read top to bottom).
#[tokio::main]
async fn main() {
    let lists = lists().expect("lists");
    let protocol = Protocol::default();

    // 1. Offline BM25, every built-in method, in process.
    let mut texts = 0usize;
    let started = Instant::now();
    let names: Vec<String> = ["clean", "stuff", "strip", "zero_shot"]
        .iter()
        .map(ToString::to_string)
        .chain(server::manip::text::STYLES.iter().map(|s| format!("cseo:{s}")))
        .collect();
    for method in &names {
        for list in &lists {
            for t in 0..list.items.len() {
                let item = &list.items[t];
                let edited = match methods::Method::parse(method).expect("method") {
                    methods::Method::Writer(w) => {
                        server::geo::writers::write(&w, &item.name, &list.noun, &item.text).expect("writer")
                    }
                    methods::Method::Cseo(style) => methods::builtin_cseo(&style, list, t).0,
                    _ => format!("{} {}", item.text, methods::builtin_zero_shot(list, t)),
                };
                evaluate(&Bm25, &protocol, list, t, &edited).await.expect("evaluate");
                texts += 1;
            }
        }
    }
    let took = started.elapsed();
    let calls = texts * protocol.k * 2;
    println!(
        "offline bm25: {} methods × 529 targets × {} orders = {calls} ranker calls in {:.2} s ({:.0} calls/s)",
        names.len(),
        protocol.k,
        took.as_secs_f64(),
        calls as f64 / took.as_secs_f64()
    );

    // 2. Harness overhead per ranker call, through the durable queue.
    let dir = tempfile::tempdir().expect("tempdir");
    let endpoint = ScriptedServer::responding(Duration::ZERO, |body| {
        let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        let names: Vec<&str> = user
            .lines()
            .filter_map(|l| l.split_once(". ").and_then(|(n, rest)| n.parse::<usize>().ok().map(|_| rest)))
            .filter_map(|rest| rest.split_once(": ").map(|(name, _)| name))
            .collect();
        Reply::Text(names.iter().enumerate().map(|(i, n)| format!("{}. {n}\n", i + 1)).collect())
    })
    .await;
    let s = store(&dir, "overhead.db").await;
    let mut geo = spec(&["stsdata", "llm_rank_optimizer", "cseo"], &["chat"], &["stuff", "strip"]);
    geo.endpoints.insert("chat".into(), server::llm::EndpointSpec::new(&endpoint.base_url, "bench"));
    let run = server::runs::geo::create_geo_run(s.as_ref(), geo).await.expect("run");
    let started = Instant::now();
    execute(s.clone(), &run, 1).await;
    let took = started.elapsed();
    let asked = endpoint.requests().len();
    let orders = s.trials(&run).await.expect("trials").len() * protocol.k;
    println!(
        "harness, one trial at a time: {orders} orders ({asked} endpoint calls, the rest from the cache) in {:.2} s = \
         {:.2} ms per order, {:.2} ms per endpoint call",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e3 / orders as f64,
        took.as_secs_f64() * 1e3 / asked as f64
    );

    // 3. The full aggregate of a stored run of every target.
    let s = store(&dir, "aggregate.db").await;
    let methods4 = ["clean", "stuff", "strip", "cseo:llm_guidance"];
    let all: Vec<&str> = server::geo::data::DATASETS.iter().map(|(k, _)| *k).collect();
    let run = server::runs::geo::create_geo_run(s.as_ref(), spec(&all, &["bm25"], &methods4)).await.expect("run");
    let started = Instant::now();
    execute(s.clone(), &run, 4).await;
    println!(
        "stored run: {} trials (bm25 × 4 methods × 529 targets) executed in {:.1} s",
        4 * 529,
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let report = server::geo::report::report(s.as_ref(), &lists, &run).await.expect("report");
    println!(
        "aggregate: {} rows, {} dataset rows, {} pairs in {:.2} s (reading the stored orders included)",
        report.rows.len(),
        report.datasets.len(),
        report.pairs.len(),
        started.elapsed().as_secs_f64()
    );
}
