//! Benchmark of the dashboard's server latency with 100,000 trials in the database (issue
//! targets, p95: leaderboard < 100 ms, trajectory < 50 ms, search < 50 ms).
//!
//! ```sh
//! cargo run --release -p server --example bench_dashboard            # 101,250 trials
//! cargo run --release -p server --example bench_dashboard -- 20000   # a smaller run
//! ```
//!
//! One run of real baseline trials (five configurations × 750 tasks × L0/L1/L3 × three
//! conditions × three seeds) on a SQLite file, served on loopback; requests go over HTTP to
//! the server functions the pages call. The first leaderboard request finds the run being
//! scored in the background (the server starts as soon as it sees the run finished): it
//! answers within the page's wait with a progress line, and is asked again until complete
//! (both times reported as "cold"); the timed requests after it hit the cache, as every page
//! view does until a trial finishes or a person labels something.

use std::time::{Duration, Instant};

use server::db::RunStore;
use server::runs::RunSpec;

mod support;

const SAMPLES: usize = 200;

async fn timed(client: &reqwest::Client, url: &str, form: &[(&str, String)]) -> Duration {
    let start = Instant::now();
    let resp = client.post(url).form(form).send().await.expect("request");
    assert!(resp.status().is_success(), "{url}: {}", resp.status());
    let _ = resp.bytes().await.expect("body");
    start.elapsed()
}

/// Asks a cold page until it has every number: (what its first answer said, (time to the
/// first answer, time to the complete one)).
async fn first_and_complete(
    client: &reqwest::Client,
    url: &str,
    form: &[(&str, String)],
) -> (String, (Duration, Duration)) {
    let start = Instant::now();
    let mut first = None;
    loop {
        let v: serde_json::Value =
            client.post(url).form(form).send().await.expect("request").json().await.expect("json");
        let p = &v["pending"];
        let said = if p.is_null() {
            "complete".to_string()
        } else {
            let what = p["what"].as_str().unwrap_or_default();
            if p["total"].as_u64().unwrap_or(0) > 0 {
                format!("{what}: {} of {}", p["done"], p["total"])
            } else {
                what.to_string()
            }
        };
        let first = first.get_or_insert_with(|| (said, start.elapsed()));
        if p.is_null() {
            return (first.0.clone(), (first.1, start.elapsed()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn report(name: &str, target_ms: f64, mut samples: Vec<Duration>) {
    samples.sort();
    let (p50, p95) = (support::percentile(&samples, 0.5), support::percentile(&samples, 0.95));
    let verdict = if p95 < target_ms { "met" } else { "NOT met" };
    println!(
        "{name:<12} p50 {p50:7.2} ms   p95 {p95:7.2} ms   (target p95 < {target_ms} ms: {verdict}, {} requests)",
        samples.len()
    );
}

/// The benchmark's steps in the order they run, each printing its figure as it is measured
/// (long by design: one script read top to bottom).
#[tokio::main]
async fn main() {
    let seeds: i64 = match std::env::args().nth(1).and_then(|a| a.parse::<usize>().ok()) {
        Some(n) => i64::try_from(n.div_ceil(750 * 5 * 3 * 3)).expect("seeds").max(1),
        None => 3,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = support::seeded_state(dir.path()).await;

    let spec = RunSpec::basic(
        "all",
        &["surface", "explorer", "oracle", "explorer+keyword", "surface+keyword"],
        &["L0", "L1", "L3"],
        &["raw", "hint", "evidence_anchored"],
        (0..seeds).collect(),
    );
    let (run, total) = support::executed_run(&store, &state, &spec).await;
    let (base, client) = support::served(&state).await;

    // The search index follows finished trials in the background; wait until it has all.
    let started = Instant::now();
    while state.search.trials().await < usize::try_from(total).expect("total") {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("search index caught up with {total} trials {:.1} s after serving began", started.elapsed().as_secs_f64());
    // The index on disk: built once, then reopened as a restarted server reopens it.
    {
        use server::search::TrajectoryIndex;
        let path = dir.path().join("reopen.search");
        let started = Instant::now();
        let idx = std::sync::Arc::new(
            TrajectoryIndex::open(&state.world, &state.corpus_version, store.as_ref(), Some(&path))
                .await
                .expect("open"),
        );
        idx.follow(store.as_ref()).await.expect("follow");
        let built = started.elapsed().as_secs_f64();
        drop(idx);
        let started = Instant::now();
        let idx = TrajectoryIndex::open(&state.world, &state.corpus_version, store.as_ref(), Some(&path))
            .await
            .expect("reopen");
        let reopened = started.elapsed().as_secs_f64();
        assert_eq!(idx.trials().await, usize::try_from(total).expect("total"));
        println!(
            "search index on disk: {total} trials indexed in {built:.1} s; reopened with all of them in {reopened:.2} s"
        );
    }

    let board = format!("{base}/api/get_leaderboard");
    let q = |tier: &str| vec![("query[run]", run.to_string()), ("query[tier]", tier.to_string())];
    for (tier, what) in [("default", "scores + intervals"), ("strict", "another tier: intervals only")] {
        let (first, filled) = first_and_complete(&client, &board, &q(tier)).await;
        println!(
            "leaderboard cold ({what}): first view {:.2} s ({first}), complete after {:.1} s",
            filled.0.as_secs_f64(),
            filled.1.as_secs_f64()
        );
    }
    let mut samples = Vec::new();
    for i in 0..SAMPLES {
        samples.push(timed(&client, &board, &q(if i % 2 == 0 { "default" } else { "strict" })).await);
    }
    report("leaderboard", 100.0, samples);

    let trials = store.trials(&run).await.expect("trials");
    let mut samples = Vec::new();
    for i in 0..SAMPLES {
        let t = &trials[(i * 7919) % trials.len()];
        let form = vec![("trial", t.trial_id.to_string()), ("page", "0".to_string())];
        samples.push(timed(&client, &format!("{base}/api/get_trajectory"), &form).await);
    }
    report("trajectory", 50.0, samples);

    let words =
        ["refund", "unread page", "defective", "spam", "revert", "profile", "exonerating", "order", "ban", "source"];
    let kinds = ["", "thought", "observation", "rationale", "task"];
    let mut samples = Vec::new();
    for i in 0..SAMPLES {
        let form = vec![("query", words[i % words.len()].to_string()), ("kind", kinds[i % kinds.len()].to_string())];
        samples.push(timed(&client, &format!("{base}/api/search"), &form).await);
    }
    report("search", 50.0, samples);
}
