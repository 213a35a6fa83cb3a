//! The runs list in one query: every run with its trial counts by state and how many
//! finished recently (for the throughput and time-left figures).

use async_trait::async_trait;

use super::{Progress, RunRow, SqlStore, StoreResult};

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
    /// Every run, newest first, with its counts, in one query.
    async fn run_overview(&self, since: i64) -> StoreResult<Vec<RunOverview>>;
    /// The latest finish (finished_at ms, trial id) of any trial: one index seek, so a
    /// watcher can tell cheaply whether anything finished.
    async fn last_finish(&self) -> StoreResult<Option<(i64, String)>>;
}

#[async_trait]
impl OverviewStore for SqlStore {
    async fn run_overview(&self, since: i64) -> StoreResult<Vec<RunOverview>> {
        let count =
            |state: &str| format!("coalesce(sum(case when t.state = '{state}' then 1 else 0 end), 0) as {state}");
        let sql = format!(
            "select r.run_id, r.spec, r.status, r.corpus_version, r.trials_total, r.created_at, {}, {}, {}, {}, {}, \
             coalesce(sum(case when t.state in ('done', 'error') and t.finished_at >= $1 then 1 else 0 end), 0) as recent \
             from run r left join trial t on t.run_id = r.run_id \
             group by r.run_id, r.spec, r.status, r.corpus_version, r.trials_total, r.created_at \
             order by r.created_at desc, r.run_id desc",
            count("queued"),
            count("running"),
            count("done"),
            count("error"),
            count("cancelled"),
        );
        let rows: Vec<Row> = sqlx::query_as(&sql).bind(since).fetch_all(&self.pool).await?;
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
}
