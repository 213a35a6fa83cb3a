//! How people's labels moved the numbers, per configuration and label metric.

use crate::judge::TrialScore;
use crate::judge::aggregate::Metric;

/// Label metrics whose per-configuration mean people's labels changed: (agent, metric,
/// automatic-only mean, settled mean). Plain means; the leaderboard has the intervals.
pub fn label_effects(scores: &[TrialScore]) -> Vec<(String, String, f64, f64)> {
    const METRICS: [Metric; 5] =
        [Metric::Exposure, Metric::Adoption, Metric::Verification, Metric::Recovery, Metric::GoalRate];
    let automatic: Vec<TrialScore> = scores
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Some(ls) = s.labels.as_mut() {
                for kind in crate::judge::labels::QUEUE_ORDER {
                    let l = ls.get_mut(kind);
                    if let Some(a) = l.automatic.take() {
                        *l = *a;
                    }
                }
            }
            s
        })
        .collect();
    let mean = |set: &[TrialScore], agent: &str, metric: Metric| {
        let (n, d) = set
            .iter()
            .filter(|s| s.agent == agent)
            .filter_map(|s| crate::judge::aggregate::contribution(s, metric))
            .fold((0.0, 0.0), |(n, d), (a, b)| (n + a, d + b));
        (d > 0.0).then(|| n / d)
    };
    let agents: std::collections::BTreeSet<&str> = scores.iter().map(|s| s.agent.as_str()).collect();
    let mut out = Vec::new();
    for agent in agents {
        for metric in METRICS {
            if let (Some(before), Some(after)) = (mean(&automatic, agent, metric), mean(scores, agent, metric))
                && (before - after).abs() > 1e-12
            {
                out.push((agent.to_string(), metric.as_str().to_string(), before, after));
            }
        }
    }
    out
}
