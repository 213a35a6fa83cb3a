//! Trajectories produced elsewhere, stored as a run: the dashboard then replays, scores and
//! compares them like its own (`mirage runs import FILE`).

use std::collections::{BTreeSet, HashSet};

use anyhow::{Context, bail};

use super::RunSpec;
use crate::agent::{Action, Step};
use crate::db::RunStatus;
use crate::db::{FinishedTrial, NewTrial, Store, TrialEnd};
use crate::env::World;
use crate::judge::{Trajectory, read_trajectories};
use vocab::RunId;

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
    store: &dyn Store,
    world: &World,
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
    let set =
        |f: &dyn Fn(&NewTrial) -> &str| trials.iter().map(f).collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>();
    let spec = RunSpec::basic(
        &format!("imported from {file}"),
        &set(&|t| &t.agent),
        &set(&|t| &t.level),
        &set(&|t| &t.condition),
        trials.iter().map(|t| t.seed).collect::<BTreeSet<_>>().into_iter().collect(),
    );
    let spec = RunSpec { origin: Some("imported:mirage".to_string()), ..spec };
    let run_id = super::new_run_id();
    store.create_run(&run_id, &serde_json::to_string(&spec)?, corpus_version, &trials).await?;
    // Stored a batch at a time, like other harnesses' files: every batch in one transaction,
    // each writing the run's row, so a run left by an interrupted import can be told.
    let ids = store.trial_keys(&run_id).await?;
    if ids.len() != steps_of.len() {
        bail!("run {run_id}: {} trials were stored for {} trajectories", ids.len(), steps_of.len());
    }
    let stored: anyhow::Result<()> = async {
        let mut batch = Vec::new();
        let mut bytes = 0;
        for (key, (steps, end)) in ids.into_iter().zip(steps_of) {
            let steps = steps.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
            bytes += steps.iter().map(String::len).sum::<usize>();
            batch.push(FinishedTrial { trial_id: key.trial_id, steps, end, origin: None });
            if batch.len() == super::harness::BATCH || bytes >= super::harness::BATCH_BYTES {
                store.store_finished(&run_id, &batch).await?;
                batch.clear();
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            store.store_finished(&run_id, &batch).await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = stored {
        // The database failed, or the run was cancelled meanwhile: what was stored stays,
        // under a run that says it is not whole.
        store.set_run_status(&run_id, RunStatus::Cancelled).await?;
        return Err(e.context(format!("run {run_id} was left cancelled")));
    }
    store.set_run_status(&run_id, RunStatus::Done).await?;
    Ok((run_id, trials.len()))
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
        if super::is_import(&run.spec) && store.cancel_if_idle(&run.run_id, before).await? {
            tracing::warn!(
                run = %run.run_id,
                "an import stopped before it finished (nothing stored for 10 minutes): the run is cancelled; import its files again"
            );
            settled.push(run.run_id);
        }
    }
    Ok(settled)
}
