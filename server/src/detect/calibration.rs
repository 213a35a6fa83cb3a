//! Thresholds calibrated to a false-positive rate on clean originals, with equal weight
//! per domain, and the rates they realise per domain.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A threshold calibrated on clean originals, with the rate it realises per domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub filter: String,
    /// Scores strictly above it are flagged (`None`: the filter has no threshold).
    pub threshold: Option<f64>,
    /// The equal-domain-weight share of originals flagged.
    pub fpr: f64,
    pub per_domain: BTreeMap<String, f64>,
}

fn rates(scores: &[(String, f64)], flagged: impl Fn(f64) -> bool) -> (f64, BTreeMap<String, f64>) {
    let mut by: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (d, s) in scores {
        let e = by.entry(d.clone()).or_default();
        e.0 += usize::from(flagged(*s));
        e.1 += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let per: BTreeMap<String, f64> = by.into_iter().map(|(d, (f, n))| (d, f as f64 / n as f64)).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = if per.is_empty() { 0.0 } else { per.values().sum::<f64>() / per.len() as f64 };
    (mean, per)
}

/// The lowest threshold at which the equal-domain-weight share of clean originals scoring
/// above it is at most `fpr`. `scores` are (domain, score) of clean originals.
pub fn calibrate(filter: &str, scores: &[(String, f64)], fpr: f64) -> Calibration {
    let mut candidates: Vec<f64> = scores.iter().map(|(_, s)| *s).collect();
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    // Thresholds at observed scores: flagging is "score > threshold", so the largest
    // score flags nothing; walk down while the rate stays within the target.
    let mut chosen = candidates.last().copied().unwrap_or(0.0);
    for &t in candidates.iter().rev() {
        if rates(scores, |s| s > t).0 <= fpr {
            chosen = t;
        } else {
            break;
        }
    }
    let (rate, per_domain) = rates(scores, |s| s > chosen);
    Calibration { filter: filter.to_string(), threshold: Some(chosen), fpr: rate, per_domain }
}

/// The realised rate of a filter without threshold (the keyword list).
pub fn realised(filter: &str, flags: &[(String, bool)]) -> Calibration {
    let scores: Vec<(String, f64)> = flags.iter().map(|(d, f)| (d.clone(), if *f { 1.0 } else { 0.0 })).collect();
    let (fpr, per_domain) = rates(&scores, |s| s > 0.5);
    Calibration { filter: filter.to_string(), threshold: None, fpr, per_domain }
}

/// The union filter (keyword or judge): the judge's threshold is lowered until the union
/// flags at most `fpr` of originals (equal domain weight). `items`: (domain, keyword flag,
/// judge score).
pub fn calibrate_union(items: &[(String, bool, f64)], fpr: f64) -> Calibration {
    let mut candidates: Vec<f64> = items.iter().map(|(_, _, s)| *s).collect();
    candidates.push(1.0);
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let union_rate = |t: f64| {
        let scores: Vec<(String, f64)> =
            items.iter().map(|(d, k, s)| (d.clone(), if *k || *s > t { 1.0 } else { 0.0 })).collect();
        rates(&scores, |x| x > 0.5)
    };
    let mut chosen = 1.0;
    for &t in candidates.iter().rev() {
        if union_rate(t).0 <= fpr {
            chosen = t;
        } else {
            break;
        }
    }
    let (rate, per_domain) = union_rate(chosen);
    Calibration { filter: "keyword+judge".to_string(), threshold: Some(chosen), fpr: rate, per_domain }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_reaches_the_requested_rate_with_equal_domain_weight() {
        // Domain a: scores 1..=100; domain b: scores 1..=10.
        let mut scores: Vec<(String, f64)> = (1..=100).map(|i| ("a".to_string(), f64::from(i))).collect();
        scores.extend((1..=10).map(|i| ("b".to_string(), f64::from(i))));
        let c = calibrate("x", &scores, 0.05);
        assert!(c.fpr <= 0.05 + 1e-12, "{c:?}");
        // Flagging 0 of b and 10 of a = 0.05 mean: threshold 90.
        assert_eq!(c.threshold, Some(90.0));
        assert_eq!(c.per_domain.get("a"), Some(&0.10));
        assert_eq!(c.per_domain.get("b"), Some(&0.0));
        let k = realised("keyword", &[("a".into(), true), ("a".into(), false), ("b".into(), false)]);
        assert!((k.fpr - 0.25).abs() < 1e-12);
    }
}
