//! Two runs or configurations compared trial by trial (`mirage compare`, `/compare`): one
//! definition for the server and the page.

use serde::{Deserialize, Serialize};

use super::TrialId;

/// A difference with its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// No interval could be measured (a domain with one cluster): `lo` and `hi` repeat
    /// the difference.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_interval: bool,
    /// The interval's least coverage at its cluster counts, where below 93 % (see `Est`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
}

/// One metric on the paired trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricDiff {
    pub metric: String,
    /// a's and b's equal-domain means over the pairs that have the metric.
    pub a: f64,
    pub b: f64,
    /// b − a.
    pub diff: Diff,
    /// Holm-adjusted over the metrics compared; `None` when a domain has fewer than two
    /// scenario families among the pairs (no spread to resample: the interval is then
    /// degenerate and no test is made).
    pub p: Option<f64>,
    /// Pairs that have the metric on both sides.
    pub n: usize,
    /// The fewest scenario families (the intervals' clusters) of any domain among those pairs.
    pub clusters: usize,
}

/// A pair whose verdicts differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Changed {
    pub task_id: String,
    pub agent: String,
    pub level: crate::TrialLevel,
    pub condition: crate::TrialCondition,
    pub seed: i64,
    pub a_trial: TrialId,
    pub b_trial: TrialId,
    pub a_verdict: Option<String>,
    pub b_verdict: Option<String>,
    /// `improvement` or `regression` by Acc_dec (default tier), else `changed`.
    pub direction: String,
}

/// The comparison of a against b.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub pairs: usize,
    /// Trials of each side left unpaired (no trial of the other side under the same key).
    pub unpaired_a: usize,
    pub unpaired_b: usize,
    /// Paired trials that ended in error, on each side (they stay in every mean).
    pub errors_a: usize,
    pub errors_b: usize,
    /// Trials of each side not finished (queued, running or cancelled): left out of the
    /// comparison, which reads finished trials only.
    #[serde(default)]
    pub unfinished_a: usize,
    #[serde(default)]
    pub unfinished_b: usize,
    pub metrics: Vec<MetricDiff>,
    pub changed: Vec<Changed>,
    /// Paired trials of each side whose figures rest on what a file says (imported), not on
    /// what Mirage ran or watched.
    #[serde(default)]
    pub self_reported_a: usize,
    #[serde(default)]
    pub self_reported_b: usize,
    /// The label generation the figures read.
    #[serde(default)]
    pub frozen: super::AsOf,
}
