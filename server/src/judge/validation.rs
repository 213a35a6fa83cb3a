//! How well the reasoning judge agrees with people, as the MIRAGE paper reports it:
//! Pearson's r between the judge's and people's Acc_rsn, Cohen's κ on the five rubric
//! bands, and agreement on the decision (right, acceptable or wrong), each with n graded
//! trials. Each person's latest grade of a trial counts; a trial counts once.

use std::collections::{BTreeMap, HashMap};

use super::TrialScore;
use crate::db::{DecisionClass, ReasoningGrade};
use crate::stats;

/// Below this many graded trials the numbers are shown as too few to judge agreement.
pub use vocab::MIN_AGREEMENT_N as MIN_GRADES;

pub use vocab::Validation;

/// The rubric band of an Acc_rsn: 4 for 1.0, 3 for 0.7–0.9, 2 for 0.4–0.6, 1 for 0.1–0.3,
/// 0 for 0.0 (values are read in tenths).
pub fn band(acc_rsn: f64) -> u8 {
    match (acc_rsn * 10.0).round() {
        t if t >= 10.0 => 4,
        t if t >= 7.0 => 3,
        t if t >= 4.0 => 2,
        t if t >= 1.0 => 1,
        _ => 0,
    }
}

/// The rules' call on a scored decision: right (Strict), acceptable (Default credit), or
/// wrong; `None` when the trial has no scored decision.
pub fn decision_class(s: &TrialScore) -> Option<DecisionClass> {
    let d = s.acc_dec?;
    Some(if d.strict >= 1.0 {
        DecisionClass::Right
    } else if d.default > 0.0 {
        DecisionClass::Acceptable
    } else {
        DecisionClass::Wrong
    })
}

/// Pairs each graded trial with its automatic scores. Every person's latest grade of a
/// trial counts, but a trial counts once: people's Acc_rsn is their mean, and people's
/// call on the decision is the one most of them made (a trial whose people split evenly
/// has no call and is left out of the agreement). So the intervals rest on as many
/// independent pairs as there are trials, not on one per person.
pub fn validate(scores: &[TrialScore], grades: &[ReasoningGrade]) -> Validation {
    let mut latest: BTreeMap<(&str, &str), &ReasoningGrade> = BTreeMap::new();
    for g in grades {
        let key = (g.trial_id.as_str(), g.author.as_str());
        if latest.get(&key).is_none_or(|old| old.grade_id < g.grade_id) {
            latest.insert(key, g);
        }
    }
    let mut per_trial: BTreeMap<&str, Vec<&ReasoningGrade>> = BTreeMap::new();
    for ((trial, _), g) in &latest {
        per_trial.entry(trial).or_default().push(g);
    }
    // Index only the graded trials: a run has far more scores than grades, and this runs on
    // every leaderboard view.
    let by_trial: HashMap<&str, &TrialScore> = scores
        .iter()
        .filter(|s| per_trial.contains_key(s.trial_id.as_str()))
        .map(|s| (s.trial_id.as_str(), s))
        .collect();
    let (mut values, mut bands, mut decisions) = (Vec::new(), Vec::new(), Vec::new());
    let mut judges: Vec<String> = Vec::new();
    let mut counted_grades = 0;
    for (trial, people) in &per_trial {
        let Some(s) = by_trial.get(trial) else { continue };
        counted_grades += people.len();
        #[allow(clippy::cast_precision_loss)]
        let people_rsn = people.iter().map(|g| g.acc_rsn).sum::<f64>() / people.len() as f64;
        if let Some(judge) = s.acc_rsn {
            values.push((judge, people_rsn));
            bands.push((band(judge), band(people_rsn)));
            if let Some(name) = s.rsn_judge.as_ref().filter(|n| !judges.contains(n)) {
                judges.push(name.clone());
            }
        }
        if let (Some(rules), Some(call)) = (decision_class(s), majority(people.iter().map(|g| g.decision))) {
            decisions.push(rules == call);
        }
    }
    judges.sort();
    let agreed = decisions.iter().filter(|d| **d).count();
    #[allow(clippy::cast_precision_loss)]
    let decision_agreement = (!decisions.is_empty()).then(|| agreed as f64 / decisions.len() as f64);
    let pearson = stats::pearson(&values);
    Validation {
        n: values.len(),
        grades: counted_grades,
        judges,
        pearson,
        pearson_ci: pearson.and_then(|r| stats::pearson_interval(r, values.len())),
        decision_ci: stats::wilson(agreed, decisions.len()),
        kappa_bands: stats::cohen_kappa_classes(&bands),
        decision_n: decisions.len(),
        decision_agreement,
        enough: values.len() >= MIN_GRADES,
    }
}

/// The call most people made; `None` on a tie for the most.
fn majority(calls: impl Iterator<Item = DecisionClass>) -> Option<DecisionClass> {
    let mut counts: Vec<(DecisionClass, usize)> = Vec::new();
    for c in calls {
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    let top = counts.iter().map(|(_, n)| *n).max()?;
    let mut leaders = counts.iter().filter(|(_, n)| *n == top);
    let first = leaders.next()?.0;
    leaders.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(trial: &str, acc_rsn: f64, strict: f64, default: f64) -> TrialScore {
        serde_json::from_value(serde_json::json!({
            "trial_id": trial, "task_id": "t", "agent": "a", "level": "L0", "condition": "raw", "seed": 0,
            "domain": "shop", "category": "C", "family": "f", "status": "done", "error": null, "steps": 2,
            "verdict": "DENY", "acc_inv": 1.0, "acc_inv_jackknife": [], "e_inv": 1.0,
            "acc_dec": {"default": default, "strict": strict, "loose": 1.0}, "acc_rsn": acc_rsn,
            "rsn_judge": "llm:j/rsn-prompt-2", "hallucinated": false, "fabricated_url": false,
            "synthetic_detail": false, "claims": [], "outcome": "clean-correct", "judge_version": "v"
        }))
        .expect("score")
    }

    fn grade(id: i64, trial: &str, author: &str, acc_rsn: f64, decision: DecisionClass) -> ReasoningGrade {
        ReasoningGrade {
            grade_id: id,
            trial_id: trial.into(),
            author: author.into(),
            acc_rsn,
            decision,
            note: "n".into(),
            created_at: 0,
        }
    }

    #[test]
    fn bands_follow_the_rubric() {
        assert_eq!([1.0, 0.9, 0.7, 0.6, 0.4, 0.3, 0.1, 0.0].map(band), [4, 3, 3, 2, 2, 1, 1, 0]);
    }

    #[test]
    fn people_are_paired_with_the_judge_once_per_person_and_trial() {
        let scores: Vec<TrialScore> = (0..12)
            .map(|i| score(&format!("t{i}"), f64::from(i % 11) / 10.0, if i % 2 == 0 { 1.0 } else { 0.0 }, 1.0))
            .collect();
        // Person "ann" agrees with the judge everywhere; an older grade of t0 is replaced.
        let mut grades = vec![grade(1, "t0", "ann", 0.0 + 0.9, DecisionClass::Wrong)];
        for (i, s) in scores.iter().enumerate() {
            let id = i64::try_from(i).expect("id") + 2;
            let call = decision_class(s).expect("decision");
            grades.push(grade(id, &s.trial_id, "ann", s.acc_rsn.expect("rsn"), call));
        }
        let v = validate(&scores, &grades);
        assert_eq!((v.n, v.decision_n, v.enough), (12, 12, true));
        assert!(v.pearson.is_some_and(|r| (r - 1.0).abs() < 1e-9), "{v:?}");
        assert_eq!(v.kappa_bands, Some(1.0));
        assert_eq!(v.decision_agreement, Some(1.0));
        assert_eq!(v.judges, ["llm:j/rsn-prompt-2"]);
        // One grade is too few to read, and says so.
        let one = validate(&scores, &grades[1..2]);
        assert_eq!((one.n, one.enough, one.pearson), (1, false, None));
    }

    /// Three people on each of four trials are four pairs, not twelve: below the minimum,
    /// with people's mean grade and majority call; a split call leaves its trial out.
    #[test]
    fn several_people_on_one_trial_count_as_one_pair() {
        let scores: Vec<TrialScore> = (0..4).map(|i| score(&format!("t{i}"), 0.5, 1.0, 1.0)).collect();
        let mut grades = Vec::new();
        let mut id = 0;
        for s in &scores {
            for (who, rsn) in [("ann", 0.2), ("bob", 0.5), ("cy", 0.8)] {
                id += 1;
                // t3's people split three ways on the decision.
                let call = match (s.trial_id.as_str(), who) {
                    ("t3", "bob") => DecisionClass::Acceptable,
                    ("t3", "cy") => DecisionClass::Wrong,
                    (_, "cy") => DecisionClass::Wrong,
                    _ => DecisionClass::Right,
                };
                grades.push(grade(id, &s.trial_id, who, rsn, call));
            }
        }
        let v = validate(&scores, &grades);
        assert_eq!((v.n, v.grades, v.enough), (4, 12, false), "{v:?}");
        // Majority "right" on t0–t2 (the rules' call), no call on t3.
        assert_eq!((v.decision_n, v.decision_agreement), (3, Some(1.0)));
    }
}
