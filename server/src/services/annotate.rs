//! The annotation port: the queue of disputed labels and of the audit sample, filtered; items anyone may read;
//! locks taken when a person starts labelling; blind labels by annotators, settled when
//! enough agree ([`crate::judge::aggregate::settle`]); adjudication by an operator. Every
//! label is a `label_event`.

use std::collections::HashMap;
use std::sync::Arc;

use app::error::AppError;
use app::model::{
    GradeView, Identity, NewGrade, NewLabel, OpenItem, QUEUE_PAGE, Queue, QueueFilter, QueueItem, Role, RunId, TrialId,
    item_href,
};

use super::annotators;
use super::fail;
use super::insights::InsightsService;
use super::queue_view::{ItemParts, facet, item, passes, row, states, vote};
use super::runs::score_of;
use crate::db::{DecisionClass, LabelEvent, LabelLock, ReasoningGrade, Store, now_ms};
use crate::env::World;
use crate::judge::TrialScore;
use crate::judge::aggregate::{Metric, annotator_agreement, people_labels};
use crate::judge::labels::{LabelKind, QUEUE_ORDER, queue_rank};
use crate::runs::export::parse_steps;

/// How long "Start labelling" holds an item for its annotator.
pub const LOCK_MS: i64 = 10 * 60 * 1000;

/// The queue, locks and labels.
pub struct AnnotateService {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub insights: Arc<InsightsService>,
}

fn check_kind(kind: &str) -> Result<LabelKind, AppError> {
    LabelKind::parse(kind).map_err(|e| AppError::Invalid { field: "kind".into(), message: e.to_string() })
}

/// One item as [`AnnotateService::item_of`] finds it.
struct Found {
    item: QueueItem,
    /// People's labels (or an adjudication) replaced the automatic one.
    settled: bool,
    /// Still waiting for people: disputed, a conflict, or audited, and not settled.
    open: bool,
    /// Turns of the trial.
    turns: usize,
}

/// A run's queue as one caller sees it, before filtering and paging.
struct Listing {
    items: Vec<QueueItem>,
    scores: Arc<Vec<TrialScore>>,
    events: Vec<LabelEvent>,
    settled: usize,
    needed: usize,
    pending: Option<app::model::Pending>,
    key: crate::engine::Fingerprint,
}

impl AnnotateService {
    async fn runs(&self) -> Result<Vec<RunId>, AppError> {
        Ok(crate::runs::agent_runs(&self.store.runs().await.map_err(fail)?))
    }

    async fn locks(&self) -> Result<HashMap<(TrialId, LabelKind), (String, i64)>, AppError> {
        Ok(self
            .store
            .label_locks(now_ms())
            .await
            .map_err(fail)?
            .into_iter()
            .map(|LabelLock { trial_id, kind, holder, expires_at }| ((trial_id, kind), (holder, expires_at)))
            .collect())
    }

    async fn listing(&self, who: Option<&Identity>, run: &RunId) -> Result<Listing, AppError> {
        let key = self.insights.fingerprint(run).await?;
        let (scores, pending) = self.insights.scores_ready(run, key).await?;
        let events = self.store.people_label_events(run).await.map_err(fail)?;
        let mut by_item = people_labels(&events);
        let locks = self.locks().await?;
        let needed = annotators(self.store.as_ref(), run).await?;
        let mut items = Vec::new();
        let mut settled = 0;
        for s in scores.iter() {
            let Some(ls) = &s.labels else { continue };
            for kind in QUEUE_ORDER {
                let l = ls.get(kind);
                if l.automatic.is_some() {
                    settled += 1;
                }
                if !l.waits_for_people(&s.trial_id, kind) {
                    continue;
                }
                let votes = by_item
                    .remove(&(s.trial_id.as_str(), kind))
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(vote)
                    .collect();
                let lock = locks.get(&(TrialId::from(&s.trial_id), kind)).cloned();
                let parts = ItemParts {
                    score: s,
                    run,
                    kind,
                    automatic: l,
                    conflict: l.conflict,
                    audit: l.in_audit(&s.trial_id, kind),
                    votes,
                    needed,
                    lock,
                    waiting: true,
                };
                items.push(item(parts, who));
            }
        }
        let rank = |k: LabelKind| QUEUE_ORDER.iter().position(|x| *x == k).unwrap_or(QUEUE_ORDER.len());
        // Within a kind, in the hash order of `queue_rank`: whoever works down the queue
        // settles a random share of it (the validity figures take it to be one).
        // Each item's key is computed once (a hash each), not at every comparison.
        items.sort_by_cached_key(|i| (!i.conflict, rank(i.kind), queue_rank(&i.trial_id, i.kind), i.trial_id.clone()));
        Ok(Listing { items, scores, events, settled, needed, pending, key })
    }

    async fn lock(&self, trial: &TrialId, kind: LabelKind, who: &Identity) -> Result<i64, AppError> {
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

    /// One item, whether or not it is in the queue, as `who` may see it; also whether people
    /// settled it.
    async fn item_of(&self, who: Option<&Identity>, trial_id: &TrialId, kind: LabelKind) -> Result<Found, AppError> {
        let trial = self.store.trial(trial_id).await?;
        let steps = parse_steps(&self.store.steps(trial_id).await.map_err(fail)?).map_err(fail)?;
        let score = score_of(self.store.as_ref(), &self.world, &trial, &steps)
            .await?
            .ok_or_else(|| AppError::Invalid { field: "trial".into(), message: "the trial has not finished".into() })?;
        let label = score
            .labels
            .as_ref()
            .map(|l| l.get(kind))
            .ok_or_else(|| AppError::NotFound(format!("{kind} label of {trial_id}")))?;
        let events: Vec<LabelEvent> = self
            .store
            .trial_label_events(trial_id)
            .await
            .map_err(fail)?
            .into_iter()
            .filter(|e| e.kind == kind)
            .collect();
        let lock = self.locks().await?.remove(&(trial_id.clone(), kind));
        let needed = annotators(self.store.as_ref(), &trial.run_id).await?;
        // `settled`: people's labels replaced the automatic one, which is shown.
        let settled = label.automatic.is_some();
        let open = label.waits_for_people(trial_id, kind);
        let parts = ItemParts {
            score: &score,
            run: &trial.run_id,
            kind,
            automatic: label.automatic.as_deref().unwrap_or(label),
            conflict: label.conflict,
            audit: label.in_audit(trial_id, kind),
            // The item's whole history, every label as given (people's first labels are
            // the ones that count; any later one is shown, not counted).
            votes: events.iter().filter_map(vote).collect(),
            needed,
            lock,
            waiting: open,
        };
        Ok(Found { item: item(parts, who), settled, open, turns: steps.len() })
    }

    /// The next item after (trial, kind) in the filtered listing that `who` can label.
    fn next_for(
        listing: &Listing,
        who: &Identity,
        trial: &str,
        kind: LabelKind,
        filter: &QueueFilter,
    ) -> Option<String> {
        let kept: Vec<&QueueItem> = listing.items.iter().filter(|i| passes(i, filter)).collect();
        let at = kept.iter().position(|i| i.trial_id == trial && i.kind == kind);
        let start = at.map_or(0, |a| a + 1);
        let operator = who.role >= Role::Operator;
        (0..kept.len())
            .map(|k| kept[(start + k) % kept.len()])
            .find(|i| {
                !(i.trial_id == trial && i.kind == kind)
                    && i.locked_by.as_ref().is_none_or(|(h, _)| *h == who.name)
                    && (filter.state == "mine" || i.mine.is_none())
                    && (operator || !i.conflict)
            })
            .map(|i| item_href(&i.trial_id, i.kind, filter))
    }
}

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

#[async_trait::async_trait]
impl app::ssr::Annotate for AnnotateService {
    async fn queue(
        &self,
        who: Option<Identity>,
        run: Option<String>,
        page: usize,
        filter: QueueFilter,
    ) -> Result<Queue, AppError> {
        let runs = self.runs().await?;
        let run = match run.filter(|r| !r.is_empty()).map(RunId::from) {
            Some(r) if runs.contains(&r) => r,
            Some(r) => return Err(AppError::NotFound(format!("run {r}"))),
            None => runs.first().cloned().ok_or_else(|| AppError::NotFound("a run (launch one first)".into()))?,
        };
        let listing = self.listing(who.as_ref(), &run).await?;
        let all = &listing.items;
        // Each choice's count is under the other filters (what choosing it would list).
        let under = |clear: fn(&mut QueueFilter)| {
            let mut f = filter.clone();
            clear(&mut f);
            all.iter().filter(|i| passes(i, &f)).collect::<Vec<_>>()
        };
        let (kinds, agents, levels, states) = (
            facet(under(|f| f.kind.clear()).into_iter().map(|i| i.kind.as_str()), &filter.kind),
            facet(under(|f| f.agent.clear()).into_iter().map(|i| i.agent.as_str()), &filter.agent),
            facet(under(|f| f.level.clear()).into_iter().map(|i| i.level.as_str()), &filter.level),
            facet(under(|f| f.state.clear()).into_iter().flat_map(states), &filter.state),
        );
        let kept: Vec<&QueueItem> = all.iter().filter(|i| passes(i, &filter)).collect();
        let total = kept.len();
        let pages = total.div_ceil(QUEUE_PAGE).max(1);
        let page = page.min(pages - 1);
        let items: Vec<QueueItem> = kept.into_iter().skip(page * QUEUE_PAGE).take(QUEUE_PAGE).cloned().collect();
        let (agg, waiting) =
            self.insights.aggregate_ready(&run, listing.key, &["agent"], Metric::AccDec, &[Metric::AccDec]).await?;
        Ok(Queue {
            run,
            runs: runs.into_iter().collect(),
            filter,
            items,
            total,
            unfiltered: all.len(),
            kinds,
            agents,
            levels,
            states,
            page,
            pages,
            settled: listing.settled,
            needed: listing.needed,
            // One per person and item: a changed mind is not a second label.
            people_labels: listing
                .events
                .iter()
                .map(|e| (&e.trial_id, e.kind, &e.author, &e.source))
                .collect::<std::collections::HashSet<_>>()
                .len(),
            agreement: agg.agreement.iter().map(row).collect(),
            annotators: annotator_agreement(&listing.events).iter().map(row).collect(),
            effects: super::effects::label_effects(&listing.scores),
            pending: listing.pending.or(waiting),
        })
    }

    async fn open(
        &self,
        who: Option<Identity>,
        trial: TrialId,
        kind: String,
        filter: QueueFilter,
    ) -> Result<OpenItem, AppError> {
        let kind = check_kind(&kind)?;
        let Found { item, settled, open, .. } = self.item_of(who.as_ref(), &trial, kind).await?;
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
            (Some(Role::Annotator), _) if settled => {
                Some("people settled it already; only an operator's adjudication changes it".to_string())
            }
            (Some(Role::Annotator), _) if item.mine.is_some() => {
                let first = item.votes.iter().find(|v| v.source == "human" && Some(&v.author) == name.as_ref());
                Some(format!(
                    "you labelled it {}{}; a label is final once given (you have seen the automatic label and the \
                     others' since), so only an operator's adjudication changes it",
                    if item.mine == Some(true) { "yes" } else { "no" },
                    first.map(|v| format!(" at {}", app::model::utc_second(v.at))).unwrap_or_default()
                ))
            }
            (Some(Role::Annotator), _) if !open => Some(
                "it is neither disputed nor in the audit sample; only an operator's adjudication changes it"
                    .to_string(),
            ),
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

    async fn start(&self, who: Identity, trial: TrialId, kind: String) -> Result<i64, AppError> {
        let kind = check_kind(&kind)?;
        let found = self.item_of(Some(&who), &trial, kind).await?;
        if who.role < Role::Operator && (found.settled || !found.open) {
            return Err(AppError::Conflict(format!(
                "this {kind} label is not waiting for people; only an operator's adjudication changes it"
            )));
        }
        if who.role < Role::Operator && found.item.mine.is_some() {
            return Err(AppError::Conflict(format!(
                "you labelled this {kind} label already; a label is final once given, so only an operator's \
                 adjudication changes it"
            )));
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

    async fn label(
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
        let Found { item, settled, open, turns } = self.item_of(Some(&operator), &label.trial, kind).await?;
        if let Some(t) = turn.filter(|t| usize::try_from(*t).map_or(true, |t| t >= turns)) {
            return Err(AppError::Invalid {
                field: "turn".into(),
                message: format!("the trial has turns 0 to {}; {t} is none of them", turns.saturating_sub(1)),
            });
        }
        // Annotators label what waits for people; operators may adjudicate any label.
        if !adjudicate && (settled || !open) {
            return Err(AppError::Conflict(if settled {
                format!("this {kind} label is settled already; only an operator's adjudication changes it now")
            } else {
                format!(
                    "this {kind} label is neither disputed nor in the audit sample; only an operator's adjudication \
                     changes it"
                )
            }));
        }
        // A label is final once given: its author has seen the automatic label and the
        // others' labels since, so a second one would not be blind.
        if !adjudicate && let Some(v) = item.votes.iter().find(|v| v.source == "human" && v.author == who.name) {
            return Err(AppError::Conflict(format!(
                "you labelled this {kind} label {} at {}; a label is final once given (you have seen the automatic \
                 label and the others' since), so only an operator's adjudication changes it",
                if v.value { "yes" } else { "no" },
                app::model::utc_second(v.at)
            )));
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

    async fn grade_view(&self, who: Identity, trial: TrialId) -> Result<GradeView, AppError> {
        let row = self.store.trial(&trial).await?;
        let task = self.world.task(&row.task_id).ok_or_else(|| AppError::NotFound(format!("task {}", row.task_id)))?;
        let grades: Vec<ReasoningGrade> =
            self.store.grades(&row.run_id).await.map_err(fail)?.into_iter().filter(|g| g.trial_id == trial).collect();
        let authors: std::collections::BTreeSet<&str> = grades.iter().map(|g| g.author.as_str()).collect();
        let mine = grades
            .iter()
            .filter(|g| g.author == who.name)
            .max_by_key(|g| g.grade_id)
            .map(|g| (g.acc_rsn, g.decision.as_str().to_string(), g.note.clone()));
        Ok(GradeView {
            graded_by: authors.len(),
            trial_id: row.trial_id,
            run: row.run_id,
            task_id: row.task_id,
            agent: row.agent,
            verdict: row.verdict,
            rationale: row.rationale.unwrap_or_default(),
            gold_facts: task.gold_facts.iter().map(|f| f.text.clone()).collect(),
            justification: task.justification.clone(),
            optimal: task.verdict.optimal.clone(),
            mine,
        })
    }

    async fn grade(&self, who: Identity, grade: NewGrade) -> Result<(), AppError> {
        let invalid = |field: &str, message: String| AppError::Invalid { field: field.into(), message };
        let text = grade.acc_rsn.trim();
        let acc_rsn = text
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v) && ((v * 10.0).round() - v * 10.0).abs() < 1e-9)
            .ok_or_else(|| invalid("acc_rsn", format!("{text:?}: choose a value from 0.0 to 1.0 in tenths")))?;
        let decision = DecisionClass::parse(grade.decision.trim())
            .map_err(|e| invalid("decision", format!("{:?}: choose one of {}", e.name, e.known)))?;
        if grade.note.trim().is_empty() {
            return Err(invalid("note", "say why (the note is kept with the grade)".into()));
        }
        app::model::check_note(&grade.note)?;
        let row = self.store.trial(&grade.trial).await?;
        if row.state != crate::db::TrialState::Done {
            return Err(invalid("trial", "only a finished trial with a verdict can be graded".into()));
        }
        let g = ReasoningGrade {
            grade_id: 0,
            trial_id: row.trial_id,
            author: who.name,
            acc_rsn,
            decision,
            note: grade.note.trim().to_string(),
            created_at: now_ms(),
        };
        self.store.add_grade(&g).await.map_err(fail)?;
        Ok(())
    }

    async fn release(&self, who: Identity, trial: TrialId, kind: String) -> Result<(), AppError> {
        let kind = check_kind(&kind)?;
        if let Some((holder, _)) = self.locks().await?.remove(&(trial.clone(), kind))
            && holder != who.name
        {
            return Err(AppError::Conflict(format!("{holder} holds this {kind} label; only they can give it back")));
        }
        self.store.unlock_label(&trial, kind, &who.name).await.map_err(fail)
    }
}
