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

use std::time::{Duration, Instant};

use server::runs::RunSpec;

mod support;

const SAMPLES: usize = 30;

/// A server function's URL and form.
type Post<'a> = (&'a str, &'a [(&'a str, String)]);

/// p50 and p95 of `samples` in ms.
fn spread(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    (support::percentile(&samples, 0.5), support::percentile(&samples, 0.95))
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
    let (store, state) = support::seeded_state(dir.path()).await;
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
    let (base, client) = support::served(&state).await;

    for spec in runs {
        let (run, total) = support::executed_run(&store, &state, &spec).await;

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
