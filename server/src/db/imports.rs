//! Trials read from other harnesses: stored finished in batches (steps, end and the
//! harness's record of the sample in one transaction per batch), and that record read back.

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{Any, QueryBuilder};

use super::runs::{RunRow, TrialEnd};
use super::sql::{BULK_ROWS, finish, numbered};
use super::{SqlStore, StoreResult, TrialState, now_ms};
use vocab::{RunId, TrialId};

/// One imported trial, finished: its step bodies in order, how it ended, and its origin
/// (the harness's id of the sample, and its record as JSON), if it came from another harness.
pub struct FinishedTrial {
    pub trial_id: TrialId,
    pub steps: Vec<String>,
    pub end: TrialEnd,
    pub origin: Option<(String, String)>,
}

/// Imported trials.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Stores a batch of a run's queued trials as finished, in one transaction.
    async fn store_finished(&self, run_id: &RunId, batch: &[FinishedTrial]) -> StoreResult<()>;
    /// The harness's record of a trial, if it was imported from one.
    async fn origin(&self, trial_id: &TrialId) -> StoreResult<Option<String>>;
    /// The records of these trials, by trial.
    async fn origins_of(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, String>>;
    /// The trials of a run imported from these samples (harness ids), as (sample, trial).
    async fn trials_of_samples(&self, run_id: &RunId, samples: &[String]) -> StoreResult<Vec<(String, TrialId)>>;
    /// Active runs whose row nothing has written since `before` (ms): an importer writes the
    /// row with every batch it stores, so an imported run among them was left by a dead one.
    async fn idle_active_runs(&self, before: i64) -> StoreResult<Vec<RunRow>>;
    /// [`super::RunStore::cancel_run`] only if the run is still active and its row still unwritten
    /// since `before` (ms), checked in the same transaction; whether it was cancelled.
    async fn cancel_if_idle(&self, run_id: &RunId, before: i64) -> StoreResult<bool>;
    /// After a large write read alongside (an import scored as it is stored): SQLite's
    /// write-ahead log, which readers kept from starting over, is copied into the database
    /// and emptied, so the disk does not keep a second copy of what was written. Nothing on
    /// PostgreSQL.
    async fn shrink_journal(&self) -> StoreResult<()>;
}

#[async_trait]
impl ImportStore for SqlStore {
    async fn idle_active_runs(&self, before: i64) -> StoreResult<Vec<RunRow>> {
        Ok(sqlx::query_as(&format!(
            "select {} from run where status = 'active' and updated_at < $1 order by created_at, run_id",
            super::runs::RUN_COLUMNS
        ))
        .bind(before)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn shrink_journal(&self) -> StoreResult<()> {
        if !self.postgres {
            sqlx::query("pragma wal_checkpoint(truncate)").execute(&self.pool).await?;
        }
        Ok(())
    }

    async fn cancel_if_idle(&self, run_id: &RunId, before: i64) -> StoreResult<bool> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<bool> = async {
            let r = sqlx::query(
                "update run set status = 'cancelled', updated_at = $3 where run_id = $1 and status = 'active' and updated_at < $2",
            )
            .bind(run_id.as_str())
            .bind(before)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            if r.rows_affected() != 1 {
                return Ok(false);
            }
            super::runs::cancel_trials(&mut tx, run_id, now).await?;
            Ok(true)
        }
        .await;
        finish(tx, result).await
    }

    async fn store_finished(&self, run_id: &RunId, batch: &[FinishedTrial]) -> StoreResult<()> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<()> = async {
            // The run's row says when its importer last stored something: a row of an active
            // import left unwritten for long was left by an importer that died (see
            // `runs::import::settle_interrupted_imports`). Written first, as `cancel_run`
            // does, so that the two lock the run before its trials and never deadlock.
            sqlx::query("update run set updated_at = $2 where run_id = $1")
                .bind(run_id.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?;
            for t in batch {
                let (state, verdict, rationale, error, appeal) = match &t.end {
                    TrialEnd::Done { verdict, rationale, appeal } => {
                        (TrialState::Done, verdict.as_deref(), rationale.as_deref(), None, appeal.as_deref())
                    }
                    TrialEnd::Error(reason) => (TrialState::Error, None, None, Some(reason.as_str()), None),
                    TrialEnd::Cancelled => (TrialState::Cancelled, None, None, None, None),
                };
                let r = sqlx::query(
                    "update trial set state = $3, verdict = $4, rationale = $5, error = $6, appeal = $8, attempts = 1,
                            worker = 'import', started_at = $7, finished_at = $7, updated_at = $7
                      where trial_id = $1 and run_id = $2 and state = 'queued'",
                )
                .bind(t.trial_id.as_str())
                .bind(run_id.as_str())
                .bind(state.as_str())
                .bind(verdict)
                .bind(rationale)
                .bind(error)
                .bind(now)
                .bind(appeal)
                .execute(&mut *tx)
                .await?;
                if r.rows_affected() != 1 {
                    return Err(super::StoreError::Conflict(format!(
                        "trial {} of run {run_id} is not waiting to be imported",
                        t.trial_id
                    )));
                }
            }
            let steps: Vec<(&str, i64, &str)> = batch
                .iter()
                .flat_map(|t| (0_i64..).zip(&t.steps).map(move |(i, b)| (t.trial_id.as_str(), i, b.as_str())))
                .collect();
            for chunk in steps.chunks(BULK_ROWS) {
                let mut b: QueryBuilder<'_, Any> =
                    QueryBuilder::new("insert into trial_step (trial_id, t, body, created_at, updated_at) ");
                b.push_values(chunk, |mut row, (trial, i, body)| {
                    row.push_bind(*trial).push_bind(*i).push_bind(*body).push_bind(now).push_bind(now);
                });
                let (sql, args) = numbered(&mut b, self.postgres)?;
                sqlx::query_with(&sql, args).execute(&mut *tx).await?;
            }
            let origins: Vec<(&str, &str, &str)> = batch
                .iter()
                .filter_map(|t| {
                    t.origin.as_ref().map(|(sample, body)| (t.trial_id.as_str(), sample.as_str(), body.as_str()))
                })
                .collect();
            for chunk in origins.chunks(BULK_ROWS) {
                let mut b: QueryBuilder<'_, Any> =
                    QueryBuilder::new("insert into trial_origin (trial_id, run_id, sample, body) ");
                b.push_values(chunk, |mut row, (trial, sample, body)| {
                    row.push_bind(*trial).push_bind(run_id).push_bind(*sample).push_bind(*body);
                });
                let (sql, args) = numbered(&mut b, self.postgres)?;
                sqlx::query_with(&sql, args).execute(&mut *tx).await?;
            }
            Ok(())
        }
        .await;
        finish(tx, result).await
    }

    async fn origin(&self, trial_id: &TrialId) -> StoreResult<Option<String>> {
        Ok(sqlx::query_scalar("select body from trial_origin where trial_id = $1")
            .bind(trial_id.as_str())
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn origins_of(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, String>> {
        let mut out = HashMap::new();
        for chunk in trial_ids.chunks(BULK_ROWS) {
            let mut b: QueryBuilder<'_, Any> =
                QueryBuilder::new("select trial_id, body from trial_origin where trial_id in (");
            let mut list = b.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            b.push(")");
            let (sql, args) = numbered(&mut b, self.postgres)?;
            let rows: Vec<(TrialId, String)> = sqlx::query_as_with(&sql, args).fetch_all(&self.pool).await?;
            out.extend(rows);
        }
        Ok(out)
    }

    async fn trials_of_samples(&self, run_id: &RunId, samples: &[String]) -> StoreResult<Vec<(String, TrialId)>> {
        let mut out = Vec::new();
        for chunk in samples.chunks(BULK_ROWS) {
            let mut b: QueryBuilder<'_, Any> =
                QueryBuilder::new("select sample, trial_id from trial_origin where run_id = ");
            b.push_bind(run_id);
            b.push(" and sample in (");
            let mut list = b.separated(", ");
            for s in chunk {
                list.push_bind(s.as_str());
            }
            b.push(")");
            let (sql, args) = numbered(&mut b, self.postgres)?;
            out.extend(sqlx::query_as_with::<_, (String, TrialId), _>(&sql, args).fetch_all(&self.pool).await?);
        }
        Ok(out)
    }
}
