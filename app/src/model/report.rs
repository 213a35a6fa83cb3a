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
    pub trials: usize,
    pub metrics: BTreeMap<String, Option<Est>>,
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
}

/// The report page's data: the report and the runs to pick from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportView {
    pub runs: Vec<String>,
    /// Metric columns of the main and category tables, in order.
    pub columns: Vec<String>,
    /// Metric columns of the appeals table.
    pub appeal_columns: Vec<String>,
    pub report: Report,
    /// Set while the numbers are being computed.
    #[serde(default)]
    pub pending: Option<super::Pending>,
}
