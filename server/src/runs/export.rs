//! Trajectory lines (schemas/trajectory.schema.json) for every finished trial of a run.

use serde_json::Value;

use crate::agent::Step;
use crate::db::TrialState;
use crate::db::{Store, TrialRow};
use crate::judge::{TrajStep, TrajVerdict, Trajectory};
use vocab::{RunId, TrialId};

/// A stored step as a trajectory line's step: the step's own encoding (what it leaves out
/// when empty included) without its turn number, which the line's order carries.
fn step_line(step: &Step) -> serde_json::Result<Value> {
    let mut line = serde_json::to_value(step)?;
    if let Some(fields) = line.as_object_mut() {
        fields.remove("t");
    }
    Ok(line)
}

/// A finished trial (done or error) as a trajectory with these steps: the one place a
/// trial's fields become a trajectory's.
fn trajectory_with(trial: &TrialRow, steps: Vec<TrajStep>) -> Trajectory {
    Trajectory {
        trial_id: trial.trial_id.to_string(),
        task_id: trial.task_id.clone(),
        agent: trial.agent.clone(),
        level: trial.level.clone(),
        condition: trial.condition.clone(),
        seed: trial.seed,
        steps,
        verdict: trial
            .verdict
            .as_ref()
            .map(|v| TrajVerdict { action: v.clone(), rationale: trial.rationale.clone().unwrap_or_default() }),
        appeal: trial.appeal.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
        status: if trial.state == TrialState::Error { "error" } else { "done" }.to_string(),
        error: trial.error.clone(),
        // Mirage marks manipulated spans in every observation: a step without `spans` showed
        // none (it was clean, or a defense withheld the text).
        extra: serde_json::Map::from_iter([("spans_marked".to_string(), Value::Bool(true))]),
    }
}

/// One trajectory line for a finished trial with its stored steps.
pub fn trajectory_line(trial: &TrialRow, steps: &[Step]) -> anyhow::Result<Value> {
    let mut line = serde_json::to_value(trajectory_with(trial, Vec::new()))?;
    line["steps"] = Value::Array(steps.iter().map(step_line).collect::<serde_json::Result<_>>()?);
    Ok(line)
}

/// A finished trial with its steps as the scorer reads it: its [`trajectory_line`], read back.
pub fn trajectory(trial: &TrialRow, steps: &[Step]) -> anyhow::Result<Trajectory> {
    Ok(serde_json::from_value(trajectory_line(trial, steps)?)?)
}

/// The trajectory of a finished trial read straight from its stored step bodies: what
/// [`trajectory`] gives (a step's `t` aside), without the detour through a JSON value of
/// every step.
pub fn trajectory_of(trial: &TrialRow, steps: &str) -> anyhow::Result<Trajectory> {
    let steps = crate::db::split_steps(steps)
        .map(|b| {
            let mut step: TrajStep = serde_json::from_str(b)
                .map_err(|e| anyhow::anyhow!("trial {}: a stored step does not parse: {e}", trial.trial_id))?;
            step.extra.remove("t");
            Ok(step)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(trajectory_with(trial, steps))
}

/// What [`each_finished`] hands on: a finished trial, its steps and its harness record.
type EachFinished<'a> = dyn FnMut(&TrialRow, &[Step], Option<crate::foreign::Origin>) -> anyhow::Result<()> + 'a;

/// Hands every finished trial of a run to `each` with its steps (and, when `origins`, its
/// harness record), in plan order, reading a chunk of trials at a time: memory stays bounded
/// whatever the run's size. Returns the number of trials left out because they have not
/// finished (queued, running or cancelled).
async fn each_finished(
    store: &dyn Store,
    run_id: &RunId,
    origins: bool,
    each: &mut EachFinished<'_>,
) -> anyhow::Result<usize> {
    super::RunKind::load(store, run_id).await?.agent_only(run_id)?;
    let keys = store.trial_keys(run_id).await?;
    let finished: Vec<TrialId> = keys.iter().filter(|k| k.state.is_finished()).map(|k| k.trial_id.clone()).collect();
    for ids in finished.chunks(super::CHUNK) {
        let mut trials = store.trials_with_steps(ids).await?;
        let mut records = if origins { store.origins_of(ids).await? } else { std::collections::HashMap::new() };
        for id in ids {
            // A trial removed since the keys were read has nothing to hand on.
            let Some((trial, steps)) = trials.remove(id) else { continue };
            use anyhow::Context;
            let steps = parse_steps(crate::db::split_steps(&steps))
                .with_context(|| format!("trial {id}: a stored step does not read"))?;
            let origin = records
                .remove(id)
                .map(|b| serde_json::from_str(&b))
                .transpose()
                .with_context(|| format!("trial {id}: its stored origin does not read"))?;
            each(&trial, &steps, origin)?;
        }
    }
    Ok(keys.len() - finished.len())
}

/// Writes every finished trial of the run to `out` as JSON Lines, in plan order. Returns the
/// number of trials left out because they have not finished.
pub async fn export_run(store: &dyn Store, run_id: &RunId, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
    let left = each_finished(store, run_id, false, &mut |trial, steps, _| {
        serde_json::to_writer(&mut *out, &trajectory_line(trial, steps)?)?;
        out.write_all(b"\n")?;
        Ok(())
    })
    .await?;
    out.flush()?;
    Ok(left)
}

/// [`export_run`] into a file, written beside it first and renamed into place once whole.
pub async fn export_run_to(store: &dyn Store, run_id: &RunId, path: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let file = std::fs::File::create(&partial).with_context(|| format!("writing {}", partial.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    let result = export_run(store, run_id, &mut writer).await;
    drop(writer);
    match result {
        Ok(n) => {
            std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
            Ok(n)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            // A failed write is the file's fault; anything else (a run or trial that does
            // not read) already names itself, and nothing was written.
            let io = |c: &(dyn std::error::Error + 'static)| {
                c.is::<std::io::Error>() || c.downcast_ref::<serde_json::Error>().is_some_and(serde_json::Error::is_io)
            };
            if e.chain().any(io) {
                Err(e.context(format!("writing {}", path.display())))
            } else {
                Err(e.context(format!("nothing written to {}", path.display())))
            }
        }
    }
}

/// Hands the ATIF trajectory of every finished trial of a run to `each`, in plan order.
async fn each_atif(
    store: &dyn Store,
    run_id: &RunId,
    each: &mut dyn FnMut(&TrialRow, Value) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    each_finished(store, run_id, true, &mut |trial, steps, origin| {
        each(trial, crate::foreign::atif::trajectory_of(trial, steps, origin.as_ref()))
    })
    .await
}

/// Writes every finished trial of a run as ATIF, one trajectory per line.
pub async fn write_atif(store: &dyn Store, run_id: &RunId, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
    let left = each_atif(store, run_id, &mut |_, v| {
        serde_json::to_writer(&mut *out, &v)?;
        out.write_all(b"\n")?;
        Ok(())
    })
    .await?;
    out.flush()?;
    Ok(left)
}

/// Writes every finished trial of a run as an ATIF file `<trial id>.json` in `dir` (made if
/// missing); each file is written beside its name first and renamed once whole.
pub async fn write_atif_dir(store: &dyn Store, run_id: &RunId, dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    each_atif(store, run_id, &mut |trial, v| {
        let path = dir.join(format!("{}.json", trial.trial_id));
        let partial = dir.join(format!("{}.json.partial", trial.trial_id));
        std::fs::write(&partial, serde_json::to_vec_pretty(&v)?)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))
    })
    .await
}

/// Decodes stored step bodies.
pub fn parse_steps<S: AsRef<str>>(bodies: impl IntoIterator<Item = S>) -> anyhow::Result<Vec<Step>> {
    bodies.into_iter().map(|b| serde_json::from_str(b.as_ref()).map_err(anyhow::Error::from)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Action;

    #[test]
    fn a_trial_reads_the_same_from_its_steps_and_from_their_stored_bodies() {
        let trial = TrialRow {
            trial_id: "t1".into(),
            run_id: "run-1".into(),
            ordinal: 0,
            task_id: "shop-example-01".into(),
            agent: "explorer".into(),
            level: "L1".into(),
            condition: "hint".into(),
            seed: 3,
            state: TrialState::Done,
            attempts: 1,
            worker: None,
            verdict: Some("refund".into()),
            rationale: Some("the order arrived damaged".into()),
            error: None,
            appeal: Some(r#"{"kept": true}"#.into()),
        };
        let step = |t: usize, url: &str, observation: &str, action: Action| Step {
            t,
            url: url.into(),
            status: Some(200),
            observation: observation.into(),
            thought: format!("turn {t}"),
            action,
            usage: None,
            latency_ms: 12,
            spans: Vec::new(),
        };
        let steps = [
            step(0, "/shop/admin", "Orders", Action::Goto { url: "/shop/admin/orders/7".into() }),
            step(1, "/shop/admin/orders/7", "", Action::Verdict { verdict: "refund".into(), rationale: "ok".into() }),
        ];
        let bodies: Vec<String> = steps.iter().map(|s| serde_json::to_string(s).expect("body")).collect();
        let stored = trajectory_of(&trial, &bodies.join("\u{1e}")).expect("from bodies");
        assert_eq!(stored, trajectory(&trial, &steps).expect("from steps"));
        let line = trajectory_line(&trial, &steps).expect("line");
        assert!(crate::judge::schema_valid(&line), "{line}");
        assert_eq!((line["spans_marked"].as_bool(), line["verdict"]["action"].as_str()), (Some(true), Some("refund")));
    }
}
