//! The trajectory page's replay panel: a trial's counterfactual replays aligned with it turn
//! by turn, and replays started from the dashboard (run in the background, stored as they
//! end, so the panel shows them on its next load).

use std::sync::Arc;

use app::error::AppError;
use app::model::{AlignedTurn, NewReplay, ReplayView, ReplaysView, TrialId};

use super::fail;
use crate::agent::Step;
use crate::db::Store;
use crate::env::World;
use crate::runs::export::parse_steps;
use crate::runs::replay::{self, ReplayPlan};

fn invalid(field: &str, message: impl Into<String>) -> AppError {
    AppError::Invalid { field: field.into(), message: message.into() }
}

/// The actions of two trajectories side by side, and the first turn where they differ.
fn align(original: &[Step], branch: &[Step]) -> (Vec<AlignedTurn>, Option<usize>) {
    let n = original.len().max(branch.len());
    let turns: Vec<AlignedTurn> = (0..n)
        .map(|t| AlignedTurn {
            t,
            original: original.get(t).map(|s| s.action.describe()),
            replay: branch.get(t).map(|s| s.action.describe()),
        })
        .collect();
    let first = turns.iter().find(|a| a.original != a.replay).map(|a| a.t);
    (turns, first)
}

/// A trial's replays, each aligned with the original.
pub async fn view(store: &dyn Store, world: &World, trial_id: TrialId) -> Result<ReplaysView, AppError> {
    let trial = store.trial(&trial_id).await?;
    // A trial imported from another harness on a task that is not Mirage's cannot be replayed.
    let Some(task) = world.task(&trial.task_id) else {
        return Ok(ReplaysView {
            trial: trial.trial_id,
            verdict: trial.verdict,
            goal: false,
            replays: Vec::new(),
            caused: None,
        });
    };
    let original = parse_steps(&store.steps(&trial_id).await.map_err(fail)?).map_err(fail)?;
    let rows = store.replays_of(&trial_id).await.map_err(fail)?;
    let mut replays = Vec::with_capacity(rows.len());
    for r in &rows {
        let branch: Vec<Step> = serde_json::from_str(&r.steps).map_err(fail)?;
        let (turns, first_divergent) = align(&original, &branch);
        let result = replay::result_of(task, trial.verdict.as_deref(), r);
        replays.push(ReplayView {
            id: r.replay_id.clone(),
            from_turn: result.from_turn,
            intervention: r.intervention.clone(),
            sample: r.sample,
            state: r.state,
            verdict: r.verdict.clone(),
            goal: result.goal,
            left_goal: result.attack_success,
            error: r.error.clone(),
            turns,
            first_divergent,
        });
    }
    let refs: Vec<_> = rows.iter().collect();
    let exposed_at = original.iter().position(|s| !s.spans.is_empty());
    let caused =
        replay::caused(task, trial.verdict.as_deref(), &refs, exposed_at).map(|c| (c.value, c.replays, c.left_goal));
    Ok(ReplaysView {
        goal: crate::judge::labels::attack_success(task, trial.verdict.as_deref()) == Some(true),
        trial: trial.trial_id,
        verdict: trial.verdict,
        replays,
        caused,
    })
}

/// Checks a replay request and starts it in the background.
pub async fn start(store: Arc<dyn Store>, world: Arc<World>, req: NewReplay) -> Result<(), AppError> {
    let trial = store.trial(&req.trial).await?;
    if !trial.state.is_finished() {
        return Err(invalid("trial", format!("trial {} is not finished", trial.trial_id)));
    }
    let steps = store.steps(&trial.trial_id).await.map_err(fail)?.len();
    let from_turn: usize = match req.from_turn.trim() {
        "" => 0,
        t => t.parse().map_err(|_| invalid("from_turn", format!("{t:?} is not a turn number")))?,
    };
    if from_turn >= steps.max(1) {
        return Err(invalid("from_turn", format!("the trial's turns are 0–{}", steps.saturating_sub(1))));
    }
    let samples = match req.samples.trim() {
        "" => "1",
        s => s,
    };
    let plan: ReplayPlan =
        format!("{}:{samples}", req.intervention.trim()).parse().map_err(|e: String| invalid("intervention", e))?;
    let id = trial.trial_id.clone();
    tokio::spawn(async move {
        if let Err(e) = replay::replay(store, &world, &id, from_turn, &plan).await {
            tracing::error!(trial = %id, "replay failed: {e:#}");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Action;

    fn step(t: usize, url: &str) -> Step {
        Step {
            t,
            url: url.into(),
            status: Some(200),
            observation: String::new(),
            thought: String::new(),
            action: Action::Goto { url: url.into() },
            usage: None,
            latency_ms: 0,
            spans: Vec::new(),
        }
    }

    #[test]
    fn the_first_divergent_turn_is_where_the_actions_part() {
        let a = vec![step(0, "/a"), step(1, "/b"), step(2, "/c")];
        let b = vec![step(0, "/a"), step(1, "/x")];
        let (turns, first) = align(&a, &b);
        assert_eq!(first, Some(1));
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[2].replay, None);
        assert_eq!(align(&a, &a).1, None);
    }
}
