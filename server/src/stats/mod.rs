//! Statistics (docs/scoring.md): design-based intervals of clustered means with equal
//! weight per domain (t on the design's degrees of freedom; Korn and Graubard's for
//! proportions), paired comparisons with t p-values and Holm's correction, tie groups for
//! ranks, and Spearman's rank correlation. Pure: the same inputs give the same numbers.
//! Their coverage is measured by `cargo run --release -p server --example coverage`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF, Normal, StudentsT};

pub mod coverage;
mod worst;

/// Resamples of a bootstrap interval (κ's) unless told otherwise.
pub const RESAMPLES: usize = 2_000;

/// One observation: a ratio `num / den` (den = 1 for a per-trial value) in a cluster of a
/// domain. Ratios let claim-level rates weigh trials by their number of claims. The names
/// are borrowed from the trials where they can be: an aggregate reads each trial's domain
/// and family once for every metric of every row.
#[derive(Clone, Debug, PartialEq)]
pub struct Obs<'a> {
    pub domain: Cow<'a, str>,
    pub cluster: Cow<'a, str>,
    pub num: f64,
    pub den: f64,
}

impl<'a> Obs<'a> {
    /// A per-trial value.
    pub fn value(domain: impl Into<Cow<'a, str>>, cluster: impl Into<Cow<'a, str>>, value: f64) -> Obs<'a> {
        Obs { domain: domain.into(), cluster: cluster.into(), num: value, den: 1.0 }
    }
}

/// A point estimate with its percentile interval: the wire's `Est`, shared with the dashboard.
pub use vocab::Est as Estimate;

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
    /// Every observation a share of whole counts (0 ≤ num ≤ den, both whole numbers): the
    /// interval is then a proportion's (Korn and Graubard's), never outside [0, 1].
    proportion: bool,
    /// Observations behind the clusters (the whole counts of a proportion: Σ den).
    trials: f64,
}

/// The spread of an estimate over its clusters.
struct Spread {
    /// Standard error (stratified delete-one-cluster jackknife).
    se: f64,
    /// The design's degrees of freedom of `se` (see [`Clusters::spread`]).
    df: f64,
    /// Every domain had at least two clusters, so `se` is an estimate at all.
    known: bool,
    /// The least coverage of the interval at these cluster counts, where it falls short of
    /// the 95 % band (see [`worst::least`]).
    coverage: Option<f64>,
}

/// Below this, an interval's least coverage at its cluster counts is printed beside it.
pub const COVERAGE_FLOOR: f64 = 0.93;

impl Clusters {
    /// `obs` as clusters; `rate`: the mean is a share, whose interval is a proportion's when
    /// every observation is whole counts (otherwise the t interval).
    fn of(obs: &[Obs<'_>], weight: Weight, rate: bool) -> Clusters {
        // Summed by hash, then put in (domain, cluster) order: an aggregate makes this of
        // every metric of every row, and a search tree compared the long names again and
        // again. Each cluster's sums still add its observations in their order.
        let mut by: foldhash::HashMap<(&str, &str), (f64, f64)> = foldhash::HashMap::default();
        let mut proportion = true;
        let mut trials = 0.0;
        for o in obs {
            let c = by.entry((&o.domain, &o.cluster)).or_insert((0.0, 0.0));
            c.0 += o.num;
            c.1 += o.den;
            trials += o.den;
            proportion &= o.num >= 0.0 && o.num <= o.den && o.num.fract() == 0.0 && o.den.fract() == 0.0;
        }
        let mut sums: Vec<_> = by.into_iter().collect();
        sums.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let domains: Vec<Vec<(f64, f64)>> = sums
            .chunk_by(|a, b| a.0.0 == b.0.0)
            .map(|d| d.iter().map(|(_, c)| *c).collect::<Vec<_>>())
            .filter(|cs: &Vec<(f64, f64)>| cs.iter().map(|c| c.1).sum::<f64>() > 0.0)
            .collect();
        Clusters { domains, weight, proportion: rate && proportion, trials }
    }

    /// Equal-weight mean over domains of each domain's ratio of sums (pooled: one ratio).
    fn estimate(&self) -> Option<f64> {
        if self.domains.is_empty() {
            return None;
        }
        if self.weight == Weight::Pooled {
            let (n, d) = self.domains.iter().flatten().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
            return Some(n / d);
        }
        let ratio = |cs: &Vec<(f64, f64)>| {
            let (n, d) = cs.iter().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
            n / d
        };
        #[allow(clippy::cast_precision_loss)]
        Some(self.domains.iter().map(ratio).sum::<f64>() / self.domains.len() as f64)
    }

    /// [`Clusters::measure`] with the interval's least coverage at these clusters beside
    /// it, where that falls short of the 95 % band (see [`worst::least`]).
    fn spread(&self, estimate: f64) -> Spread {
        let mut spread = self.measure(estimate);
        if spread.known {
            spread.coverage = Some(worst::least(self, spread.df)).filter(|c| *c < COVERAGE_FLOOR);
        }
        spread
    }

    /// The design-based spread of [`Clusters::estimate`]: each domain a stratum, its clusters
    /// a sample of like clusters, its variance the delete-one-cluster jackknife's, and the
    /// degrees of freedom Satterthwaite's for the strata's weights (G − 1 for one domain).
    fn measure(&self, estimate: f64) -> Spread {
        #[allow(clippy::cast_precision_loss)]
        let k = self.domains.len() as f64;
        let (total_num, total_den): (f64, f64) =
            self.domains.iter().flatten().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
        let mut parts = Vec::with_capacity(self.domains.len());
        let mut known = true;
        for cs in &self.domains {
            #[allow(clippy::cast_precision_loss)]
            let g = cs.len() as f64;
            // A cluster with nothing in the denominator (a robustness pair whose twin gave
            // the goal) is sampled too, but a spread needs two clusters that weigh.
            if cs.iter().filter(|c| c.1 > 0.0).count() < 2 {
                known = false;
                continue;
            }
            let (n, d) = cs.iter().fold((0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1));
            // Delete-one-cluster jackknife within the stratum: cluster c left out, the
            // stratum's other clusters stand for it (scaled by G / (G − 1)), and the estimate
            // is taken again. For a mean of equal clusters this is the usual s² / G; for a
            // ratio it also carries how much the cluster weighed in the denominator.
            let r = g / (g - 1.0);
            let moves: Vec<f64> = cs
                .iter()
                .map(|c| match self.weight {
                    // The domain's ratio moves; the others' do not (scaling cancels in it).
                    Weight::Domain => ((n - c.0) / (d - c.1) - n / d) / k,
                    Weight::Pooled => {
                        let (num, den) = (total_num - n + (n - c.0) * r, total_den - d + (d - c.1) * r);
                        num / den - estimate
                    }
                })
                .map(|m| if m.is_finite() { m } else { 0.0 })
                .collect();
            let mean = moves.iter().sum::<f64>() / g;
            let ss: f64 = moves.iter().map(|v| (v - mean).powi(2)).sum();
            // The domain's share of the estimate.
            let share = match self.weight {
                Weight::Domain => 1.0 / k,
                Weight::Pooled => d / total_den,
            };
            parts.push(((g - 1.0) / g * ss, g - 1.0, share * share / g));
        }
        let var: f64 = parts.iter().map(|p| p.0).sum();
        // Satterthwaite's formula over the strata's weights with equal variances: it depends
        // on the design alone. Fed the estimated variances instead, it swings to one degree
        // of freedom at two clusters a domain and covers 99 % there (measured).
        let (a, b): (f64, f64) = parts.iter().fold((0.0, 0.0), |(a, b), p| (a + p.2, b + p.2 * p.2 / p.1));
        let df = if b > 0.0 { a * a / b } else { 1.0 };
        let known = known && !parts.is_empty();
        Spread { se: var.max(0.0).sqrt(), df: df.max(1.0), known, coverage: None }
    }

    /// The 95 % interval of `estimate`: a t interval on the design's degrees of freedom,
    /// or for a proportion the Clopper–Pearson interval at the design's effective sample
    /// size (Korn and Graubard 1998), which stays inside [0, 1] and is not empty at 0 or 1.
    fn interval(&self, estimate: f64, spread: &Spread) -> (f64, f64) {
        if !spread.known {
            return (estimate, estimate);
        }
        if self.proportion && self.trials >= 1.0 {
            return korn_graubard(estimate, spread, self.trials);
        }
        let t = t975(spread.df);
        (estimate - t * spread.se, estimate + t * spread.se)
    }
}

/// The 97.5th percentile of Student's t on `df` degrees of freedom (the normal's above
/// a million).
pub fn t975(df: f64) -> f64 {
    if !df.is_finite() || df > 1e6 {
        return Z95;
    }
    StudentsT::new(0.0, 1.0, df.max(1.0)).map_or(Z95, |t| t.inverse_cdf(0.975))
}

/// The interval of a proportion `p` from a clustered design, after Korn and Graubard
/// (1998): the design's effective sample size p(1 − p) / se², shrunk by the ratio of t
/// quantiles for its degrees of freedom and never above the `n` observations, carries a
/// Jeffreys interval (Beta(x + ½, n − x + ½) quantiles; 0 and 1 at the ends). Jeffreys'
/// rather than Clopper–Pearson's, which covers 99 % at a few small clusters (measured).
fn korn_graubard(p: f64, spread: &Spread, n: f64) -> (f64, f64) {
    let p = p.clamp(0.0, 1.0);
    // The shrink applies at 0 and 1 too: a rate of 0 over four families is not known as
    // well as 0 over as many independent trials (without it, 82 % coverage at 0.05).
    let shrink = (t975(n - 1.0) / t975(spread.df)).powi(2);
    let effective = if spread.se > 0.0 && p > 0.0 && p < 1.0 {
        (p * (1.0 - p) / (spread.se * spread.se)).min(n) * shrink
    } else {
        n * shrink
    }
    .max(1.0);
    let x = p * effective;
    let jeffreys = |q: f64| Beta::new(x + 0.5, effective - x + 0.5).map_or(p, |d| d.inverse_cdf(q));
    let lo = if x <= 0.0 { 0.0 } else { jeffreys(0.025) };
    let hi = if x >= effective { 1.0 } else { jeffreys(0.975) };
    (lo.min(p), hi.max(p))
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

/// The equal-domain-weight mean alone (each domain's ratio of sums, then their mean).
pub fn mean(obs: &[Obs<'_>]) -> Option<f64> {
    Clusters::of(obs, Weight::Domain, false).estimate()
}

/// The equal-domain-weight mean of a score with its 95 % interval (clusters within domains;
/// see [`interval_weighted`]). `None` without observations.
pub fn interval(obs: &[Obs<'_>]) -> Option<Estimate> {
    interval_weighted(obs, Weight::Domain)
}

/// The mean of a score with domains weighted as `weight` says and its 95 % interval, the
/// domains strata and their clusters the units sampled: a t interval on the design's
/// degrees of freedom. A domain with one cluster has no spread to measure: the estimate
/// then says `no_interval`.
pub fn interval_weighted(obs: &[Obs<'_>], weight: Weight) -> Option<Estimate> {
    estimate(&Clusters::of(obs, weight, false), obs.len())
}

/// The equal-domain-weight share of a rate (observations of whole counts: yes/no trials,
/// false claims of claims) with its 95 % interval (see [`rate_interval_weighted`]).
pub fn rate_interval(obs: &[Obs<'_>]) -> Option<Estimate> {
    rate_interval_weighted(obs, Weight::Domain)
}

/// [`interval_weighted`] for a rate: Korn and Graubard's interval of a proportion when
/// every observation is whole counts (0 ≤ num ≤ den), which stays inside [0, 1] and is not
/// empty at 0 or 1; the t interval otherwise.
pub fn rate_interval_weighted(obs: &[Obs<'_>], weight: Weight) -> Option<Estimate> {
    estimate(&Clusters::of(obs, weight, true), obs.len())
}

fn estimate(clusters: &Clusters, n: usize) -> Option<Estimate> {
    let mean = clusters.estimate()?;
    let spread = clusters.spread(mean);
    let (lo, hi) = clusters.interval(mean, &spread);
    Some(Estimate { mean, lo, hi, n, no_interval: !spread.known, coverage: spread.coverage })
}

/// A paired comparison of two configurations on their shared trials.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Mean difference (a − b) with its 95 % interval.
    pub diff: Estimate,
    /// Standard error of the difference (clusters within domains).
    pub se: f64,
    /// Two-sided p-value of diff / se on Student's t with the design's degrees of freedom.
    pub p: f64,
}

/// Compares paired observations: `diffs` holds a − b per shared trial. Where a domain has
/// fewer than two clusters its spread cannot be measured, so no test is possible: p is 1
/// and the difference says `no_interval`.
pub fn paired(diffs: &[Obs<'_>]) -> Option<Paired> {
    paired_weighted(diffs, Weight::Domain)
}

/// [`paired`] with domains weighted as `weight` says.
pub fn paired_weighted(diffs: &[Obs<'_>], weight: Weight) -> Option<Paired> {
    let clusters = Clusters::of(diffs, weight, false);
    let mean = clusters.estimate()?;
    let spread = clusters.spread(mean);
    let (lo, hi) = clusters.interval(mean, &spread);
    let p = if spread.known { t_p(mean, spread.se, spread.df) } else { 1.0 };
    let diff = Estimate { mean, lo, hi, n: diffs.len(), no_interval: !spread.known, coverage: spread.coverage };
    Some(Paired { diff, se: spread.se, p })
}

/// Two-sided p-value of estimate / se on Student's t with `df` degrees of freedom. A zero
/// standard error gives p = 1 for a zero estimate and p = 0 otherwise.
pub fn t_p(estimate: f64, se: f64, df: f64) -> f64 {
    if se <= 0.0 || !se.is_finite() {
        return if estimate == 0.0 { 1.0 } else { 0.0 };
    }
    let z = (estimate / se).abs();
    let tail = if df.is_finite() && df <= 1e6 {
        StudentsT::new(0.0, 1.0, df.max(1.0)).map_or_else(|_| Normal::standard().cdf(z), |t| t.cdf(z))
    } else {
        Normal::standard().cdf(z)
    };
    (2.0 * (1.0 - tail)).clamp(0.0, 1.0)
}

/// Two-sided p-value of z = estimate / se under the standard normal. A zero standard error
/// gives p = 1 for a zero estimate and p = 0 otherwise.
pub fn wald_p(estimate: f64, se: f64) -> f64 {
    t_p(estimate, se, f64::INFINITY)
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

/// Items below which κ has no interval: at ten items both this interval and the
/// percentile bootstrap cover about 90 % (measured by the coverage harness).
pub const KAPPA_INTERVAL_ITEMS: usize = 20;

/// The 95 % interval of Cohen's κ over `items` (each one or more (a, b) pairs, resampled
/// whole): κ ± t(n − 1) · the bootstrap standard error · √(n / (n − 1)) over [`RESAMPLES`]
/// draws seeded by `seed`, kept inside [−1, 1]. `None` below [`KAPPA_INTERVAL_ITEMS`]
/// items (no interval of κ keeps its promise there) or when no resample has a defined κ.
pub fn kappa_interval(items: &[Vec<(bool, bool)>], seed: u64) -> Option<(f64, f64)> {
    use rand::{Rng, SeedableRng};
    if items.len() < KAPPA_INTERVAL_ITEMS {
        return None;
    }
    let pairs: Vec<(bool, bool)> = items.iter().flatten().copied().collect();
    let kappa = cohen_kappa(&pairs)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let draws: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            let sample: Vec<(bool, bool)> =
                (0..items.len()).flat_map(|_| items[rng.random_range(0..items.len())].iter().copied()).collect();
            cohen_kappa(&sample)
        })
        .collect();
    if draws.len() < 2 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (k, n) = (draws.len() as f64, items.len() as f64);
    let m = draws.iter().sum::<f64>() / k;
    let se = (draws.iter().map(|d| (d - m).powi(2)).sum::<f64>() / (k - 1.0)).sqrt() * (n / (n - 1.0)).sqrt();
    let half = t975(n - 1.0) * se;
    Some(((kappa - half).max(-1.0), (kappa + half).min(1.0)))
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
mod tests;
