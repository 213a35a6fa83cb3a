//! A run's trials on their way through the rule-based judges, a chunk at a time: the
//! pipeline behind scoring a stored run, and the scores a worker pool stores as its trials
//! finish, so that a run reads its scores rather than computing them when it is first shown.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::{Stream, StreamExt};

use super::CHUNK;
use super::export::trajectory_of;
use crate::db::{Store, StoredScore, TrialRow};
use crate::env::World;
use crate::judge::rsn::ModelJudge;
use crate::judge::{Scorer, Trajectory, TrialScore, on_every_core};
use vocab::{RunId, TrialId};

/// A trial scored on the scoring thread: finished (its score and the score's stored body),
/// or waiting for the model judge with its trajectory.
pub(crate) enum Scored {
    Done(TrialScore, String),
    Pending(Box<Trajectory>, TrialScore),
}

/// A chunk's trials, each with its slot (what the caller needs back with it, such as its
/// place in the run) and when it finished, read before its steps (`None`: not finished now,
/// or the times could not be read): the trial's row and its joined step bodies. A score is
/// stored only while its trial still stands finished at that time, so a score made from an
/// attempt that a retry has since replaced is never stored for it.
pub(crate) type Inputs<S = ()> = Vec<((S, Option<i64>), (TrialRow, String))>;
/// A chunk's trials and what the scoring thread made of each, with the chunk's place in the
/// pipeline (given back when it is dropped).
pub(crate) type Done<S = ()> = (Inputs<S>, Vec<anyhow::Result<Scored>>, tokio::sync::OwnedSemaphorePermit);

/// Chunks in the pipeline at once: one being stored, one scored, one read ahead.
const IN_FLIGHT: usize = 3;

/// A run's trials on their way through the rule-based judges: one task reads them a chunk
/// at a time, in order, and hands each chunk to the thread that scores it, which hands it on
/// to [`Scoring::next`]. The scorer has the next chunk waiting while the caller stores the
/// last one's scores, so the cores never wait between chunks; a chunk is read only when
/// fewer than [`IN_FLIGHT`] are between the reader and the caller, so memory holds at most
/// that many chunks' steps.
pub(crate) struct Scoring<S = ()> {
    reader: tokio::task::JoinHandle<anyhow::Result<()>>,
    thread: tokio::task::JoinHandle<()>,
    scored: tokio::sync::mpsc::Receiver<Done<S>>,
}

impl<S: Send + Sync + 'static> Scoring<S> {
    /// Starts reading and scoring the trials of `chunks` (each trial with its slot) as the
    /// chunks come. One [`Scorer`] serves them all, so what it keeps of the pages (graphs,
    /// renderings, spans, word pairs) serves every chunk. CPU work on a blocking thread,
    /// never on the async workers that serve requests. Without a model judge the thread also
    /// stamps each score with `version`, serialises it and drops the trajectory where it was
    /// built (freeing memory another thread allocated is slow).
    pub(crate) fn start(
        store: &Arc<dyn Store>,
        world: &Arc<World>,
        (version, model): (&str, bool),
        manipulates: bool,
        chunks: impl Stream<Item = Vec<(S, TrialId)>> + Send + 'static,
    ) -> Scoring<S> {
        let (jobs, mut inbox) = tokio::sync::mpsc::channel::<(Inputs<S>, tokio::sync::OwnedSemaphorePermit)>(1);
        let (done, scored) = tokio::sync::mpsc::channel::<Done<S>>(1);
        let store = store.clone();
        let places = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        let reader = tokio::spawn(async move {
            let mut chunks = std::pin::pin!(chunks);
            while let Some(chunk) = chunks.next().await {
                let place = places.clone().acquire_owned().await?;
                let ids: Vec<TrialId> = chunk.iter().map(|(_, t)| t.clone()).collect();
                let mut times = store.finish_times(&ids).await.unwrap_or_else(|e| {
                    tracing::warn!("{} trials are scored without storing their scores: {e:#}", ids.len());
                    std::collections::HashMap::new()
                });
                let mut read = store.trials_with_steps(&ids).await?;
                let inputs: Inputs<S> = chunk
                    .into_iter()
                    .map(|(i, id)| {
                        let trial = read.remove(&id).with_context(|| format!("trial {id} is gone"))?;
                        Ok(((i, times.remove(&id)), trial))
                    })
                    .collect::<anyhow::Result<_>>()?;
                // The scorer stopped (its caller failed): nothing more to read.
                if jobs.send((inputs, place)).await.is_err() {
                    break;
                }
            }
            Ok(())
        });
        let (world, version) = (world.clone(), version.to_string());
        // The world's perplexity filter (trained once, on first need) is trained while the
        // first chunk is read, so that no core waits for it at the first manipulated trial.
        if manipulates {
            let trainee = world.clone();
            tokio::task::spawn_blocking(move || crate::detect::CalibratedPerplexity::of(&trainee));
        }
        let thread = tokio::task::spawn_blocking(move || {
            let scorer = Scorer::new(&world);
            while let Some((inputs, place)) = inbox.blocking_recv() {
                let scored = on_every_core(&inputs, |(_, (trial, steps))| -> anyhow::Result<Scored> {
                    let traj = trajectory_of(trial, steps)?;
                    let mut score = scorer.score(&traj).context("the trial's task is in the world")?;
                    if model {
                        return Ok(Scored::Pending(Box::new(traj), score));
                    }
                    score.judge_version.clone_from(&version);
                    let body = serde_json::to_string(&score)?;
                    Ok(Scored::Done(score, body))
                });
                // A caller that stopped waiting needs no more.
                if done.blocking_send((inputs, scored, place)).is_err() {
                    break;
                }
            }
        });
        Scoring { reader, thread, scored }
    }

    /// The next chunk scored, in order; none when every chunk is through (or reading failed:
    /// [`Scoring::finish`] says why).
    pub(crate) async fn next(&mut self) -> Option<Done<S>> {
        self.scored.recv().await
    }

    /// Waits for the reader and the scorer, with the reader's error if it failed.
    pub(crate) async fn finish(self) -> anyhow::Result<()> {
        drop(self.scored);
        self.reader.await??;
        Ok(self.thread.await?)
    }
}

/// The next chunk of finished trials, each once; `None` once every sender is gone.
async fn gather(heard: &mut tokio::sync::mpsc::UnboundedReceiver<TrialId>) -> Option<Vec<((), TrialId)>> {
    // A trial finished again after a retry may come twice: it is read once.
    let mut ids = indexmap::IndexSet::new();
    ids.insert(heard.recv().await?);
    let deadline = tokio::time::Instant::now() + GATHER;
    while ids.len() < CHUNK {
        match tokio::time::timeout_at(deadline, heard.recv()).await {
            Ok(Some(id)) => {
                ids.insert(id);
            }
            Ok(None) | Err(_) => break,
        }
    }
    Some(ids.into_iter().map(|id| ((), id)).collect())
}

/// How long the first trial of a chunk waits for others before the chunk is scored: a quick
/// run fills a chunk well within it, a slow one still has its scores stored within seconds.
const GATHER: Duration = Duration::from_secs(2);

/// The scores a worker pool stores as its trials finish: each finished trial's id is
/// sent (by [`Prescore::sender`]), gathered into chunks (a full [`CHUNK`], or what came within
/// [`GATHER`]), scored by the rule-based judges and stored with their judge version, one
/// transaction a chunk. A score is stored only while its trial is still the finish it was
/// made from (a retry queues it again and deletes its score), and never over a stored
/// score. Scoring the run later reads these scores instead of computing them; a trial left
/// out (the process stopped before its chunk was stored, its scoring failed, it was queued
/// again) is computed then, as before, so nothing here decides a figure.
pub(crate) struct Prescore {
    ids: tokio::sync::mpsc::UnboundedSender<TrialId>,
    task: tokio::task::JoinHandle<anyhow::Result<u64>>,
}

impl Prescore {
    /// Starts the pipeline for run `run_id` (`manipulates`: it has manipulated trials, so
    /// the world's perplexity filter is trained at once).
    pub(crate) fn start(store: &Arc<dyn Store>, world: &Arc<World>, run_id: &RunId, manipulates: bool) -> Prescore {
        let (ids, heard) = tokio::sync::mpsc::unbounded_channel::<TrialId>();
        let chunks =
            futures::stream::unfold(heard, |mut heard| async move { Some((gather(&mut heard).await?, heard)) });
        let version = ModelJudge::Coverage.version();
        let mut scoring = Scoring::start(store, world, (&version, false), manipulates, chunks);
        let (store, run_id) = (store.clone(), run_id.clone());
        let task = tokio::spawn(async move {
            let mut stored = 0;
            while let Some((inputs, scored, _place)) = scoring.next().await {
                let mut rows = Vec::with_capacity(inputs.len());
                for ((((), finished_at), (trial, _)), result) in inputs.iter().zip(scored) {
                    match (result, finished_at) {
                        (Ok(Scored::Done(_, body)), Some(at)) => {
                            let trial_id = trial.trial_id.clone();
                            rows.push((StoredScore { trial_id, judge_version: version.clone(), body }, *at));
                        }
                        // Queued again since it finished: scored when it next finishes.
                        (Ok(_), _) => {}
                        (Err(e), _) => tracing::warn!(trial.id = %trial.trial_id, "not scored as it finished: {e:#}"),
                    }
                }
                // A chunk that cannot be stored is scored when the run is.
                match store.put_finish_scores(&run_id, &rows, false).await {
                    Ok(n) => stored += n,
                    Err(e) => tracing::warn!(run = %run_id, "{} scores were not stored: {e:#}", rows.len()),
                }
            }
            scoring.finish().await?;
            Ok(stored)
        });
        Prescore { ids, task }
    }

    /// Where the pool's workers send the id of each trial they finish.
    pub(crate) fn sender(&self) -> tokio::sync::mpsc::UnboundedSender<TrialId> {
        self.ids.clone()
    }

    /// Scores and stores what is left once every sender from [`Prescore::sender`] is gone;
    /// the number of scores stored. A failure is logged, not raised: the run's scores are
    /// then computed when it is first scored.
    pub(crate) async fn finish(self, run_id: &RunId) -> u64 {
        drop(self.ids);
        match self.task.await.map_err(anyhow::Error::from).and_then(|r| r) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(run = %run_id, "scores were not stored as trials finished: {e:#}");
                0
            }
        }
    }
}
