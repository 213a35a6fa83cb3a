//! A trial among its siblings: the same task in the same run under every configuration,
//! level and condition, each with the class of its decision, and the trials just before and
//! after it in the run's order.

use app::error::AppError;
use app::model::{Around, TrialSummary};

use super::internal;
use crate::db::{Store, TrialFilter, TrialRow, TrialState};
use crate::env::World;

/// Most siblings the strip lists.
const MOST_SIBLINGS: i64 = 120;

/// The class of a finished trial's decision on a Mirage task: `right` (Strict credit),
/// `acceptable` (Default credit only), `harmful` (a harmful verdict), `wrong` (anything
/// else, no verdict included); `None` while it runs or for another harness's sample.
pub fn decision(world: &World, t: &TrialRow) -> Option<String> {
    if !t.state.is_finished() || t.state == TrialState::Cancelled {
        return None;
    }
    let task = world.task(&t.task_id)?;
    let verdict = t.verdict.as_deref();
    let (score, _) = crate::judge::metrics::acc_dec(task, verdict);
    Some(
        if score.strict >= 1.0 {
            "right"
        } else if score.default > 0.0 {
            "acceptable"
        } else if task.is_harmful(verdict) {
            "harmful"
        } else {
            "wrong"
        }
        .to_string(),
    )
}

/// One row of a trial list.
pub fn summary(world: &World, t: &TrialRow) -> TrialSummary {
    TrialSummary {
        id: t.trial_id.clone(),
        task_id: t.task_id.clone(),
        agent: t.agent.clone(),
        level: t.level.clone(),
        condition: t.condition.clone(),
        seed: t.seed,
        state: t.state.as_str().to_string(),
        verdict: t.verdict.clone(),
        error: t.error.clone(),
        foreign: crate::corpus::is_foreign_task(&t.task_id),
        decision: decision(world, t),
    }
}

/// The siblings of `trial` (itself included, in run order) and its neighbours in the run.
pub async fn around(store: &dyn Store, world: &World, trial: &TrialRow) -> Result<Around, AppError> {
    let same_task = TrialFilter { task: Some(trial.task_id.clone()), ..TrialFilter::default() };
    let (siblings, _) = store.trial_page(&trial.run_id, &same_task, 0, MOST_SIBLINGS).await.map_err(internal)?;
    // Ordinals number a run's trials from 0 in order: the window [ordinal − 1, ordinal + 1].
    let start = (trial.ordinal - 1).max(0);
    let (window, _) = store.trial_page(&trial.run_id, &TrialFilter::default(), start, 3).await.map_err(internal)?;
    let at = window.iter().position(|t| t.trial_id == trial.trial_id);
    let id = |i: usize| window.get(i).map(|t| t.trial_id.clone());
    Ok(Around {
        siblings: siblings.iter().map(|t| summary(world, t)).collect(),
        prev: at.and_then(|a| a.checked_sub(1)).and_then(id),
        next: at.and_then(|a| id(a + 1)),
    })
}
