//! Power before launch: what a planned run can detect (see `server::runs::power`).

use serde::{Deserialize, Serialize};

/// What one figure's comparisons rest on, and what they can detect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerFigure {
    /// `acc_dec` (L0 trials) or `robustness` (manipulated trials against their twins).
    pub metric: String,
    /// Paired trials expected to enter one comparison of two configurations: the planned
    /// pairs, times the share that entered a past run's comparisons where one is given.
    pub pairs: usize,
    /// Paired trials the plan holds per comparison.
    pub planned_pairs: usize,
    /// Tasks the corpus holds in the plan's domains (what "tasks needed" can draw on).
    pub available_tasks: usize,
    /// Task families they fall in (the resampled clusters).
    pub families: usize,
    /// As many families of equal size would give the same precision when a family's trials
    /// are alike: 1 / Σ (share of the pairs in each family)². Families of unequal size count
    /// as fewer than they are.
    #[serde(default)]
    pub effective_families: f64,
    /// Distinct tasks.
    pub tasks: usize,
    /// Paired trials per task (conditions × seeds, × manipulated levels for robustness).
    pub per_task: usize,
    /// Seeds of the plan.
    pub seeds: usize,
    /// σ² of one paired difference.
    pub variance: f64,
    /// ρ as (lowest, highest): equal when estimated from a past run.
    pub icc: (f64, f64),
    /// The smallest detectable difference at the lowest and the highest ρ.
    pub detectable: (f64, f64),
    /// For a target difference: what reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed: Option<PowerNeeded>,
}

/// What a target difference needs, at the lowest and the highest ρ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerNeeded {
    pub target: f64,
    /// Tasks (with the plan's seeds and conditions, in families of the plan's size).
    pub tasks: (usize, usize),
    /// Seeds with the plan's tasks; `None` where no number of seeds reaches the target
    /// (the families' own spread sets a floor more seeds cannot lower).
    pub seeds: (Option<usize>, Option<usize>),
}

/// The power of a planned run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Power {
    /// Trials the plan holds (clean twins included).
    pub trials: usize,
    pub configurations: usize,
    /// Comparisons between configurations (each pair of them; 1 for one or two).
    pub comparisons: usize,
    /// α per comparison and the power asked for.
    pub alpha: f64,
    pub power: f64,
    /// Where σ² and ρ come from, in words.
    pub basis: String,
    pub figures: Vec<PowerFigure>,
}
