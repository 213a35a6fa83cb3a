//! Thresholds for the GEO judge at a false-positive rate on the originals (docs/geo.md),
//! three ways: `equal` (the paper: each dataset weighs the same), `pooled` (every original
//! weighs the same, so the largest dataset sets the threshold; GEO-Bench's code) and `lodo`
//! (leave one dataset out: each dataset's texts are judged at a threshold calibrated on the
//! others, which shows how a threshold carries to a dataset it never saw). Every mode
//! reports the rate it realises on each dataset's originals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::detect::{calibrate, calibrate_union};

/// How the judge's threshold is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CalibrationMode {
    Equal,
    Pooled,
    Lodo,
}

impl std::fmt::Display for CalibrationMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CalibrationMode::Equal => "equal",
            CalibrationMode::Pooled => "pooled",
            CalibrationMode::Lodo => "lodo",
        })
    }
}

/// A calibrated filter: the threshold each dataset's texts are judged at, and the share of
/// originals it flags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    pub filter: String,
    /// Keyword flags count whatever the score (the keyword-or-judge filter).
    pub union: bool,
    pub mode: CalibrationMode,
    /// Scores strictly above a dataset's threshold are flagged (one value unless `lodo`).
    pub thresholds: BTreeMap<String, f64>,
    /// The equal-dataset mean of `per_dataset`.
    pub fpr: f64,
    /// The realised share of each dataset's originals flagged.
    pub per_dataset: BTreeMap<String, f64>,
}

impl Calibrated {
    /// Whether a text of `dataset` with this judge score (and keyword flag, for the union
    /// filter) is flagged.
    pub fn flags(&self, dataset: &str, keyword: bool, score: f64) -> bool {
        let t = self.thresholds.get(dataset).copied().unwrap_or(f64::INFINITY);
        (self.union && keyword) || score > t
    }
}

/// Calibrates a score filter (`union: false`: the judge, perplexity) or the keyword-or-score
/// filter (`union: true`) to `fpr` over originals `(dataset, keyword flag, score)`. `lodo`
/// needs two datasets.
pub fn calibrate_mode(
    mode: CalibrationMode,
    filter: &str,
    items: &[(String, bool, f64)],
    fpr: f64,
    union: bool,
) -> anyhow::Result<Calibrated> {
    let threshold = |items: &[(String, bool, f64)]| -> f64 {
        let cal = if union {
            calibrate_union(items, fpr)
        } else {
            calibrate(filter, &items.iter().map(|(d, _, s)| (d.clone(), *s)).collect::<Vec<_>>(), fpr)
        };
        cal.threshold.unwrap_or(f64::INFINITY)
    };
    let mut datasets: Vec<&String> = items.iter().map(|(d, _, _)| d).collect();
    datasets.sort();
    datasets.dedup();
    let thresholds: BTreeMap<String, f64> = match mode {
        CalibrationMode::Equal => {
            let t = threshold(items);
            datasets.iter().map(|d| ((*d).clone(), t)).collect()
        }
        CalibrationMode::Pooled => {
            let one: Vec<(String, bool, f64)> = items.iter().map(|(_, k, s)| (String::new(), *k, *s)).collect();
            let t = threshold(&one);
            datasets.iter().map(|d| ((*d).clone(), t)).collect()
        }
        CalibrationMode::Lodo => {
            if datasets.len() < 2 {
                anyhow::bail!(
                    "--calibration lodo needs originals of at least two datasets; the run has {}",
                    datasets.len()
                );
            }
            datasets
                .iter()
                .map(|d| {
                    let rest: Vec<(String, bool, f64)> = items.iter().filter(|(x, _, _)| x != *d).cloned().collect();
                    ((*d).clone(), threshold(&rest))
                })
                .collect()
        }
    };
    let mut cal =
        Calibrated { filter: filter.to_string(), union, mode, thresholds, fpr: 0.0, per_dataset: BTreeMap::new() };
    let mut by: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (d, k, s) in items {
        let e = by.entry(d.clone()).or_default();
        e.0 += usize::from(cal.flags(d, *k, *s));
        e.1 += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    {
        cal.per_dataset = by.into_iter().map(|(d, (f, n))| (d, f as f64 / n as f64)).collect();
        cal.fpr = cal.per_dataset.values().sum::<f64>() / cal.per_dataset.len().max(1) as f64;
    }
    Ok(cal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dataset `big`: 100 originals scored 0.01..=1.00; dataset `small`: 10 scored 0.91..=1.00
    /// (it looks suspicious to the judge throughout).
    fn items() -> Vec<(String, bool, f64)> {
        let mut v: Vec<(String, bool, f64)> = (1..=100).map(|i| ("big".into(), false, f64::from(i) / 100.0)).collect();
        v.extend((91..=100).map(|i| ("small".into(), false, f64::from(i) / 100.0)));
        v
    }

    #[test]
    fn equal_weighting_holds_the_mean_rate_and_pooling_lets_the_big_dataset_decide() {
        let equal = calibrate_mode(CalibrationMode::Equal, "judge", &items(), 0.1, false).expect("equal");
        assert!(equal.fpr <= 0.1 + 1e-12, "{equal:?}");
        let pooled = calibrate_mode(CalibrationMode::Pooled, "judge", &items(), 0.1, false).expect("pooled");
        // Pooled: 11 of 110 may be flagged → threshold 0.95 → big 5 %, small 50 %.
        assert_eq!(pooled.thresholds["big"], 0.95);
        assert_eq!((pooled.per_dataset["big"], pooled.per_dataset["small"]), (0.05, 0.5));
        assert!(pooled.fpr > 0.1, "the pooled threshold overshoots the equal-weight rate: {pooled:?}");
    }

    #[test]
    fn leave_one_out_judges_each_dataset_at_the_others_threshold() {
        let lodo = calibrate_mode(CalibrationMode::Lodo, "judge", &items(), 0.1, false).expect("lodo");
        // small is judged at big's 10 % threshold (0.90): all ten of its originals are flagged.
        assert_eq!(lodo.thresholds["small"], 0.9);
        assert_eq!(lodo.per_dataset["small"], 1.0);
        // big is judged at small's threshold (0.99): only 1.00 is above it.
        assert_eq!(lodo.thresholds["big"], 0.99);
        assert_eq!(lodo.per_dataset["big"], 0.01);
        let one: Vec<_> = items().into_iter().filter(|(d, _, _)| d == "big").collect();
        let err = calibrate_mode(CalibrationMode::Lodo, "judge", &one, 0.1, false).unwrap_err();
        assert!(err.to_string().contains("at least two datasets"), "{err}");
    }

    #[test]
    fn the_union_filter_counts_keyword_flags_at_any_threshold() {
        let mut v = items();
        v[0].1 = true; // big's lowest-scored original holds a keyword
        let u = calibrate_mode(CalibrationMode::Equal, "keyword+judge", &v, 0.1, true).expect("union");
        assert!(u.flags("big", true, 0.0) && !u.flags("big", false, 0.0));
        assert!(u.fpr <= 0.1 + 1e-12);
        let judge = calibrate_mode(CalibrationMode::Equal, "judge", &v, 0.1, false).expect("judge");
        assert!(!judge.flags("big", true, 0.0), "the judge alone ignores keywords");
    }
}
