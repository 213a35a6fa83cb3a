//! Coverage rows of the agreement statistics: Cohen's κ, Wilson's interval, Fisher's z.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::{Measure, Row, row, tally};
use crate::stats::{cohen_kappa, kappa_interval, pearson, pearson_interval, wilson};

/// Cohen's κ of two annotators over `n` items: a latent yes (share 0.4) that each annotator
/// reads correctly with a probability chosen so the population κ is `target`.
pub(super) fn kappa_row(n: usize, target: f64, replicates: usize) -> Row {
    // Both annotators right with probability a on each item, independently: with prevalence
    // π, P(yes) = π a + (1 − π)(1 − a) = q for each, agreement a² + (1 − a)², chance
    // q² + (1 − q)². The a giving `target` is found by bisection.
    let pi = 0.4;
    let kappa_of = |a: f64| {
        let q = pi * a + (1.0 - pi) * (1.0 - a);
        let po = pi * (a * a + (1.0 - a) * (1.0 - a)) + (1.0 - pi) * (a * a + (1.0 - a) * (1.0 - a));
        let pe = q * q + (1.0 - q) * (1.0 - q);
        (po - pe) / (1.0 - pe)
    };
    let (mut lo, mut hi) = (0.5, 1.0);
    for _ in 0..60 {
        let mid = f64::midpoint(lo, hi);
        if kappa_of(mid) < target { lo = mid } else { hi = mid }
    }
    let a = f64::midpoint(lo, hi);
    let truth = kappa_of(a);
    let mut rng = ChaCha8Rng::seed_from_u64(0x006b_6170_7061 ^ n as u64);
    let mut row = row(
        "Cohen's κ (items resampled)",
        "labelling queue, grader checks",
        format!("{n} items, prevalence 0.4, truth κ {truth:.2}"),
        Measure::Coverage,
    );
    for _ in 0..replicates {
        let items: Vec<Vec<(bool, bool)>> = (0..n)
            .map(|_| {
                let truth = rng.random_bool(pi);
                let read = |rng: &mut ChaCha8Rng| if rng.random_bool(a) { truth } else { !truth };
                vec![(read(&mut rng), read(&mut rng))]
            })
            .collect();
        let pairs: Vec<(bool, bool)> = items.iter().flatten().copied().collect();
        let interval = cohen_kappa(&pairs).and_then(|_| kappa_interval(&items, n as u64));
        tally(&mut row, interval.map(|(lo, hi)| (false, lo, hi)), truth);
    }
    row
}

/// Wilson's interval of a share of `n` yes/no outcomes.
pub(super) fn wilson_row(n: usize, p: f64, replicates: usize) -> Row {
    let mut rng = ChaCha8Rng::seed_from_u64(0x7769_6c73 ^ n as u64);
    let mut row = row(
        "Wilson interval of a small share",
        "grader checks (decision agreement)",
        format!("{n} items, truth {p}"),
        Measure::Coverage,
    );
    for _ in 0..replicates {
        let hits = (0..n).filter(|_| rng.random_bool(p)).count();
        tally(&mut row, wilson(hits, n).map(|(lo, hi)| (false, lo, hi)), p);
    }
    row
}

/// Fisher's z interval of Pearson's r over `n` bivariate-normal pairs.
pub(super) fn pearson_row(n: usize, rho: f64, replicates: usize) -> Row {
    let mut rng = ChaCha8Rng::seed_from_u64(0x7065_6172 ^ n as u64);
    let normal = Normal::new(0.0, 1.0).unwrap_or_else(|_| unreachable!("unit normal"));
    let mut row = row(
        "Pearson's r (Fisher's z)",
        "grader checks (scores)",
        format!("{n} pairs, bivariate normal, truth ρ {rho}"),
        Measure::Coverage,
    );
    for _ in 0..replicates {
        let pairs: Vec<(f64, f64)> = (0..n)
            .map(|_| {
                let (x, e): (f64, f64) = (normal.sample(&mut rng), normal.sample(&mut rng));
                (x, rho * x + (1.0 - rho * rho).sqrt() * e)
            })
            .collect();
        let interval = pearson(&pairs).and_then(|r| pearson_interval(r, n));
        tally(&mut row, interval.map(|(lo, hi)| (false, lo, hi)), rho);
    }
    row
}
