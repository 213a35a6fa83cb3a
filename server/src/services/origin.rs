//! The trajectory page's account of an imported trial: what its harness said about the
//! sample, and links to the trials of the trajectories it delegated to (or was delegated
//! by) in the same run.

use app::error::AppError;
use app::model::{OriginView, RunId, TrialId};
use serde_json::Value;

use super::fail;
use crate::db::Store;
use crate::foreign::Origin;

/// The harness's record of a trial, if it was imported from one.
pub async fn origin_of(store: &dyn Store, trial_id: &TrialId) -> Result<Option<Origin>, AppError> {
    store.origin(trial_id).await.map_err(fail)?.map(|b| serde_json::from_str(&b).map_err(fail)).transpose()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The page's view of an origin; `run` finds the trials of related samples.
pub async fn view_of(store: &dyn Store, run_id: &RunId, o: &Origin) -> Result<OriginView, AppError> {
    // The trials of related samples, found by the harness's sample id (a sample mapped to a
    // Mirage task is stored under that task's id).
    let related: Vec<String> = o.parent.iter().chain(&o.subagents).cloned().collect();
    let samples =
        if related.is_empty() { Vec::new() } else { store.trials_of_samples(run_id, &related).await.map_err(fail)? };
    let trial_of = |sample: &str| samples.iter().find(|(s, _)| s == sample).map(|(_, t)| t.clone());
    Ok(OriginView {
        harness: o.harness.label().to_string(),
        file: o.file.clone(),
        sample: o.sample.clone(),
        task: o.task.clone(),
        model: o.model.clone(),
        input: o.input.clone(),
        target: o.target.clone(),
        answer: o.answer.clone(),
        scores: o
            .scores
            .iter()
            .map(|s| (s.name.clone(), text(&s.value), s.answer.clone(), s.explanation.clone()))
            .collect(),
        tokens: o.tokens.map(|t| format!("{} in, {} out ({} total)", t.input, t.output, t.total)),
        timings: o.timings.iter().map(|(k, v)| (k.clone(), format!("{v:.2} s"))).collect(),
        metadata: o.metadata.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        error: o.error.clone(),
        metrics_apply: o.mapped.is_some(),
        attack: o.attack.as_ref().map(|a| (a.kind.clone(), a.goal.clone(), a.success)),
        parent: o.parent.as_ref().map(|p| (p.clone(), trial_of(p))),
        subagents: o.subagents.iter().map(|s| (s.clone(), trial_of(s))).collect(),
    })
}
