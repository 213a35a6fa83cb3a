//! Runs and their trials: planning, the durable queue (claim with a lease, heartbeat,
//! requeue, finish), persisted steps, paging, and the nodes of L4 searches.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::{Any, QueryBuilder};

use super::sql::{BULK_ROWS, finish, is_unique_violation, numbered};
use super::{SqlStore, StoreError, StoreResult, now_ms};
use vocab::{RunId, TrialCondition, TrialId, TrialLevel};

pub use vocab::{RunStatus, TrialState};

/// A trial to be planned into a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTrial {
    pub task_id: String,
    pub agent: String,
    pub level: TrialLevel,
    pub condition: TrialCondition,
    pub seed: i64,
}

/// A run as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RunRow {
    pub run_id: RunId,
    /// The run specification as JSON.
    pub spec: String,
    #[sqlx(try_from = "String")]
    pub status: RunStatus,
    pub corpus_version: String,
    pub trials_total: i64,
    pub created_at: i64,
}

/// A trial as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct TrialRow {
    pub trial_id: TrialId,
    pub run_id: RunId,
    pub ordinal: i64,
    pub task_id: String,
    pub agent: String,
    #[sqlx(try_from = "String")]
    pub level: TrialLevel,
    #[sqlx(try_from = "String")]
    pub condition: TrialCondition,
    pub seed: i64,
    #[sqlx(try_from = "String")]
    pub state: TrialState,
    pub attempts: i64,
    pub worker: Option<String>,
    pub verdict: Option<String>,
    pub rationale: Option<String>,
    pub error: Option<String>,
    /// The appeal turn's record as JSON, when the run had appeals.
    pub appeal: Option<String>,
}

/// What reading a whole run needs of each trial before its chunks are read in full.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TrialKey {
    pub trial_id: TrialId,
    pub task_id: String,
    #[sqlx(try_from = "String")]
    pub state: TrialState,
}

/// A finished trial with the time it finished (ms), for followers of finished trials.
#[derive(sqlx::FromRow)]
struct FinishedRow {
    #[sqlx(flatten)]
    trial: TrialRow,
    finished_at: Option<i64>,
}

/// Which trials of a run a page lists; `None` matches all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrialFilter {
    pub agent: Option<String>,
    pub level: Option<String>,
    pub state: Option<TrialState>,
    pub task: Option<String>,
    pub condition: Option<String>,
}

/// Trial counts of a run by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub queued: i64,
    pub running: i64,
    pub done: i64,
    pub error: i64,
    pub cancelled: i64,
    /// Of the queued and running ones, the trials of outside agents (`external:NAME`), which
    /// wait for episodes over HTTP rather than for a worker.
    #[serde(default)]
    pub outside: i64,
}

impl Progress {
    /// Queued or running trials that a worker of Mirage executes.
    pub fn executable_left(&self) -> i64 {
        self.queued + self.running - self.outside
    }

    /// Trials that reached a final state.
    pub fn finished(&self) -> i64 {
        self.done + self.error + self.cancelled
    }

    /// Adds `n` trials in `state`.
    pub fn add(&mut self, state: TrialState, n: i64) {
        match state {
            TrialState::Queued => self.queued += n,
            TrialState::Running => self.running += n,
            TrialState::Done => self.done += n,
            TrialState::Error => self.error += n,
            TrialState::Cancelled => self.cancelled += n,
        }
    }
}

/// Trial count of a run for one (agent, level, condition, state).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct CoverageRow {
    pub agent: String,
    #[sqlx(try_from = "String")]
    pub level: TrialLevel,
    #[sqlx(try_from = "String")]
    pub condition: TrialCondition,
    #[sqlx(try_from = "String")]
    pub state: TrialState,
    pub n: i64,
}

#[derive(sqlx::FromRow)]
struct StateCount {
    #[sqlx(try_from = "String")]
    state: TrialState,
    outside: i64,
    n: i64,
}

/// How a trial ended, for `finish_trial`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrialEnd {
    /// A verdict (or none, when the budget ran out), and the appeal record (JSON) if any.
    Done { verdict: Option<String>, rationale: Option<String>, appeal: Option<String> },
    /// The trial could not finish; the reason is kept.
    Error(String),
    /// The run was cancelled while the trial ran; it stopped at its next step.
    Cancelled,
}

/// Runs, the trial queue, steps and L4 search nodes.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Stores a run and all its planned trials (queued) in one transaction.
    async fn create_run(
        &self,
        run_id: &RunId,
        spec: &str,
        corpus_version: &str,
        trials: &[NewTrial],
    ) -> StoreResult<()>;
    /// One run; `NotFound` when there is none.
    async fn run(&self, run_id: &RunId) -> StoreResult<RunRow>;
    /// Runs, newest first.
    async fn runs(&self) -> StoreResult<Vec<RunRow>>;
    /// Sets a run's status.
    async fn set_run_status(&self, run_id: &RunId, status: RunStatus) -> StoreResult<()>;
    /// Marks an active run done when none of its trials is queued or running, in one
    /// statement; `true` when it did. Whoever finishes a trial calls it after its commit, so
    /// of two workers finishing a run's last two trials the later one closes the run.
    async fn close_if_finished(&self, run_id: &RunId) -> StoreResult<bool>;
    /// Marks the run cancelled and its queued and running trials cancelled; a live worker
    /// sees it at its next step (the worker pool's step sink checks) and stops, and its late
    /// finish is refused.
    async fn cancel_run(&self, run_id: &RunId) -> StoreResult<()>;
    /// Trial counts of a run by state.
    async fn progress(&self, run_id: &RunId) -> StoreResult<Progress>;
    /// Trials of the run that finished (done or error) at or after `since` (ms).
    async fn finished_since(&self, run_id: &RunId, since: i64) -> StoreResult<i64>;
    /// Every trial of a run in plan order.
    async fn trials(&self, run_id: &RunId) -> StoreResult<Vec<TrialRow>>;
    /// Every trial of a run in plan order, only its id, task and state: the index a reader
    /// of the whole run walks a chunk at a time (see `StepStore::trials_with_steps`).
    async fn trial_keys(&self, run_id: &RunId) -> StoreResult<Vec<TrialKey>>;
    /// Persists a step (JSON); `Conflict` if step `t` already exists.
    async fn append_step(&self, trial_id: &TrialId, t: i64, body: &str) -> StoreResult<()>;
    /// The persisted steps (JSON), in order.
    async fn steps(&self, trial_id: &TrialId) -> StoreResult<Vec<String>>;
    /// One trial by id.
    async fn trial(&self, trial_id: &TrialId) -> StoreResult<TrialRow>;
    /// Finalises a running trial held by `worker`. Idempotent: `Ok(false)` when it was not
    /// running under this worker (already finalised, or the lease was lost).
    async fn finish_trial(&self, trial_id: &TrialId, worker: &str, end: &TrialEnd) -> StoreResult<bool>;
    /// Finished trials (done or error) in the order they finished, after the cursor
    /// (finished_at ms, trial id), at most `limit`: the search index follows this.
    async fn finished_after(&self, after: (i64, &str), limit: i64) -> StoreResult<Vec<(TrialRow, i64)>>;
    /// One page of a run's trials in order, filtered by agent, level and state (each
    /// optional), and how many match.
    async fn trial_page(
        &self,
        run_id: &RunId,
        filter: &TrialFilter,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<TrialRow>, i64)>;
    /// Trial counts of a run by (agent, level, condition, state), in that order.
    async fn coverage(&self, run_id: &RunId) -> StoreResult<Vec<CoverageRow>>;
    /// Appends a scored L4 search node (`body` is the node as JSON).
    async fn add_tap_node(
        &self,
        trial_id: &TrialId,
        node_id: i64,
        parent: Option<i64>,
        depth: i64,
        score: f64,
        body: &str,
    ) -> StoreResult<()>;
    /// The search nodes of a trial, in order (JSON bodies).
    async fn tap_nodes(&self, trial_id: &TrialId) -> StoreResult<Vec<String>>;
    /// Forgets a trial's search nodes (an interrupted search starts again).
    async fn reset_tap(&self, trial_id: &TrialId) -> StoreResult<()>;
}

/// Attempts a trial gets when its lease keeps expiring (its worker died or hung).
pub const MAX_ATTEMPTS: i64 = 3;
/// Wait before a requeued trial may be claimed again, per attempt it has had (ms).
pub const BACKOFF_MS: i64 = 1_000;

/// The statement that finalises a running trial held by `worker` (see `finish_trial`).
pub(super) fn finish_query<'q>(
    trial_id: &'q TrialId,
    worker: &'q str,
    end: &'q TrialEnd,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    let (state, verdict, rationale, error, appeal) = match end {
        TrialEnd::Done { verdict, rationale, appeal } => {
            (TrialState::Done, verdict.as_deref(), rationale.as_deref(), None, appeal.as_deref())
        }
        TrialEnd::Error(reason) => (TrialState::Error, None, None, Some(reason.as_str()), None),
        TrialEnd::Cancelled => (TrialState::Cancelled, None, None, None, None),
    };
    sqlx::query(
        "update trial set state = $3, verdict = $4, rationale = $5, error = $6, appeal = $8, lease_until = null, finished_at = $7, updated_at = $7
          where trial_id = $1 and worker = $2 and state = 'running'",
    )
    .bind(trial_id.as_str())
    .bind(worker)
    .bind(state.as_str())
    .bind(verdict)
    .bind(rationale)
    .bind(error)
    .bind(now_ms())
    .bind(appeal)
}

/// Cancels a cancelled run's queued and running trials, in the caller's transaction.
/// Running ones too: a live worker stops at its next step and its late finish is refused
/// (it no longer holds the trial); a dead worker's trial would otherwise stay running for
/// ever, since nothing requeues the trials of a cancelled run.
pub(super) async fn cancel_trials(tx: &mut sqlx::Transaction<'_, Any>, run_id: &RunId, now: i64) -> StoreResult<()> {
    sqlx::query(
        "update trial set state = 'cancelled', worker = null, lease_until = null, finished_at = $2, updated_at = $2
          where run_id = $1 and state in ('queued', 'running')",
    )
    .bind(run_id.as_str())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub(super) const RUN_COLUMNS: &str = "run_id, spec, status, corpus_version, trials_total, created_at";
pub(super) const TRIAL_COLUMNS: &str = "trial_id, run_id, ordinal, task_id, agent, level, condition, seed, state, attempts, worker, verdict, rationale, error, appeal";

#[async_trait]
impl RunStore for SqlStore {
    async fn create_run(
        &self,
        run_id: &RunId,
        spec: &str,
        corpus_version: &str,
        trials: &[NewTrial],
    ) -> StoreResult<()> {
        let now = now_ms();
        let total = i64::try_from(trials.len()).unwrap_or(i64::MAX);
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<()> = async {
            sqlx::query(
                "insert into run (run_id, spec, status, corpus_version, trials_total, created_at, updated_at)
                 values ($1, $2, 'active', $3, $4, $5, $5)",
            )
            .bind(run_id.as_str())
            .bind(spec)
            .bind(corpus_version)
            .bind(total)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let planned: Vec<(i64, &NewTrial)> = (0_i64..).zip(trials).collect();
            for chunk in planned.chunks(BULK_ROWS) {
                let mut b: QueryBuilder<'_, Any> = QueryBuilder::new(
                    "insert into trial (trial_id, run_id, ordinal, task_id, agent, level, condition, seed, state, attempts, created_at, updated_at) ",
                );
                b.push_values(chunk, |mut row, (ordinal, t)| {
                    row.push_bind(format!("{run_id}-{ordinal:06}"))
                        .push_bind(run_id)
                        .push_bind(*ordinal)
                        .push_bind(t.task_id.as_str())
                        .push_bind(t.agent.as_str())
                        .push_bind(t.level.as_str())
                        .push_bind(t.condition.as_str())
                        .push_bind(t.seed)
                        .push_bind(TrialState::Queued.as_str())
                        .push_bind(0_i64)
                        .push_bind(now)
                        .push_bind(now);
                });
                let (sql, args) = numbered(&mut b, self.postgres)?;
                sqlx::query_with(&sql, args).execute(&mut *tx).await?;
            }
            Ok(())
        }
        .await;
        finish(tx, result).await
    }

    async fn run(&self, run_id: &RunId) -> StoreResult<RunRow> {
        sqlx::query_as(&format!("select {RUN_COLUMNS} from run where run_id = $1"))
            .bind(run_id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))
    }

    async fn runs(&self) -> StoreResult<Vec<RunRow>> {
        Ok(sqlx::query_as(&format!("select {RUN_COLUMNS} from run order by created_at desc, run_id desc"))
            .fetch_all(&self.pool)
            .await?)
    }

    async fn set_run_status(&self, run_id: &RunId, status: RunStatus) -> StoreResult<()> {
        sqlx::query("update run set status = $2, updated_at = $3 where run_id = $1")
            .bind(run_id.as_str())
            .bind(status.as_str())
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn close_if_finished(&self, run_id: &RunId) -> StoreResult<bool> {
        // Called after every finished trial: a read (no write lock) answers the common case,
        // a run with trials left; the update below checks again, so a race costs nothing.
        let left: Option<i64> =
            sqlx::query_scalar("select 1 from trial where run_id = $1 and state in ('queued', 'running') limit 1")
                .bind(run_id.as_str())
                .fetch_optional(&self.pool)
                .await?;
        if left.is_some() {
            return Ok(false);
        }
        let r = sqlx::query(
            "update run set status = 'done', updated_at = $2 where run_id = $1 and status = 'active' \
             and not exists (select 1 from trial where trial.run_id = $1 and trial.state in ('queued', 'running'))",
        )
        .bind(run_id.as_str())
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn cancel_run(&self, run_id: &RunId) -> StoreResult<()> {
        self.run(run_id).await?;
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        sqlx::query("update run set status = 'cancelled', updated_at = $2 where run_id = $1")
            .bind(run_id.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        cancel_trials(&mut tx, run_id, now).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn progress(&self, run_id: &RunId) -> StoreResult<Progress> {
        let rows: Vec<StateCount> =
            sqlx::query_as(
                "select state, cast(case when agent like 'external:%' then 1 else 0 end as bigint) as outside, count(*) as n
                   from trial where run_id = $1 group by state, case when agent like 'external:%' then 1 else 0 end",
            )
            .bind(run_id.as_str())
            .fetch_all(&self.pool)
            .await?;
        let mut p = Progress::default();
        for r in rows {
            p.add(r.state, r.n);
            if r.outside == 1 && matches!(r.state, TrialState::Queued | TrialState::Running) {
                p.outside += r.n;
            }
        }
        Ok(p)
    }

    async fn finished_since(&self, run_id: &RunId, since: i64) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(
            "select count(*) from trial where run_id = $1 and state in ('done', 'error') and finished_at >= $2",
        )
        .bind(run_id.as_str())
        .bind(since)
        .fetch_one(&self.pool)
        .await?)
    }

    async fn trials(&self, run_id: &RunId) -> StoreResult<Vec<TrialRow>> {
        Ok(sqlx::query_as(&format!("select {TRIAL_COLUMNS} from trial where run_id = $1 order by ordinal"))
            .bind(run_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn trial_keys(&self, run_id: &RunId) -> StoreResult<Vec<TrialKey>> {
        Ok(sqlx::query_as("select trial_id, task_id, state from trial where run_id = $1 order by ordinal")
            .bind(run_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn append_step(&self, trial_id: &TrialId, t: i64, body: &str) -> StoreResult<()> {
        let r = sqlx::query(
            "insert into trial_step (trial_id, t, body, created_at, updated_at) values ($1, $2, $3, $4, $4)",
        )
        .bind(trial_id.as_str())
        .bind(t)
        .bind(body)
        .bind(now_ms())
        .execute(&self.pool)
        .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => {
                Err(StoreError::Conflict(format!("step {t} of trial {trial_id} is already stored")))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn steps(&self, trial_id: &TrialId) -> StoreResult<Vec<String>> {
        Ok(sqlx::query_scalar("select body from trial_step where trial_id = $1 order by t")
            .bind(trial_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn trial(&self, trial_id: &TrialId) -> StoreResult<TrialRow> {
        sqlx::query_as(&format!("select {TRIAL_COLUMNS} from trial where trial_id = $1"))
            .bind(trial_id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("trial {trial_id}")))
    }

    async fn finish_trial(&self, trial_id: &TrialId, worker: &str, end: &TrialEnd) -> StoreResult<bool> {
        Ok(finish_query(trial_id, worker, end).execute(&self.pool).await?.rows_affected() == 1)
    }

    async fn finished_after(&self, after: (i64, &str), limit: i64) -> StoreResult<Vec<(TrialRow, i64)>> {
        let rows: Vec<FinishedRow> = sqlx::query_as(&format!(
            "select {TRIAL_COLUMNS}, finished_at from trial where state in ('done', 'error') \
             and (finished_at > $1 or (finished_at = $1 and trial_id > $2)) order by finished_at, trial_id limit $3"
        ))
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| (r.trial, r.finished_at.unwrap_or(0))).collect())
    }

    async fn trial_page(
        &self,
        run_id: &RunId,
        filter: &TrialFilter,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<TrialRow>, i64)> {
        // Absent filters bind NULL and match everything, so one statement serves all shapes.
        let clause = "run_id = $1 and ($2 is null or agent = $2) and ($3 is null or level = $3) \
                      and ($4 is null or state = $4) and ($5 is null or task_id = $5) \
                      and ($6 is null or condition = $6)";
        let state = filter.state.map(TrialState::as_str);
        let total: i64 = sqlx::query_scalar(&format!("select count(*) from trial where {clause}"))
            .bind(run_id.as_str())
            .bind(filter.agent.as_deref())
            .bind(filter.level.as_deref())
            .bind(state)
            .bind(filter.task.as_deref())
            .bind(filter.condition.as_deref())
            .fetch_one(&self.pool)
            .await?;
        let rows = sqlx::query_as(&format!(
            "select {TRIAL_COLUMNS} from trial where {clause} order by ordinal limit $7 offset $8"
        ))
        .bind(run_id.as_str())
        .bind(filter.agent.as_deref())
        .bind(filter.level.as_deref())
        .bind(state)
        .bind(filter.task.as_deref())
        .bind(filter.condition.as_deref())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        Ok((rows, total))
    }

    async fn coverage(&self, run_id: &RunId) -> StoreResult<Vec<CoverageRow>> {
        Ok(sqlx::query_as(
            "select agent, level, condition, state, count(*) as n from trial where run_id = $1 \
             group by agent, level, condition, state order by agent, level, condition, state",
        )
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn add_tap_node(
        &self,
        trial_id: &TrialId,
        node_id: i64,
        parent: Option<i64>,
        depth: i64,
        score: f64,
        body: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "insert into tap_node (trial_id, node_id, parent, depth, body, score, created_at) values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(trial_id.as_str())
        .bind(node_id)
        .bind(parent)
        .bind(depth)
        .bind(body)
        .bind(score)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn tap_nodes(&self, trial_id: &TrialId) -> StoreResult<Vec<String>> {
        Ok(sqlx::query_scalar("select body from tap_node where trial_id = $1 order by node_id")
            .bind(trial_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn reset_tap(&self, trial_id: &TrialId) -> StoreResult<()> {
        sqlx::query("delete from tap_node where trial_id = $1").bind(trial_id.as_str()).execute(&self.pool).await?;
        Ok(())
    }
}
