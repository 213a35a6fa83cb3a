//! What an interval may cover at few clusters, printed beside it: its coverage measured by
//! simulation at the interval's own clusters, where that falls short of the 95 % band.
//!
//! Two cases are taken and the lesser kept. Normal theory: when one domain's clusters vary
//! and the others' barely do, the spread rests on that domain alone, on its clusters − 1
//! degrees of freedom rather than the design's. Two-valued outcomes (for a t interval):
//! the same domain's clusters drawn as yes/no trials at rates spread uniformly over
//! [0, 1], the other domains constant, and the product's own estimator applied to 5,000
//! such runs of this very shape (the domain's cluster sizes, the design's degrees of
//! freedom). Few such clusters are far from normal, and now and then they tie and give a
//! zero-width interval.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Clusters, Weight, t975};

/// Runs simulated per shape (the figure's own error is then about ±0.6 points).
const REPLICATES: usize = 5_000;

/// A domain with at most this many clusters is simulated whatever normal theory says.
const FEW: usize = 12;

/// Shapes whose figure is kept (the cache is emptied past this many).
const KEPT: usize = 4_096;

/// A shape: the interval's degrees of freedom, the varying domain's cluster sizes (whole
/// counts, sorted), and under pooled weights every other domain's observations together.
type Shape = (u64, Vec<u64>, Option<u64>);

static CACHE: LazyLock<Mutex<HashMap<Shape, f64>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The least coverage of `clusters`' interval on `design` degrees of freedom, where a
/// domain has few clusters or normal theory says it may fall short; 0.95 otherwise.
/// A proportion's interval (Korn and Graubard's) is built for two-valued trials and covers
/// more than normal theory's figure at these shapes (the statistics page's rate rows), so
/// it takes normal theory's alone.
pub(super) fn least(clusters: &Clusters, design: f64) -> f64 {
    // The fewest degrees of freedom of a measured domain (clusters − 1, as the spread
    // counts them).
    #[allow(clippy::cast_precision_loss)]
    let fewest = clusters
        .domains
        .iter()
        .filter(|cs| weighs(cs) >= 2)
        .map(|cs| cs.len() as f64 - 1.0)
        .fold(f64::INFINITY, f64::min);
    let normal = normal(fewest, design);
    #[allow(clippy::cast_precision_loss)]
    if clusters.proportion || (normal >= 0.94 && fewest >= FEW as f64) {
        return normal;
    }
    normal.min(two_valued(clusters, design))
}

/// Normal theory's worst case: every variance in the stratum with `fewest` degrees of
/// freedom, so |estimate − truth| / se is t on `fewest` while the interval uses `design`.
fn normal(fewest: f64, design: f64) -> f64 {
    if !fewest.is_finite() || fewest >= design {
        return 0.95;
    }
    StudentsT::new(0.0, 1.0, fewest.max(1.0)).map_or(0.95, |t| 2.0 * t.cdf(t975(design)) - 1.0)
}

/// The coverage of two-valued clusters in one domain, every other domain constant, at
/// `clusters`' own shape: the least over each domain of at most [`FEW`] clusters and the
/// domain with the fewest (a domain of five clusters one of which holds most observations
/// can cover less than a domain of four alike ones).
fn two_valued(clusters: &Clusters, design: f64) -> f64 {
    let measured: Vec<&Vec<(f64, f64)>> = clusters.domains.iter().filter(|cs| weighs(cs) >= 2).collect();
    let fewest = measured.iter().map(|cs| weighs(cs)).min().unwrap_or(0);
    let all: f64 = clusters.domains.iter().flatten().map(|c| c.1).sum();
    measured
        .iter()
        .filter(|cs| weighs(cs) <= FEW.max(fewest))
        .map(|cs| one_domain(cs, all, clusters.weight, design))
        .fold(0.95, f64::min)
}

/// A domain's clusters with something in the denominator.
fn weighs(cs: &[(f64, f64)]) -> usize {
    cs.iter().filter(|c| c.1 > 0.0).count()
}

/// [`two_valued`] with `varying` the domain that varies (kept per shape).
fn one_domain(varying: &[(f64, f64)], all: f64, weight: Weight, design: f64) -> f64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = |v: f64| v.round().max(0.0) as u64;
    let mut sizes: Vec<u64> = varying.iter().map(|c| whole(c.1)).collect();
    sizes.sort_unstable();
    let rest = (weight == Weight::Pooled).then(|| whole(all - varying.iter().map(|c| c.1).sum::<f64>()));
    let shape: Shape = (design.to_bits(), sizes, rest);
    if let Some(c) = CACHE.lock().ok().and_then(|m| m.get(&shape).copied()) {
        return c;
    }
    let coverage = simulate(&shape);
    if let Ok(mut m) = CACHE.lock() {
        if m.len() >= KEPT {
            m.clear();
        }
        m.insert(shape, coverage);
    }
    coverage
}

/// Runs of `shape`: the varying domain's clusters drawn as yes/no trials at rates drawn
/// from U(0, 1), so its truth is ½; under equal domain weights the constant domains only
/// scale the estimate, its spread and the truth alike, and are left out; under pooled
/// weights they are one constant domain holding the rest of the observations.
fn simulate((design, sizes, rest): &Shape) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let (varying, rest) = (sizes.iter().sum::<u64>() as f64, rest.map(|r| r as f64));
    let truth = rest.map_or(0.5, |r| 0.5 * varying / (varying + r));
    let t = t975(f64::from_bits(*design));
    let mut rng = ChaCha8Rng::seed_from_u64(0x0077_6f72_7374);
    let (mut printed, mut covered) = (0usize, 0usize);
    for _ in 0..REPLICATES {
        #[allow(clippy::cast_precision_loss)]
        let drawn: Vec<(f64, f64)> = sizes
            .iter()
            .map(|&n| {
                let p = rng.random::<f64>();
                let yes = if n <= 32 {
                    (0..n).filter(|_| rng.random::<f64>() < p).count() as u64
                } else {
                    Binomial::new(n, p).map_or(0, |b| b.sample(&mut rng))
                };
                (yes as f64, n as f64)
            })
            .collect();
        let mut domains = vec![drawn];
        if let Some(r) = rest.filter(|r| *r > 0.0) {
            domains.push(vec![(0.0, r / 2.0); 2]);
        }
        let weight = if rest.is_some() { Weight::Pooled } else { Weight::Domain };
        let c = Clusters { domains, weight, proportion: false, trials: 0.0 };
        let Some(mean) = c.estimate() else { continue };
        let spread = c.measure(mean);
        if !spread.known {
            continue;
        }
        printed += 1;
        covered += usize::from((mean - truth).abs() <= t * spread.se);
    }
    #[allow(clippy::cast_precision_loss)]
    if printed == 0 { 0.95 } else { covered as f64 / printed as f64 }
}
