//! Scores of runs: computed once per trial and judge version, stored with the judge version
//! that produced them, recomputed when the judges change; label events appended with each
//! new score; human labels applied on the way out.

use anyhow::Context;

use super::export::{parse_steps, trajectory_line};
use crate::db::{LabelEvent, Store, StoredScore};
use crate::env::World;
use crate::judge::aggregate::apply_overrides;
use crate::judge::labels::QUEUE_ORDER;
use crate::judge::rsn::ModelJudge;
use crate::judge::{Scorer, Trajectory, TrialScore};

/// How many new scores are written per transaction.
const BATCH: usize = 500;

/// Scores every finished trial of a run with `judge`: stored scores of the same judge
/// version are reused, others (and new trials) are computed and stored. Human labels
/// override automatic ones in the returned scores. Returns the scores and how many were
/// (re)computed.
pub async fn score_run(
    store: &dyn Store,
    world: &World,
    run_id: &str,
    judge: &ModelJudge,
) -> anyhow::Result<(Vec<TrialScore>, usize)> {
    super::geo::refuse_geo(store, run_id).await?;
    let version = judge.version();
    let mut stored: std::collections::HashMap<String, StoredScore> =
        store.scores(run_id).await?.into_iter().map(|s| (s.trial_id.clone(), s)).collect();
    let trials = store.trials(run_id).await?;
    let mut bodies = None;
    let mut scores = Vec::new();
    let mut fresh: Vec<(StoredScore, Vec<LabelEvent>)> = Vec::new();
    let scorer = Scorer::new(world);
    for trial in trials.iter().filter(|t| t.state.is_finished()) {
        if let Some(s) = stored.remove(&trial.trial_id).filter(|s| s.judge_version == version) {
            scores.push(serde_json::from_str(&s.body).with_context(|| format!("stored score of {}", trial.trial_id))?);
            continue;
        }
        let Some(task) = world.task(&trial.task_id) else {
            anyhow::bail!("trial {}: task {} is not in the stored corpus", trial.trial_id, trial.task_id);
        };
        let steps = match &mut bodies {
            Some(b) => b,
            None => bodies.insert(store.run_steps(run_id).await?),
        };
        let steps = parse_steps(&steps.remove(&trial.trial_id).unwrap_or_default())?;
        let traj: Trajectory = serde_json::from_value(trajectory_line(trial, &steps))?;
        let mut score = scorer.score(&traj).context("the trial's task is in the world")?;
        judge.apply(world, task, &traj, &mut score).await;
        let events = label_events(&score);
        fresh.push((
            StoredScore {
                trial_id: score.trial_id.clone(),
                judge_version: version.clone(),
                body: serde_json::to_string(&score)?,
            },
            events,
        ));
        scores.push(score);
    }
    let computed = fresh.len();
    for chunk in fresh.chunks(BATCH) {
        let rows: Vec<StoredScore> = chunk.iter().map(|(s, _)| s.clone()).collect();
        let events: Vec<LabelEvent> = chunk.iter().flat_map(|(_, e)| e.iter().cloned()).collect();
        store.put_scores(run_id, &rows, &events).await?;
    }
    apply_overrides(&mut scores, &store.label_events(run_id).await?);
    Ok((scores, computed))
}

/// The automatic label events of a score: the rule's label of each kind, and the model
/// judge's where it gave one.
fn label_events(score: &TrialScore) -> Vec<LabelEvent> {
    let Some(labels) = &score.labels else { return Vec::new() };
    QUEUE_ORDER
        .iter()
        .map(|&kind| (kind, labels.get(kind)))
        .flat_map(|(kind, l)| std::iter::once((kind, l)).chain(l.second_opinion.as_deref().map(|s| (kind, s))))
        .map(|(kind, l)| LabelEvent {
            event_id: 0,
            trial_id: score.trial_id.clone(),
            kind,
            value: l.value.into(),
            turn: l.turn.and_then(|t| i64::try_from(t).ok()),
            source: l.source.clone(),
            confidence: l.confidence,
            reason: l.reason.clone(),
            author: None,
            judge_version: Some(score.judge_version.clone()),
            created_at: 0,
        })
        .collect()
}
