//! The runs list in one query: every run with its trial counts by state and how many
//! finished recently (for the throughput and time-left figures).

use async_trait::async_trait;

use super::runs::TRIAL_COLUMNS;
use super::{Progress, RunRow, SqlStore, StoreResult, TrialRow};
use vocab::RunId;

/// A run with its counts.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOverview {
    pub run: RunRow,
    pub progress: Progress,
    /// Trials that finished (done or error) at or after the `since` given.
    pub recent: i64,
}

#[derive(sqlx::FromRow)]
struct Row {
    #[sqlx(flatten)]
    run: RunRow,
    queued: i64,
    running: i64,
    done: i64,
    error: i64,
    cancelled: i64,
    recent: i64,
}

/// The runs overview.
#[async_trait]
pub trait OverviewStore: Send + Sync {
    /// Every run (or only the runs named in `only`), newest first, with its counts, in one
    /// query.
    async fn run_overview(&self, since: i64, only: Option<&[RunId]>) -> StoreResult<Vec<RunOverview>>;
    /// The latest finish (finished_at ms, trial id) of any trial: one index seek, so a
    /// watcher can tell cheaply whether anything finished.
    async fn last_finish(&self) -> StoreResult<Option<(i64, String)>>;
    /// A task's trials over every run, newest run first and in run order within one, at
    /// most `limit` of them, and how many there are.
    async fn task_trials(&self, task_id: &str, limit: i64) -> StoreResult<(Vec<TrialRow>, i64)>;
}

#[async_trait]
impl OverviewStore for SqlStore {
    async fn run_overview(&self, since: i64, only: Option<&[RunId]>) -> StoreResult<Vec<RunOverview>> {
        if only.is_some_and(<[RunId]>::is_empty) {
            return Ok(Vec::new());
        }
        let count =
            |state: &str| format!("coalesce(sum(case when t.state = '{state}' then 1 else 0 end), 0) as {state}");
        let mut b: sqlx::QueryBuilder<'_, sqlx::Any> = sqlx::QueryBuilder::new(format!(
            "select r.run_id, r.spec, r.status, r.corpus_version, r.trials_total, r.created_at, {}, {}, {}, {}, {}, \
             coalesce(sum(case when t.state in ('done', 'error') and t.finished_at >= ",
            count("queued"),
            count("running"),
            count("done"),
            count("error"),
            count("cancelled"),
        ));
        b.push_bind(since);
        b.push(" then 1 else 0 end), 0) as recent from run r left join trial t on t.run_id = r.run_id");
        if let Some(ids) = only {
            b.push(" where r.run_id in (");
            let mut list = b.separated(", ");
            for id in ids {
                list.push_bind(id.as_str());
            }
            b.push(")");
        }
        b.push(
            " group by r.run_id, r.spec, r.status, r.corpus_version, r.trials_total, r.created_at \
             order by r.created_at desc, r.run_id desc",
        );
        let (sql, args) = super::sql::numbered(&mut b, self.postgres)?;
        let rows: Vec<Row> = sqlx::query_as_with(&sql, args).fetch_all(&self.pool).await?;
        Ok(rows
            .into_iter()
            .map(|r| RunOverview {
                run: r.run,
                progress: Progress {
                    queued: r.queued,
                    running: r.running,
                    done: r.done,
                    error: r.error,
                    cancelled: r.cancelled,
                    outside: 0,
                },
                recent: r.recent,
            })
            .collect())
    }

    async fn last_finish(&self) -> StoreResult<Option<(i64, String)>> {
        Ok(sqlx::query_as(
            "select finished_at, trial_id from trial where finished_at is not null \
             order by finished_at desc, trial_id desc limit 1",
        )
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn task_trials(&self, task_id: &str, limit: i64) -> StoreResult<(Vec<TrialRow>, i64)> {
        let total: i64 = sqlx::query_scalar("select count(*) from trial where task_id = $1")
            .bind(task_id)
            .fetch_one(&self.pool)
            .await?;
        let rows = sqlx::query_as(&format!(
            "select {TRIAL_COLUMNS} from trial where task_id = $1 \
             order by (select r.created_at from run r where r.run_id = trial.run_id) desc, run_id, ordinal limit $2"
        ))
        .bind(task_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok((rows, total))
    }
}
