//! Two runs (or two configurations) compared trial by trial: trials are paired by (task,
//! condition, level, seed) — and by configuration when whole runs with the same
//! configurations are compared — and each per-trial metric's difference b − a is the
//! equal-domain mean over the pairs where both trials have the metric, with a paired
//! interval over scenario families and a Holm-adjusted p over the metrics.
//! A trial that ended in error stays paired and scores as the metric says (0 on Acc_dec).
//! The difference equals b's mean minus a's mean over the same pairs.

use std::collections::BTreeMap;
use std::ops::Not;

pub use vocab::{Changed, Comparison, Diff, MetricDiff};

use super::TrialScore;
use super::metric::{Metric, contribution};
use crate::stats::{self, Obs};

/// The per-trial metrics compared, in report order. Robustness is compared on the
/// manipulated trials both of whose clean twins kept away from the party's goal (where its
/// ratio's denominator is 1 on both sides): there a trial's contribution is whether it
/// kept away too.
pub const COMPARED: [Metric; 15] = [
    Metric::AccDec,
    Metric::AccDecStrict,
    Metric::AccDecLoose,
    Metric::AccInv,
    Metric::EInv,
    Metric::AccRsn,
    Metric::QEv,
    Metric::Hallucination,
    Metric::FabricatedUrl,
    Metric::SyntheticDetail,
    Metric::Exposure,
    Metric::Adoption,
    Metric::Verification,
    Metric::Recovery,
    Metric::Robustness,
];

/// Verdicts the scorer reads alike (case and surrounding space aside).
fn same_verdict(a: Option<&str>, b: Option<&str>) -> bool {
    a.map(|v| v.trim().to_lowercase()) == b.map(|v| v.trim().to_lowercase())
}

type Key<'a> = (&'a str, &'a str, &'a str, &'a str, i64);

/// The side of a comparison a failure is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// Why two sides cannot be compared; the message starts with the side's name.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Unpaired {
    pub side: Side,
    pub message: String,
}

fn keyed<'a>(
    side: &[&'a TrialScore],
    with_agent: bool,
    (name, side_at_fault): (&str, Side),
) -> Result<BTreeMap<Key<'a>, &'a TrialScore>, Unpaired> {
    let mut out = BTreeMap::new();
    for s in side {
        let agent = if with_agent { s.agent.as_str() } else { "" };
        let key = (agent, s.task_id.as_str(), s.condition.as_str(), s.level.as_str(), s.seed);
        if let Some(other) = out.insert(key, *s) {
            let message = format!(
                "{name}: trials {} and {} share task {}, level {}, condition {} and seed {}: name one configuration \
                 (RUN:CONFIG) to compare",
                other.trial_id, s.trial_id, s.task_id, s.level, s.condition, s.seed
            );
            return Err(Unpaired { side: side_at_fault, message });
        }
    }
    Ok(out)
}

/// Compares `b` with `a`. `with_agent` pairs by configuration as well (whole runs).
pub fn compare(
    (a_name, a): (&str, &[&TrialScore]),
    (b_name, b): (&str, &[&TrialScore]),
    with_agent: bool,
) -> Result<Comparison, Unpaired> {
    let (ka, kb) = (keyed(a, with_agent, (a_name, Side::A))?, keyed(b, with_agent, (b_name, Side::B))?);
    let pairs: Vec<(&TrialScore, &TrialScore)> =
        ka.iter().filter_map(|(k, sa)| kb.get(k).map(|sb| (*sa, *sb))).collect();
    if with_agent && pairs.is_empty() && !ka.is_empty() && !kb.is_empty() {
        let names = |side: &[&TrialScore]| {
            let set: std::collections::BTreeSet<&str> = side.iter().map(|s| s.agent.as_str()).collect();
            set.into_iter().collect::<Vec<_>>().join(", ")
        };
        let message = format!(
            "{b_name}: the runs pair no trial; whole runs pair configuration by configuration, and {a_name} has {} \
             while {b_name} has {}: name one configuration of each (RUN:CONFIG)",
            names(a),
            names(b)
        );
        return Err(Unpaired { side: Side::B, message });
    }
    let mut metrics = Vec::new();
    let (mut ps, mut family) = (Vec::new(), Vec::new());
    for metric in COMPARED {
        let Some((diff, holm_p)) = metric_diff(metric, &pairs) else { continue };
        if let Some(p) = holm_p {
            ps.push(p);
            family.push(metrics.len());
        }
        metrics.push(diff);
    }
    // Holm over the metrics tested whose differences vary.
    for (i, adjusted) in family.into_iter().zip(stats::holm(&ps)) {
        metrics[i].p = Some(adjusted);
    }
    let changed = changed_of(&pairs, with_agent);
    let failed = |s: &TrialScore| s.status == "error";
    Ok(Comparison {
        a: a_name.to_string(),
        b: b_name.to_string(),
        pairs: pairs.len(),
        unpaired_a: ka.len() - pairs.len(),
        unpaired_b: kb.len() - pairs.len(),
        errors_a: pairs.iter().filter(|(sa, _)| failed(sa)).count(),
        errors_b: pairs.iter().filter(|(_, sb)| failed(sb)).count(),
        unfinished_a: 0,
        unfinished_b: 0,
        metrics,
        changed,
        self_reported_a: pairs.iter().filter(|(sa, _)| sa.self_reported()).count(),
        self_reported_b: pairs.iter().filter(|(_, sb)| sb.self_reported()).count(),
        frozen: vocab::AsOf::default(),
    })
}

/// One metric's paired difference over the pairs where both trials count for it, with the
/// unadjusted p to correct with the others (`None` when it stays out of the Holm family:
/// fewer than two clusters in a domain, or a difference that never varies).
fn metric_diff(metric: Metric, pairs: &[(&TrialScore, &TrialScore)]) -> Option<(MetricDiff, Option<f64>)> {
    let (mut xa, mut xb, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    for (sa, sb) in pairs {
        let (Some((va, 1.0)), Some((vb, 1.0))) = (contribution(sa, metric), contribution(sb, metric)) else {
            continue;
        };
        xa.push(Obs::value(&sa.domain, &sa.family, va));
        xb.push(Obs::value(&sa.domain, &sa.family, vb));
        diffs.push(Obs::value(&sa.domain, &sa.family, vb - va));
    }
    let mut families: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for d in &diffs {
        families.entry(d.domain.as_ref()).or_default().insert(d.cluster.as_ref());
    }
    let clusters = families.values().map(std::collections::BTreeSet::len).min().unwrap_or(0);
    let (ea, eb, p) = (stats::mean(&xa)?, stats::mean(&xb)?, stats::paired(&diffs)?);
    let tested = clusters >= 2;
    // A difference that is the same on every pair (no spread) can never be significant: p is
    // 1 and, as Tarone's rule allows for tests that cannot reach significance, it does not
    // enlarge the family the others are corrected over.
    let varies = diffs.iter().any(|d| d.num != diffs[0].num);
    let diff = MetricDiff {
        metric: metric.as_str().to_string(),
        a: ea,
        b: eb,
        diff: Diff {
            mean: p.diff.mean,
            lo: p.diff.lo,
            hi: p.diff.hi,
            no_interval: p.diff.no_interval,
            coverage: p.diff.coverage,
        },
        p: tested.then_some(if varies { p.p } else { 1.0 }),
        n: diffs.len(),
        clusters,
    };
    Some((diff, (tested && varies).then_some(p.p)))
}

/// The pairs whose verdicts differ, each an improvement or a regression by the trials'
/// default decision credit (or "changed" where the credit is the same).
fn changed_of(pairs: &[(&TrialScore, &TrialScore)], with_agent: bool) -> Vec<Changed> {
    pairs
        .iter()
        .filter(|(sa, sb)| same_verdict(sa.verdict.as_deref(), sb.verdict.as_deref()).not())
        .map(|(sa, sb)| {
            let score = |s: &TrialScore| s.acc_dec.map_or(0.0, |d| d.default);
            let direction = match score(sb).total_cmp(&score(sa)) {
                std::cmp::Ordering::Greater => "improvement",
                std::cmp::Ordering::Less => "regression",
                std::cmp::Ordering::Equal => "changed",
            };
            Changed {
                task_id: sa.task_id.clone(),
                agent: if with_agent { sa.agent.clone() } else { format!("{} → {}", sa.agent, sb.agent) },
                level: sa.level.clone(),
                condition: sa.condition.clone(),
                seed: sa.seed,
                a_trial: sa.trial_id.clone().into(),
                b_trial: sb.trial_id.clone().into(),
                a_verdict: sa.verdict.clone(),
                b_verdict: sb.verdict.clone(),
                direction: direction.to_string(),
            }
        })
        .collect()
}
