//! Leases on running trials: a worker claims a queued trial until a deadline, renews it
//! while it works, gives it back when it stops early, and expired ones return to the queue.

use async_trait::async_trait;

use super::runs::{BACKOFF_MS, MAX_ATTEMPTS, TRIAL_COLUMNS, TrialEnd, TrialRow, finish_query};
use super::sql::finish;
use super::{SqlStore, StoreResult, now_ms};
use vocab::{RunId, TrialId};

/// The agents whose trials a claim takes: Mirage executes every trial but those of outside
/// agents (`external:NAME`), which episodes hand out over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Trials a worker of this process runs.
    Executed,
    /// Trials of outside agents, for an episode.
    External,
    /// Any trial (an import stores trials of any name).
    Any,
}

impl Claim {
    fn condition(self) -> &'static str {
        match self {
            Claim::Executed => "and agent not like 'external:%'",
            Claim::External => "and agent like 'external:%'",
            Claim::Any => "",
        }
    }
}

/// Claims, heartbeats, releases and expiry of trial leases.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Claims the next queued trial of the run (of the kind `which` takes) for `worker`
    /// until `lease_until` (ms), in one short statement. `None` when nothing is queued.
    async fn claim_trial_of(
        &self,
        run_id: &RunId,
        worker: &str,
        lease_until: i64,
        which: Claim,
    ) -> StoreResult<Option<TrialRow>>;
    /// [`LeaseStore::claim_trial_of`] for a worker: the next trial Mirage executes.
    async fn claim_trial(&self, run_id: &RunId, worker: &str, lease_until: i64) -> StoreResult<Option<TrialRow>> {
        self.claim_trial_of(run_id, worker, lease_until, Claim::Executed).await
    }
    /// Finalises a running trial held by `worker` with all its steps at once (JSON bodies, in
    /// order), in one transaction: steps stored for the trial before are replaced. `false`
    /// (and nothing written) when it was not running under this worker.
    async fn finish_with_steps(
        &self,
        trial_id: &TrialId,
        worker: &str,
        steps: &[String],
        end: &TrialEnd,
    ) -> StoreResult<bool>;
    /// Extends the lease; `false` when the trial is no longer this worker's.
    async fn heartbeat(&self, trial_id: &TrialId, worker: &str, lease_until: i64) -> StoreResult<bool>;
    /// Puts running trials whose lease expired before `now` back in the queue, claimable
    /// again after a backoff of [`BACKOFF_MS`] × attempts; a trial that has had
    /// [`MAX_ATTEMPTS`] attempts ends in `error` with the reason instead. Returns how many
    /// trials changed.
    async fn requeue_expired(&self, run_id: &RunId, now: i64) -> StoreResult<u64>;
    /// Gives a running trial held by `worker` back to the queue at once (the worker is
    /// stopping): its persisted steps stay, and the attempt is not counted. `false` when it
    /// was not running under this worker.
    async fn release_trial(&self, trial_id: &TrialId, worker: &str) -> StoreResult<bool>;
    /// Puts every trial of the run that ended in error back in the queue (its persisted steps
    /// kept, its attempts and reason cleared) and makes a finished run active again. Returns
    /// how many trials changed.
    async fn retry_errors(&self, run_id: &RunId) -> StoreResult<u64>;
}

#[async_trait]
impl LeaseStore for SqlStore {
    async fn claim_trial_of(
        &self,
        run_id: &RunId,
        worker: &str,
        lease_until: i64,
        which: Claim,
    ) -> StoreResult<Option<TrialRow>> {
        // One short statement; nothing is held while the trial runs. PostgreSQL skips rows
        // another worker is claiming at the same moment; SQLite serialises writers anyway.
        let lock = if self.postgres { "for update skip locked" } else { "" };
        let sql = format!(
            "update trial set state = 'running', attempts = attempts + 1, lease_until = $3, worker = $2,
                    started_at = coalesce(started_at, $4), updated_at = $4
              where trial_id = (select trial_id from trial where run_id = $1 and state = 'queued' {which}
                                  and (run_after is null or run_after <= $4) order by ordinal limit 1 {lock})
                and state = 'queued'
             returning {TRIAL_COLUMNS}",
            which = which.condition()
        );
        Ok(sqlx::query_as(&sql)
            .bind(run_id.as_str())
            .bind(worker)
            .bind(lease_until)
            .bind(now_ms())
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn finish_with_steps(
        &self,
        trial_id: &TrialId,
        worker: &str,
        steps: &[String],
        end: &TrialEnd,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<bool> = async {
            if finish_query(trial_id, worker, end).execute(&mut *tx).await?.rows_affected() != 1 {
                return Ok(false);
            }
            sqlx::query("delete from trial_step where trial_id = $1").bind(trial_id.as_str()).execute(&mut *tx).await?;
            let now = now_ms();
            for (t, body) in steps.iter().enumerate() {
                sqlx::query(
                    "insert into trial_step (trial_id, t, body, created_at, updated_at) values ($1, $2, $3, $4, $4)",
                )
                .bind(trial_id.as_str())
                .bind(i64::try_from(t).unwrap_or(i64::MAX))
                .bind(body)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            Ok(true)
        }
        .await;
        finish(tx, result).await
    }

    async fn heartbeat(&self, trial_id: &TrialId, worker: &str, lease_until: i64) -> StoreResult<bool> {
        let r = sqlx::query("update trial set lease_until = $3, updated_at = $4 where trial_id = $1 and worker = $2 and state = 'running'")
            .bind(trial_id.as_str())
            .bind(worker)
            .bind(lease_until)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn requeue_expired(&self, run_id: &RunId, now: i64) -> StoreResult<u64> {
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<u64> = async {
            let given_up = sqlx::query(
                "update trial set state = 'error', error = $3, worker = null, lease_until = null,
                        finished_at = $2, updated_at = $2
                  where run_id = $1 and state = 'running' and lease_until < $2 and attempts >= $4",
            )
            .bind(run_id.as_str())
            .bind(now)
            .bind(format!(
                "gave up after {MAX_ATTEMPTS} attempts: the lease expired each time (the worker died or hung)"
            ))
            .bind(MAX_ATTEMPTS)
            .execute(&mut *tx)
            .await?;
            let requeued = sqlx::query(
                "update trial set state = 'queued', worker = null, lease_until = null,
                        run_after = $2 + $3 * attempts, updated_at = $2
                  where run_id = $1 and state = 'running' and lease_until < $2",
            )
            .bind(run_id.as_str())
            .bind(now)
            .bind(BACKOFF_MS)
            .execute(&mut *tx)
            .await?;
            Ok(given_up.rows_affected() + requeued.rows_affected())
        }
        .await;
        finish(tx, result).await
    }

    async fn release_trial(&self, trial_id: &TrialId, worker: &str) -> StoreResult<bool> {
        let r = sqlx::query(
            "update trial set state = 'queued', worker = null, lease_until = null, run_after = null,
                    attempts = case when attempts > 0 then attempts - 1 else 0 end, updated_at = $3
              where trial_id = $1 and worker = $2 and state = 'running'",
        )
        .bind(trial_id.as_str())
        .bind(worker)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn retry_errors(&self, run_id: &RunId) -> StoreResult<u64> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<u64> = async {
            // The failed attempt's stored score would otherwise stand for the retry.
            sqlx::query(
                "delete from trial_score where trial_id in (select trial_id from trial where run_id = $1 and state = 'error')",
            )
            .bind(run_id.as_str())
            .execute(&mut *tx)
            .await?;
            let n = sqlx::query(
                "update trial set state = 'queued', error = null, worker = null, lease_until = null, run_after = null,
                        attempts = 0, finished_at = null, updated_at = $2
                  where run_id = $1 and state = 'error'",
            )
            .bind(run_id.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n > 0 {
                sqlx::query("update run set status = 'active', updated_at = $2 where run_id = $1 and status = 'done'")
                    .bind(run_id.as_str())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(n)
        }
        .await;
        finish(tx, result).await
    }
}
