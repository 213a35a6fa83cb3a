//! Statistics (docs/scoring.md): a clustered bootstrap with equal weight per domain,
//! paired comparisons with Wald p-values and Holm's correction, tie groups for ranks, and
//! Spearman's rank correlation. Pure and seeded: the same inputs give the same numbers.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

/// Resamples per interval unless told otherwise.
pub const RESAMPLES: usize = 5_000;

/// One observation: a ratio `num / den` (den = 1 for a per-trial value) in a cluster of a
/// domain. Ratios let claim-level rates weigh trials by their number of claims.
#[derive(Clone, Debug, PartialEq)]
pub struct Obs {
    pub domain: String,
    pub cluster: String,
    pub num: f64,
    pub den: f64,
}

impl Obs {
    /// A per-trial value.
    pub fn value(domain: &str, cluster: &str, value: f64) -> Obs {
        Obs { domain: domain.to_string(), cluster: cluster.to_string(), num: value, den: 1.0 }
    }
}

/// A point estimate with its percentile interval: the wire's `Est`, shared with the dashboard.
pub use app::model::Est as Estimate;

/// How domains weigh in a mean. Clusters are resampled within their domain either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Weight {
    /// Each domain's ratio of sums, then their plain mean (every domain counts equally).
    #[default]
    Domain,
    /// One ratio of sums over every domain (every observation counts equally).
    Pooled,
}

/// Observations summed per cluster, grouped by domain (sorted, so results do not depend
/// on input order).
struct Clusters {
    domains: Vec<Vec<(f64, f64)>>,
    weight: Weight,
}

impl Clusters {
    fn weighted(obs: &[Obs], weight: Weight) -> Clusters {
        Clusters { weight, ..Clusters::of(obs) }
    }

    fn of(obs: &[Obs]) -> Clusters {
        let mut by: BTreeMap<&str, BTreeMap<&str, (f64, f64)>> = BTreeMap::new();
        for o in obs {
            let c = by.entry(&o.domain).or_default().entry(&o.cluster).or_insert((0.0, 0.0));
            c.0 += o.num;
            c.1 += o.den;
        }
        Clusters { domains: by.into_values().map(|m| m.into_values().collect()).collect(), weight: Weight::Domain }
    }

    /// Equal-weight mean over domains of each domain's ratio of sums (pooled: one ratio).
    fn estimate(&self) -> Option<f64> {
        if self.weight == Weight::Pooled {
            let (n, d) = self.domains.iter().flatten().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
            return (d > 0.0).then(|| n / d);
        }
        let means: Vec<f64> = self
            .domains
            .iter()
            .filter_map(|cs| {
                let (n, d) = cs.iter().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
                (d > 0.0).then(|| n / d)
            })
            .collect();
        #[allow(clippy::cast_precision_loss)]
        (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
    }

    /// One bootstrap replicate: clusters resampled with replacement within each domain.
    fn replicate(&self, rng: &mut ChaCha8Rng) -> Option<f64> {
        let mut total = 0.0;
        let mut k = 0usize;
        let (mut all_n, mut all_d) = (0.0, 0.0);
        for cs in &self.domains {
            let (mut n, mut d) = (0.0, 0.0);
            for _ in 0..cs.len() {
                let c = cs[rng.random_range(0..cs.len())];
                n += c.0;
                d += c.1;
            }
            all_n += n;
            all_d += d;
            if d > 0.0 {
                total += n / d;
                k += 1;
            }
        }
        if self.weight == Weight::Pooled {
            return (all_d > 0.0).then(|| all_n / all_d);
        }
        #[allow(clippy::cast_precision_loss)]
        (k > 0).then(|| total / k as f64)
    }
}

/// The `q` quantile of sorted values, linearly interpolated.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[allow(clippy::cast_precision_loss)]
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (i, frac) = (pos.floor() as usize, pos - pos.floor());
    if i + 1 < sorted.len() { sorted[i] + frac * (sorted[i + 1] - sorted[i]) } else { sorted[i] }
}

fn replicates(clusters: &Clusters, resamples: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut reps: Vec<f64> = (0..resamples).filter_map(|_| clusters.replicate(&mut rng)).collect();
    reps.sort_by(f64::total_cmp);
    reps
}

/// The equal-domain-weight mean alone (each domain's ratio of sums, then their mean).
pub fn mean(obs: &[Obs]) -> Option<f64> {
    Clusters::of(obs).estimate()
}

/// The equal-domain-weight mean with a 95 % clustered-bootstrap percentile interval.
/// `None` without observations.
pub fn bootstrap(obs: &[Obs], resamples: usize, seed: u64) -> Option<Estimate> {
    bootstrap_weighted(obs, Weight::Domain, resamples, seed)
}

/// [`bootstrap`] with domains weighted as `weight` says; resampling stays stratified by
/// domain.
pub fn bootstrap_weighted(obs: &[Obs], weight: Weight, resamples: usize, seed: u64) -> Option<Estimate> {
    let clusters = Clusters::weighted(obs, weight);
    let mean = clusters.estimate()?;
    let reps = replicates(&clusters, resamples, seed);
    Some(Estimate { mean, lo: quantile(&reps, 0.025), hi: quantile(&reps, 0.975), n: obs.len() })
}

/// A paired comparison of two configurations on their shared trials.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Mean difference (a − b) with its bootstrap interval.
    pub diff: Estimate,
    /// Bootstrap standard error of the difference.
    pub se: f64,
    /// Two-sided p-value of the Wald statistic diff / se.
    pub p: f64,
}

/// Compares paired observations: `diffs` holds a − b per shared trial. Where a domain has
/// fewer than two clusters its spread cannot be resampled (every replicate repeats it), so
/// no test is possible: p is 1 rather than the 0 a zero standard error would give.
pub fn paired(diffs: &[Obs], resamples: usize, seed: u64) -> Option<Paired> {
    paired_weighted(diffs, Weight::Domain, resamples, seed)
}

/// [`paired`] with domains weighted as `weight` says (resampled within each domain).
pub fn paired_weighted(diffs: &[Obs], weight: Weight, resamples: usize, seed: u64) -> Option<Paired> {
    let clusters = Clusters::weighted(diffs, weight);
    let mean = clusters.estimate()?;
    let reps = replicates(&clusters, resamples, seed);
    #[allow(clippy::cast_precision_loss)]
    let k = reps.len().max(2) as f64;
    let m = reps.iter().sum::<f64>() / k;
    let se = (reps.iter().map(|r| (r - m).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let p = if clusters.domains.iter().any(|d| d.len() < 2) { 1.0 } else { wald_p(mean, se) };
    Some(Paired {
        diff: Estimate { mean, lo: quantile(&reps, 0.025), hi: quantile(&reps, 0.975), n: diffs.len() },
        se,
        p,
    })
}

/// Two-sided p-value of z = estimate / se under the standard normal. A zero standard error
/// gives p = 1 for a zero estimate and p = 0 otherwise.
pub fn wald_p(estimate: f64, se: f64) -> f64 {
    if se <= 0.0 || !se.is_finite() {
        return if estimate == 0.0 { 1.0 } else { 0.0 };
    }
    let normal = Normal::standard();
    (2.0 * (1.0 - normal.cdf((estimate / se).abs()))).clamp(0.0, 1.0)
}

/// Holm's step-down adjustment of p-values (returned in the input order).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let a = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(a);
        adjusted[i] = running;
    }
    adjusted
}

/// Average ranks (1-based; ties share the mean of their ranks).
pub fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        #[allow(clippy::cast_precision_loss)]
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation (Pearson's r over average ranks); `None` for fewer than
/// three pairs (two points give ±1 whatever they are) or a constant side.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    #[allow(clippy::cast_precision_loss)]
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// Cohen's κ for two raters' yes/no labels of the same items; `None` without items or
/// when chance agreement is total (both raters constant and equal).
pub fn cohen_kappa(pairs: &[(bool, bool)]) -> Option<f64> {
    cohen_kappa_classes(pairs)
}

/// Cohen's κ between two raters over any categories (the five rubric bands, decision
/// classes): (observed − chance agreement) / (1 − chance). `None` without pairs, or when
/// chance agreement is already perfect (both raters used one and the same category).
pub fn cohen_kappa_classes<T: Ord>(pairs: &[(T, T)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = pairs.len() as f64;
    let observed = pairs.iter().filter(|(a, b)| a == b).count();
    let mut by: BTreeMap<&T, (usize, usize)> = BTreeMap::new();
    for (a, b) in pairs {
        by.entry(a).or_default().0 += 1;
        by.entry(b).or_default().1 += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let expected: f64 = by.values().map(|(x, y)| (*x as f64 / n) * (*y as f64 / n)).sum();
    #[allow(clippy::cast_precision_loss)]
    let observed = observed as f64 / n;
    (expected < 1.0).then(|| (observed - expected) / (1.0 - expected))
}

/// Pearson's correlation of paired values; `None` for fewer than two pairs or when either
/// side does not vary.
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 2 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = pairs.len() as f64;
    let (ma, mb) = (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
    let cov: f64 = pairs.iter().map(|(a, b)| (a - ma) * (b - mb)).sum();
    let (va, vb): (f64, f64) =
        (pairs.iter().map(|(a, _)| (a - ma).powi(2)).sum(), pairs.iter().map(|(_, b)| (b - mb).powi(2)).sum());
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// The 95 % interval of a correlation `r` over `n` pairs by Fisher's z transform; `None`
/// for fewer than four pairs (the transform's standard error needs n − 3 > 0).
pub fn pearson_interval(r: f64, n: usize) -> Option<(f64, f64)> {
    if n < 4 || !r.is_finite() {
        return None;
    }
    // atanh(±1) is infinite: a perfect correlation's interval is the point itself.
    let z = r.clamp(-1.0 + 1e-12, 1.0 - 1e-12).atanh();
    #[allow(clippy::cast_precision_loss)]
    let se = 1.0 / ((n - 3) as f64).sqrt();
    Some(((z - Z95 * se).tanh(), (z + Z95 * se).tanh()))
}

/// The 95 % Wilson score interval of a share `hits / n`; `None` for n = 0. Unlike the
/// normal approximation it stays inside [0, 1] and is not empty at 0 or n hits.
pub fn wilson(hits: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (k, n) = (hits as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// The standard normal's 97.5th percentile.
const Z95: f64 = 1.959_963_984_540_054;

/// Tie groups for a ranking: `means` in any order, `adjusted_p(i, j)` the corrected p-value
/// of the comparison between i and j. Walking down from the best, an entry joins the band of
/// the band's leader unless it differs significantly from it (p < `alpha`). Returns the
/// band number (1 = top) of each entry, in input order.
pub fn tie_groups(means: &[f64], adjusted_p: impl Fn(usize, usize) -> f64, alpha: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..means.len()).collect();
    order.sort_by(|&a, &b| means[b].total_cmp(&means[a]));
    let mut band = vec![0; means.len()];
    let mut current = 0;
    let mut leader: Option<usize> = None;
    for &i in &order {
        match leader {
            Some(l) if adjusted_p(l, i) >= alpha => {}
            _ => {
                current += 1;
                leader = Some(i);
            }
        }
        band[i] = current;
    }
    band
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pooled weighting counts every observation once, and still resamples within each
    /// domain: a domain's share of the replicate never changes, so two constant domains
    /// give a zero-width interval (a single pooled stratum would not).
    #[test]
    fn pooled_weighting_is_the_observation_mean_resampled_by_domain() {
        let mut obs: Vec<Obs> = (0..2).map(|i| Obs::value("a", &format!("a{i}"), 1.0)).collect();
        obs.extend((0..4).map(|i| Obs::value("b", &format!("b{i}"), 0.0)));
        let domain = bootstrap(&obs, 500, 1).expect("estimate");
        assert_eq!(domain.mean, 0.5);
        let pooled = bootstrap_weighted(&obs, Weight::Pooled, 500, 1).expect("estimate");
        assert!((pooled.mean - 1.0 / 3.0).abs() < 1e-12 && pooled.lo == pooled.mean && pooled.hi == pooled.mean);
        let one: Vec<Obs> = obs.iter().map(|o| Obs { domain: "all".into(), ..o.clone() }).collect();
        let unstratified = bootstrap(&one, 500, 1).expect("estimate");
        assert!(unstratified.hi - unstratified.lo > 0.2, "{unstratified:?}");
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn a_constant_has_a_degenerate_interval() {
        let obs: Vec<Obs> = (0..50).map(|i| Obs::value(["shop", "wiki"][i % 2], &format!("c{i}"), 0.7)).collect();
        let e = bootstrap(&obs, 1000, 1).expect("estimate");
        assert!(close(e.mean, 0.7, 1e-12) && close(e.lo, 0.7, 1e-12) && close(e.hi, 0.7, 1e-12), "{e:?}");
    }

    #[test]
    fn a_large_sample_mean_lies_within_its_standard_error() {
        // 4,000 independent Bernoulli(0.3) trials in one domain: the interval should be
        // about ±1.96 standard errors around the sample mean.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let obs: Vec<Obs> = (0..4000)
            .map(|i| Obs::value("shop", &format!("c{i}"), if rng.random_bool(0.3) { 1.0 } else { 0.0 }))
            .collect();
        let e = bootstrap(&obs, 2000, 3).expect("estimate");
        let se = (0.3f64 * 0.7 / 4000.0).sqrt();
        assert!(close(e.mean, 0.3, 3.0 * se), "{e:?}");
        assert!(close(e.hi - e.lo, 2.0 * 1.96 * se, 0.25 * se * 3.92), "width {} vs {}", e.hi - e.lo, 3.92 * se);
        assert!(e.lo < e.mean && e.mean < e.hi);
    }

    #[test]
    fn domains_weigh_equally() {
        let mut obs: Vec<Obs> = (0..90).map(|i| Obs::value("shop", &format!("s{i}"), 1.0)).collect();
        obs.extend((0..10).map(|i| Obs::value("wiki", &format!("w{i}"), 0.0)));
        assert!(close(bootstrap(&obs, 100, 1).expect("estimate").mean, 0.5, 1e-12));
    }

    #[test]
    fn clusters_are_resampled_whole() {
        // Two clusters of very different size: a trial-level bootstrap would be far
        // narrower than resampling the two clusters.
        let mut obs: Vec<Obs> = (0..100).map(|_| Obs::value("shop", "a", 1.0)).collect();
        obs.extend((0..100).map(|_| Obs::value("shop", "b", 0.0)));
        let e = bootstrap(&obs, 2000, 5).expect("estimate");
        assert!(e.lo == 0.0 && e.hi == 1.0, "{e:?}");
    }

    #[test]
    fn same_seed_same_interval() {
        let obs: Vec<Obs> = (0..30).map(|i| Obs::value("forum", &format!("c{}", i % 7), f64::from(i % 3))).collect();
        assert_eq!(bootstrap(&obs, 500, 42), bootstrap(&obs, 500, 42));
        assert_ne!(bootstrap(&obs, 500, 42), bootstrap(&obs, 500, 43));
    }

    #[test]
    fn holm_matches_hand_computed_values() {
        // Sorted p: 0.01, 0.02, 0.03, 0.04 with m = 4 → 0.04, 0.06, 0.06 (monotone), 0.06 …
        let adjusted = holm(&[0.03, 0.01, 0.04, 0.02]);
        let expected = [0.06, 0.04, 0.06, 0.06];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!(close(*a, e, 1e-12), "{adjusted:?}");
        }
        let capped = holm(&[0.5, 0.9]);
        assert!(close(capped[0], 1.0, 1e-12) && close(capped[1], 1.0, 1e-12), "{capped:?}");
    }

    #[test]
    fn wald_p_values() {
        assert!(close(wald_p(1.96, 1.0), 0.05, 1e-3));
        assert!(close(wald_p(0.0, 1.0), 1.0, 1e-12));
        assert_eq!(wald_p(0.0, 0.0), 1.0);
        assert_eq!(wald_p(0.1, 0.0), 0.0);
    }

    #[test]
    fn paired_differences_detect_a_shift() {
        let diffs: Vec<Obs> =
            (0..200).map(|i| Obs::value("wiki", &format!("c{i}"), if i % 4 == 0 { 0.0 } else { 1.0 })).collect();
        let p = paired(&diffs, 1000, 9).expect("paired");
        assert!(close(p.diff.mean, 0.75, 1e-12) && p.p < 1e-6, "{p:?}");
        let none: Vec<Obs> =
            (0..200).map(|i| Obs::value("wiki", &format!("c{i}"), f64::from(i % 2) * 2.0 - 1.0)).collect();
        assert!(paired(&none, 1000, 9).expect("paired").p > 0.5);
    }

    #[test]
    fn spearman_and_ranks() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
        assert!(close(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]).expect("rho"), 1.0, 1e-12));
        assert!(close(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).expect("rho"), -1.0, 1e-12));
        // Hand-computed: ranks a = 1,2,3,4,5; b = 2,1,4,3,5 → d² = 1+1+1+1+0 = 4 → 1 − 6·4/120 = 0.8.
        assert!(close(spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 1.0, 4.0, 3.0, 5.0]).expect("rho"), 0.8, 1e-12));
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(spearman(&[1.0, 2.0], &[5.0, 9.0]), None, "two points carry no ranking evidence");
    }

    #[test]
    fn kappa_matches_a_hand_computed_table() {
        // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5 → κ = 0.4.
        let mut pairs = vec![(true, true); 20];
        pairs.extend(vec![(true, false); 5]);
        pairs.extend(vec![(false, true); 10]);
        pairs.extend(vec![(false, false); 15]);
        assert!(close(cohen_kappa(&pairs).expect("kappa"), 0.4, 1e-12));
        assert_eq!(cohen_kappa(&[(true, true), (true, true)]), None);
        assert_eq!(cohen_kappa(&[]), None);
    }

    #[test]
    fn tie_groups_follow_significance_from_the_leader() {
        // a > b > c > d; a~b not significant, a vs c significant, c~d not.
        let means = [0.9, 0.85, 0.5, 0.45];
        let p = |i: usize, j: usize| {
            let (i, j) = (i.min(j), i.max(j));
            match (i, j) {
                (0, 1) | (2, 3) => 0.4,
                _ => 0.001,
            }
        };
        assert_eq!(tie_groups(&means, p, 0.05), vec![1, 1, 2, 2]);
    }

    #[test]
    fn wilson_and_fisher_intervals_match_published_values() {
        // Wilson: 8 of 10 gives [0.490, 0.943] (Newcombe 1998, method 3).
        let (lo, hi) = wilson(8, 10).expect("interval");
        assert!(close(lo, 0.4902, 1e-4) && close(hi, 0.9433, 1e-4), "{lo} {hi}");
        let (lo, hi) = wilson(0, 10).expect("interval");
        assert!(close(lo, 0.0, 1e-12) && close(hi, 0.2775, 1e-4), "{lo} {hi}");
        assert_eq!(wilson(0, 0), None);
        // Fisher: r = 0.5 over 28 pairs, z = 0.5493 ± 1.96 / 5 gives [0.156, 0.736].
        let (lo, hi) = pearson_interval(0.5, 28).expect("interval");
        assert!(close(lo, 0.1562, 1e-3) && close(hi, 0.7362, 1e-3), "{lo} {hi}");
        assert_eq!(pearson_interval(0.5, 3), None);
        let (lo, hi) = pearson_interval(1.0, 10).expect("interval");
        assert!(lo > 0.99 && hi <= 1.0);
    }

    #[test]
    fn kappa_over_classes_and_pearson() {
        // Two raters, three classes: 4 of 6 agree; chance from the margins.
        let pairs = [(0, 0), (1, 1), (2, 2), (2, 2), (0, 1), (1, 2)];
        let k = cohen_kappa_classes(&pairs).expect("kappa");
        let expected = (2.0 / 6.0) * (1.0 / 6.0) + (2.0 / 6.0) * (2.0 / 6.0) + (2.0 / 6.0) * (3.0 / 6.0);
        assert!((k - (4.0 / 6.0 - expected) / (1.0 - expected)).abs() < 1e-12, "{k}");
        assert_eq!(cohen_kappa_classes(&[(3, 3)]), None, "one pair: chance agreement is perfect");
        assert_eq!(cohen_kappa(&[(true, true), (false, false)]), Some(1.0));
        let r = pearson(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.5)]).expect("r");
        assert!(r > 0.99 && r <= 1.0, "{r}");
        assert_eq!(pearson(&[(1.0, 1.0)]), None);
        assert_eq!(pearson(&[(1.0, 1.0), (2.0, 1.0)]), None, "no variance");
    }
}
