//! Benchmark of the judges and the statistics (issue targets: ≥ 20,000 trajectories/s of
//! rule-based scoring on one core; < 2 s for the intervals of 20 configurations × 10,000
//! trials).
//!
//! ```sh
//! cargo run --release -p server --example bench_score
//! ```
//!
//! Trajectories are built from the built-in corpus: 25 steps each, every step with its
//! rendered observation (as `mirage run` exports them), a rationale with URLs, money,
//! counts and dates to check. Scoring runs on the calling thread only.

use std::time::Instant;

use serde_json::json;
use server::corpus::generate::corpus;
use server::env::World;
use server::env::site::render_path;
use server::judge::aggregate::{Options, aggregate};
use server::judge::{Scorer, Trajectory};
use server::stats::{Obs, interval};

fn trajectories(world: &World, n: usize) -> Vec<Trajectory> {
    let tasks: Vec<_> = world.tasks().cloned().collect();
    (0..n)
        .map(|i| {
            let task = &tasks[i % tasks.len()];
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
                    json!({"url": u, "observation": render_path(world, u, None, None).text, "thought": "Reading the record.", "action": action})
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
                "trial_id": format!("t{i}"), "task_id": task.id, "agent": format!("a{}", i % 4), "level": "L0",
                "condition": "raw", "steps": steps, "status": "done",
                "verdict": {"action": task.verdict.optimal, "rationale": rationale}
            }))
            .expect("trajectory")
        })
        .collect()
}

fn main() {
    let world = World::build(corpus()).expect("world");
    let trajs = trajectories(&world, 20_000);
    let scorer = Scorer::new(&world);
    let started = Instant::now();
    let mut scores = Vec::with_capacity(trajs.len());
    for t in &trajs {
        scores.push(scorer.score(t).expect("task"));
    }
    let secs = started.elapsed().as_secs_f64();
    let claims: usize = scores.iter().map(|s| s.claims.len()).sum();
    println!(
        "scoring: {} trajectories x 25 steps in {secs:.3} s on one thread = {:.0} trajectories/s ({claims} claims checked)",
        trajs.len(),
        trajs.len() as f64 / secs
    );

    // 20 configurations x 10,000 trials, clustered by task within three domains.
    let tasks: Vec<_> = world.tasks().cloned().collect();
    let configs: Vec<Vec<Obs>> = (0..20)
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
    let subset: Vec<_> = scores.into_iter().take(10_000).collect();
    let started = Instant::now();
    let agg = aggregate(&subset, "bench", &Options::default()).expect("aggregate");
    println!(
        "aggregate: full report over {} trials and {} configurations in {:.3} s",
        subset.len(),
        agg.leaderboard.len(),
        started.elapsed().as_secs_f64()
    );
}
