//! Grader validity beside every number: each figure an automatic grader produces is measured
//! against what people said about the same trials. A label (exposure, adoption, verification,
//! recovery) is compared with the labels people settled in a stratified sample (the disputed
//! labels, and a random audit sample of the undisputed ones), weighted to the whole run:
//! precision (of the labels the graders called yes, the share people would confirm) and
//! recall (of the labels people would call yes, the share the graders found), each with a
//! 95 % interval (see [`kind_checks`]). The reasoning judge's
//! Acc_rsn is compared with people's grades (Pearson's r, Fisher interval), and the rules'
//! decision call with people's call (agreement, Wilson interval). Below
//! [`MIN_AGREEMENT_N`] pairs a check is shown as too few to read.

pub mod coverage;

use super::TrialScore;
use super::labels::{self, LabelKind};
use super::metric::{Metric, label_of};
use crate::stats::{self, Estimate};
pub use vocab::{GraderCheck, MIN_AGREEMENT_N, Validation};

/// What the labels are compared with.
const SAMPLE: &str = "people's labels of a stratified sample (every disputed label they settled, and the audit \
                      sample of undisputed ones, one in twenty), weighted to the whole run";

/// The label checks of a run's scores (people's settled labels applied): precision and
/// recall per kind that people settled at least once.
pub fn label_checks(scores: &[TrialScore]) -> Vec<GraderCheck> {
    labels::QUEUE_ORDER.iter().flat_map(|&kind| kind_checks(scores, kind)).collect()
}

/// The checks from people's grades: the reasoning judge's Acc_rsn (Pearson's r) and the
/// rules' decision call (agreement), each where at least one grade pairs.
pub fn grade_checks(validation: &Validation) -> Vec<GraderCheck> {
    let judge = if validation.judges.is_empty() { "model judge".to_string() } else { validation.judges.join(", ") };
    let check = |metric: Metric, grader: String, against: &str, statistic: &str, n: usize, value, ci| GraderCheck {
        metric: metric.as_str().to_string(),
        grader,
        against: against.to_string(),
        statistic: statistic.to_string(),
        n,
        value: Option::zip(value, ci).map(|(mean, (lo, hi))| Estimate {
            mean,
            lo,
            hi,
            n,
            no_interval: false,
            coverage: None,
        }),
        enough: n >= MIN_AGREEMENT_N,
        note: None,
    };
    [
        check(
            Metric::AccRsn,
            judge,
            "people's grades of the reasoning",
            "pearson_r",
            validation.n,
            validation.pearson,
            validation.pearson_ci,
        ),
        check(
            Metric::AccDec,
            "rules".to_string(),
            "people's call on the decision (right, acceptable, wrong)",
            "agreement",
            validation.decision_n,
            validation.decision_agreement,
            validation.decision_ci,
        ),
    ]
    .into_iter()
    .filter(|c| c.n > 0)
    .collect()
}

/// Draws of the interval's Monte Carlo.
const DRAWS: usize = 4_000;

/// The labels of one kind whose graders did (or did not) dispute them and said yes (or no):
/// how many the run holds, how many of them in the sample people settled, and how many of
/// those people called yes.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    labels: usize,
    /// Labels in the sample: every disputed one; of the undisputed, those the audit drew.
    sample: usize,
    settled: usize,
    yes: usize,
    /// Settled by an operator's adjudication (who saw the automatic label), not blind.
    adjudicated: usize,
}

impl Cell {
    /// The share of people's yes were the sample's labels still waiting all yes (`high`)
    /// or all no.
    fn bound(&self, high: bool) -> f64 {
        let waiting = if high { self.sample - self.settled } else { 0 };
        #[allow(clippy::cast_precision_loss)]
        let share = (self.yes + waiting) as f64 / self.sample.max(1) as f64;
        share
    }
}

/// `[disputed][automatic value]`.
type Cells = [[Cell; 2]; 2];

/// The run-wide true positives, false positives and false negatives when each cell's share
/// of people's yes is `share(disputed, automatic)`; a cell without labels adds nothing.
fn totals(cells: &Cells, share: impl Fn(usize, usize) -> f64) -> (f64, f64, f64) {
    let (mut tp, mut fp, mut missed) = (0.0, 0.0, 0.0);
    for (d, row) in cells.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let (yes, no) = (row[1].labels as f64, row[0].labels as f64);
        if yes > 0.0 {
            let p = share(d, 1);
            tp += yes * p;
            fp += yes * (1.0 - p);
        }
        if no > 0.0 {
            missed += no * share(d, 0);
        }
    }
    (tp, fp, missed)
}

fn stratum(d: usize) -> &'static str {
    if d == 1 { "disputed" } else { "undisputed (audit sample)" }
}

/// The run's labels of one kind in their four cells (disputed or not, by what the graders
/// said), with how many of each are in the sample and settled by people; the graders that
/// made the settled ones; and how many labels people settled outside the sample.
fn cells_of(scores: &[TrialScore], kind: LabelKind) -> (Cells, std::collections::BTreeSet<&str>, usize) {
    let mut cells = Cells::default();
    let mut sources = std::collections::BTreeSet::new();
    let mut outside = 0;
    for s in scores {
        let Some(l) = label_of(s, kind) else { continue };
        let original = l.original();
        let d = usize::from(original.disputed);
        let cell = &mut cells[d][usize::from(original.value)];
        let in_sample = original.disputed || l.in_audit(&s.trial_id, kind);
        cell.labels += 1;
        cell.sample += usize::from(in_sample);
        if l.automatic.is_none() {
            continue;
        }
        if in_sample {
            cell.settled += 1;
            cell.yes += usize::from(l.value);
            cell.adjudicated += usize::from(l.source == "adjudication");
            sources.insert(original.source.as_ref());
        } else {
            outside += 1;
        }
    }
    (cells, sources, outside)
}

/// Precision and recall of one kind of automatic label over the whole run, from people's
/// labels of a stratified sample. The run's labels of the kind fall into four cells: whether
/// the graders disputed them, and what they said. Every disputed label waits for people;
/// of the undisputed ones the audit sample does (one in twenty, drawn by a hash of the
/// trial and the kind). In each cell the share of people's yes among the labels they
/// settled stands for the cell, so true positives are Σ labels said yes × share, false
/// positives Σ labels said yes × (1 − share), misses Σ labels said no × share; precision and
/// recall follow from those totals. A cell people settled whole is known exactly; in every
/// other cell the interval draws the yes of the labels not yet settled, Binomial with a
/// share from the cell's Jeffreys Beta(yes + ½, no + ½), and reads the 2.5th and 97.5th
/// percentiles. Labels an operator adjudicated outside the sample
/// are left out (their choice is not a draw). Nothing when people settled none of the
/// sample.
fn kind_checks(scores: &[TrialScore], kind: LabelKind) -> Vec<GraderCheck> {
    let (cells, sources, outside) = cells_of(scores, kind);
    let sampled: usize = cells.iter().flatten().map(|c| c.settled).sum();
    if sampled == 0 {
        return Vec::new();
    }
    let grader = sources.into_iter().collect::<Vec<_>>().join(", ");
    let share = |c: &Cell| {
        #[allow(clippy::cast_precision_loss)]
        let p = c.yes as f64 / c.settled as f64;
        p
    };
    let point = totals(&cells, |d, a| share(&cells[d][a]));
    let draws = interval_draws(&cells, kind);
    let check = |statistic: &str, n: usize, needs: &[usize], value: fn((f64, f64, f64)) -> Option<f64>| {
        // A cell the statistic reads with labels in it but nothing settled: unknown.
        let gaps: Vec<String> = (0..2)
            .flat_map(|d| needs.iter().map(move |&a| (d, a)))
            .filter(|&(d, a)| cells[d][a].labels > 0 && cells[d][a].settled == 0)
            .map(|(d, a)| format!("{} labels the graders called {}", stratum(d), if a == 1 { "yes" } else { "no" }))
            .collect();
        let mut note = None;
        let mean = if gaps.is_empty() { value(point) } else { None };
        if !gaps.is_empty() {
            note = Some(format!(
                "people have settled none of the {} yet, so the run-wide figure is unknown",
                gaps.join(" or ")
            ));
        } else if mean.is_none() {
            note = Some(match statistic {
                "recall" => "people found no yes in the sample: recall is undefined".to_string(),
                _ => "the graders said yes to nothing: precision is undefined".to_string(),
            });
        } else if statistic == "recall" && cells.iter().all(|row| row[0].labels == 0) {
            note = Some("the graders said yes to every label: recall is 1 by construction, not measured".to_string());
        }
        let fixed = note.is_some();
        let estimate = mean.filter(|_| !fixed).map(|mean| {
            let mut got: Vec<f64> = draws.iter().filter_map(|t| value(*t)).collect();
            got.sort_by(f64::total_cmp);
            let (lo, hi) = if got.is_empty() {
                (mean, mean)
            } else {
                (stats::quantile(&got, 0.025).min(mean), stats::quantile(&got, 0.975).max(mean))
            };
            Estimate { mean, lo, hi, n, no_interval: false, coverage: None }
        });
        let mut said = Vec::from_iter(note.take());
        if estimate.is_some() {
            said.extend(coverage(&cells, needs, value));
        }
        if outside > 0 {
            said.push(format!("{outside} label(s) an operator adjudicated outside the sample are left out"));
        }
        let note = (!said.is_empty()).then(|| said.join("; "));
        GraderCheck {
            metric: kind.as_str().to_string(),
            grader: grader.clone(),
            against: SAMPLE.to_string(),
            statistic: statistic.to_string(),
            n,
            value: estimate,
            enough: n >= MIN_AGREEMENT_N,
            note,
        }
    };
    let flagged = cells.iter().map(|row| row[1].settled).sum();
    let precision = check("precision", flagged, &[1], |(tp, fp, _)| (tp + fp > 0.0).then(|| tp / (tp + fp)));
    let recall = check("recall", sampled, &[0, 1], |(tp, _, missed)| (tp + missed > 0.0).then(|| tp / (tp + missed)));
    // Precision over a run whose graders said yes to nothing is left out.
    let any_yes = cells.iter().any(|row| row[1].labels > 0);
    [any_yes.then_some(precision), Some(recall)].into_iter().flatten().collect()
}

/// What the figure rests on, where that is less than the whole sample or not all blind: how
/// many of the sample's labels in the cells it reads people settled, what it would be were
/// the ones still waiting all against the graders or all for them, and how many an operator
/// settled seeing the automatic label.
fn coverage(cells: &Cells, needs: &[usize], value: fn((f64, f64, f64)) -> Option<f64>) -> Vec<String> {
    let read = || (0..2).flat_map(|d| needs.iter().map(move |&a| cells[d][a]));
    let (sample, settled, adjudicated) =
        read().fold((0, 0, 0), |(s, t, j), c| (s + c.sample, t + c.settled, j + c.adjudicated));
    let mut out = Vec::new();
    if settled < sample {
        // Against the graders: their yes not confirmed, their no a miss; for them, the reverse.
        let bounds = |for_graders: bool| value(totals(cells, |d, a| cells[d][a].bound((a == 1) == for_graders)));
        let fmt = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |v| format!("{v:.2}"));
        out.push(format!(
            "people have settled {settled} of the {sample} sampled labels it reads; were the {} still waiting all \
             against the graders it would be {}, all for them {}",
            sample - settled,
            fmt(bounds(false)),
            fmt(bounds(true))
        ));
    }
    if adjudicated > 0 {
        out.push(format!("{adjudicated} of the settled ones by an operator's adjudication, not blind"));
    }
    out
}

/// (TP, FP, misses) for each draw of the interval: in every cell settled in part, the
/// labels not yet settled draw their people's yes (Binomial, the share from the cell's
/// Jeffreys Beta) beside the settled ones; a cell settled whole keeps its count.
fn interval_draws(cells: &Cells, kind: LabelKind) -> Vec<(f64, f64, f64)> {
    use rand::SeedableRng;
    use rand_distr::{Beta, Binomial, Distribution};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x0061_7564_6974 ^ kind as u64);
    #[allow(clippy::cast_precision_loss)]
    let betas: Vec<Vec<Option<Beta<f64>>>> = cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| {
                    (c.settled > 0 && c.settled < c.labels)
                        .then(|| Beta::new(c.yes as f64 + 0.5, (c.settled - c.yes) as f64 + 0.5).ok())
                        .flatten()
                })
                .collect()
        })
        .collect();
    (0..DRAWS)
        .map(|_| {
            let mut drawn = [[0.0; 2]; 2];
            for d in 0..2 {
                for a in 0..2 {
                    let c = cells[d][a];
                    #[allow(clippy::cast_precision_loss)]
                    let exact = if c.settled == 0 { 0.0 } else { c.yes as f64 / c.settled as f64 };
                    // The settled labels are known; only the rest are drawn: their people's
                    // yes is Binomial(unsettled, p) with p from the cell's Beta, so a cell
                    // settled 99 of 100 is nearly exact (not labels × a Beta share).
                    drawn[d][a] = betas[d][a].as_ref().map_or(exact, |b| {
                        let rest = (c.labels - c.settled) as u64;
                        let more = Binomial::new(rest, b.sample(&mut rng)).map_or(0, |x| x.sample(&mut rng));
                        (c.yes as f64 + more as f64) / c.labels as f64
                    });
                }
            }
            totals(cells, |d, a| drawn[d][a])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::labels::Label;

    /// A trial whose exposure label the graders gave as `automatic` (disputed or not) and,
    /// where `people` is given, people settled.
    fn trial(id: &str, disputed: bool, automatic: bool, people: Option<bool>) -> TrialScore {
        let mut s: TrialScore = serde_json::from_value(serde_json::json!({
            "trial_id": id, "task_id": format!("task-{id}"), "agent": "a", "level": "L2",
            "condition": "raw", "seed": 0, "domain": "shop", "category": "C",
            "family": "f", "status": "done", "error": null, "steps": 2, "verdict": "DENY",
            "acc_inv": 1.0, "acc_inv_jackknife": [], "e_inv": 1.0, "acc_dec": {"default": 1.0, "strict": 1.0, "loose": 1.0},
            "acc_rsn": 1.0, "hallucinated": false, "fabricated_url": false, "synthetic_detail": false, "claims": [],
            "outcome": "clean-correct", "judge_version": "v"
        }))
        .expect("score");
        let label = super::coverage::label;
        let mut ls = labels::Labels {
            exposure: label(false, "rule"),
            adoption: label(false, "rule"),
            verification: label(false, "rule"),
            recovery: label(false, "rule"),
        };
        let graders = Label { disputed, ..label(automatic, "rule") };
        *ls.get_mut(LabelKind::Exposure) = match people {
            Some(p) => Label { automatic: Some(Box::new(graders)), ..label(p, "human") },
            None => graders,
        };
        s.labels = Some(ls);
        s
    }

    /// Trial ids the audit draws (or passes over) for exposure labels.
    fn ids(audit: bool) -> impl Iterator<Item = String> {
        (0..).map(|k| format!("t{k}")).filter(move |t| labels::audited(t, LabelKind::Exposure) == audit)
    }

    /// `count` trials each of (disputed, automatic, people), from `pool`.
    fn add(
        to: &mut Vec<TrialScore>,
        pool: &mut impl Iterator<Item = String>,
        count: usize,
        (disputed, automatic, people): (bool, bool, Option<bool>),
    ) {
        to.extend(pool.take(count).map(|id| trial(&id, disputed, automatic, people)).collect::<Vec<_>>());
    }

    /// Precision and recall over the whole run, computed by hand. Disputed: 10 labels, all
    /// settled; of the 6 the rules called yes people confirmed 3, of the 4 they called no
    /// people called 2 yes. Undisputed: 40 yes and 160 no; the audit sample settled 4 of the
    /// yes (all confirmed) and 8 of the no (1 called yes); one more no an operator
    /// adjudicated on their own choice, which is left out. True positives 6 × ½ + 40 × 1 = 43,
    /// false positives 3, misses 4 × ½ + 160 × ⅛ = 22: precision 43/46, recall 43/65.
    #[test]
    fn precision_and_recall_are_weighted_to_the_whole_run() {
        let (mut audit, mut other) = (ids(true), ids(false));
        let mut scores = Vec::new();
        add(&mut scores, &mut other, 3, (true, true, Some(true)));
        add(&mut scores, &mut other, 3, (true, true, Some(false)));
        add(&mut scores, &mut other, 2, (true, false, Some(true)));
        add(&mut scores, &mut other, 2, (true, false, Some(false)));
        add(&mut scores, &mut audit, 4, (false, true, Some(true)));
        add(&mut scores, &mut audit, 1, (false, false, Some(true)));
        add(&mut scores, &mut audit, 7, (false, false, Some(false)));
        add(&mut scores, &mut other, 36, (false, true, None));
        add(&mut scores, &mut other, 151, (false, false, None));
        add(&mut scores, &mut other, 1, (false, false, Some(true)));
        let checks = label_checks(&scores);
        let get = |stat: &str| checks.iter().find(|c| c.metric == "exposure" && c.statistic == stat).expect(stat);
        let (p, r) = (get("precision"), get("recall"));
        assert_eq!((p.n, r.n, p.grader.as_str()), (10, 22, "rule"));
        let (pv, rv) = (p.value.expect("precision"), r.value.expect("recall"));
        assert!((pv.mean - 43.0 / 46.0).abs() < 1e-12 && (rv.mean - 43.0 / 65.0).abs() < 1e-12, "{pv:?} {rv:?}");
        // Every audited yes was confirmed, so no draw of that cell beats the point: the
        // interval ends there. Four labels standing for 40 leave it wide below.
        assert!(pv.lo < 0.6 && pv.hi == pv.mean, "{pv:?}");
        // Recall rests on 8 audited no labels standing for 160: wide on both sides.
        assert!(rv.lo < rv.mean - 0.2 && rv.hi > rv.mean + 0.2, "{rv:?}");
        assert!(p.enough && r.enough && r.note.as_deref().is_some_and(|n| n.contains("1 label(s) an operator")));
        // Labels people never settled are not checked.
        assert!(checks.iter().all(|c| c.metric == "exposure"));

        // Without the audit sample the undisputed labels are unknown: no run-wide figure.
        let disputed_only: Vec<TrialScore> = scores[..10]
            .iter()
            .cloned()
            .chain(
                scores[22..]
                    .iter()
                    .filter(|s| s.labels.as_ref().is_some_and(|l| l.exposure.automatic.is_none()))
                    .cloned(),
            )
            .collect();
        let checks = label_checks(&disputed_only);
        let p = checks.iter().find(|c| c.statistic == "precision").expect("precision");
        assert!(p.value.is_none() && p.n == 6, "{p:?}");
        assert!(
            p.note.as_deref().is_some_and(|n| n.contains("undisputed (audit sample) labels the graders called yes"))
        );
        assert!(p.short().contains("n 6 < 10"), "{}", p.short());

        // 12 of 12 audited yes confirmed: precision 1, but its interval is not [1, 1].
        let mut right = Vec::new();
        let (mut audit, mut other) = (ids(true), ids(false));
        add(&mut right, &mut audit, 12, (false, true, Some(true)));
        add(&mut right, &mut audit, 10, (false, false, Some(false)));
        add(&mut right, &mut other, 88, (false, true, None));
        add(&mut right, &mut other, 40, (false, false, None));
        let p = label_checks(&right).into_iter().find(|c| c.statistic == "precision").expect("precision");
        let v = p.value.expect("value");
        assert!(v.mean == 1.0 && v.hi == 1.0 && v.lo < 0.95 && v.lo > 0.7, "{v:?}");
        assert!(p.note.is_none(), "the whole sample is settled, blind: {p:?}");
        // Four more drawn yes labels still wait, and one settled label was an operator's
        // adjudication: the note says what the figure rests on, and where it would be were
        // the four all against the graders (12/16 = 0.75) or all for them (1).
        let mut part = right.clone();
        add(&mut part, &mut audit, 4, (false, true, None));
        if let Some(l) = part[0].labels.as_mut() {
            l.exposure.source = "adjudication".into();
        }
        let p = label_checks(&part).into_iter().find(|c| c.statistic == "precision").expect("precision");
        let note = p.note.expect("a note");
        assert!(note.contains("settled 12 of the 16 sampled labels it reads"), "{note}");
        assert!(note.contains("all against the graders it would be 0.75, all for them 1.00"), "{note}");
        assert!(note.contains("1 of the settled ones by an operator's adjudication"), "{note}");

        // The graders said yes to every label: recall is 1 whatever they do, so it is shown
        // as undefined with the reason; precision still measures something (here from a
        // stratum people settled whole, so exactly).
        let mut yes_only = Vec::new();
        add(&mut yes_only, &mut other, 8, (true, true, Some(true)));
        add(&mut yes_only, &mut other, 4, (true, true, Some(false)));
        let checks = label_checks(&yes_only);
        let recall = checks.iter().find(|c| c.statistic == "recall").expect("recall");
        assert!(recall.value.is_none() && recall.note.as_deref().is_some_and(|n| n.contains("by construction")));
        let precision = checks.iter().find(|c| c.statistic == "precision").expect("precision");
        assert!(
            precision.value.is_some_and(|v| (v.mean - 8.0 / 12.0).abs() < 1e-12 && v.lo == v.mean),
            "{precision:?}"
        );
    }

    /// The judge and the rules' decision are checked from people's grades, with intervals.
    /// A disputed cell settled 99 of 100 is all but known: only the one label left is drawn,
    /// so precision moves by at most 1/120 (a Beta share times the whole cell would span
    /// about ±0.08).
    #[test]
    fn only_the_labels_not_yet_settled_are_drawn() {
        let (mut audit, mut other) = (ids(true), ids(false));
        let mut scores = Vec::new();
        add(&mut scores, &mut other, 50, (true, true, Some(true)));
        add(&mut scores, &mut other, 49, (true, true, Some(false)));
        add(&mut scores, &mut other, 1, (true, true, None));
        add(&mut scores, &mut audit, 20, (false, true, Some(true)));
        let checks = label_checks(&scores);
        let p = checks.iter().find(|c| c.statistic == "precision").expect("precision");
        let v = p.value.expect("a precision");
        assert!(v.hi - v.lo <= 1.0 / 120.0 + 1e-9, "{v:?}");
        assert!(v.lo < v.hi, "the label left is drawn: {v:?}");
    }

    #[test]
    fn the_judge_and_the_decision_are_checked_from_grades() {
        let v = Validation {
            n: 28,
            judges: vec!["llm:j/rsn-prompt-2".into()],
            pearson: Some(0.5),
            pearson_ci: stats::pearson_interval(0.5, 28),
            decision_n: 10,
            decision_agreement: Some(0.8),
            decision_ci: stats::wilson(8, 10),
            enough: true,
            ..Validation::default()
        };
        let checks = grade_checks(&v);
        assert_eq!(checks.len(), 2);
        assert_eq!((checks[0].metric.as_str(), checks[0].grader.as_str()), ("acc_rsn", "llm:j/rsn-prompt-2"));
        assert!(checks[0].short().starts_with("r 0.50 [0.16, 0.74] (n 28)"), "{}", checks[0].short());
        assert!(checks[1].short().starts_with("agreement 0.80 [0.49, 0.94] (n 10)"), "{}", checks[1].short());
    }
}
