//! The compare port: two runs or configurations trial by trial, from the runs' cached
//! scores (see `judge::compare`).

use app::error::AppError;
use app::model::{Comparison, RunId};

use super::insights::InsightsService;
use crate::judge::TrialScore;

/// Trials of a run (of one configuration of it) that are not finished: queued, running or
/// cancelled. A comparison reads finished trials only and says how many it left out.
pub async fn unfinished(
    store: &dyn crate::db::Store,
    run: &app::model::RunId,
    config: Option<&str>,
) -> anyhow::Result<usize> {
    Ok(store
        .trials(run)
        .await?
        .iter()
        .filter(|t| config.is_none_or(|c| t.agent == c) && !t.state.is_finished())
        .count())
}

#[async_trait::async_trait]
impl app::ssr::Compare for InsightsService {
    async fn compare(&self, a: String, b: String, as_of: Option<String>) -> Result<Comparison, AppError> {
        let invalid = |field: &str, message: String| AppError::Invalid { field: field.into(), message };
        let split = |side: &str| {
            let side = side.trim().to_string();
            match side.split_once(':') {
                Some((run, config)) => (RunId::from(run), Some(config.to_string()), side.clone()),
                None => (RunId::from(&side), None, side),
            }
        };
        let (sides, mut scores) = ([split(&a), split(&b)], Vec::new());
        let mut keys = Vec::new();
        for ((run, config, name), field) in sides.iter().zip(["a", "b"]) {
            if run.is_empty() {
                return Err(invalid(field, "name a run (RUN) or a configuration of one (RUN:CONFIG)".into()));
            }
            self.store.run(run).await?;
            let key = self.fingerprint_as_of(run, as_of.as_deref()).await?;
            keys.push((run.clone(), key));
            let all = self.scores_at(run, key).await?;
            let chosen: Vec<TrialScore> = match config {
                Some(c) if !all.iter().any(|s| &s.agent == c) => {
                    return Err(invalid(field, format!("{name}: run {run} has no configuration {c:?}")));
                }
                Some(c) => all.iter().filter(|s| &s.agent == c).cloned().collect(),
                None => all.to_vec(),
            };
            scores.push(chosen);
        }
        let with_agent = sides.iter().all(|(_, c, _)| c.is_none());
        let names = (sides[0].2.clone(), sides[1].2.clone());
        let mut left_out = Vec::new();
        for (run, config, _) in &sides {
            left_out.push(unfinished(self.store.as_ref(), run, config.as_deref()).await.map_err(super::fail)?);
        }
        let mut c = tokio::task::spawn_blocking(move || {
            let (ra, rb): (Vec<&TrialScore>, Vec<&TrialScore>) =
                (scores[0].iter().collect(), scores[1].iter().collect());
            crate::judge::compare::compare((&names.0, &ra), (&names.1, &rb), with_agent).map_err(|e| {
                let field = match e.side {
                    crate::judge::compare::Side::A => "a",
                    crate::judge::compare::Side::B => "b",
                };
                invalid(field, e.message)
            })
        })
        .await
        .map_err(super::fail)??;
        (c.unfinished_a, c.unfinished_b) = (left_out[0], left_out[1]);
        // Both sides read one generation (a time names the same one for both).
        let mut runs: Vec<&RunId> = keys.iter().map(|(r, _)| r).collect();
        runs.dedup();
        c.frozen = self.as_of_view(&runs, keys[0].1).await?;
        Ok(c)
    }
}
