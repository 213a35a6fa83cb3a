//! The queue of labels waiting for people, as one caller sees it: listed, filtered, paged,
//! with each item's votes and holds.

use std::collections::HashMap;
use std::sync::Arc;

use app::error::AppError;
use app::model::{Identity, QUEUE_PAGE, Queue, QueueFilter, QueueItem, Role, RunId, TrialId, item_href};

use super::super::queue_view::{ItemParts, facet, item, passes, row, states, vote};
use super::super::runs::score_of;
use super::super::{annotators, fail};
use super::AnnotateService;
use crate::db::{LabelEvent, LabelLock, now_ms};
use crate::judge::TrialScore;
use crate::judge::aggregate::{Metric, annotator_agreement, people_labels};
use crate::judge::labels::{LabelKind, QUEUE_ORDER, queue_rank};
use crate::runs::export::parse_steps;

/// One item as [`AnnotateService::item_of`] finds it.
pub(super) struct Found {
    pub(super) item: QueueItem,
    /// People's labels (or an adjudication) replaced the automatic one.
    pub(super) settled: bool,
    /// Still waiting for people: disputed, a conflict, or audited, and not settled.
    pub(super) open: bool,
    /// Turns of the trial.
    pub(super) turns: usize,
}

/// A run's queue as one caller sees it, before filtering and paging.
pub(super) struct Listing {
    pub(super) items: Vec<QueueItem>,
    pub(super) scores: Arc<Vec<TrialScore>>,
    pub(super) events: Vec<LabelEvent>,
    pub(super) settled: usize,
    pub(super) needed: usize,
    pub(super) pending: Option<app::model::Pending>,
    pub(super) key: crate::engine::Fingerprint,
}

impl AnnotateService {
    pub(super) async fn runs(&self) -> Result<Vec<RunId>, AppError> {
        Ok(crate::runs::agent_runs(&self.store.runs().await.map_err(fail)?))
    }

    pub(super) async fn locks(&self) -> Result<HashMap<(TrialId, LabelKind), (String, i64)>, AppError> {
        Ok(self
            .store
            .label_locks(now_ms())
            .await
            .map_err(fail)?
            .into_iter()
            .map(|LabelLock { trial_id, kind, holder, expires_at }| ((trial_id, kind), (holder, expires_at)))
            .collect())
    }

    pub(super) async fn listing(&self, who: Option<&Identity>, run: &RunId) -> Result<Listing, AppError> {
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

    /// One item, whether or not it is in the queue, as `who` may see it; also whether people
    /// settled it.
    pub(super) async fn item_of(
        &self,
        who: Option<&Identity>,
        trial_id: &TrialId,
        kind: LabelKind,
    ) -> Result<Found, AppError> {
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
    pub(super) fn next_for(
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

    /// The `queue` port: a run's queue (the default run's when none is named), filtered and paged.
    pub(super) async fn queue_page(
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
            effects: super::super::effects::label_effects(&listing.scores),
            pending: listing.pending.or(waiting),
        })
    }
}
