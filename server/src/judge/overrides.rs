//! People's labels over the automatic ones: an adjudication decides; otherwise annotators'
//! latest labels count once each and must agree, or the label stays automatic and disputed.

use std::collections::BTreeMap;

use super::TrialScore;
use super::labels::{self, Label, LabelKind};
use crate::db::LabelEvent;

/// What people decided about one label: an adjudication, an agreed label, or a conflict.
#[derive(Clone, Debug, PartialEq)]
pub enum Settlement<'a> {
    /// The latest adjudication, or the latest label when every annotator agrees.
    Settled(&'a LabelEvent),
    /// Annotators' latest labels disagree and nobody adjudicated: (author, value) each.
    Conflict(Vec<(String, bool)>),
}

/// Settles each (trial, kind) that people labelled. An `adjudication` event decides; else
/// each annotator's latest `human` label counts once, and they must agree.
pub fn settle(events: &[LabelEvent]) -> BTreeMap<(&str, LabelKind), Settlement<'_>> {
    let mut adjudicated: BTreeMap<(&str, LabelKind), &LabelEvent> = BTreeMap::new();
    let mut votes: BTreeMap<(&str, LabelKind), BTreeMap<&str, &LabelEvent>> = BTreeMap::new();
    for e in events {
        let key = (e.trial_id.as_str(), e.kind);
        match e.source.as_str() {
            "adjudication" => {
                adjudicated.insert(key, e);
            }
            "human" => {
                votes.entry(key).or_default().insert(e.author.as_deref().unwrap_or("annotator"), e);
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for (key, by_author) in votes {
        if adjudicated.contains_key(&key) {
            continue;
        }
        let first = by_author.values().next().map(|e| e.value);
        if by_author.values().all(|e| Some(e.value) == first) {
            if let Some(latest) = by_author.values().max_by_key(|e| e.event_id) {
                out.insert(key, Settlement::Settled(latest));
            }
        } else {
            out.insert(
                key,
                Settlement::Conflict(by_author.iter().map(|(a, e)| ((*a).to_string(), e.value.0)).collect()),
            );
        }
    }
    for (key, e) in adjudicated {
        out.insert(key, Settlement::Settled(e));
    }
    out
}

/// Replaces automatic labels with what people settled (see [`settle`]), keeping the
/// automatic one visible, and recomputes the outcome. A conflict leaves the automatic
/// label in place, disputed and marked as a conflict.
pub fn apply_overrides(scores: &mut [TrialScore], events: &[LabelEvent]) {
    let settled = settle(events);
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
                Settlement::Settled(e) => {
                    let automatic = label.automatic.take().unwrap_or_else(|| Box::new(label.clone()));
                    *label = Label {
                        value: e.value.0,
                        turn: e.turn.and_then(|t| usize::try_from(t).ok()),
                        source: e.source.clone(),
                        confidence: 1.0,
                        reason: format!("{} ({})", e.reason, e.author.as_deref().unwrap_or("annotator")),
                        disputed: false,
                        automatic: Some(automatic),
                        second_opinion: None,
                        conflict: false,
                    };
                    changed = true;
                }
                Settlement::Conflict(votes) => {
                    label.disputed = true;
                    label.conflict = true;
                    let said: Vec<String> =
                        votes.iter().map(|(a, v)| format!("{a}: {}", if *v { "yes" } else { "no" })).collect();
                    label.reason = format!("{} [annotators disagree: {}]", label.reason, said.join(", "));
                }
            }
        }
        if changed && let (Some(dec), Some(ls)) = (s.acc_dec, s.labels.as_ref()) {
            s.outcome = labels::outcome(ls, dec.default, super::twins::success_for_outcome(s)).to_string();
        }
    }
}
