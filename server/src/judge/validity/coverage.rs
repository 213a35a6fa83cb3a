//! Coverage of the grader-validity intervals (precision and recall of an automatic label
//! over the whole run, from people's labels of a stratified sample): runs with a known
//! truth are simulated, every label drawn, the disputed ones and the audit sample settled
//! by people, and the product's own [`label_checks`](super::label_checks) computes the
//! figures. The truth is the run's own precision and recall (what every label settled
//! would give), so the interval is judged on the promise it makes.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::TrialScore;
use super::super::labels::{Label, LabelKind, Labels};
use crate::stats::coverage::{Measure, Row, Shortfall, row, tally};

/// A simulated run: how many labels, how often the graders say yes and dispute, and the
/// chance that people say yes in each cell (`[disputed][graders' value]`).
struct Run {
    labels: usize,
    graders_yes: f64,
    disputed: f64,
    truth: [[f64; 2]; 2],
    /// The share of disputed labels people have settled so far (1: all of them).
    settled: f64,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "{} labels, graders say yes to {} and dispute {}{}; people's yes: {} where the graders said yes, {} where no (undisputed), {} / {} (disputed)",
            self.labels,
            self.graders_yes,
            self.disputed,
            if self.settled < 1.0 { format!(" ({} of the disputes settled)", self.settled) } else { String::new() },
            self.truth[0][1],
            self.truth[0][0],
            self.truth[1][1],
            self.truth[1][0]
        )
    }
}

/// A label given by `source`, undisputed and never replaced.
pub(super) fn label(value: bool, source: &str) -> Label {
    Label {
        value,
        turn: None,
        source: source.to_string().into(),
        confidence: 1.0,
        reason: crate::judge::claims::Word::Borrowed(""),
        disputed: false,
        automatic: None,
        second_opinion: None,
        conflict: false,
    }
}

/// One run's scores and its true (precision, recall) counts: (TP, graders' yes, people's yes).
fn simulate(run: &Run, replicate: usize, rng: &mut ChaCha8Rng) -> (Vec<TrialScore>, (usize, usize, usize)) {
    let kind = LabelKind::Exposure;
    let mut scores = Vec::with_capacity(run.labels);
    let (mut tp, mut said_yes, mut truly_yes) = (0, 0, 0);
    for k in 0..run.labels {
        let trial_id = format!("r{replicate}-t{k}");
        let disputed = rng.random_bool(run.disputed);
        let automatic = rng.random_bool(run.graders_yes);
        let people = rng.random_bool(run.truth[usize::from(disputed)][usize::from(automatic)]);
        (tp, said_yes, truly_yes) =
            (tp + usize::from(automatic && people), said_yes + usize::from(automatic), truly_yes + usize::from(people));
        let graders = Label { disputed, ..label(automatic, "rule") };
        // People settle every disputed label and the audit sample; the rest keep the graders'.
        let settled = (disputed && rng.random_bool(run.settled)) || super::super::labels::audited(&trial_id, kind);
        let exposure =
            if settled { Label { automatic: Some(Box::new(graders)), ..label(people, "human") } } else { graders };
        let quiet = || label(false, "rule");
        let labels = Labels { exposure, adoption: quiet(), verification: quiet(), recovery: quiet() };
        scores.push(TrialScore { trial_id, labels: Some(labels), ..TrialScore::default() });
    }
    (scores, (tp, said_yes, truly_yes))
}

/// Coverage of the precision and the recall intervals over `replicates` simulated runs.
fn rows_of(run: &Run, replicates: usize) -> [Row; 2] {
    let mut rng = ChaCha8Rng::seed_from_u64(0x7661_6c69 ^ run.labels as u64);
    let row = |kind| row(kind, "grader checks beside every label figure", run.describe(), Measure::Coverage);
    let mut rows = [
        row("grader precision (Monte Carlo over Jeffreys draws)"),
        row("grader recall (Monte Carlo over Jeffreys draws)"),
    ];
    // A typical run audits a handful of the labels the graders called yes (one in twenty of
    // about 160): each cell's Jeffreys draw is wide there, and the interval errs wide.
    if run.labels < 1_000 {
        for row in &mut rows {
            row.shortfall = Shortfall::Conservative;
        }
    }
    for r in 0..replicates {
        let (scores, (tp, said_yes, truly_yes)) = simulate(run, r, &mut rng);
        let checks = super::label_checks(&scores);
        #[allow(clippy::cast_precision_loss)]
        let truths = [
            (said_yes > 0).then(|| tp as f64 / said_yes as f64),
            (truly_yes > 0).then(|| tp as f64 / truly_yes as f64),
        ];
        for (row, (statistic, truth)) in rows.iter_mut().zip(["precision", "recall"].into_iter().zip(truths)) {
            // No figure, or no truth to hold it to (nobody said yes): a replicate without one.
            let value = checks.iter().find(|c| c.statistic == statistic).and_then(|c| c.value);
            let interval = value.filter(|_| truth.is_some()).map(|e| (e.no_interval, e.lo, e.hi));
            tally(row, interval, truth.unwrap_or_default());
        }
    }
    rows
}

/// The grader-validity rows at `replicates` replicates: a typical run (600 labels) and a
/// large one (3,000), both with a rare yes among the undisputed labels the graders called no.
pub fn rows(replicates: usize) -> Vec<Row> {
    let runs = [
        Run { labels: 600, graders_yes: 0.3, disputed: 0.1, truth: [[0.05, 0.9], [0.4, 0.6]], settled: 1.0 },
        Run { labels: 3_000, graders_yes: 0.3, disputed: 0.1, truth: [[0.05, 0.9], [0.4, 0.6]], settled: 1.0 },
        // A run people are still working through: half the disputes settled, so the
        // disputed cells are settled in part and their rest is drawn.
        Run { labels: 600, graders_yes: 0.3, disputed: 0.2, truth: [[0.05, 0.9], [0.4, 0.6]], settled: 0.5 },
    ];
    runs.iter().flat_map(|run| rows_of(run, replicates)).collect()
}

#[cfg(test)]
mod tests {
    /// The fast version: both intervals keep their promise at 500 replicates (seeded, so
    /// the same every run; the book's table has 2,000).
    #[test]
    fn grader_validity_intervals_keep_their_promise() {
        let rows = super::rows(500);
        let table = crate::stats::coverage::markdown(&rows);
        assert!(rows.iter().all(crate::stats::coverage::Row::holds), "{table}");
        assert!(rows.iter().all(|r| r.replicates >= 450), "nearly every run gives both figures: {table}");
    }
}
