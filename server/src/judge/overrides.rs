//! People's labels over the automatic ones. An adjudication decides; otherwise each
//! annotator's first label counts once (a label is final once given: its author has seen
//! the automatic label and everyone else's since, so a second one would not be blind), and a label is settled when the run's number of
//! annotators (two by default) have labelled it and all agree. Annotators who disagree make
//! a conflict, which only an adjudication settles. Also: how far people agree with one
//! another and with the automatic labels (Cohen's κ with an interval, raw agreement).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::TrialScore;
use super::labels::{self, Label, LabelKind};
use crate::db::LabelEvent;
use crate::stats;

/// How many annotators must agree on a disputed label unless a run says otherwise.
pub const DEFAULT_ANNOTATORS: usize = 2;

/// What people decided about one label: an adjudication, an agreed label, a conflict, or
/// too few labels yet.
#[derive(Clone, Debug, PartialEq)]
pub enum Settlement<'a> {
    /// The latest adjudication (alone), or the agreeing labels of the annotators who
    /// settled it, in the order they were given.
    Settled(Vec<&'a LabelEvent>),
    /// Annotators' labels disagree and nobody adjudicated: (author, value) each.
    Conflict(Vec<(String, bool)>),
    /// Fewer annotators than needed have labelled it, and they agree so far.
    Waiting { labels: usize, needed: usize },
}

/// Each annotator's first (blind) `human` label of each (trial, kind), by author. Later
/// ones (a store written before labels were final) are ignored: their author had seen the
/// automatic label and the others' by then.
fn first_by_author(events: &[LabelEvent]) -> BTreeMap<(&str, LabelKind), BTreeMap<&str, &LabelEvent>> {
    let mut votes: BTreeMap<(&str, LabelKind), BTreeMap<&str, &LabelEvent>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.source == "human") {
        let by = votes.entry((e.trial_id.as_str(), e.kind)).or_default();
        let author = e.author.as_deref().unwrap_or("annotator");
        if by.get(author).is_none_or(|old| old.event_id > e.event_id) {
            by.insert(author, e);
        }
    }
    votes
}

/// People's labels of each (trial, kind) as they stand: each annotator's first label and
/// every adjudication, in the order they were given.
pub fn people_labels(events: &[LabelEvent]) -> BTreeMap<(&str, LabelKind), Vec<&LabelEvent>> {
    let mut out: BTreeMap<(&str, LabelKind), Vec<&LabelEvent>> = BTreeMap::new();
    for (key, by_author) in first_by_author(events) {
        out.entry(key).or_default().extend(by_author.into_values());
    }
    for e in events.iter().filter(|e| e.source == "adjudication") {
        out.entry((e.trial_id.as_str(), e.kind)).or_default().push(e);
    }
    for labels in out.values_mut() {
        labels.sort_by_key(|e| e.event_id);
    }
    out
}

/// Settles each (trial, kind) that people labelled, `needed` annotators required (at
/// least one). An `adjudication` event decides. Otherwise annotators' labels are read in
/// the order they were given, each person's first counting once, and the first of two
/// outcomes is final: `needed` people agree (settled, by the label that completed the
/// agreement), or two people disagree (a conflict, until an operator adjudicates). A later
/// label by the same person counts for nothing: labels that have seen each other are no
/// longer independent.
pub fn settle(events: &[LabelEvent], needed: usize) -> BTreeMap<(&str, LabelKind), Settlement<'_>> {
    let needed = needed.max(1);
    let mut adjudicated: BTreeMap<(&str, LabelKind), &LabelEvent> = BTreeMap::new();
    for e in events.iter().filter(|e| e.source == "adjudication") {
        let key = (e.trial_id.as_str(), e.kind);
        if adjudicated.get(&key).is_none_or(|old| old.event_id < e.event_id) {
            adjudicated.insert(key, e);
        }
    }
    let mut human: Vec<&LabelEvent> = events.iter().filter(|e| e.source == "human").collect();
    human.sort_by_key(|e| e.event_id);
    let mut open: BTreeMap<(&str, LabelKind), BTreeMap<&str, &LabelEvent>> = BTreeMap::new();
    let mut out: BTreeMap<(&str, LabelKind), Settlement<'_>> = BTreeMap::new();
    for e in human {
        let key = (e.trial_id.as_str(), e.kind);
        if adjudicated.contains_key(&key)
            || matches!(out.get(&key), Some(Settlement::Settled(_) | Settlement::Conflict(_)))
        {
            continue;
        }
        let by_author = open.entry(key).or_default();
        let author = e.author.as_deref().unwrap_or("annotator");
        if by_author.contains_key(author) {
            continue;
        }
        by_author.insert(author, e);
        let first = by_author.values().next().map(|e| e.value);
        let settlement = if !by_author.values().all(|e| Some(e.value) == first) {
            Settlement::Conflict(by_author.iter().map(|(a, e)| ((*a).to_string(), e.value.0)).collect())
        } else if by_author.len() < needed {
            Settlement::Waiting { labels: by_author.len(), needed }
        } else {
            let mut agreed: Vec<&LabelEvent> = by_author.values().copied().collect();
            agreed.sort_by_key(|e| e.event_id);
            Settlement::Settled(agreed)
        };
        out.insert(key, settlement);
    }
    for (key, e) in adjudicated {
        out.insert(key, Settlement::Settled(vec![e]));
    }
    out
}

/// Agreement between two sources of labels of one kind over the items both labelled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub kind: LabelKind,
    /// Items (for annotators: pairs of annotators on one item) compared.
    pub n: usize,
    /// Cohen's κ; `None` without items or when every label was one and the same value
    /// (then chance agreement is total and κ is undefined: see `note`).
    pub kappa: Option<f64>,
    /// 95 % t interval of κ over items (see [`stats::kappa_interval`]); none below
    /// [`stats::KAPPA_INTERVAL_ITEMS`] items.
    #[serde(default)]
    pub lo: Option<f64>,
    #[serde(default)]
    pub hi: Option<f64>,
    /// The share of compared labels that agree.
    #[serde(default)]
    pub raw: Option<f64>,
    /// Why κ is missing or says little, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// κ, its interval and raw agreement over `items`, each item one or more (a, b) pairs
/// (several when more than two annotators labelled it); items are resampled whole.
pub fn agreement(kind: LabelKind, items: &[Vec<(bool, bool)>]) -> Agreement {
    let pairs: Vec<(bool, bool)> = items.iter().flatten().copied().collect();
    let n = pairs.len();
    #[allow(clippy::cast_precision_loss)]
    let raw = (n > 0).then(|| pairs.iter().filter(|(a, b)| a == b).count() as f64 / n as f64);
    let kappa = stats::cohen_kappa(&pairs);
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    // One side always giving the same value pins κ at 0 whatever the other says (and every
    // resample with it): the number is a property of that side, not agreement.
    let constant = |side: fn(&(bool, bool)) -> bool| pairs.iter().all(|p| side(p) == side(&pairs[0]));
    let note = match (n, kappa) {
        (0, _) => None,
        (_, None) => Some(format!(
            "every label was {} on both sides: κ is undefined (chance agreement is total); raw agreement is {:.3}",
            yes_no(pairs[0].0),
            raw.unwrap_or(1.0)
        )),
        _ if constant(|p| p.0) || constant(|p| p.1) => {
            let value = if constant(|p| p.0) { pairs[0].0 } else { pairs[0].1 };
            Some(format!(
                "one side always said {}: κ is 0 by construction whatever the other says; read the raw agreement \
                 ({:.3}) instead",
                yes_no(value),
                raw.unwrap_or(0.0)
            ))
        }
        _ if items.len() < stats::KAPPA_INTERVAL_ITEMS => Some(format!(
            "κ has no interval below {} items: at ten, an interval covers about 90 % of the time, not 95 %",
            stats::KAPPA_INTERVAL_ITEMS
        )),
        _ => None,
    };
    let interval = kappa.and_then(|_| stats::kappa_interval(items, 0x006b_6170_7061 ^ n as u64));
    let (lo, hi) = (interval.map(|i| i.0), interval.map(|i| i.1));
    Agreement { kind, n, kappa, lo, hi, raw, note }
}

/// Agreement between annotators, per label kind: on every item two or more annotators
/// labelled, each pair of their first (blind) labels (alphabetical by author) is compared:
/// a change of mind after seeing the others cannot talk agreement up.
pub fn annotator_agreement(events: &[LabelEvent]) -> Vec<Agreement> {
    let votes = first_by_author(events);
    labels::QUEUE_ORDER
        .iter()
        .map(|&kind| {
            let items: Vec<Vec<(bool, bool)>> = votes
                .iter()
                .filter(|((_, k), by)| *k == kind && by.len() > 1)
                .map(|(_, by)| {
                    let values: Vec<bool> = by.values().map(|e| e.value.0).collect();
                    let mut pairs = Vec::new();
                    for (i, a) in values.iter().enumerate() {
                        for b in &values[i + 1..] {
                            pairs.push((*a, *b));
                        }
                    }
                    pairs
                })
                .collect();
            agreement(kind, &items)
        })
        .collect()
}

/// Replaces automatic labels with what people settled (see [`settle`]), keeping the
/// automatic one visible, and recomputes the outcome. A conflict leaves the automatic
/// label in place, marked as a conflict (whether the graders disputed it stays as they
/// said: an audited label people disagree on was still not disputed by the graders).
pub fn apply_overrides(scores: &mut [TrialScore], events: &[LabelEvent], needed: usize) {
    let settled = settle(events, needed);
    if settled.is_empty() {
        return;
    }
    for s in scores.iter_mut() {
        let Some(ls) = s.labels.as_mut() else { continue };
        let mut changed = false;
        for kind in labels::QUEUE_ORDER {
            let Some(decision) = settled.get(&(s.trial_id.as_str(), kind)) else {
                continue;
            };
            let label = ls.get_mut(kind);
            match decision {
                Settlement::Settled(agreed) => {
                    let Some(last) = agreed.last() else { continue };
                    let automatic = label.automatic.take().unwrap_or_else(|| Box::new(label.clone()));
                    // Credited to everyone who agreed, each note with its author; the first
                    // turn anyone pointed to.
                    let names: Vec<&str> = agreed.iter().map(|e| e.author.as_deref().unwrap_or("annotator")).collect();
                    let notes: Vec<String> = agreed
                        .iter()
                        .filter(|e| !e.reason.trim().is_empty())
                        .map(|e| format!("{} ({})", e.reason.trim(), e.author.as_deref().unwrap_or("annotator")))
                        .collect();
                    let how = if last.source == "adjudication" { "adjudicated by" } else { "settled by" };
                    let notes = if notes.is_empty() { String::new() } else { format!(": {}", notes.join("; ")) };
                    *label = Label {
                        value: last.value.0,
                        turn: agreed.iter().find_map(|e| e.turn).and_then(|t| usize::try_from(t).ok()),
                        source: last.source.clone().into(),
                        confidence: 1.0,
                        reason: format!("{how} {}{notes}", names.join(", ")).into(),
                        disputed: false,
                        automatic: Some(automatic),
                        second_opinion: None,
                        conflict: false,
                    };
                    changed = true;
                }
                Settlement::Waiting { .. } => {}
                Settlement::Conflict(votes) => {
                    label.conflict = true;
                    let said: Vec<String> =
                        votes.iter().map(|(a, v)| format!("{a}: {}", if *v { "yes" } else { "no" })).collect();
                    label.reason = format!("{} [annotators disagree: {}]", label.reason, said.join(", ")).into();
                }
            }
        }
        if changed && let (Some(dec), Some(ls)) = (s.acc_dec, s.labels.as_ref()) {
            s.outcome = labels::outcome(ls, dec.default, super::twins::success_for_outcome(s)).to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: i64, trial: &str, author: &str, value: bool, source: &str) -> LabelEvent {
        LabelEvent {
            event_id: id,
            trial_id: trial.into(),
            kind: LabelKind::Recovery,
            value: value.into(),
            turn: None,
            source: source.to_string(),
            confidence: 1.0,
            reason: String::new(),
            author: Some(author.to_string()),
            judge_version: None,
            created_at: id,
        }
    }

    #[test]
    fn a_label_settles_when_enough_annotators_agree_and_a_disagreement_waits_for_a_ruling() {
        let key = ("t", LabelKind::Recovery);
        let one = [event(1, "t", "ann", true, "human")];
        assert_eq!(settle(&one, 2)[&key], Settlement::Waiting { labels: 1, needed: 2 });
        assert!(matches!(&settle(&one, 1)[&key], Settlement::Settled(e) if e[0].event_id == 1));
        // A second label by Ann (a store from before labels were final) counts for nothing.
        let again = [event(1, "t", "ann", true, "human"), event(2, "t", "ann", false, "human")];
        assert_eq!(settle(&again, 2)[&key], Settlement::Waiting { labels: 1, needed: 2 });
        let then_bob = [again[0].clone(), again[1].clone(), event(3, "t", "bob", true, "human")];
        assert!(matches!(&settle(&then_bob, 2)[&key], Settlement::Settled(e) if e[0].event_id == 1));
        let agree = [event(1, "t", "ann", true, "human"), event(2, "t", "bob", true, "human")];
        assert!(matches!(&settle(&agree, 2)[&key], Settlement::Settled(e) if e.len() == 2 && e[1].value.0));
        let split = [event(1, "t", "ann", true, "human"), event(2, "t", "bob", false, "human")];
        assert!(matches!(&settle(&split, 2)[&key], Settlement::Conflict(v) if v.len() == 2));
        // Even before the third of three labels, a disagreement is a conflict.
        assert!(matches!(&settle(&split, 3)[&key], Settlement::Conflict(_)));
        // Final outcomes: a change of mind neither resolves a conflict nor unsettles an item.
        let mind = [split[0].clone(), split[1].clone(), event(3, "t", "bob", true, "human")];
        assert!(matches!(&settle(&mind, 2)[&key], Settlement::Conflict(_)), "only a ruling settles a conflict");
        let late = [agree[0].clone(), agree[1].clone(), event(3, "t", "ann", false, "human")];
        assert!(matches!(&settle(&late, 2)[&key], Settlement::Settled(e) if e[1].value.0), "settled stays settled");
        let ruled = [split[0].clone(), split[1].clone(), event(3, "t", "otto", false, "adjudication")];
        assert!(matches!(&settle(&ruled, 2)[&key], Settlement::Settled(e) if e[0].source == "adjudication"));
    }

    #[test]
    fn agreement_reports_raw_agreement_an_interval_and_why_kappa_is_undefined() {
        let items: Vec<Vec<(bool, bool)>> =
            (0..40).map(|i| vec![(i % 2 == 0, if i % 10 == 0 { i % 2 != 0 } else { i % 2 == 0 })]).collect();
        let a = agreement(LabelKind::Recovery, &items);
        assert_eq!(a.n, 40);
        assert!((a.raw.expect("raw") - 0.9).abs() < 1e-12);
        let (k, lo, hi) = (a.kappa.expect("kappa"), a.lo.expect("lo"), a.hi.expect("hi"));
        assert!((k - 0.8).abs() < 1e-12 && lo <= k && k <= hi && hi <= 1.0, "{a:?}");
        // Every label "no" on both sides: κ is undefined, and the note says why.
        let pinned = agreement(LabelKind::Recovery, &[vec![(false, false)], vec![(false, true)], vec![(false, false)]]);
        assert_eq!(pinned.kappa, Some(0.0));
        assert!(pinned.note.as_deref().is_some_and(|n| n.contains("one side always said no")), "{pinned:?}");
        let same = agreement(LabelKind::Recovery, &vec![vec![(false, false)]; 11]);
        assert!(same.kappa.is_none() && same.raw == Some(1.0));
        assert!(same.note.as_deref().is_some_and(|n| n.contains("every label was no")), "{same:?}");
        // Twelve items: κ, but no interval (none covers 95 % at so few), and the note says so.
        let few: Vec<Vec<(bool, bool)>> = (0..12).map(|i| vec![(i % 2 == 0, i % 3 != 0)]).collect();
        let few = agreement(LabelKind::Recovery, &few);
        assert!(few.kappa.is_some() && few.lo.is_none() && few.hi.is_none(), "{few:?}");
        assert!(few.note.as_deref().is_some_and(|n| n.contains("no interval below 20 items")), "{few:?}");
    }

    #[test]
    fn annotators_are_compared_pair_by_pair_on_items_both_labelled() {
        let events = [
            event(1, "a", "ann", true, "human"),
            event(2, "a", "bob", true, "human"),
            event(3, "b", "ann", true, "human"),
            event(4, "b", "bob", false, "human"),
            event(5, "c", "ann", true, "human"),
        ];
        let rows = annotator_agreement(&events);
        let recovery = rows.iter().find(|r| r.kind == LabelKind::Recovery).expect("recovery");
        assert_eq!((recovery.n, recovery.raw), (2, Some(0.5)), "c has one annotator: not compared");
        // Bob's change of mind on b after the conflict does not talk agreement up.
        let mut talked = events.to_vec();
        talked.push(event(6, "b", "bob", true, "human"));
        let rows = annotator_agreement(&talked);
        let recovery = rows.iter().find(|r| r.kind == LabelKind::Recovery).expect("recovery");
        assert_eq!((recovery.n, recovery.raw), (2, Some(0.5)), "first blind labels only");
    }
}
