//! The report page's data: the paper's tables of a run's scores and its adequacy plots.

use std::collections::BTreeMap;

use vocab::Est;

use super::{EngineError, fail};
use crate::judge::TrialScore;
use crate::judge::aggregate::{Metric, Options};

/// The report page's data of `scores` (the same JSON as `mirage report --json`).
pub fn report_view(scores: &[TrialScore], run: &str) -> Result<vocab::ReportView, EngineError> {
    use crate::judge::report::{APPEALS, MAIN, PAIRED, Slice, report};
    let built = report(scores, run, &Options::default(), &Slice::default()).map_err(fail)?;
    let report = built;
    let mut by_domain: BTreeMap<String, Vec<(String, Est, Est)>> = BTreeMap::new();
    for row in &report.main {
        let m = |k: Metric| row.metrics.get(k.as_str()).copied().flatten();
        if let (Some(domain), Some(strict), Some(default)) = (&row.domain, m(Metric::AccDecStrict), m(Metric::AccDec)) {
            by_domain.entry(domain.clone()).or_default().push((row.agent.clone(), strict, default));
        }
    }
    let adequacy_plots = by_domain
        .iter()
        .map(|(domain, points)| crate::charts::adequacy_svg(domain, points).map(|svg| (domain.clone(), svg)))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(fail)?;
    Ok(vocab::ReportView {
        runs: Vec::new(),
        columns: MAIN.iter().map(|m| m.as_str().to_string()).collect(),
        appeal_columns: APPEALS.iter().map(|m| m.as_str().to_string()).collect(),
        paired_columns: PAIRED.iter().map(|m| m.as_str().to_string()).collect(),
        adequacy_plots,
        report,
        pending: None,
        frozen: vocab::AsOf::default(),
    })
}
