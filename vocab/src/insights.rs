//! Wire types of the leaderboard, the robustness plot and the heatmaps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RunId;

/// A mean with its 95 % interval and the observations behind it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Est {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
    /// The spread could not be measured (a domain or dataset with one cluster): `lo` and
    /// `hi` repeat the mean and are no interval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_interval: bool,
    /// The least coverage this interval has at its cluster counts, where that is below
    /// 93 %: were one domain alone to vary, its few clusters would give the interval fewer
    /// degrees of freedom than the design's. Printed beside the interval (not widened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
}

impl Est {
    /// The interval as printed: `[lo, hi]` with `digits` decimals, or `[no interval]`,
    /// followed by its coverage where that falls short.
    pub fn bracket(&self, digits: usize) -> String {
        self.bracket_by(|v| format!("{v:.digits$}"))
    }

    /// [`Est::bracket`] with each bound written by `bound` (dollars, say).
    pub fn bracket_by(&self, bound: impl Fn(f64) -> String) -> String {
        if self.no_interval {
            "[no interval]".to_string()
        } else {
            format!("[{}, {}]{}", bound(self.lo), bound(self.hi), covers(self.coverage))
        }
    }
}

/// What follows an interval whose coverage, simulated at its own clusters, may fall short:
/// ` (may cover only ≈77 % at these clusters)`, or nothing.
pub fn covers(coverage: Option<f64>) -> String {
    coverage.map(|c| format!(" (may cover only ≈{:.0} % at these clusters)", (c * 100.0).floor())).unwrap_or_default()
}

/// The point in the label history a figure page shows. Every person's label is an event
/// with an increasing id, the label generation; a page asked for `as_of=G` (or a time,
/// which means the generation recorded by then) reads the events up to G only, so a link
/// that names it shows the same figures whatever is labelled later.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOf {
    /// The newest label event the figures read (0: none yet).
    pub generation: i64,
    /// When that event was recorded (ms since the epoch).
    pub at: Option<i64>,
    /// Whether the URL fixed the generation (`as_of=`); otherwise it is the newest.
    pub pinned: bool,
    /// People's label events on the run's trials recorded after the generation.
    pub newer: usize,
    /// The run is still under way: trials finished later join the figures even when pinned.
    pub run_active: bool,
}

impl AsOf {
    /// The URL query value that pins these figures.
    pub fn param(&self) -> String {
        self.generation.to_string()
    }
}

/// Which numbers to show. Every field comes from the URL query.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardQuery {
    /// The run; the latest run with finished trials when absent.
    pub run: Option<String>,
    /// `default`, `strict` or `loose` decision accuracy.
    pub tier: Option<String>,
    /// Break the table down by `domain`, `condition` or `level`.
    pub by: Option<String>,
    /// People's labels as they stood at this label generation or time (see [`AsOf`]).
    #[serde(default)]
    pub as_of: Option<String>,
}

/// One configuration's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardRow {
    pub agent: String,
    /// Tie band on utility: rows in one band are not significantly different.
    pub band: usize,
    pub trials: usize,
    pub errors: usize,
    /// `errors / trials` (failures stay in every mean).
    #[serde(default)]
    pub error_rate: f64,
    /// Trials whose figures rest on what a file says (imported), not on what Mirage ran or
    /// watched over HTTP: all of them make a self-reported row, some a mixed one.
    #[serde(default)]
    pub self_reported: usize,
    /// Trials whose line said what the scorer derives otherwise (the derived values are scored).
    #[serde(default)]
    pub disagreeing: usize,
    /// Cells of the set's design this row's configuration lacks or holds an unusual number
    /// of seeds of: its figures read other tasks than the other rows'.
    #[serde(default)]
    pub design_gaps: usize,
    /// Why, when `design_gaps` is not 0.
    #[serde(default)]
    pub design_note: Option<String>,
    /// Labels still disputed (not settled by a person).
    pub disputed: usize,
    /// Metric → estimate (`None` where the metric does not apply).
    pub cells: BTreeMap<String, Option<Est>>,
    /// pass^k for k = 1 … seeds (empty with one seed).
    #[serde(default)]
    pub pass_k: Vec<f64>,
}

/// How the adoption rule fares against the causal label (clean-level replays) over one
/// configuration's replayed trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CausalView {
    pub agent: String,
    pub replayed: usize,
    pub caused: usize,
    pub precision: Option<Est>,
    pub recall: Option<Est>,
}

/// A paired comparison of two configurations on shared L0 trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairView {
    pub a: String,
    pub b: String,
    pub diff: f64,
    pub lo: f64,
    pub hi: f64,
    /// No interval could be measured (a domain with one cluster): `lo` and `hi` repeat
    /// the difference.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_interval: bool,
    /// The interval's least coverage at its cluster counts, where below 93 % (see `Est`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    pub n: usize,
    pub p: f64,
    pub p_holm: f64,
}

/// A computation a page is waiting for (scoring a run's new trials, an aggregate). The page
/// shows what is ready with this line and asks again until it is gone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// What is being computed, e.g. "Scoring trials".
    pub what: String,
    /// Progress where it is counted (`total` 0 when it is not).
    pub done: u64,
    pub total: u64,
    /// The numbers shown are from before the latest trials or labels (`false`: nothing is
    /// shown yet).
    pub stale: bool,
}

/// The name of the judge-less reasoning grade (gold facts cited from pages seen), as judge
/// versions carry it: its figures are not comparable with a model judge's.
pub const FALLBACK_RSN_JUDGE: &str = "seen-fact-coverage";

/// The leaderboard of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    pub run: RunId,
    /// Runs that can be chosen instead (newest first).
    pub runs: Vec<RunId>,
    pub tier: String,
    /// Metric columns in display order.
    pub columns: Vec<String>,
    pub rows: Vec<BoardRow>,
    pub by: Option<String>,
    /// (value of the breakdown field, rows) when broken down.
    pub breakdown: Vec<(String, Vec<BoardRow>)>,
    pub pairs: Vec<PairView>,
    pub judges: Vec<String>,
    /// When the figures shown were computed (ms since the epoch; `None` while nothing is).
    #[serde(default)]
    pub as_of: Option<i64>,
    /// Labels a person settled in this run.
    pub human_labels: usize,
    /// Cohen's κ between automatic and human labels: (kind, n, κ).
    pub agreement: Vec<(String, usize, Option<f64>)>,
    /// The adoption rule against the causal label of replayed trials, per configuration.
    #[serde(default)]
    pub causal: Vec<CausalView>,
    /// The reasoning judge against people's grades.
    pub validation: Validation,
    /// Each grader measured against people, shown beside the column it produces.
    #[serde(default)]
    pub checks: Vec<GraderCheck>,
    /// Set while the numbers are being computed.
    #[serde(default)]
    pub pending: Option<Pending>,
    /// The label generation the figures read.
    #[serde(default)]
    pub frozen: AsOf,
}

/// Below this many pairs (graded trials, labels settled by people) agreement numbers are
/// shown as too few to read.
pub const MIN_AGREEMENT_N: usize = 10;

/// Agreement between the reasoning judge and people who graded trials of a run (each
/// person's latest grade of a trial counts once).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Graded trials paired with a judge's Acc_rsn (each once, however many people graded it).
    pub n: usize,
    /// People's grades behind those trials (each person's latest grade of a trial).
    #[serde(default)]
    pub grades: usize,
    /// The judges behind the automatic Acc_rsn of those trials.
    pub judges: Vec<String>,
    pub pearson: Option<f64>,
    /// Cohen's κ on the rubric bands (1.0; 0.7–0.9; 0.4–0.6; 0.1–0.3; 0.0).
    pub kappa_bands: Option<f64>,
    /// Graded trials with a scored decision and a call most of their people made.
    pub decision_n: usize,
    /// The share of those where people's call equals the rules' (from Acc_dec).
    pub decision_agreement: Option<f64>,
    /// `n` reaches [`MIN_AGREEMENT_N`]: the numbers can be read.
    pub enough: bool,
    /// 95 % interval of `pearson` (Fisher's z).
    #[serde(default)]
    pub pearson_ci: Option<(f64, f64)>,
    /// 95 % interval of `decision_agreement` (Wilson).
    #[serde(default)]
    pub decision_ci: Option<(f64, f64)>,
}

/// One grader measured against people: the figure it produces (a leaderboard column's
/// metric), what it was compared with, and the statistic with its interval and n.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraderCheck {
    /// The metric the grader produces (`exposure`, `acc_rsn`, `acc_dec`, …).
    pub metric: String,
    /// Who produces it: `rules`, or the model judge's name and prompt version.
    pub grader: String,
    /// What it is measured against, in words.
    pub against: String,
    /// `precision`, `recall`, `pearson_r` or `agreement`.
    pub statistic: String,
    /// Pairs compared.
    pub n: usize,
    /// The statistic with its 95 % interval; `None` where it is undefined (nothing the
    /// grader flagged, no person's yes, a side that does not vary).
    pub value: Option<Est>,
    /// `n` reaches [`MIN_AGREEMENT_N`]: the value can be read.
    pub enough: bool,
    /// Why the value is missing or says little, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl GraderCheck {
    /// A short form for a table cell: `precision 0.92 [0.81, 0.97] (n 40)`, or why not.
    pub fn short(&self) -> String {
        let name = match self.statistic.as_str() {
            "pearson_r" => "r",
            other => other,
        };
        match (&self.value, self.enough) {
            (_, false) => format!("{name}: n {} < {MIN_AGREEMENT_N}", self.n),
            (None, true) => format!("{name}: undefined (n {}){}", self.n, if self.note.is_some() { " †" } else { "" }),
            (Some(v), true) => format!("{name} {:.2} {} (n {})", v.mean, v.bracket(2), self.n),
        }
    }
}

/// One configuration on the robustness–utility plane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParetoPoint {
    pub agent: String,
    pub utility: Est,
    pub robustness: Est,
    /// No other configuration is at least as good on both axes and better on one.
    pub frontier: bool,
}

/// The robustness page's data: the points, and the plot drawn on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Robustness {
    pub run: RunId,
    pub runs: Vec<RunId>,
    /// `pooled` or a level (`L1` … `L4`).
    pub level: String,
    pub levels: Vec<crate::TrialLevel>,
    pub points: Vec<ParetoPoint>,
    /// Configurations left out for lack of L0 or manipulated trials.
    pub missing: Vec<String>,
    /// The plot as an SVG document (escaped text only).
    pub svg: String,
    /// Set while the numbers are being computed.
    #[serde(default)]
    pub pending: Option<Pending>,
    /// Utility against cost per trial, for the configurations whose cost is known.
    #[serde(default)]
    pub costs: Vec<CostPoint>,
    /// That plot (none when no configuration's cost is known).
    #[serde(default)]
    pub cost_svg: Option<String>,
    /// The label generation the figures read.
    #[serde(default)]
    pub frozen: AsOf,
}

/// One configuration on the utility–cost plane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostPoint {
    pub agent: String,
    pub utility: Est,
    /// US dollars per trial.
    pub cost: Est,
    /// No other configuration is as cheap or cheaper and at least as useful, and better on one.
    pub frontier: bool,
}

/// Which heatmap to draw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeatQuery {
    pub run: Option<String>,
    /// `attack_success`, `acc_dec`, `exposure`, `verification` or `recovery`.
    pub metric: Option<String>,
    /// Columns: `agent`, `domain` or `category`.
    pub by: Option<String>,
    /// People's labels as they stood at this label generation or time (see [`AsOf`]).
    #[serde(default)]
    pub as_of: Option<String>,
}

/// One cell of a heatmap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeatCell {
    pub level: crate::TrialLevel,
    pub column: String,
    pub est: Option<Est>,
    /// Too few observations (or too wide an interval) to read.
    pub underpowered: bool,
    /// Trials in the cell, and those that ended in error (they stay in the mean).
    #[serde(default)]
    pub trials: usize,
    #[serde(default)]
    pub errors: usize,
}

/// A level × column heatmap of one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heatmap {
    pub run: RunId,
    pub runs: Vec<RunId>,
    pub metric: String,
    pub by: String,
    pub levels: Vec<crate::TrialLevel>,
    pub columns: Vec<String>,
    pub cells: Vec<HeatCell>,
    /// Cells with fewer observations than this are greyed.
    pub min_n: usize,
    /// Set while the numbers are being computed.
    #[serde(default)]
    pub pending: Option<Pending>,
    /// The label generation the figures read.
    #[serde(default)]
    pub frozen: AsOf,
}
