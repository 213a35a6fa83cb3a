//! Grader validity beside every number: each figure an automatic grader produces is measured
//! against what people said about the same trials. A label (exposure, adoption, verification,
//! recovery) is compared with the labels people settled: precision (of the trials the rules
//! labelled yes, the share people confirmed) and recall (of the trials people labelled yes,
//! the share the rules found), each with a clustered bootstrap interval. The reasoning judge's
//! Acc_rsn is compared with people's grades (Pearson's r, Fisher interval), and the rules'
//! decision call with people's call (agreement, Wilson interval). Below
//! [`MIN_AGREEMENT_N`] pairs a check is shown as too few to read.

use super::TrialScore;
use super::labels::{self, LabelKind};
use super::metric::{Metric, label_of};
use crate::stats::{self, Estimate};
pub use app::model::{GraderCheck, MIN_AGREEMENT_N, Validation};

/// What the labels are compared with. The annotation queue holds disputed labels, so the
/// sample is a selected one (weak evidence), not a random draw of the run's labels.
const SETTLED: &str = "labels people settled (disputed ones: a selected sample, not a random one)";

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
        value: Option::zip(value, ci).map(|(mean, (lo, hi))| Estimate { mean, lo, hi, n }),
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

/// Precision and recall of one kind of automatic label against people's settled labels,
/// over the trials where people settled it; nothing when they settled none. Intervals are
/// Wilson's over the pairs (never of zero width at 0 or 1). A statistic the sample fixes in
/// advance (every automatic label in it one value) is shown as undefined, with the reason.
fn kind_checks(scores: &[TrialScore], kind: LabelKind) -> Vec<GraderCheck> {
    // (automatic, people's) in one pass: a settled label keeps the automatic one it replaced,
    // whose source (rules, or a model judge where one labelled) names the grader.
    let mut sources = std::collections::BTreeSet::new();
    let pairs: Vec<(bool, bool)> = scores
        .iter()
        .filter_map(|s| {
            let l = label_of(s, kind)?;
            let automatic = l.automatic.as_ref()?;
            sources.insert(automatic.source.as_str());
            Some((automatic.value, l.value))
        })
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let grader = sources.into_iter().collect::<Vec<_>>().join(", ");
    let constant = pairs.iter().all(|p| p.0 == pairs[0].0).then_some(pairs[0].0);
    let share = |statistic: &str, given: fn(&(bool, bool)) -> bool, hit: fn(&(bool, bool)) -> bool| {
        let n = pairs.iter().filter(|p| given(p)).count();
        let hits = pairs.iter().filter(|p| given(p) && hit(p)).count();
        // Recall when every automatic label in the sample said yes (or no) is 1 (or 0) by
        // construction: it says nothing about the grader.
        let fixed = statistic == "recall" && constant.is_some();
        #[allow(clippy::cast_precision_loss)]
        let value = stats::wilson(hits, n).filter(|_| !fixed).map(|(lo, hi)| Estimate {
            mean: hits as f64 / n as f64,
            lo,
            hi,
            n,
        });
        GraderCheck {
            metric: kind.as_str().to_string(),
            grader: grader.clone(),
            against: SETTLED.to_string(),
            statistic: statistic.to_string(),
            n,
            value,
            enough: n >= MIN_AGREEMENT_N,
            note: fixed.then(|| {
                format!(
                    "every automatic label people settled said {}: recall is fixed by the sample, not measured",
                    if constant == Some(true) { "yes" } else { "no" }
                )
            }),
        }
    };
    // A statistic over no pairs (nothing flagged, or no person's yes) is left out.
    [share("precision", |p| p.0, |p| p.1), share("recall", |p| p.1, |p| p.0)].into_iter().filter(|c| c.n > 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::labels::Label;

    /// A trial whose `kind` label the rules set to `automatic` and people settled as `people`.
    fn settled(i: usize, automatic: bool, people: bool) -> TrialScore {
        let mut s: TrialScore = serde_json::from_value(serde_json::json!({
            "trial_id": format!("t{i}"), "task_id": format!("task{}", i % 7), "agent": "a", "level": "L2",
            "condition": "raw", "seed": 0, "domain": if i.is_multiple_of(2) { "shop" } else { "forum" }, "category": "C",
            "family": format!("f{}", i % 5), "status": "done", "error": null, "steps": 2, "verdict": "DENY",
            "acc_inv": 1.0, "acc_inv_jackknife": [], "e_inv": 1.0, "acc_dec": {"default": 1.0, "strict": 1.0, "loose": 1.0},
            "acc_rsn": 1.0, "hallucinated": false, "fabricated_url": false, "synthetic_detail": false, "claims": [],
            "outcome": "clean-correct", "judge_version": "v"
        }))
        .expect("score");
        let label = |value: bool, source: &str| Label {
            value,
            turn: None,
            source: source.to_string(),
            confidence: 1.0,
            reason: String::new(),
            disputed: false,
            automatic: None,
            second_opinion: None,
            conflict: false,
        };
        let mut ls = labels::Labels {
            exposure: label(false, "rule"),
            adoption: label(false, "rule"),
            verification: label(false, "rule"),
            recovery: label(false, "rule"),
        };
        *ls.get_mut(LabelKind::Exposure) =
            Label { automatic: Some(Box::new(label(automatic, "rule"))), ..label(people, "human") };
        s.labels = Some(ls);
        s
    }

    /// Precision and recall against people's labels, computed by hand: the rules said yes
    /// on 12 trials, people confirmed 9 (precision 0.75); people said yes on 15, the rules
    /// found 9 of them (recall 0.6). A check over too few pairs says so.
    #[test]
    fn precision_and_recall_match_a_hand_count() {
        let mut scores = Vec::new();
        scores.extend((0..9).map(|i| settled(i, true, true)));
        scores.extend((9..12).map(|i| settled(i, true, false)));
        scores.extend((12..18).map(|i| settled(i, false, true)));
        scores.extend((18..30).map(|i| settled(i, false, false)));
        let checks = label_checks(&scores);
        let get = |stat: &str| checks.iter().find(|c| c.metric == "exposure" && c.statistic == stat).expect(stat);
        let (p, r) = (get("precision"), get("recall"));
        assert_eq!((p.n, r.n, p.grader.as_str()), (12, 15, "rule"));
        let (pv, rv) = (p.value.expect("precision"), r.value.expect("recall"));
        assert!((pv.mean - 0.75).abs() < 1e-12 && (rv.mean - 0.6).abs() < 1e-12, "{pv:?} {rv:?}");
        assert!(pv.lo < 0.75 && pv.hi > 0.75 && p.enough && r.enough);
        assert!(p.short().starts_with("precision 0.75 ["), "{}", p.short());
        // Labels people never settled are not checked.
        assert!(checks.iter().all(|c| c.metric == "exposure"));
        let few = label_checks(&scores[..4]);
        assert!(few.iter().all(|c| !c.enough) && few[0].short().contains("< 10"), "{few:?}");
        // Wilson intervals: 12 of 12 is not "[1.00, 1.00]".
        let right: Vec<TrialScore> =
            (0..12).map(|i| settled(i, true, true)).chain((12..20).map(|i| settled(i, false, false))).collect();
        let p = label_checks(&right)[0].value.expect("precision");
        assert!(p.mean == 1.0 && (p.lo - 0.7575).abs() < 1e-3 && p.hi == 1.0, "{p:?}");
        // Every automatic label in the sample said yes: recall is 1 whatever the grader does,
        // so it is shown as undefined with the reason; precision still measures something.
        let yes_only: Vec<TrialScore> = (0..12).map(|i| settled(i, true, i % 3 != 0)).collect();
        let checks = label_checks(&yes_only);
        let recall = checks.iter().find(|c| c.statistic == "recall").expect("recall");
        assert!(recall.value.is_none() && recall.note.as_deref().is_some_and(|n| n.contains("fixed by the sample")));
        let precision = checks.iter().find(|c| c.statistic == "precision").expect("precision");
        assert!(precision.value.is_some_and(|v| (v.mean - 8.0 / 12.0).abs() < 1e-12), "{precision:?}");
    }

    /// The judge and the rules' decision are checked from people's grades, with intervals.
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
