//! The paper's tables of one run (the `/report` page and `mirage report --json`). The
//! server builds them in `judge::report` with these very types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Est, RunId};

/// One row of a table: the group's key (agent, domain, maybe category), its trial count and
/// one estimate per metric of the table (`None` where no trial applies).
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
    /// Trials that ended in error (they stay in every mean, scored 0 on decision and reasoning).
    #[serde(default)]
    pub errors: usize,
    /// Trials whose figures rest on what a file says (imported), not on what Mirage ran or
    /// watched: all of them make a self-reported row, some a mixed one.
    #[serde(default)]
    pub self_reported: usize,
    pub metrics: BTreeMap<String, Option<Est>>,
    /// Pooled rows: each metric as a share of all the row's trajectories (no domain weighting).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trajectory_weighted: BTreeMap<String, f64>,
}

/// The Hint − Raw change of one metric for one configuration on one domain, over trials
/// paired by (task, level, seed), with its interval over task families and t-test p-value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportDelta {
    pub agent: String,
    pub domain: String,
    pub metric: String,
    pub diff: Est,
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
    pub run: RunId,
    pub trials: usize,
    /// The trials behind the main and category tables and the Hint − Raw deltas' level.
    #[serde(default)]
    pub slice: ReportSlice,
    /// Trials in that slice.
    #[serde(default)]
    pub slice_trials: usize,
    /// The reasoning judges behind Acc_rsn and Q_ev.
    #[serde(default)]
    pub rsn_judges: Vec<String>,
    /// Some Acc_rsn and Q_ev figures come from the judge-less fallback (seen gold facts),
    /// which is not comparable with a model judge's grades.
    #[serde(default)]
    pub rsn_fallback: bool,
    /// Per configuration, the slice pooled over domains: the main metrics domain-equal, and as shares
    /// of trajectories.
    #[serde(default)]
    pub pooled: Vec<ReportRow>,
    /// Per configuration × domain: the main metrics.
    pub main: Vec<ReportRow>,
    /// Hint − Raw per configuration × domain × the compared metrics (where both conditions ran).
    pub hint_minus_raw: Vec<ReportDelta>,
    /// The (configuration, domain) cells whose Hint − Raw deltas are withheld, and why: some
    /// trials have no partner in the other condition.
    #[serde(default)]
    pub hint_minus_raw_withheld: Vec<String>,
    /// Per configuration × domain × category: the main metrics.
    pub categories: Vec<ReportRow>,
    pub domains: Vec<DomainCheck>,
    /// Per configuration: the appeal rates (where the run had appeals), domain-equal and as
    /// shares of trajectories.
    pub appeals: Vec<ReportRow>,
    /// Per configuration × domain: the appeal rates.
    #[serde(default)]
    pub appeals_by_domain: Vec<ReportRow>,
    /// Appeal outcomes counted per configuration, domain and kind.
    #[serde(default)]
    pub appeal_counts: Vec<AppealCount>,
    /// Per configuration × whether the task's surface contradicts its evidence: the main metrics on
    /// the slice (how decisions collapse when the surface misleads).
    #[serde(default)]
    pub contradiction: Vec<ContradictionRow>,
    /// Per configuration × domain: the adequacy lift, Default − Strict mean Acc_dec.
    #[serde(default)]
    pub adequacy: Vec<Adequacy>,
    /// Per configuration × domain: the graph-node jackknife of Acc_inv.
    #[serde(default)]
    pub jackknife: Vec<DomainJackknife>,
    /// Per configuration: decision right or wrong against reasoning sound or not.
    #[serde(default)]
    pub joint: Vec<Joint>,
    /// Each grader against people on the run's trials (labels settled, reasoning graded).
    #[serde(default)]
    pub checks: Vec<super::GraderCheck>,
    /// Figures of the paper this report does not reproduce, and why.
    #[serde(default)]
    pub not_reproduced: Vec<String>,
    /// Per configuration and level at the slice's condition: goal rate and the paired
    /// metrics against clean twins.
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
    /// L0-versus-L0 flip rate between samples of one cell.
    pub noise_floor: Option<Est>,
    /// pass^k for k = 1 … samples.
    pub pass_k: Vec<f64>,
}

/// How many appeals of one kind ended each way, for one configuration and domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppealCount {
    pub agent: String,
    pub domain: String,
    /// `deceptive` or `helpful`.
    pub kind: String,
    /// `kept`, `partial`, `reversed` or `failed` → trials.
    pub outcomes: BTreeMap<String, usize>,
}

/// the main metrics for one configuration on tasks whose surface does (`yes`) or does not (`no`)
/// contradict the hidden evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContradictionRow {
    pub agent: String,
    pub contradiction: String,
    pub trials: usize,
    pub errors: usize,
    pub metrics: BTreeMap<String, Option<Est>>,
}

/// What partial credit adds to a configuration's decision accuracy on a domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adequacy {
    pub agent: String,
    pub domain: String,
    pub default: f64,
    pub strict: f64,
    /// Default − Strict.
    pub lift: f64,
}

/// The graph-node jackknife of Acc_inv for one configuration on one domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainJackknife {
    pub domain: String,
    pub agent: String,
    pub full: f64,
    pub jackknife_mean: f64,
    /// Average min–max swing across the leave-one-out replicates of a trial.
    pub mean_range: f64,
}

/// Decision against reasoning for one configuration: trials whose verdict earned credit or
/// not, crossed with an Acc_rsn in the rubric's middle band or above (sound) or not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Joint {
    pub agent: String,
    pub right_sound: usize,
    pub right_unsound: usize,
    pub wrong_sound: usize,
    pub wrong_unsound: usize,
}

/// Which trials the main and category tables show: a condition and a level, or `all` of
/// either. The paper's Table 1 is Raw, clean (the default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportSlice {
    /// `raw`, `hint`, `evidence_anchored`, or `all`.
    pub condition: String,
    /// `L0` … `L4`, or `all`.
    pub level: String,
}

impl Default for ReportSlice {
    fn default() -> Self {
        ReportSlice { condition: "raw".to_string(), level: "L0".to_string() }
    }
}

/// The report page's data: the report and the runs to pick from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportView {
    pub runs: Vec<RunId>,
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
    /// The label generation the figures read.
    #[serde(default)]
    pub frozen: super::AsOf,
}
