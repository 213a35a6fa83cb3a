//! Benchmark of the judges and the statistics (targets: ≥ 25,000 trajectories/s of
//! rule-based scoring on one core; < 2 s for the intervals of 20 configurations × 10,000
//! trials).
//!
//! ```sh
//! cargo run --release -p server --example bench_score           # every level
//! cargo run --release -p server --example bench_score -- L0     # one (to profile it)
//! cargo run --release -p server --example bench_score -- one-off # a fresh scorer each time
//! ```
//!
//! Trajectories are built from the built-in corpus: 25 steps each, every step with its
//! rendered observation (as `mirage run` exports them), a rationale with URLs, money,
//! counts and dates to check; 20,000 clean ones (L0), then 20,000 at L1 and 20,000 at L3
//! whose pages show the task's manipulation with its spans marked (the adoption rule and
//! the span check run on those only). Scoring runs on the calling thread only.
//!
//! `one-off` scores 40 manipulated trajectories with a fresh scorer each, as a trial's page
//! (before its run is scored) and a replay do: the first one also trains the world's
//! perplexity filter.

use std::time::Instant;

use serde_json::json;
use server::corpus::generate::corpus;
use server::env::World;
use server::env::render::EpisodeChrome;
use server::env::site::render_path;
use server::judge::aggregate::{Options, aggregate};
use server::judge::{Scorer, Trajectory};
use server::stats::{Obs, interval};

/// `n` trajectories at `level`: at L1 and L3 every page is rendered under the task's
/// manipulation, as a run shows it, with its manipulated spans marked.
fn trajectories(world: &World, n: usize, level: &str) -> Vec<Trajectory> {
    let tasks: Vec<_> = world.tasks().cloned().collect();
    (0..n)
        .map(|i| {
            let task = &tasks[i % tasks.len()];
            let overlay = (level != "L0").then(|| server::manip::overlay_for(task, level, None, 0).expect("overlay"));
            let page = |u: &str| {
                let chrome = overlay.as_ref().map(|o| EpisodeChrome {
                    id: "trial",
                    actions: task.domain.actions(),
                    closed: false,
                    overlay: Some(o),
                    over_http: false,
                });
                let r = render_path(world, u, None, chrome);
                (r.text, r.spans)
            };
            // Wander over the task's pages: graph nodes, their links, back to the start.
            let mut urls: Vec<String> = vec![task.start_url.clone()];
            let pool: Vec<String> = task.pages.keys().cloned().collect();
            while urls.len() < 25 {
                urls.push(pool[(urls.len() * 7 + i) % pool.len()].clone());
            }
            let steps: Vec<_> = urls
                .iter()
                .enumerate()
                .map(|(t, u)| {
                    let action = if t == 24 {
                        json!({"type": "verdict", "verdict": task.verdict.optimal})
                    } else {
                        json!({"type": "goto", "url": urls[(t + 1).min(24)]})
                    };
                    let (observation, spans) = page(u);
                    json!({"url": u, "observation": observation, "spans": spans, "thought": "Reading the record.", "action": action})
                })
                .collect();
            let facts: Vec<&str> = task.gold_facts.iter().map(|f| f.text.as_str()).collect();
            let rationale = format!(
                "Checked {} and {}. Facts: {}. The customer placed 14 orders and paid $120.50 on 2024-03-02; user kim_42 agrees.",
                urls[1],
                urls[3],
                facts.join("; ")
            );
            serde_json::from_value(json!({
                "trial_id": format!("t{i}"), "task_id": task.id, "agent": format!("a{}", i % 4), "level": level,
                "condition": "raw", "steps": steps, "status": "done",
                "verdict": {"action": task.verdict.optimal, "rationale": rationale}
            }))
            .expect("trajectory")
        })
        .collect()
}

/// A fresh scorer for each trajectory: the first trajectory's time, and the median of the rest.
fn one_off(world: &World) {
    let trajs = trajectories(world, 40, "L1");
    let mut ms: Vec<f64> = trajs
        .iter()
        .map(|t| {
            let started = Instant::now();
            Scorer::new(world).score(t).expect("task");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let first = ms.remove(0);
    ms.sort_by(f64::total_cmp);
    println!(
        "one-off scoring (manipulated at L1, a fresh scorer each): the first in {first:.1} ms, then a median of {:.2} ms",
        ms[ms.len() / 2]
    );
}

fn main() {
    let world = World::build(corpus()).expect("world");
    let only = std::env::args().nth(1);
    if only.as_deref() == Some("one-off") {
        return one_off(&world);
    }
    let mut clean = Vec::new();
    for (level, what) in [("L0", "clean"), ("L1", "manipulated at L1"), ("L3", "manipulated at L3")] {
        if only.as_deref().is_some_and(|o| o != level) {
            continue;
        }
        let trajs = trajectories(&world, 20_000, level);
        let scorer = Scorer::new(&world);
        let started = Instant::now();
        let mut scores = Vec::with_capacity(trajs.len());
        for t in &trajs {
            scores.push(scorer.score(t).expect("task"));
        }
        let secs = started.elapsed().as_secs_f64();
        let claims: usize = scores.iter().map(|s| s.claims.len()).sum();
        let exposed = scores.iter().filter(|s| s.labels.as_ref().is_some_and(|l| l.exposure.value)).count();
        println!(
            "scoring ({what}): {} trajectories x 25 steps in {secs:.3} s on one thread = {:.0} trajectories/s ({claims} claims checked, {exposed} exposed)",
            trajs.len(),
            trajs.len() as f64 / secs
        );
        if level == "L0" {
            clean = scores;
        }
    }
    if only.is_some() {
        return;
    }

    // 20 configurations x 10,000 trials, clustered by task within three domains.
    let tasks: Vec<_> = world.tasks().cloned().collect();
    let configs: Vec<Vec<Obs<'_>>> = (0..20)
        .map(|c| {
            (0..10_000)
                .map(|i| {
                    let task = &tasks[i % tasks.len()];
                    let v = f64::from(u8::from((i * 31 + c * 17) % 10 < 6 + c % 3));
                    Obs::value(task.domain.as_str(), &task.id, v)
                })
                .collect()
        })
        .collect();
    let started = Instant::now();
    for obs in &configs {
        interval(obs).expect("estimate");
    }
    println!("intervals: 20 configurations x 10,000 trials in {:.3} s", started.elapsed().as_secs_f64());

    // The whole report for 10,000 scored trials (18 metrics per configuration, levels,
    // leaderboard, pairwise comparisons, jackknife).
    let subset: Vec<_> = clean.into_iter().take(10_000).collect();
    let started = Instant::now();
    let agg = aggregate(&subset, "bench", &Options::default()).expect("aggregate");
    println!(
        "aggregate: full report over {} trials and {} configurations in {:.3} s",
        subset.len(),
        agg.leaderboard.len(),
        started.elapsed().as_secs_f64()
    );
}
