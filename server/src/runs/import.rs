//! Trajectories produced elsewhere, stored as a run: the dashboard then replays, scores and
//! compares them like its own (`mirage runs import FILE`).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use anyhow::{Context, bail};

use super::RunSpec;
use super::scoring::Prescore;
use crate::agent::{Action, Step};
use crate::db::RunStatus;
use crate::db::{FinishedTrial, NewTrial, Store, TrialEnd};
use crate::env::World;
use crate::judge::{Trajectory, read_trajectories};
use vocab::{RunId, TrialId};

/// A trajectory's steps as Mirage's own, numbered in order (`place` names the line). Every
/// line `mirage score` accepts is accepted: a step without an observation keeps none (the
/// scorer renders the page from the task), one without a thought has an empty one, one
/// without an action moved to the next step's page (the last one gave the trajectory's
/// verdict), and an action Mirage cannot replay is kept as a foreign tool call.
fn replayable_steps(t: &Trajectory, place: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        let mut value = serde_json::to_value(s)?;
        value["t"] = serde_json::json!(i);
        value["action"] = serde_json::to_value(action_of(t, i))?;
        let step: Step =
            serde_json::from_value(value).with_context(|| format!("{place}: steps[{i}] cannot be stored"))?;
        steps.push(step);
    }
    Ok(steps)
}

/// The action of step `i` of a trajectory, as Mirage stores it (see [`replayable_steps`]).
fn action_of(t: &Trajectory, i: usize) -> Action {
    match &t.steps[i].action {
        Some(v) => serde_json::from_value(v.clone())
            .ok()
            .or_else(|| crate::agent::protocol::read_action(&serde_json::json!({ "action": v })).ok().map(|(_, a)| a))
            .unwrap_or_else(|| Action::Tool {
                name: v.get("type").and_then(serde_json::Value::as_str).unwrap_or("unknown").to_string(),
                arguments: v.clone(),
            }),
        None => match (t.steps.get(i + 1), &t.verdict) {
            (Some(next), _) => Action::Goto { url: next.url.clone() },
            (None, Some(v)) => Action::Verdict { verdict: v.action.clone(), rationale: v.rationale.clone() },
            (None, None) => Action::Answer { text: String::new() },
        },
    }
}

/// How an imported trajectory ended: its error, or its verdict and appeal.
fn end_of(t: &Trajectory) -> TrialEnd {
    if t.status == "error" {
        TrialEnd::Error(t.error.clone().unwrap_or_else(|| "error (no reason given)".into()))
    } else {
        TrialEnd::Done {
            verdict: t.verdict.as_ref().map(|v| v.action.clone()),
            rationale: t.verdict.as_ref().map(|v| v.rationale.clone()),
            appeal: t.appeal.as_ref().map(ToString::to_string),
        }
    }
}

/// Reads a trajectory file (every line validated against the schema, problems named by file,
/// line and field), checks that its tasks are in the corpus, and stores it as a finished run.
/// Returns the run id and the number of trials.
pub async fn import_run(
    store: &Arc<dyn Store>,
    world: &Arc<World>,
    file: &str,
    contents: &str,
    (corpus_version, limits): (&str, crate::foreign::Limits),
) -> anyhow::Result<(RunId, usize)> {
    let lines = read_trajectories(file, contents).map_err(|errors| {
        let shown: Vec<String> = errors.iter().take(20).map(ToString::to_string).collect();
        anyhow::anyhow!("{file}: {} problems\n{}", errors.len(), shown.join("\n"))
    })?;
    if lines.is_empty() {
        bail!("{file}: no trajectories");
    }
    let mut seen = HashSet::new();
    let mut trials = Vec::new();
    let mut steps_of = Vec::new();
    for (line, t) in &lines {
        if world.task(&t.task_id).is_none() {
            bail!("{file}:{line}: task_id {:?} is not in the stored corpus (import the task first)", t.task_id);
        }
        let key = (t.task_id.clone(), t.agent.clone(), t.level.clone(), t.condition.clone(), t.seed);
        if !seen.insert(key) {
            bail!(
                "{file}:{line}: a second trajectory of task {} by {} at {} / {} / seed {}",
                t.task_id,
                t.agent,
                t.level,
                t.condition,
                t.seed
            );
        }
        let steps = replayable_steps(t, &format!("{file}:{line}"))?;
        limits.check_steps(&format!("{file}:{line}"), &steps)?;
        trials.push(NewTrial {
            task_id: t.task_id.clone(),
            agent: if t.agent.is_empty() { "imported".to_string() } else { t.agent.clone() },
            level: t.level.clone(),
            condition: t.condition.clone(),
            seed: t.seed,
        });
        steps_of.push((steps, end_of(t)));
    }
    let spec = imported_spec(&format!("imported from {file}"), "imported:mirage".to_string(), &trials);
    let run_id = super::new_run_id();
    store.create_run(&run_id, &serde_json::to_string(&spec)?, corpus_version, &trials).await?;
    let ids = store.trial_keys(&run_id).await?;
    // Every trajectory is of a Mirage task (checked above), so every trial is scored.
    let wanted = ids.iter().map(|k| k.trial_id.clone()).collect();
    let mut batches = Batches::new(store, &run_id, (world, wanted, spec.manipulates()));
    let stored: anyhow::Result<()> = async {
        if ids.len() != steps_of.len() {
            bail!("{} trials were stored for {} trajectories", ids.len(), steps_of.len());
        }
        for (key, (steps, end)) in ids.into_iter().zip(steps_of) {
            let steps = steps.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
            batches.push(FinishedTrial { trial_id: key.trial_id, steps, end, origin: None }).await?;
        }
        batches.flush().await
    }
    .await;
    batches.scored().await;
    settle(store.as_ref(), &run_id, stored, String::new()).await?;
    Ok((run_id, trials.len()))
}

/// At most this many trials are stored in one transaction, ...
pub(super) const BATCH: usize = 500;
/// ... and at most about this many bytes of steps, so that a file of large trajectories is
/// held a few at a time.
pub(super) const BATCH_BYTES: usize = 32 << 20;

/// Finished trials stored into an imported run a batch at a time (every batch one
/// transaction that also writes the run's row, so a run left by an interrupted import can
/// be told); both importers store through it. The stored trials of Mirage's own tasks are
/// scored as an executed run's are as they finish, so that the run's first scoring reads
/// their scores instead of computing them.
pub(super) struct Batches<'a> {
    store: &'a Arc<dyn Store>,
    run: &'a RunId,
    batch: Vec<FinishedTrial>,
    bytes: usize,
    /// Trials stored so far.
    pub stored: usize,
    /// The scoring pipeline, where each stored trial among the wanted ones is sent.
    scoring: Prescore,
    scored: tokio::sync::mpsc::UnboundedSender<TrialId>,
    wanted: HashSet<TrialId>,
}

impl<'a> Batches<'a> {
    /// Stores into `run`, scoring the trials of `wanted` (those of tasks in `world`) once
    /// they are stored (`manipulates`: the run has manipulated trials).
    pub(super) fn new(
        store: &'a Arc<dyn Store>,
        run: &'a RunId,
        (world, wanted, manipulates): (&Arc<World>, HashSet<TrialId>, bool),
    ) -> Batches<'a> {
        let scoring = Prescore::start(store, world, run, manipulates);
        let scored = scoring.sender();
        Batches { store, run, batch: Vec::new(), bytes: 0, stored: 0, scoring, scored, wanted }
    }

    /// Adds a trial, storing the batch when it is full.
    pub(super) async fn push(&mut self, trial: FinishedTrial) -> anyhow::Result<()> {
        self.bytes += trial.steps.iter().map(String::len).sum::<usize>();
        self.batch.push(trial);
        if self.batch.len() == BATCH || self.bytes >= BATCH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// Stores what is left.
    pub(super) async fn flush(&mut self) -> anyhow::Result<()> {
        if !self.batch.is_empty() {
            self.store.store_finished(self.run, &self.batch).await?;
            self.stored += self.batch.len();
            for t in self.batch.iter().filter(|t| self.wanted.contains(&t.trial_id)) {
                // The pipeline stopped (its failure is logged): the run is scored when shown.
                let _ = self.scored.send(t.trial_id.clone());
            }
            self.batch.clear();
            self.bytes = 0;
        }
        Ok(())
    }

    /// Waits until the stored trials sent to be scored are scored and their scores stored
    /// (a failure is logged: those trials are then scored when the run is); the number of
    /// trials stored.
    pub(super) async fn scored(self) -> usize {
        drop(self.scored);
        self.scoring.finish(self.run).await;
        self.stored
    }
}

/// Ends an import: the run is done when every trial was stored, else cancelled with what
/// was stored (the files changed between readings, the database failed, or the run was
/// cancelled meanwhile), its trials never stored cancelled too, and the error says so.
pub(super) async fn settle(
    store: &dyn Store,
    run: &RunId,
    outcome: anyhow::Result<()>,
    what: String,
) -> anyhow::Result<()> {
    if let Err(e) = store.shrink_journal().await {
        tracing::warn!("the database's journal was not shrunk after the import: {e:#}");
    }
    if let Err(e) = outcome {
        store.cancel_run(run).await?;
        return Err(e.context(format!("run {run} was left cancelled{what}")));
    }
    store.set_run_status(run, RunStatus::Done).await?;
    Ok(())
}

/// The spec of an imported run: its name and origin, and the agents, levels, conditions and
/// seeds of its planned trials.
pub(super) fn imported_spec(name: &str, origin: String, planned: &[NewTrial]) -> RunSpec {
    let set =
        |f: &dyn Fn(&NewTrial) -> &str| planned.iter().map(f).collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>();
    RunSpec {
        origin: Some(origin),
        ..RunSpec::basic(
            name,
            &set(&|t| &t.agent),
            &set(&|t| t.level.as_str()),
            &set(&|t| t.condition.as_str()),
            planned.iter().map(|t| t.seed).collect::<BTreeSet<_>>().into_iter().collect(),
        )
    }
}

/// How long an import may store nothing before its run counts as left by an interrupted
/// import: an importer stores a batch (at most 500 trials or 32 MiB of steps) every few
/// seconds.
pub const IMPORT_IDLE_MS: i64 = 10 * 60 * 1000;

/// Cancels every imported run that is still active but that no importer has written for
/// [`IMPORT_IDLE_MS`]: its importer was killed, so the run would otherwise stay active and
/// half-stored for ever. Its stored trials stay, the rest are cancelled, and the run says
/// cancelled; importing the files again gives a whole run. Returns the runs so settled.
pub async fn settle_interrupted_imports(store: &dyn Store, now: i64) -> anyhow::Result<Vec<RunId>> {
    let mut settled = Vec::new();
    let before = now - IMPORT_IDLE_MS;
    for run in store.idle_active_runs(before).await? {
        // Checked again as it is cancelled: an import that stored a batch, or finished, since
        // the list was read keeps its run.
        // A run whose spec does not read is not taken for an import: it is named where the
        // server resumes runs and where a worker meets it, and left as it is.
        if super::RunKind::of(&run).is_ok_and(|k| !k.is_executed()) && store.cancel_if_idle(&run.run_id, before).await?
        {
            tracing::warn!(
                run = %run.run_id,
                "an import stopped before it finished (nothing stored for 10 minutes): the run is cancelled; import its files again"
            );
            settled.push(run.run_id);
        }
    }
    Ok(settled)
}
