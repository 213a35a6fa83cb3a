//! Counterfactual replays of trials: each a child of the trial it branches from, with its
//! own steps and outcome.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::sql::is_unique_violation;
use super::{SqlStore, StoreError, StoreResult, now_ms};
use vocab::{RunId, TrialId};

/// A counterfactual replay of a trial (see `runs::replay`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ReplayRow {
    pub replay_id: String,
    /// The trial it branches from.
    pub trial_id: TrialId,
    pub from_turn: i64,
    /// `strip-spans`, `clean-level`, `reveal-evidence` or `condition:NAME`.
    pub intervention: String,
    pub sample: i64,
    /// Running, done or error (a replay is never queued or cancelled).
    #[sqlx(try_from = "String")]
    pub state: vocab::TrialState,
    pub verdict: Option<String>,
    pub rationale: Option<String>,
    pub error: Option<String>,
    /// The replay's steps as a JSON array (the original's up to `from_turn`, then its own).
    pub steps: String,
    pub created_at: i64,
}

const REPLAY_COLUMNS: &str =
    "replay_id, trial_id, from_turn, intervention, sample, state, verdict, rationale, error, steps, created_at";

/// Storage of replays.
#[async_trait]
pub trait ReplayStore: Send + Sync {
    /// Stores a replay (its state `running`, no steps yet); `Conflict` when the id exists.
    async fn create_replay(&self, replay: &ReplayRow) -> StoreResult<()>;
    /// Records how a replay ended: its state, verdict, rationale, error and steps.
    async fn finish_replay(&self, replay: &ReplayRow) -> StoreResult<()>;
    /// The replays of a trial, oldest first.
    async fn replays_of(&self, trial_id: &TrialId) -> StoreResult<Vec<ReplayRow>>;
    /// The replays of every trial of a run, oldest first.
    async fn replays_in_run(&self, run_id: &RunId) -> StoreResult<Vec<ReplayRow>>;
}

#[async_trait]
impl ReplayStore for SqlStore {
    async fn create_replay(&self, r: &ReplayRow) -> StoreResult<()> {
        let done = sqlx::query(
            "insert into replay (replay_id, trial_id, from_turn, intervention, sample, state, steps, created_at) \
             values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&r.replay_id)
        .bind(&r.trial_id)
        .bind(r.from_turn)
        .bind(&r.intervention)
        .bind(r.sample)
        .bind(r.state.as_str())
        .bind(&r.steps)
        .bind(r.created_at)
        .execute(&self.pool)
        .await;
        match done {
            Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict(format!("replay {} exists", r.replay_id))),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }

    async fn finish_replay(&self, r: &ReplayRow) -> StoreResult<()> {
        sqlx::query(
            "update replay set state = $2, verdict = $3, rationale = $4, error = $5, steps = $6, finished_at = $7 \
             where replay_id = $1",
        )
        .bind(&r.replay_id)
        .bind(r.state.as_str())
        .bind(r.verdict.as_deref())
        .bind(r.rationale.as_deref())
        .bind(r.error.as_deref())
        .bind(&r.steps)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn replays_of(&self, trial_id: &TrialId) -> StoreResult<Vec<ReplayRow>> {
        Ok(sqlx::query_as(&format!(
            "select {REPLAY_COLUMNS} from replay where trial_id = $1 order by created_at, replay_id"
        ))
        .bind(trial_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn replays_in_run(&self, run_id: &RunId) -> StoreResult<Vec<ReplayRow>> {
        let columns = REPLAY_COLUMNS.split(", ").map(|c| format!("r.{c}")).collect::<Vec<_>>().join(", ");
        Ok(sqlx::query_as(&format!(
            "select {columns} from replay r join trial t on t.trial_id = r.trial_id \
             where t.run_id = $1 order by r.created_at, r.replay_id"
        ))
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }
}
