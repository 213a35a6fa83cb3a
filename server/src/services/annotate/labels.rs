//! Labelling: holds ("Start labelling"), blind labels by annotators, adjudication by an
//! operator, and giving a hold back.

use app::error::AppError;
use app::model::{Identity, NewLabel, OpenItem, QueueFilter, QueueItem, Role, TrialId, item_href};

use super::super::fail;
use super::super::queue_view::passes;
use super::queue::Found;
use super::{AnnotateService, LOCK_MS, check_kind};
use crate::db::{LabelEvent, now_ms};
use crate::judge::labels::LabelKind;

/// A label's value (yes or no) and its turn, if any, read from the form.
fn value_and_turn(label: &NewLabel) -> Result<(bool, Option<i64>), AppError> {
    let value = match label.value.as_str() {
        "yes" => true,
        "no" => false,
        other => {
            return Err(AppError::Invalid { field: "value".into(), message: format!("{other:?}: choose yes or no") });
        }
    };
    let turn = match label.turn.trim() {
        "" => None,
        t => Some(t.parse::<i64>().ok().filter(|t| *t >= 0).ok_or_else(|| AppError::Invalid {
            field: "turn".into(),
            message: format!("{t:?} is not a turn number"),
        })?),
    };
    Ok((value, turn))
}

/// Why `name` may not give this item a blind label (none: they may): people settled it, it
/// waits for no one (neither disputed nor in the audit sample), or they labelled it already
/// (a label is final once given: they have seen the automatic label and the others' since).
/// The one rule behind opening, holding and saving a label; only an operator's adjudication
/// goes past it.
fn not_blind(found: &Found, name: &str) -> Option<String> {
    let (item, kind) = (&found.item, found.item.kind);
    if found.settled {
        return Some(format!("this {kind} label is settled already; only an operator's adjudication changes it now"));
    }
    if let Some(value) = item.mine {
        let first = item.votes.iter().find(|v| v.source == "human" && v.author == name);
        return Some(format!(
            "you labelled it {}{}; a label is final once given (you have seen the automatic label and the others' \
             since), so only an operator's adjudication changes it",
            if value { "yes" } else { "no" },
            first.map(|v| format!(" at {}", app::model::utc_second(v.at))).unwrap_or_default()
        ));
    }
    if !found.open {
        return Some(format!(
            "this {kind} label is neither disputed nor in the audit sample; only an operator's adjudication changes it"
        ));
    }
    None
}

impl AnnotateService {
    pub(super) async fn lock(&self, trial: &TrialId, kind: LabelKind, who: &Identity) -> Result<i64, AppError> {
        let now = now_ms();
        let until = now + LOCK_MS;
        match self.store.lock_label(trial, kind, &who.name, now, until).await.map_err(fail)? {
            None => Ok(until),
            Some((holder, expires)) => Err(AppError::Conflict(format!(
                "{holder} is labelling this {kind} label (for about {} more minutes)",
                (expires - now + 59_999).div_euclid(60_000).max(1)
            ))),
        }
    }

    /// The `open` port: one item with what the caller may do with it.
    pub(super) async fn open_item(
        &self,
        who: Option<Identity>,
        trial: TrialId,
        kind: String,
        filter: QueueFilter,
    ) -> Result<OpenItem, AppError> {
        let kind = check_kind(&kind)?;
        let found = self.item_of(who.as_ref(), &trial, kind).await?;
        let blind = who.as_ref().and_then(|w| not_blind(&found, &w.name));
        let Found { item, settled, .. } = found;
        let listing = self.listing(who.as_ref(), &item.run).await?;
        let kept: Vec<&QueueItem> = listing.items.iter().filter(|i| passes(i, &filter)).collect();
        let at = kept.iter().position(|i| i.trial_id == item.trial_id && i.kind == item.kind);
        let href = |i: &QueueItem| item_href(&i.trial_id, i.kind, &filter);
        let (prev, next) = match at {
            Some(a) => (a.checked_sub(1).map(|p| href(kept[p])), kept.get(a + 1).map(|i| href(i))),
            None => (None, kept.first().map(|i| href(i))),
        };
        let role = who.as_ref().map(|w| w.role);
        let holder = item.locked_by.clone();
        let name = who.as_ref().map(|w| w.name.clone());
        let mine_until = holder.as_ref().filter(|(h, _)| Some(h) == name.as_ref()).map(|(_, until)| *until);
        let why_not = match (role, &holder) {
            (None, _) => Some("sign in as an annotator to label".to_string()),
            (Some(r), _) if r < Role::Annotator => {
                Some(format!("you are a {}: annotators and operators label", r.as_str()))
            }
            (Some(Role::Annotator), _) if blind.is_some() => blind,
            (_, Some((h, until))) if Some(h) != name.as_ref() => Some(format!(
                "{h} is labelling it (for about {} more minutes); you can read everything meanwhile",
                (until - now_ms() + 59_999).div_euclid(60_000).max(1)
            )),
            _ => None,
        };
        Ok(OpenItem {
            can_label: why_not.is_none(),
            can_adjudicate: role.is_some_and(|r| r >= Role::Operator) && why_not.is_none(),
            item,
            settled,
            why_not,
            mine_until,
            prev,
            next,
            lock_minutes: LOCK_MS / 60_000,
        })
    }

    /// The `start` port: holds the item for its annotator.
    pub(super) async fn hold(&self, who: Identity, trial: TrialId, kind: String) -> Result<i64, AppError> {
        let kind = check_kind(&kind)?;
        let found = self.item_of(Some(&who), &trial, kind).await?;
        if who.role < Role::Operator
            && let Some(why) = not_blind(&found, &who.name)
        {
            return Err(AppError::Conflict(why));
        }
        // One hold per person: taking this item gives back any other one they hold, so no
        // one fences off the queue.
        for ((held, held_kind), (holder, _)) in self.locks().await? {
            if holder == who.name && (held.as_str(), held_kind) != (trial.as_str(), kind) {
                self.store.unlock_label(&held, held_kind, &who.name).await.map_err(fail)?;
            }
        }
        self.lock(&trial, kind, &who).await
    }

    /// The `label` port: stores a blind label or an adjudication; returns the next item.
    pub(super) async fn save_label(
        &self,
        who: Identity,
        label: NewLabel,
        adjudicate: bool,
        filter: QueueFilter,
    ) -> Result<Option<String>, AppError> {
        let kind = check_kind(&label.kind)?;
        app::model::check_note(&label.note)?;
        let (value, turn) = value_and_turn(&label)?;
        // The item must exist and be finished. An adjudication that overrules the automatic
        // label says why; an annotator's note is optional (a label alone settles nothing).
        let operator = Identity { role: Role::Operator, ..who.clone() };
        let found = self.item_of(Some(&operator), &label.trial, kind).await?;
        let (item, turns) = (&found.item, found.turns);
        if let Some(t) = turn.filter(|t| usize::try_from(*t).map_or(true, |t| t >= turns)) {
            return Err(AppError::Invalid {
                field: "turn".into(),
                message: format!("the trial has turns 0 to {}; {t} is none of them", turns.saturating_sub(1)),
            });
        }
        // Annotators label what waits for people, once; operators may adjudicate any label.
        if !adjudicate && let Some(why) = not_blind(&found, &who.name) {
            return Err(AppError::Conflict(why));
        }
        // An operator sees every label before giving one, so it cannot count as one of the N
        // blind labels: an operator's label is an adjudication.
        if !adjudicate && who.role >= Role::Operator {
            return Err(AppError::Conflict(
                "an operator sees the automatic label and everyone's labels, so an operator's label is not blind \
                 and is not counted as one of the independent labels: adjudicate instead"
                    .into(),
            ));
        }
        if adjudicate && item.value != Some(value) && label.note.trim().is_empty() {
            return Err(AppError::Invalid {
                field: "note".into(),
                message: "an adjudication that overrules the automatic label says why (the note is kept with it)"
                    .into(),
            });
        }
        let listing = self.listing(Some(&who), &item.run).await?;
        let next = Self::next_for(&listing, &who, &label.trial, kind, &filter);
        let event = LabelEvent {
            event_id: 0,
            trial_id: label.trial.clone(),
            kind,
            value: value.into(),
            turn,
            source: if adjudicate { "adjudication" } else { "human" }.to_string(),
            confidence: 1.0,
            reason: label.note.trim().to_string(),
            author: Some(who.name.clone()),
            judge_version: None,
            created_at: now_ms(),
        };
        // Stored only while the caller holds the item ("Start labelling"), and the hold is
        // given back in the same step: a label lands on the item its author opened and held,
        // and a double click stores one label.
        if self.store.add_label_holding(&event, now_ms()).await.map_err(fail)?.is_none() {
            if let Some((holder, until)) = self.locks().await?.remove(&(label.trial.clone(), kind))
                && holder != who.name
            {
                return Err(AppError::Conflict(format!(
                    "{holder} is labelling this {kind} label (for about {} more minutes)",
                    (until - now_ms() + 59_999).div_euclid(60_000).max(1)
                )));
            }
            return Err(AppError::Conflict(format!(
                "you are not holding this {kind} label of {}: start labelling it first (a hold lasts {} minutes, \
                 and saving a label gives it back)",
                label.trial,
                LOCK_MS / 60_000
            )));
        }
        Ok(next)
    }

    /// The `release` port: gives a hold back.
    pub(super) async fn give_back(&self, who: Identity, trial: TrialId, kind: String) -> Result<(), AppError> {
        let kind = check_kind(&kind)?;
        if let Some((holder, _)) = self.locks().await?.remove(&(trial.clone(), kind))
            && holder != who.name
        {
            return Err(AppError::Conflict(format!("{holder} holds this {kind} label; only they can give it back")));
        }
        self.store.unlock_label(&trial, kind, &who.name).await.map_err(fail)
    }
}
