//! Rows beyond the printed figure: data far from the case the figure simulates (two-valued
//! clusters at rates spread over [0, 1]), at the same cluster counts, where the interval
//! covers less than the figure beside it. They are in the table so that the figure is not
//! read as a bound over every data; the CI test holds each above its floor.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::geo::over_lists;
use super::{Design, Measure, Row, Shortfall, row, tally_est};
use crate::stats::{Obs, Weight, interval_weighted};

/// NRG over the built-in datasets' lists where one dataset's lists are all-or-nothing: each
/// promotes every target (a gain of 0.5) with probability 0.3, or none; the other datasets
/// never move. Three lists that all stay put give a zero-width interval at 0.
pub(super) fn all_or_nothing_row(replicates: usize) -> Row {
    let lists = [3usize, 4, 6, 6];
    let mut rng = ChaCha8Rng::seed_from_u64(0x0061_6c6c);
    let truth = 0.5 * 0.3 / 4.0;
    let mut row = row(
        "NRG, lists as clusters",
        "geo report rows",
        format!(
            "lists 3/4/6/6 × 5 targets, the first dataset's lists promote all or none (p 0.3), 0 elsewhere, truth {truth}"
        ),
        Measure::Coverage,
    );
    row.shortfall = Shortfall::Beyond;
    row.floor = 0.58;
    for _ in 0..replicates {
        let every = |di: usize, rng: &mut ChaCha8Rng| if di == 0 && rng.random_bool(0.3) { 0.5 } else { 0.0 };
        let obs = over_lists(&lists, &mut rng, every, |gain, _| gain);
        tally_est(&mut row, interval_weighted(&obs, Weight::Domain), truth);
    }
    row
}

/// A yes/no score averaged as a score (a t interval) over a quick run's four families of
/// five trials, when the outcome is rare (mean 0.1, ICC 0.2): most runs see one or two
/// successes in one family.
pub(super) fn rare_score_row(replicates: usize) -> Row {
    let d = Design { clusters: vec![4], size: (5, 5), icc: 0.2 };
    let mut rng = ChaCha8Rng::seed_from_u64(0x0000_7261_7265);
    let mut row = row(
        "mean of a graded score",
        "investigation and reasoning scores",
        d.describe("0.1, yes/no"),
        Measure::Coverage,
    );
    row.shortfall = Shortfall::Beyond;
    row.floor = 0.72;
    for _ in 0..replicates {
        let mut obs = Vec::new();
        for c in 0..4 {
            let p = d.cluster_rate(0.1, &mut rng);
            for _ in 0..5 {
                obs.push(Obs::value("d", format!("c{c}"), f64::from(u8::from(rng.random_bool(p)))));
            }
        }
        tally_est(&mut row, interval_weighted(&obs, Weight::Domain), 0.1);
    }
    row
}
