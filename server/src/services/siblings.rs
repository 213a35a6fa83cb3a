//! A trial among its siblings: the same task in the same run under every configuration,
//! level and condition, each with the class of its decision, and the trials just before and
//! after it in the run's order.

use app::error::AppError;
use app::model::{Around, OUTCOMES, TaskTrials, TrialQuery, TrialSummary};
use vocab::TaskRef;

use super::fail;
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
    let (score, _) = crate::judge::rules::acc_dec(task, verdict);
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

/// What a stored trial's task id refers to. A `geo:` id names a target only in a GEO run
/// (condition `geo`); anywhere else, or unreadable, it is taken as it is written.
pub fn task_of(t: &TrialRow) -> TaskRef {
    if let Some(target) = crate::geo::plan::geo_target(t) {
        return TaskRef::Geo(target);
    }
    match TaskRef::parse(&t.task_id) {
        Ok(TaskRef::Geo(_)) | Err(_) => TaskRef::Mirage(t.task_id.clone()),
        Ok(other) => other,
    }
}

/// One row of a trial list.
pub fn summary(world: &World, t: &TrialRow) -> TrialSummary {
    TrialSummary {
        id: t.trial_id.clone(),
        run: t.run_id.clone(),
        task: task_of(t),
        agent: t.agent.clone(),
        level: t.level.clone(),
        condition: t.condition.clone(),
        seed: t.seed,
        state: t.state,
        verdict: t.verdict.clone(),
        error: t.error.clone(),
        decision: decision(world, t),
    }
}

/// Most trials the task page lists.
const MOST_TASK_TRIALS: i64 = 200;

/// A task's trials over every run, each with its decision.
pub async fn of_task(store: &dyn Store, world: &World, task_id: &str) -> Result<TaskTrials, AppError> {
    let (rows, total) = store.task_trials(task_id, MOST_TASK_TRIALS).await.map_err(fail)?;
    Ok(TaskTrials {
        rows: rows.iter().map(|t| summary(world, t)).collect(),
        total: usize::try_from(total).unwrap_or(0),
    })
}

/// The store filter and the outcome of a trial list's query; `Invalid` names a state or
/// outcome that is not one.
pub fn filter_of(q: &TrialQuery) -> Result<(TrialFilter, Option<String>), AppError> {
    let some = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    let state = match some(&q.state) {
        None => None,
        Some(s) => Some(s.parse::<TrialState>().map_err(|_| AppError::Invalid {
            field: "state".into(),
            message: format!("{s:?} is not one of queued, running, done, error, cancelled"),
        })?),
    };
    let outcome = some(&q.outcome);
    if let Some(o) = &outcome
        && !OUTCOMES.contains(&o.as_str())
    {
        return Err(AppError::Invalid {
            field: "outcome".into(),
            message: format!("{o:?} is not one of {}", OUTCOMES.join(", ")),
        });
    }
    let filter = TrialFilter {
        agent: some(&q.agent),
        level: some(&q.level),
        state,
        task: some(&q.task),
        condition: some(&q.condition),
    };
    Ok((filter, outcome))
}

/// Every trial of `run` that `filter` keeps and whose decision is `outcome`, in run order.
pub async fn with_outcome(
    store: &dyn Store,
    world: &World,
    run: &app::model::RunId,
    filter: &TrialFilter,
    outcome: &str,
) -> Result<Vec<TrialRow>, AppError> {
    let (_, total) = store.trial_page(run, filter, 0, 0).await.map_err(fail)?;
    let (rows, _) = store.trial_page(run, filter, 0, total).await.map_err(fail)?;
    Ok(rows.into_iter().filter(|t| decision(world, t).as_deref() == Some(outcome)).collect())
}

/// The siblings of `trial` (itself included, in run order) and its neighbours in the run's
/// trial list under the filters of `within` (none: the whole run).
pub async fn around(
    store: &dyn Store,
    world: &World,
    trial: &TrialRow,
    within: &TrialQuery,
) -> Result<Around, AppError> {
    let same_task = TrialFilter { task: Some(trial.task_id.clone()), ..TrialFilter::default() };
    let (siblings, _) = store.trial_page(&trial.run_id, &same_task, 0, MOST_SIBLINGS).await.map_err(fail)?;
    let (filter, outcome) = filter_of(within)?;
    let window = match outcome {
        Some(o) => with_outcome(store, world, &trial.run_id, &filter, &o).await?,
        None if filter == TrialFilter::default() => {
            // Ordinals number a run's trials from 0 in order: the window [ordinal − 1, ordinal + 1].
            let start = (trial.ordinal - 1).max(0);
            store.trial_page(&trial.run_id, &filter, start, 3).await.map_err(fail)?.0
        }
        None => {
            let (_, total) = store.trial_page(&trial.run_id, &filter, 0, 0).await.map_err(fail)?;
            store.trial_page(&trial.run_id, &filter, 0, total).await.map_err(fail)?.0
        }
    };
    let at = window.iter().position(|t| t.trial_id == trial.trial_id);
    let id = |i: usize| window.get(i).map(|t| t.trial_id.clone());
    Ok(Around {
        siblings: siblings.iter().map(|t| summary(world, t)).collect(),
        prev: at.and_then(|a| a.checked_sub(1)).and_then(id),
        next: at.and_then(|a| id(a + 1)),
    })
}
