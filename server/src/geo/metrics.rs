//! Per-target metrics (docs/geo.md), computed from the two medians over the K orders:
//! `r_b` (clean) and `r_a` (edited). NRG = clip((r_b − r_a)/(L − 1), −1, 1), positive when
//! the target moved up; S@α = [r_a ≤ t] and P@α = [r_b > t ∧ r_a ≤ t] with t = ⌈αL⌉.

use serde::{Deserialize, Serialize};

/// How the K per-order ranks become one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Agg {
    /// The median (the mean of the two middle values for even K).
    #[default]
    Median,
    Mean,
    Min,
}

/// Ranks (1..=L+1) into one value.
pub fn aggregate(ranks: &[usize], agg: Agg) -> f64 {
    assert!(!ranks.is_empty(), "at least one order");
    let mut v: Vec<f64> = ranks.iter().map(|&r| r as f64).collect();
    v.sort_by(f64::total_cmp);
    match agg {
        Agg::Median => {
            let n = v.len();
            if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
        }
        Agg::Mean => v.iter().sum::<f64>() / v.len() as f64,
        Agg::Min => v[0],
    }
}

/// Normalised rank gain for a list of `len` items.
pub fn nrg(r_b: f64, r_a: f64, len: usize) -> f64 {
    ((r_b - r_a) / (len as f64 - 1.0)).clamp(-1.0, 1.0)
}

/// The top-α threshold t = ⌈αL⌉ for α = `tenths`/10, in integers.
pub fn threshold(tenths: usize, len: usize) -> usize {
    (tenths * len).div_ceil(10)
}

/// One target's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    pub len: usize,
    pub ranks_b: Vec<usize>,
    pub ranks_a: Vec<usize>,
    pub r_b: f64,
    pub r_a: f64,
    pub nrg: f64,
    pub s_at_0_1: bool,
    pub p_at_0_1: bool,
    pub s_at_0_2: bool,
    pub p_at_0_2: bool,
    /// Share of orders where the target was missing from the reply, clean and edited.
    pub missing_b: f64,
    pub missing_a: f64,
}

impl TargetResult {
    /// From the per-order ranks before and after the edit (L + 1 = missing).
    pub fn new(len: usize, ranks_b: Vec<usize>, ranks_a: Vec<usize>, agg: Agg) -> TargetResult {
        let (r_b, r_a) = (aggregate(&ranks_b, agg), aggregate(&ranks_a, agg));
        let top = |tenths: usize| threshold(tenths, len) as f64;
        let missing = |r: &[usize]| r.iter().filter(|&&x| x > len).count() as f64 / r.len() as f64;
        TargetResult {
            len,
            r_b,
            r_a,
            nrg: nrg(r_b, r_a, len),
            s_at_0_1: r_a <= top(1),
            p_at_0_1: r_b > top(1) && r_a <= top(1),
            s_at_0_2: r_a <= top(2),
            p_at_0_2: r_b > top(2) && r_a <= top(2),
            missing_b: missing(&ranks_b),
            missing_a: missing(&ranks_a),
            ranks_b,
            ranks_a,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn medians_thresholds_and_gains() {
        assert_eq!(aggregate(&[3, 1, 2], Agg::Median), 2.0);
        assert_eq!(aggregate(&[4, 1, 2, 3], Agg::Median), 2.5);
        assert_eq!(aggregate(&[4, 1, 2, 3], Agg::Mean), 2.5);
        assert_eq!(aggregate(&[4, 1, 2, 3], Agg::Min), 1.0);
        assert!(close(nrg(9.0, 5.5, 8), 0.5));
        assert!(close(nrg(7.0, 8.0, 8), -1.0 / 7.0));
        assert_eq!(nrg(1.0, 1.0, 8), 0.0);
        assert_eq!(nrg(9.0, 1.0, 8), 1.0, "a missing clean target clips to 1");
        assert_eq!(nrg(1.0, 9.0, 8), -1.0);
        assert_eq!([threshold(1, 7), threshold(1, 8), threshold(1, 10)], [1, 1, 1]);
        assert_eq!([threshold(2, 7), threshold(2, 8), threshold(2, 10)], [2, 2, 2]);
        assert_eq!(threshold(1, 11), 2);
    }

    #[test]
    fn success_and_promotion() {
        let r = TargetResult::new(8, vec![6; 10], vec![1, 1, 1, 1, 2, 2, 2, 2, 2, 2], Agg::Median);
        assert!(close(r.nrg, (6.0 - 2.0) / 7.0));
        assert!(!r.s_at_0_1 && r.s_at_0_2 && r.p_at_0_2 && !r.p_at_0_1);
        let first = TargetResult::new(8, vec![1; 10], vec![1; 10], Agg::Median);
        assert!(first.s_at_0_1 && !first.p_at_0_1 && first.nrg == 0.0);
        let missing = TargetResult::new(8, vec![9, 9, 9, 1, 1, 1, 1, 1, 1, 1], vec![1; 10], Agg::Median);
        assert!(close(missing.missing_b, 0.3) && missing.missing_a == 0.0 && missing.r_b == 1.0);
    }

    #[test]
    fn geobench_conformance_vectors() {
        // GEO-Bench per-instance results (content_improvement, Llama-3.1-8B).
        type Case = ([usize; 10], [usize; 10], f64, f64, f64);
        let cases: [Case; 4] = [
            ([7, 7, 7, 7, 7, 6, 6, 6, 7, 7], [5, 6, 6, 5, 7, 6, 3, 6, 7, 6], 7.0, 6.0, 0.142_857),
            ([2, 9, 5, 9, 9, 5, 9, 9, 9, 9], [1, 9, 1, 9, 9, 2, 1, 9, 9, 1], 9.0, 5.5, 0.5),
            ([6, 7, 6, 6, 6, 6, 6, 6, 6, 6], [1, 7, 1, 2, 1, 1, 2, 4, 1, 5], 6.0, 1.5, 0.642_857),
            ([6, 8, 7, 8, 8, 2, 8, 7, 7, 7], [8, 8, 8, 8, 8, 8, 8, 6, 7, 7], 7.0, 8.0, -0.142_857),
        ];
        for (b, a, r_b, r_a, gain) in cases {
            let r = TargetResult::new(8, b.to_vec(), a.to_vec(), Agg::Median);
            assert_eq!((r.r_b, r.r_a), (r_b, r_a));
            assert!(close(r.nrg, gain), "{} vs {gain}", r.nrg);
        }
        let char_broil =
            TargetResult::new(8, vec![6, 7, 6, 6, 6, 6, 6, 6, 6, 6], vec![1, 7, 1, 2, 1, 1, 2, 4, 1, 5], Agg::Median);
        assert!(!char_broil.s_at_0_1 && char_broil.s_at_0_2 && char_broil.p_at_0_2);
    }
}
