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

/// Trials read, scored and written per chunk: a chunk's step bodies are read at once and
/// its new scores and label events written in one transaction, so memory stays bounded by
/// a chunk whatever the run's size.
const CHUNK: usize = 500;

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
    let mut scores = Vec::new();
    let mut computed = 0;
    let scorer = Scorer::new(world);
    let finished: Vec<&crate::db::TrialRow> = trials.iter().filter(|t| t.state.is_finished()).collect();
    for chunk in finished.chunks(CHUNK) {
        let mut todo = Vec::new();
        for trial in chunk {
            match stored.remove(&trial.trial_id).filter(|s| s.judge_version == version) {
                Some(s) => scores.push(
                    serde_json::from_str(&s.body).with_context(|| format!("stored score of {}", trial.trial_id))?,
                ),
                None => todo.push(*trial),
            }
        }
        if todo.is_empty() {
            continue;
        }
        let ids: Vec<String> = todo.iter().map(|t| t.trial_id.clone()).collect();
        let mut bodies = store.steps_of(&ids).await?;
        let mut trajs = Vec::with_capacity(todo.len());
        for trial in &todo {
            if world.task(&trial.task_id).is_none() {
                anyhow::bail!("trial {}: task {} is not in the stored corpus", trial.trial_id, trial.task_id);
            }
            let steps = parse_steps(&bodies.remove(&trial.trial_id).unwrap_or_default())?;
            trajs.push(serde_json::from_value::<Trajectory>(trajectory_line(trial, &steps))?);
        }
        // The rule-based judges on every core; a model judge then asks, one trial at a time.
        let (mut rows, mut events) = (Vec::with_capacity(todo.len()), Vec::new());
        for (traj, score) in trajs.iter().zip(scorer.score_all(&trajs)) {
            let mut score = score.context("the trial's task is in the world")?;
            let task = world.task(&traj.task_id).context("the trial's task is in the world")?;
            judge.apply(world, task, traj, &mut score).await;
            events.extend(label_events(&score));
            rows.push(StoredScore {
                trial_id: score.trial_id.clone(),
                judge_version: version.clone(),
                body: serde_json::to_string(&score)?,
            });
            scores.push(score);
        }
        computed += rows.len();
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
