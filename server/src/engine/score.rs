//! Scores of runs: computed once per trial and judge version, stored with the judge version
//! that produced them (its automatic labels inside), recomputed when the judges change;
//! people's label events applied on the way out.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;

use crate::db::{Store, StoredScore, TrialKey, TrialRow};
use crate::env::World;
use crate::judge::aggregate::apply_overrides;
use crate::judge::aside::Keep;
use crate::judge::rsn::ModelJudge;
use crate::judge::{Trajectory, TrialScore};
use crate::runs::scoring::{Inputs, Scored, Scoring};
use crate::runs::{CHUNK, RunKind};
use vocab::{RunId, TrialId};

/// Most model-judge calls in flight at once while a run is scored.
const JUDGE_CALLS: usize = 8;

/// A trial's score and its stored body once the model judge has answered (one of at most
/// [`JUDGE_CALLS`] calls at a time, by `gate`).
async fn judged(
    world: &World,
    judge: &ModelJudge,
    gate: &tokio::sync::Semaphore,
    trial: &TrialRow,
    (traj, mut score): (Box<Trajectory>, TrialScore),
) -> anyhow::Result<(TrialScore, String)> {
    let task = world.task(&trial.task_id).context("the trial's task is in the world")?;
    let _slot = gate.acquire().await?;
    judge.apply(world, task, &traj, &mut score).await;
    let body = serde_json::to_string(&score)?;
    Ok((score, body))
}

/// Scores every finished trial of a run with `judge`: stored scores of the same judge
/// version are reused, others (and new trials) are computed and stored. Samples imported
/// from other harnesses that are not Mirage tasks get their harness's record instead (its
/// labels and attack success, no metrics; computed, not stored), after the others. Human
/// labels override automatic ones in the returned scores (in plan order). `progress` hears
/// (trials handled, finished trials) as chunks are scored. Returns the scores and how many
/// were (re)computed.
///
/// The chunks go through a pipeline: while one is parsed and scored on every core, the
/// next one waits scored-to-be and the one after is read, and the previous one's scores
/// are written, each on its own task.
pub async fn score_run(
    store: &Arc<dyn Store>,
    world: &Arc<World>,
    run_id: &RunId,
    judge: &ModelJudge,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> anyhow::Result<(Vec<TrialScore>, usize)> {
    score_run_as_of(store, world, run_id, judge, progress, (None, Keep::All)).await
}

/// [`score_run`] with people's labels as they stood at label generation `as_of` (events up
/// to that id; all of them when `None`): the figures of a frozen link. Each score's detail
/// is kept as `keep` says, once its stored body is written (a run's tables need only the
/// figures).
pub async fn score_run_as_of(
    store: &Arc<dyn Store>,
    world: &Arc<World>,
    run_id: &RunId,
    judge: &ModelJudge,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
    (as_of, keep): (Option<i64>, Keep<'_>),
) -> anyhow::Result<(Vec<TrialScore>, usize)> {
    let kind = RunKind::load(store.as_ref(), run_id).await?.agent_only(run_id)?;
    let version = judge.version();
    let mut stored: HashMap<TrialId, StoredScore> =
        store.scores(run_id).await?.into_iter().map(|s| (s.trial_id.clone(), s)).collect();
    let keys = store.trial_keys(run_id).await?;
    let (foreign, finished): (Vec<&TrialKey>, Vec<&TrialKey>) =
        keys.iter().filter(|t| t.state.is_finished()).partition(|t| vocab::TaskRef::is_foreign(&t.task_id));
    let (mut slots, todo) = reuse_stored(&mut stored, &finished, (judge, world), keep)?;
    let mut handled = finished.len() - todo.len();
    progress(handled, finished.len());

    let manipulates = kind.envelope().manipulates();
    let chunks: Vec<Vec<(usize, TrialId)>> =
        todo.chunks(CHUNK).map(|c| c.iter().map(|(i, t)| (*i, (*t).clone())).collect()).collect();
    let chunks = futures::stream::iter(chunks);
    let mut scoring = Scoring::start(store, world, (&version, judge.asks_a_model()), manipulates, chunks);
    let mut writing: Option<tokio::task::JoinHandle<crate::db::StoreResult<u64>>> = None;
    // The chunk's place in the pipeline is given back when this chunk is handled.
    while let Some((inputs, scored, _place)) = scoring.next().await {
        let mut rows = Vec::with_capacity(inputs.len());
        handled += inputs.len();
        for ((i, finished_at), result) in judge_chunk(world, judge, inputs, scored).await {
            let (score, body) = result?;
            // A score the judge failed on is used now but not stored: the next pass asks again.
            if let Some(finished_at) = finished_at.filter(|_| score.rsn_error.is_none()) {
                let trial_id = score.trial_id.clone().into();
                rows.push((StoredScore { trial_id, judge_version: version.clone(), body }, finished_at));
            }
            let mut score = score;
            score.keep(keep)?;
            slots[i] = Some(score);
        }
        progress(handled, finished.len());
        if let Some(w) = writing.take() {
            store_done(w, run_id).await?;
        }
        let (store, run) = (store.clone(), run_id.clone());
        writing = Some(tokio::spawn(async move { store.put_finish_scores(&run, &rows, true).await }));
    }
    if let Some(w) = writing {
        store_done(w, run_id).await?;
    }
    scoring.finish().await?;
    let computed = todo.len();
    drop(todo);
    drop(finished);
    // In place: no second buffer of every score.
    let mut scores =
        slots.into_iter().map(|s| s.context("a trial was left unscored")).collect::<anyhow::Result<Vec<_>>>()?;
    for mut score in foreign_scores(store.as_ref(), &foreign).await? {
        score.keep(keep)?;
        scores.push(score);
    }
    drop(foreign);
    drop(keys);
    attach_run_facts(store.as_ref(), world, (run_id, &kind), &mut scores, as_of).await?;
    Ok((scores, computed))
}

/// Waits for a chunk's scores to be stored. A store that fails (a busy or full database) is
/// logged, not raised: the scores are right as computed and are used now; their trials are
/// computed again at the next scoring.
async fn store_done(
    writing: tokio::task::JoinHandle<crate::db::StoreResult<u64>>,
    run_id: &RunId,
) -> anyhow::Result<()> {
    if let Err(e) = writing.await? {
        tracing::warn!(run = %run_id, "scores were not stored (they are computed again at the next scoring): {e:#}");
    }
    Ok(())
}

/// What a trial's score learns from the rest of its run: its clean twin, the replays that
/// caused a change, where it came from, its cost, and people's labels (those up to `as_of`).
async fn attach_run_facts(
    store: &dyn Store,
    world: &World,
    (run_id, kind): (&RunId, &RunKind),
    scores: &mut [TrialScore],
    as_of: Option<i64>,
) -> anyhow::Result<()> {
    crate::judge::twins::attach(scores);
    crate::runs::replay::attach_caused(world, scores, &store.replays_in_run(run_id).await?);
    for s in scores.iter_mut() {
        s.provenance = kind.provenance(&s.agent);
    }
    let endpoints = &kind.envelope().endpoints;
    crate::judge::cost::attach(scores, |agent| crate::runs::pricing(agent, endpoints));
    let mut events = store.people_label_events(run_id).await?;
    if let Some(g) = as_of {
        events.retain(|e| e.event_id <= g);
    }
    apply_overrides(scores, &events, kind.annotators());
    Ok(())
}

/// The score slots of the finished trials in plan order: a stored score that stands for this
/// judge ([`ModelJudge::keeps`]: its own, or a model judge's where none is configured) is
/// reused unless the judge failed on it (that one is asked again, and counts as a judge
/// error until it answers); the others are left empty and listed to be computed.
#[allow(clippy::type_complexity)]
fn reuse_stored<'k>(
    stored: &mut HashMap<TrialId, StoredScore>,
    finished: &[&'k TrialKey],
    (judge, world): (&ModelJudge, &World),
    keep: Keep<'_>,
) -> anyhow::Result<(Vec<Option<TrialScore>>, Vec<(usize, &'k TrialId)>)> {
    let mut slots: Vec<Option<TrialScore>> = Vec::with_capacity(finished.len());
    let mut todo: Vec<(usize, &TrialId)> = Vec::new();
    for (i, trial) in finished.iter().enumerate() {
        let reused = stored
            .remove(&trial.trial_id)
            .filter(|s| judge.keeps(&s.judge_version))
            .map(|s| {
                serde_json::from_str::<TrialScore>(&s.body)
                    .with_context(|| format!("stored score of {}", trial.trial_id))
            })
            .transpose()?
            .filter(|s| s.rsn_error.is_none());
        if let Some(mut score) = reused {
            score.keep(keep)?;
            slots.push(Some(score));
        } else if world.task(&trial.task_id).is_none() {
            anyhow::bail!("trial {}: task {} is not in the stored corpus", trial.trial_id, trial.task_id);
        } else {
            slots.push(None);
            todo.push((i, &trial.trial_id));
        }
    }
    Ok((slots, todo))
}

/// A chunk's scores: each trial's place in the run and finish time with its score and
/// serialised body, or the error. A model judge is asked here, about several trials at once
/// (at most [`JUDGE_CALLS`]); a trial scored without one is handed on as it is (a future per
/// trial would be built, moved and freed for nothing).
async fn judge_chunk(
    world: &Arc<World>,
    judge: &ModelJudge,
    inputs: Inputs<usize>,
    scored: Vec<anyhow::Result<Scored>>,
) -> Vec<((usize, Option<i64>), anyhow::Result<(TrialScore, String)>)> {
    let gate = tokio::sync::Semaphore::new(JUDGE_CALLS);
    let mut out = Vec::with_capacity(inputs.len());
    let (mut calls, mut waiting) = (Vec::new(), Vec::new());
    for ((i, (trial, _)), result) in inputs.iter().zip(scored) {
        match result {
            Ok(Scored::Done(score, body)) => out.push((*i, Ok((score, body)))),
            Err(e) => out.push((*i, Err(e))),
            Ok(Scored::Pending(traj, score)) => {
                waiting.push(out.len());
                out.push((*i, Err(anyhow::anyhow!("the model judge was not asked"))));
                calls.push(judged(world, judge, &gate, trial, (traj, score)));
            }
        }
    }
    for (at, result) in waiting.into_iter().zip(futures::future::join_all(calls).await) {
        out[at].1 = result;
    }
    out
}

/// The harness's record of each imported sample that is not a Mirage task (its labels and
/// attack success, no metrics).
async fn foreign_scores(store: &dyn Store, foreign: &[&TrialKey]) -> anyhow::Result<Vec<TrialScore>> {
    let mut scores = Vec::with_capacity(foreign.len());
    for chunk in foreign.chunks(CHUNK) {
        let ids: Vec<TrialId> = chunk.iter().map(|t| t.trial_id.clone()).collect();
        let (mut trials, mut origins) = (store.trials_with_steps(&ids).await?, store.origins_of(&ids).await?);
        for id in &ids {
            // A task id that only looks like a harness's, with no record: nothing to score.
            let (Some((trial, steps)), Some(origin)) = (trials.remove(id), origins.remove(id)) else { continue };
            let origin: crate::foreign::Origin =
                serde_json::from_str(&origin).with_context(|| format!("the harness record of {id}"))?;
            let steps = crate::runs::export::parse_steps(crate::db::split_steps(&steps))?;
            scores.push(crate::foreign::labels::score_of(&trial, &origin, &steps));
        }
    }
    Ok(scores)
}
