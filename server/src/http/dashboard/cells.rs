//! The cells of the CSV downloads: an estimate as its columns, and the writer.

use app::model::Est;

use super::HttpError;

/// Rows under a header as CSV text.
pub(super) fn csv_text(header_row: &[String], rows: &[Vec<String>]) -> Result<String, HttpError> {
    let fail = |e: csv::Error| HttpError::failed("writing CSV", e);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header_row).map_err(fail)?;
    for r in rows {
        w.write_record(r).map_err(fail)?;
    }
    let bytes = w.into_inner().map_err(|e| HttpError::failed("writing CSV", anyhow::anyhow!("{e}")))?;
    String::from_utf8(bytes).map_err(|e| HttpError::failed("writing CSV", e))
}

/// The decimals a column's estimates are written with: dollars per trial are small.
pub(super) fn digits_of(column: &str) -> usize {
    if column == "cost" { 8 } else { 4 }
}

/// An estimate's five cells (mean, interval, n, and the interval's coverage where it falls
/// short) to `digits` decimals.
pub(super) fn est_cells(e: Option<&Est>, digits: usize) -> [String; 5] {
    match e {
        // No interval: the bounds stay empty rather than repeat the mean.
        Some(e) if e.no_interval => {
            [format!("{:.digits$}", e.mean), String::new(), String::new(), e.n.to_string(), String::new()]
        }
        Some(e) => [
            format!("{:.digits$}", e.mean),
            format!("{:.digits$}", e.lo),
            format!("{:.digits$}", e.hi),
            e.n.to_string(),
            coverage_cell(e.coverage),
        ],
        None => Default::default(),
    }
}

/// The coverage column: the interval's least coverage at its cluster counts where below 93 %.
pub(super) fn coverage_cell(coverage: Option<f64>) -> String {
    coverage.map(|c| format!("{c:.3}")).unwrap_or_default()
}

/// The names of an estimate's five columns, prefixed with `c_` where `c` is given.
pub(super) fn est_head(c: &str) -> [String; 5] {
    ["mean", "lo", "hi", "n", "coverage"].map(|x| if c.is_empty() { x.to_string() } else { format!("{c}_{x}") })
}
