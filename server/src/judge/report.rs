//! The MIRAGE paper's tables from the scores of one run: the main table per configuration
//! and domain, Hint − Raw deltas with paired intervals, per-category tables, the agreement
//! of the Default and Strict decision rankings per domain, the graph-node jackknife per
//! domain, and the appeal rates. Pure: scores in, a serialisable [`Report`] out; `mirage
//! report` prints it and the dashboard's `/report` page shows the same numbers.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::TrialScore;
use super::aggregate::{JackknifeRow, Metric, Options, contribution, groups, jackknife_row};
use crate::stats::{self, Estimate, Obs};

/// The main table's metrics, in column order.
pub const MAIN: [Metric; 8] = [
    Metric::AccInv,
    Metric::EInv,
    Metric::AccRsn,
    Metric::QEv,
    Metric::AccDec,
    Metric::AccDecStrict,
    Metric::AccDecLoose,
    Metric::Hallucination,
];

/// The metrics whose Hint − Raw change is reported.
pub const DELTAS: [Metric; 4] = [Metric::AccInv, Metric::EInv, Metric::AccRsn, Metric::AccDec];

/// The appeal rates.
pub const APPEALS: [Metric; 4] =
    [Metric::Sycophancy, Metric::SycophancyPartial, Metric::Correction, Metric::CorrectionPartial];

/// One row of a table: the group's key (agent, domain, maybe category), its trial count and
/// one estimate per metric of the table (`None` where no trial applies).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub trials: usize,
    pub metrics: BTreeMap<String, Option<Estimate>>,
}

/// The Hint − Raw change of one metric for one configuration on one domain, over trials
/// paired by (task, level, seed), with its clustered bootstrap interval and Wald p-value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub agent: String,
    pub domain: String,
    pub metric: String,
    pub diff: Estimate,
    pub p: f64,
}

/// How a domain's ranking of configurations holds up: Default against Strict decision
/// accuracy, and Acc_inv against its graph-node jackknife.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainCheck {
    pub domain: String,
    /// Configurations ranked.
    pub n: usize,
    /// Spearman's ρ between the Default and Strict Acc_dec rankings.
    pub default_vs_strict: Option<f64>,
    /// Spearman's ρ between the full and the leave-one-node-out mean Acc_inv rankings.
    pub jackknife_rho: Option<f64>,
    /// The largest swing: over configurations, the mean (over trials) of the range of
    /// Acc_inv across the leave-one-node-out replicates.
    pub jackknife_swing: Option<f64>,
}

/// The paper's tables for one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub run: String,
    pub trials: usize,
    pub resamples: usize,
    pub seed: u64,
    /// Per configuration × domain: [`MAIN`].
    pub main: Vec<Row>,
    /// Hint − Raw per configuration × domain × [`DELTAS`] (where both conditions ran).
    pub hint_minus_raw: Vec<Delta>,
    /// Per configuration × domain × category: [`MAIN`].
    pub categories: Vec<Row>,
    pub domains: Vec<DomainCheck>,
    /// Per configuration: [`APPEALS`] (where the run had appeals).
    pub appeals: Vec<Row>,
}

fn rows(
    scores: &[TrialScore],
    run: &str,
    by: &[&str],
    metrics: &[Metric],
    options: &Options,
) -> anyhow::Result<Vec<Row>> {
    let options =
        Options { by: by.iter().map(ToString::to_string).collect(), metrics: metrics.to_vec(), ..options.clone() };
    Ok(groups(scores, run, &options)?
        .into_iter()
        .map(|g| Row {
            agent: g.key.get("agent").cloned().unwrap_or_default(),
            domain: g.key.get("domain").cloned(),
            category: g.key.get("category").cloned(),
            trials: g.trials,
            metrics: g.metrics,
        })
        .collect())
}

/// A stable seed per label, so that a delta's interval does not depend on report order.
fn seed_of(seed: u64, label: &str) -> u64 {
    label.bytes().fold(seed ^ 0x9e37_79b9_7f4a_7c15, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn deltas(scores: &[TrialScore], options: &Options) -> Vec<Delta> {
    // (agent, domain, task, level, seed) → (raw, hint)
    type Key<'a> = (&'a str, &'a str, &'a str, &'a str, i64);
    let mut pairs: BTreeMap<Key<'_>, (Option<&TrialScore>, Option<&TrialScore>)> = BTreeMap::new();
    for s in scores.iter().filter(|s| s.status == "done") {
        let key = (s.agent.as_str(), s.domain.as_str(), s.task_id.as_str(), s.level.as_str(), s.seed);
        let slot = pairs.entry(key).or_default();
        match s.condition.as_str() {
            "raw" => slot.0 = Some(s),
            "hint" => slot.1 = Some(s),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let cells: BTreeSet<(&str, &str)> = pairs.keys().map(|k| (k.0, k.1)).collect();
    for (agent, domain) in cells {
        for metric in DELTAS {
            let diffs: Vec<Obs> = pairs
                .iter()
                .filter(|(k, _)| k.0 == agent && k.1 == domain)
                .filter_map(|(_, (raw, hint))| {
                    let (raw, hint) = ((*raw)?, (*hint)?);
                    let (r, _) = contribution(raw, metric)?;
                    let (h, _) = contribution(hint, metric)?;
                    Some(Obs::value(&raw.domain, &raw.family, h - r))
                })
                .collect();
            let label = format!("{agent}/{domain}/{}", metric.as_str());
            if let Some(p) = stats::paired(&diffs, options.resamples, seed_of(options.seed, &label)) {
                out.push(Delta {
                    agent: agent.to_string(),
                    domain: domain.to_string(),
                    metric: metric.as_str().to_string(),
                    diff: p.diff,
                    p: p.p,
                });
            }
        }
    }
    out
}

fn domain_checks(scores: &[TrialScore], main: &[Row]) -> Vec<DomainCheck> {
    let domains: BTreeSet<&str> = main.iter().filter_map(|r| r.domain.as_deref()).collect();
    domains
        .into_iter()
        .map(|domain| {
            let rows: Vec<&Row> = main.iter().filter(|r| r.domain.as_deref() == Some(domain)).collect();
            let mean = |r: &Row, m: Metric| r.metrics.get(m.as_str()).copied().flatten().map(|e| e.mean);
            let tiers: Vec<(f64, f64)> =
                rows.iter().filter_map(|r| Some((mean(r, Metric::AccDec)?, mean(r, Metric::AccDecStrict)?))).collect();
            let jack: Vec<JackknifeRow> = rows
                .iter()
                .filter_map(|r| {
                    let trials: Vec<&TrialScore> = scores
                        .iter()
                        .filter(|s| s.agent == r.agent && s.domain == domain && s.acc_inv.is_some())
                        .collect();
                    jackknife_row(&r.agent, &trials)
                })
                .collect();
            DomainCheck {
                domain: domain.to_string(),
                n: rows.len(),
                default_vs_strict: stats::spearman(
                    &tiers.iter().map(|t| t.0).collect::<Vec<_>>(),
                    &tiers.iter().map(|t| t.1).collect::<Vec<_>>(),
                ),
                jackknife_rho: stats::spearman(
                    &jack.iter().map(|j| j.full).collect::<Vec<_>>(),
                    &jack.iter().map(|j| j.jackknife_mean).collect::<Vec<_>>(),
                ),
                jackknife_swing: jack.iter().map(|j| j.mean_range).reduce(f64::max),
            }
        })
        .collect()
}

/// The report of one run's scores. `options` gives the bootstrap resamples and seed.
pub fn report(scores: &[TrialScore], run: &str, options: &Options) -> anyhow::Result<Report> {
    let main = rows(scores, run, &["agent", "domain"], &MAIN, options)?;
    let categories = rows(scores, run, &["agent", "domain", "category"], &MAIN, options)?;
    let appeals: Vec<Row> = rows(scores, run, &["agent"], &APPEALS, options)?
        .into_iter()
        .filter(|r| r.metrics.values().any(Option::is_some))
        .collect();
    Ok(Report {
        run: run.to_string(),
        trials: scores.len(),
        resamples: options.resamples,
        seed: options.seed,
        hint_minus_raw: deltas(scores, options),
        domains: domain_checks(scores, &main),
        main,
        categories,
        appeals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(agent: &str, task: &str, condition: &str, acc_dec: f64, strict: f64) -> TrialScore {
        let line = serde_json::json!({
            "trial_id": format!("{agent}-{task}-{condition}"), "task_id": task, "agent": agent,
            "level": "L0", "condition": condition, "seed": 0, "domain": "shop", "category": "C",
            "family": task, "status": "done", "error": null, "steps": 3, "verdict": "DENY",
            "acc_inv": if condition == "hint" { 1.0 } else { 0.5 }, "acc_inv_jackknife": [0.4, 0.6],
            "e_inv": 0.5, "acc_dec": {"default": acc_dec, "strict": strict, "loose": 1.0},
            "acc_rsn": 0.5, "q_ev": 3.0, "hallucinated": false, "fabricated_url": false,
            "synthetic_detail": false, "claims": [], "outcome": "clean-correct", "judge_version": "t"
        });
        serde_json::from_value(line).expect("score")
    }

    #[test]
    fn the_report_pairs_hint_with_raw_and_checks_the_rankings() {
        let mut scores = Vec::new();
        for (agent, dec, strict) in [("a", 1.0, 1.0), ("b", 0.8, 0.0), ("c", 0.0, 0.0)] {
            for t in ["t1", "t2", "t3"] {
                scores.push(score(agent, t, "raw", dec, strict));
                scores.push(score(agent, t, "hint", dec, strict));
            }
        }
        let options = Options { resamples: 200, ..Options::default() };
        let r = report(&scores, "run", &options).expect("report");
        assert_eq!(r.main.len(), 3);
        assert_eq!(r.main[0].metrics["q_ev"].map(|e| e.mean), Some(3.0));
        let d = r.hint_minus_raw.iter().find(|d| d.agent == "a" && d.metric == "acc_inv").expect("delta");
        assert!((d.diff.mean - 0.5).abs() < 1e-9 && d.diff.n == 3, "{d:?}");
        let check = &r.domains[0];
        assert_eq!((check.domain.as_str(), check.n), ("shop", 3));
        assert!(check.default_vs_strict.is_some_and(|rho| rho > 0.8), "{check:?}");
        assert!(check.jackknife_swing.is_some_and(|s| (s - 0.2).abs() < 1e-9), "{check:?}");
        assert!(r.appeals.is_empty(), "no appeals in this run");
        assert_eq!(r.categories.len(), 3);
    }
}
