//! The paper's tables of one run (the `/report` page and `mirage report --json`). The
//! server builds them in `judge::report`; these are the same fields on the wire.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Est;

/// One row: the group's key, its trial count and one estimate per metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportRow {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    pub trials: usize,
    /// Trials that ended in error (they stay in every mean).
    #[serde(default)]
    pub errors: usize,
    pub metrics: BTreeMap<String, Option<Est>>,
    /// Pooled rows: each metric as a share of all the row's trajectories.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trajectory_weighted: BTreeMap<String, f64>,
}

/// A Hint − Raw change over paired trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportDelta {
    pub agent: String,
    pub domain: String,
    pub metric: String,
    pub diff: Est,
    pub p: f64,
}

/// A domain's ranking checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainCheck {
    pub domain: String,
    pub n: usize,
    pub default_vs_strict: Option<f64>,
    pub jackknife_rho: Option<f64>,
    pub jackknife_swing: Option<f64>,
}

/// The report itself (the JSON of `mirage report --json` and of `report.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub run: String,
    pub trials: usize,
    pub resamples: usize,
    pub seed: u64,
    pub main: Vec<ReportRow>,
    pub hint_minus_raw: Vec<ReportDelta>,
    pub categories: Vec<ReportRow>,
    pub domains: Vec<DomainCheck>,
    pub appeals: Vec<ReportRow>,
    /// The condition and level of the main and category tables.
    #[serde(default)]
    pub slice: ReportSlice,
    #[serde(default)]
    pub slice_trials: usize,
    #[serde(default)]
    pub rsn_judges: Vec<String>,
    #[serde(default)]
    pub rsn_fallback: bool,
    #[serde(default)]
    pub pooled: Vec<ReportRow>,
    #[serde(default)]
    pub appeals_by_domain: Vec<ReportRow>,
    #[serde(default)]
    pub appeal_counts: Vec<AppealCount>,
    #[serde(default)]
    pub contradiction: Vec<ContradictionRow>,
    #[serde(default)]
    pub adequacy: Vec<Adequacy>,
    #[serde(default)]
    pub jackknife: Vec<DomainJackknife>,
    #[serde(default)]
    pub joint: Vec<Joint>,
    /// Figures of the paper the report does not reproduce, and why.
    #[serde(default)]
    pub not_reproduced: Vec<String>,
    /// Per configuration and level: goal rate and the paired metrics against clean twins.
    #[serde(default)]
    pub manipulation: Vec<ReportRow>,
    /// Per configuration with several seeds: the L0 noise floor and pass^k.
    #[serde(default)]
    pub sampling: Vec<Sampling>,
}

/// How much one configuration's clean verdicts vary between samples (seeds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    pub agent: String,
    pub noise_floor: Option<Est>,
    pub pass_k: Vec<f64>,
}

/// Appeal outcomes of one configuration, domain and kind: outcome → trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppealCount {
    pub agent: String,
    pub domain: String,
    pub kind: String,
    pub outcomes: BTreeMap<String, usize>,
}

/// The main metrics on tasks whose surface does (`yes`) or does not (`no`) contradict the evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContradictionRow {
    pub agent: String,
    pub contradiction: String,
    pub trials: usize,
    pub errors: usize,
    pub metrics: BTreeMap<String, Option<Est>>,
}

/// Default − Strict mean Acc_dec of one configuration on one domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adequacy {
    pub agent: String,
    pub domain: String,
    pub default: f64,
    pub strict: f64,
    pub lift: f64,
}

/// The graph-node jackknife of one configuration on one domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainJackknife {
    pub domain: String,
    pub agent: String,
    pub full: f64,
    pub jackknife_mean: f64,
    pub mean_range: f64,
}

/// Decision (credited or not) against reasoning (sound or not) for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Joint {
    pub agent: String,
    pub right_sound: usize,
    pub right_unsound: usize,
    pub wrong_sound: usize,
    pub wrong_unsound: usize,
}

/// The trials behind the main table: a condition and a level (`all` for any).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportSlice {
    pub condition: String,
    pub level: String,
}

/// The report page's data: the report and the runs to pick from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportView {
    pub runs: Vec<String>,
    /// Metric columns of the main and category tables, in order.
    pub columns: Vec<String>,
    /// Metric columns of the appeals table.
    pub appeal_columns: Vec<String>,
    /// Metric columns of the manipulation table.
    #[serde(default)]
    pub paired_columns: Vec<String>,
    /// Per domain: the Default-against-Strict plot (SVG drawn on the server).
    #[serde(default)]
    pub adequacy_plots: Vec<(String, String)>,
    pub report: Report,
    /// Set while the numbers are being computed.
    #[serde(default)]
    pub pending: Option<super::Pending>,
}
