//! Scores of runs: computed once per trial and judge version, stored with the judge version
//! that produced them (its automatic labels inside), recomputed when the judges change;
//! people's label events applied on the way out.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;

use super::CHUNK;
use super::export::trajectory_of;
use crate::db::{Store, StoredScore, TrialRow};
use crate::env::World;
use crate::judge::aggregate::apply_overrides;
use crate::judge::rsn::ModelJudge;
use crate::judge::{Scorer, Trajectory, TrialScore, on_every_core};

/// Scores every finished trial of a run with `judge`: stored scores of the same judge
/// version are reused, others (and new trials) are computed and stored. Samples imported
/// from other harnesses that are not Mirage tasks get their harness's record instead (its
/// labels and attack success, no metrics; computed, not stored), after the others. Human
/// labels override automatic ones in the returned scores (in plan order). `progress` hears
/// (trials handled, finished trials) as chunks are scored. Returns the scores and how many
/// were (re)computed.
///
/// The chunks go through a pipeline: while one is parsed and scored on every core, the
/// next one's steps are read and the previous one's scores written, each on its own task.
pub async fn score_run(
    store: &Arc<dyn Store>,
    world: &World,
    run_id: &str,
    judge: &ModelJudge,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> anyhow::Result<(Vec<TrialScore>, usize)> {
    super::geo::refuse_geo(store.as_ref(), run_id).await?;
    let version = judge.version();
    let mut stored: HashMap<String, StoredScore> =
        store.scores(run_id).await?.into_iter().map(|s| (s.trial_id.clone(), s)).collect();
    let trials = store.trials(run_id).await?;
    let (foreign, finished): (Vec<&TrialRow>, Vec<&TrialRow>) =
        trials.iter().filter(|t| t.state.is_finished()).partition(|t| crate::corpus::is_foreign_task(&t.task_id));
    let mut slots: Vec<Option<TrialScore>> = Vec::with_capacity(finished.len());
    let mut todo: Vec<(usize, &TrialRow)> = Vec::new();
    for (i, trial) in finished.iter().enumerate() {
        if let Some(s) = stored.remove(&trial.trial_id).filter(|s| s.judge_version == version) {
            slots.push(Some(
                serde_json::from_str(&s.body).with_context(|| format!("stored score of {}", trial.trial_id))?,
            ));
        } else if world.task(&trial.task_id).is_none() {
            anyhow::bail!("trial {}: task {} is not in the stored corpus", trial.trial_id, trial.task_id);
        } else {
            slots.push(None);
            todo.push((i, *trial));
        }
    }
    let mut handled = finished.len() - todo.len();
    progress(handled, finished.len());

    let scorer = Scorer::new(world);
    let read = |chunk: &[(usize, &TrialRow)]| {
        let (store, ids) = (store.clone(), chunk.iter().map(|(_, t)| t.trial_id.clone()).collect::<Vec<_>>());
        tokio::spawn(async move { store.steps_of(&ids).await })
    };
    let chunks: Vec<&[(usize, &TrialRow)]> = todo.chunks(CHUNK).collect();
    let mut reading = chunks.first().map(|c| read(c));
    let mut writing: Option<tokio::task::JoinHandle<crate::db::StoreResult<()>>> = None;
    for (n, chunk) in chunks.iter().enumerate() {
        let mut bodies = reading.take().context("a read per chunk")?.await??;
        reading = chunks.get(n + 1).map(|c| read(c));
        let inputs: Vec<(&TrialRow, Vec<String>)> =
            chunk.iter().map(|(_, t)| (*t, bodies.remove(&t.trial_id).unwrap_or_default())).collect();
        // Parsing and the rule-based judges on every core; a model judge then asks, one
        // trial at a time.
        let scored = on_every_core(&inputs, |(trial, steps)| -> anyhow::Result<(Trajectory, TrialScore)> {
            let traj = trajectory_of(trial, steps)?;
            let score = scorer.score(&traj).context("the trial's task is in the world")?;
            Ok((traj, score))
        });
        let mut rows = Vec::with_capacity(chunk.len());
        for ((i, trial), result) in chunk.iter().zip(scored) {
            let (traj, mut score) = result?;
            let task = world.task(&trial.task_id).context("the trial's task is in the world")?;
            judge.apply(world, task, &traj, &mut score).await;
            rows.push(StoredScore {
                trial_id: score.trial_id.clone(),
                judge_version: version.clone(),
                body: serde_json::to_string(&score)?,
            });
            slots[*i] = Some(score);
        }
        handled += chunk.len();
        progress(handled, finished.len());
        if let Some(w) = writing.take() {
            w.await??;
        }
        let (store, run) = (store.clone(), run_id.to_string());
        writing = Some(tokio::spawn(async move { store.put_scores(&run, &rows).await }));
    }
    if let Some(w) = writing {
        w.await??;
    }
    let computed = todo.len();
    drop(chunks);
    drop(todo);
    drop(finished);
    // In place: no second buffer of every score.
    let mut scores =
        slots.into_iter().map(|s| s.context("a trial was left unscored")).collect::<anyhow::Result<Vec<_>>>()?;
    for chunk in foreign.chunks(CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|t| t.trial_id.clone()).collect();
        let (mut bodies, mut origins) = (store.steps_of(&ids).await?, store.origins_of(&ids).await?);
        for trial in chunk {
            // A task id that only looks like a harness's, with no record: nothing to score.
            let Some(origin) = origins.remove(&trial.trial_id) else { continue };
            let origin: crate::foreign::Origin =
                serde_json::from_str(&origin).with_context(|| format!("the harness record of {}", trial.trial_id))?;
            let steps = super::export::parse_steps(&bodies.remove(&trial.trial_id).unwrap_or_default())?;
            scores.push(crate::foreign::labels::score_of(trial, &origin, &steps));
        }
    }
    drop(foreign);
    drop(trials);
    apply_overrides(&mut scores, &store.people_label_events(run_id).await?);
    Ok((scores, computed))
}
