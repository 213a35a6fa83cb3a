//! Storage: the `Store` seam and its SQL implementation for SQLite (default) and
//! PostgreSQL. Both backends run the same runtime queries through sqlx's `Any` driver;
//! only the migrations differ per dialect.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Row};

use crate::corpus::Task;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Failures callers act on; everything else is an infrastructure error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An investigation episode as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub episode_id: String,
    pub task_id: String,
    pub level: String,
    pub condition: String,
    /// The manipulation strategy (levels above L0) and seed.
    pub strategy: Option<String>,
    pub seed: i64,
    /// `open` until a verdict is recorded, then `done`.
    pub status: String,
    pub verdict: Option<String>,
    pub rationale: Option<String>,
    pub created_at: i64,
}

/// One entry of an episode's action log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeEvent {
    pub seq: i64,
    /// `visit`, `search` or `verdict`.
    pub kind: String,
    pub url: Option<String>,
    pub detail: Option<String>,
    pub created_at: i64,
}

/// A trial to be planned into a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTrial {
    pub task_id: String,
    pub agent: String,
    pub level: String,
    pub condition: String,
    pub seed: i64,
}

/// A run as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub run_id: String,
    /// The run specification as JSON.
    pub spec: String,
    /// `active`, `cancelled` or `done`.
    pub status: String,
    pub corpus_version: String,
    pub trials_total: i64,
    pub created_at: i64,
}

/// A trial as stored. `state` is `queued`, `running`, `done`, `error` or `cancelled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    pub trial_id: String,
    pub run_id: String,
    pub ordinal: i64,
    pub task_id: String,
    pub agent: String,
    pub level: String,
    pub condition: String,
    pub seed: i64,
    pub state: String,
    pub attempts: i64,
    pub worker: Option<String>,
    pub verdict: Option<String>,
    pub rationale: Option<String>,
    pub error: Option<String>,
    /// The appeal turn's record as JSON, when the run had appeals.
    pub appeal: Option<String>,
}

/// Which trials of a run a page lists; `None` matches all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrialFilter {
    pub agent: Option<String>,
    pub level: Option<String>,
    pub state: Option<String>,
}

/// Trial counts of a run by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub queued: i64,
    pub running: i64,
    pub done: i64,
    pub error: i64,
    pub cancelled: i64,
}

impl Progress {
    /// Trials that reached a final state.
    pub fn finished(&self) -> i64 {
        self.done + self.error + self.cancelled
    }
}

/// How a trial ended, for `finish_trial`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrialEnd {
    /// A verdict (or none, when the budget ran out), and the appeal record (JSON) if any.
    Done { verdict: Option<String>, rationale: Option<String>, appeal: Option<String> },
    /// The trial could not finish; the reason is kept.
    Error(String),
}

/// A trial's stored score (the judge module's JSON) and the judges that produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredScore {
    pub trial_id: String,
    pub judge_version: String,
    pub body: String,
}

/// One label event: a label given to a trial by a rule, an LLM judge or a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelEvent {
    /// Assigned by the store; 0 for an event not stored yet.
    pub event_id: i64,
    pub trial_id: String,
    /// `exposure`, `adoption`, `verification` or `recovery`.
    pub kind: String,
    pub value: bool,
    pub turn: Option<i64>,
    /// `rule`, `llm_judge` or `human`.
    pub source: String,
    pub confidence: f64,
    pub reason: String,
    /// The person, for human labels.
    pub author: Option<String>,
    /// The judge version, for automatic labels.
    pub judge_version: Option<String>,
    pub created_at: i64,
}

/// The narrow, domain-shaped storage interface the rest of the server uses.
#[async_trait]
pub trait Store: Send + Sync {
    /// Number of stored tasks.
    async fn task_count(&self) -> StoreResult<i64>;
    /// Ids among `ids` that are already stored.
    async fn existing_task_ids(&self, ids: &[String]) -> StoreResult<Vec<String>>;
    /// Stores all tasks in one transaction, after the stored ones. Fails with `Conflict`
    /// (storing nothing) if any id exists already.
    async fn insert_tasks(&self, tasks: &[Task], origin: &str) -> StoreResult<()>;
    /// Every task in stored order.
    async fn all_tasks(&self) -> StoreResult<Vec<Task>>;
    /// Reads a corpus metadata value.
    async fn meta(&self, key: &str) -> StoreResult<Option<String>>;
    /// Writes a corpus metadata value.
    async fn set_meta(&self, key: &str, value: &str) -> StoreResult<()>;
    /// Opens an episode on a stored task.
    async fn create_episode(
        &self,
        task_id: &str,
        level: &str,
        condition: &str,
        strategy: Option<&str>,
        seed: i64,
    ) -> StoreResult<Episode>;
    async fn episode(&self, episode_id: &str) -> StoreResult<Episode>;
    /// Appends to the action log; returns the event's sequence number (1-based).
    async fn append_event(
        &self,
        episode_id: &str,
        kind: &str,
        url: Option<&str>,
        detail: Option<&str>,
    ) -> StoreResult<i64>;
    /// Records the verdict and closes the episode. `Ok(false)` when it was already closed
    /// (nothing changes: a verdict is final).
    async fn finish_episode(&self, episode_id: &str, verdict: &str, rationale: &str) -> StoreResult<bool>;
    async fn episode_events(&self, episode_id: &str) -> StoreResult<Vec<EpisodeEvent>>;

    /// Stores a run and all its planned trials (queued) in one transaction.
    async fn create_run(&self, run_id: &str, spec: &str, corpus_version: &str, trials: &[NewTrial]) -> StoreResult<()>;
    async fn run(&self, run_id: &str) -> StoreResult<RunRow>;
    /// Runs, newest first.
    async fn runs(&self) -> StoreResult<Vec<RunRow>>;
    async fn set_run_status(&self, run_id: &str, status: &str) -> StoreResult<()>;
    /// Marks the run cancelled and its queued trials cancelled; running trials finish.
    async fn cancel_run(&self, run_id: &str) -> StoreResult<()>;
    async fn progress(&self, run_id: &str) -> StoreResult<Progress>;
    /// Trials of the run that finished (done or error) at or after `since` (ms).
    async fn finished_since(&self, run_id: &str, since: i64) -> StoreResult<i64>;
    /// Every trial of a run in plan order.
    async fn trials(&self, run_id: &str) -> StoreResult<Vec<TrialRow>>;
    /// Claims the next queued trial of the run for `worker` until `lease_until` (ms), in one
    /// short statement. `None` when nothing is queued.
    async fn claim_trial(&self, run_id: &str, worker: &str, lease_until: i64) -> StoreResult<Option<TrialRow>>;
    /// Extends the lease; `false` when the trial is no longer this worker's.
    async fn heartbeat(&self, trial_id: &str, worker: &str, lease_until: i64) -> StoreResult<bool>;
    /// Puts running trials whose lease expired before `now` back in the queue.
    async fn requeue_expired(&self, run_id: &str, now: i64) -> StoreResult<u64>;
    /// Persists a step (JSON); `Conflict` if step `t` already exists.
    async fn append_step(&self, trial_id: &str, t: i64, body: &str) -> StoreResult<()>;
    /// The persisted steps (JSON), in order.
    async fn steps(&self, trial_id: &str) -> StoreResult<Vec<String>>;
    /// Step bodies of every trial of a run in one query, by trial id, each in order.
    async fn run_steps(&self, run_id: &str) -> StoreResult<std::collections::HashMap<String, Vec<String>>>;
    /// One trial by id.
    async fn trial(&self, trial_id: &str) -> StoreResult<TrialRow>;
    /// Finalises a running trial held by `worker`. Idempotent: `Ok(false)` when it was not
    /// running under this worker (already finalised, or the lease was lost).
    async fn finish_trial(&self, trial_id: &str, worker: &str, end: &TrialEnd) -> StoreResult<bool>;

    /// The stored scores of a run's trials.
    async fn scores(&self, run_id: &str) -> StoreResult<Vec<StoredScore>>;
    /// Stores (or replaces) scores of a run's trials and appends the automatic label events
    /// that came with them, in one transaction.
    async fn put_scores(&self, run_id: &str, scores: &[StoredScore], labels: &[LabelEvent]) -> StoreResult<()>;
    /// Appends one label event (labels are never updated in place); returns its id.
    async fn add_label(&self, event: &LabelEvent) -> StoreResult<i64>;
    /// Every label event of a run's trials, oldest first.
    async fn label_events(&self, run_id: &str) -> StoreResult<Vec<LabelEvent>>;
    /// The label events of one trial, oldest first.
    async fn trial_label_events(&self, trial_id: &str) -> StoreResult<Vec<LabelEvent>>;
    /// The id of the newest label event anywhere (0 when none): it changes whenever a label
    /// is added, so caches of aggregates key on it.
    async fn label_generation(&self) -> StoreResult<i64>;
    /// Finished trials (done or error) in the order they finished, after the cursor
    /// (finished_at ms, trial id), at most `limit`: the search index follows this.
    async fn finished_after(&self, after: (i64, &str), limit: i64) -> StoreResult<Vec<(TrialRow, i64)>>;
    /// The judge versions behind a run's stored scores.
    async fn score_judges(&self, run_id: &str) -> StoreResult<Vec<String>>;
    /// The stored score of one trial.
    async fn trial_score(&self, trial_id: &str) -> StoreResult<Option<StoredScore>>;
    /// One page of a run's trials in order, filtered by agent, level and state (each
    /// optional), and how many match.
    async fn trial_page(
        &self,
        run_id: &str,
        filter: &TrialFilter,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<TrialRow>, i64)>;
    /// Trial counts of a run by (agent, level, condition, state).
    async fn coverage(&self, run_id: &str) -> StoreResult<Vec<(String, String, String, String, i64)>>;
    /// Appends a scored L4 search node (`body` is the node as JSON).
    async fn add_tap_node(
        &self,
        trial_id: &str,
        node_id: i64,
        parent: Option<i64>,
        depth: i64,
        score: f64,
        body: &str,
    ) -> StoreResult<()>;
    /// The search nodes of a trial, in order (JSON bodies).
    async fn tap_nodes(&self, trial_id: &str) -> StoreResult<Vec<String>>;
    /// Forgets a trial's search nodes (an interrupted search starts again).
    async fn reset_tap(&self, trial_id: &str) -> StoreResult<()>;
    /// Adds an account, or replaces the hash and role of an existing one; `true` when new.
    async fn put_user(&self, name: &str, password_hash: &str, role: &str) -> StoreResult<bool>;
    /// Every account: (name, role), by name.
    async fn users(&self) -> StoreResult<Vec<(String, String)>>;
    /// Removes an account and its sessions; `false` when there was none.
    async fn remove_user(&self, name: &str) -> StoreResult<bool>;
    /// An account's (password hash, role).
    async fn user(&self, name: &str) -> StoreResult<Option<(String, String)>>;
    /// Whether any account exists.
    async fn has_users(&self) -> StoreResult<bool>;
    /// Stores a session token for `name` until `expires_at` (ms).
    async fn create_session(&self, token: &str, name: &str, expires_at: i64) -> StoreResult<()>;
    /// The (name, role) behind an unexpired session token.
    async fn session(&self, token: &str, now: i64) -> StoreResult<Option<(String, String)>>;
    /// Ends a session.
    async fn end_session(&self, token: &str) -> StoreResult<()>;
    /// Takes the lock on a disputed label for `holder` until `until` (ms): granted when it is
    /// free, expired or already theirs. Returns the other holder and expiry when refused.
    async fn lock_label(
        &self,
        trial_id: &str,
        kind: &str,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<(String, i64)>>;
    /// Releases `holder`'s lock on a label (no-op when they hold none).
    async fn unlock_label(&self, trial_id: &str, kind: &str, holder: &str) -> StoreResult<()>;
    /// Unexpired locks: (trial id, kind, holder, expires at).
    async fn label_locks(&self, now: i64) -> StoreResult<Vec<(String, String, String, i64)>>;
    /// A cached judge answer.
    async fn cache_get(&self, key: &str) -> StoreResult<Option<String>>;
    /// Keeps a judge answer (the first answer for a key wins).
    async fn cache_put(&self, key: &str, judge: &str, body: &str) -> StoreResult<()>;
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Turns `--db PATH_OR_URL` into a database URL: URLs pass through, anything else is a
/// SQLite file path (created with its parent folder when missing).
pub fn database_url(db: &str) -> anyhow::Result<String> {
    if db.starts_with("sqlite:") || db.starts_with("postgres://") || db.starts_with("postgresql://") {
        return Ok(db.to_string());
    }
    let path = Path::new(db);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating database folder {}", parent.display()))?;
    }
    Ok(format!("sqlite://{db}?mode=rwc"))
}

/// The SQL store over one pool for the whole process.
#[derive(Clone)]
pub struct SqlStore {
    pool: AnyPool,
    postgres: bool,
}

impl SqlStore {
    /// Connects and runs the migrations of the URL's backend.
    pub async fn connect(url: &str) -> anyhow::Result<SqlStore> {
        install_default_drivers();
        let sqlite = url.starts_with("sqlite:");
        let memory = url.contains(":memory:");
        let mut options = AnyPoolOptions::new();
        if sqlite {
            // SQLite serialises writers anyway; an in-memory database exists per connection.
            options = options.max_connections(if memory { 1 } else { 8 }).after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("pragma busy_timeout = 5000").execute(&mut *conn).await?;
                    // With WAL, `normal` keeps the database consistent through a process
                    // crash (kill -9); only an OS crash can lose the last commits.
                    sqlx::query("pragma synchronous = normal").execute(&mut *conn).await?;
                    sqlx::query("pragma foreign_keys = on").execute(&mut *conn).await?;
                    Ok(())
                })
            });
        }
        let pool = options.connect(url).await.with_context(|| format!("connecting to database {}", redact(url)))?;
        if sqlite && !memory {
            sqlx::query("pragma journal_mode = wal").execute(&pool).await.context("enabling WAL")?;
        }
        let migrator = if sqlite { &SQLITE_MIGRATIONS } else { &POSTGRES_MIGRATIONS };
        migrator.run(&pool).await.context("running database migrations")?;
        Ok(SqlStore { pool, postgres: !sqlite })
    }
}

/// A URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

fn episode_from(row: &sqlx::any::AnyRow) -> Result<Episode, sqlx::Error> {
    Ok(Episode {
        episode_id: row.try_get("episode_id")?,
        task_id: row.try_get("task_id")?,
        level: row.try_get("level")?,
        condition: row.try_get("condition")?,
        strategy: row.try_get("strategy")?,
        seed: row.try_get("seed")?,
        status: row.try_get("status")?,
        verdict: row.try_get("verdict")?,
        rationale: row.try_get("rationale")?,
        created_at: row.try_get("created_at")?,
    })
}

const EPISODE_COLUMNS: &str =
    "episode_id, task_id, level, condition, strategy, seed, status, verdict, rationale, created_at";

#[async_trait]
impl Store for SqlStore {
    async fn task_count(&self) -> StoreResult<i64> {
        let row = sqlx::query("select count(*) as n from task").fetch_one(&self.pool).await?;
        Ok(row.try_get("n")?)
    }

    async fn existing_task_ids(&self, ids: &[String]) -> StoreResult<Vec<String>> {
        let mut found = Vec::new();
        for chunk in ids.chunks(200) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!("select task_id from task where task_id in ({})", placeholders.join(", "));
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id);
            }
            for row in q.fetch_all(&self.pool).await? {
                found.push(row.try_get("task_id")?);
            }
        }
        Ok(found)
    }

    async fn insert_tasks(&self, tasks: &[Task], origin: &str) -> StoreResult<()> {
        let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query("select coalesce(max(position), 0) as p from task").fetch_one(&mut *tx).await?;
        let start: i64 = row.try_get("p")?;
        let now = now_ms();
        for (i, task) in tasks.iter().enumerate() {
            let body = serde_json::to_string(task).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            // language=SQL (portable)
            let result = sqlx::query(
                "insert into task (task_id, position, domain, category, difficulty, surface_contradiction, origin, body, created_at, updated_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
            )
            .bind(&task.id)
            .bind(start + 1 + i64::try_from(i).unwrap_or(i64::MAX - start - 1))
            .bind(task.domain.as_str())
            .bind(&task.category)
            .bind(task.difficulty.as_str())
            .bind(i64::from(task.surface_contradiction))
            .bind(origin)
            .bind(body)
            .bind(now)
            .execute(&mut *tx)
            .await;
            if let Err(e) = result {
                let unique = e.as_database_error().is_some_and(|d| d.is_unique_violation());
                drop(tx);
                return Err(if unique {
                    let existing = self.existing_task_ids(&ids).await?;
                    StoreError::Conflict(format!("task ids already stored: {}", existing.join(", ")))
                } else {
                    StoreError::Db(e)
                });
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn all_tasks(&self) -> StoreResult<Vec<Task>> {
        let rows = sqlx::query("select task_id, body from task order by position").fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get("task_id")?;
                let body: String = row.try_get("body")?;
                serde_json::from_str(&body).map_err(|e| StoreError::Corrupt(format!("task {id}: {e}")))
            })
            .collect()
    }

    async fn meta(&self, key: &str) -> StoreResult<Option<String>> {
        let row = sqlx::query("select meta_value from corpus_meta where meta_key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get("meta_value")).transpose()?)
    }

    async fn set_meta(&self, key: &str, value: &str) -> StoreResult<()> {
        let now = now_ms();
        // language=SQL (portable: both dialects support `on conflict … do update`)
        sqlx::query(
            "insert into corpus_meta (meta_key, meta_value, created_at, updated_at) values ($1, $2, $3, $3)
             on conflict (meta_key) do update set meta_value = excluded.meta_value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn create_episode(
        &self,
        task_id: &str,
        level: &str,
        condition: &str,
        strategy: Option<&str>,
        seed: i64,
    ) -> StoreResult<Episode> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let now = now_ms();
        sqlx::query(
            "insert into episode (episode_id, task_id, level, condition, strategy, seed, status, created_at, updated_at)
             values ($1, $2, $3, $4, $6, $7, 'open', $5, $5)",
        )
        .bind(&id)
        .bind(task_id)
        .bind(level)
        .bind(condition)
        .bind(now)
        .bind(strategy)
        .bind(seed)
        .execute(&self.pool)
        .await?;
        self.episode(&id).await
    }

    async fn episode(&self, episode_id: &str) -> StoreResult<Episode> {
        let sql = format!("select {EPISODE_COLUMNS} from episode where episode_id = $1");
        let row = sqlx::query(&sql).bind(episode_id).fetch_optional(&self.pool).await?;
        let row = row.ok_or_else(|| StoreError::NotFound(format!("episode {episode_id}")))?;
        Ok(episode_from(&row)?)
    }

    async fn append_event(
        &self,
        episode_id: &str,
        kind: &str,
        url: Option<&str>,
        detail: Option<&str>,
    ) -> StoreResult<i64> {
        let now = now_ms();
        // The sequence number is computed inside the insert, so concurrent appends to one
        // episode cannot pick the same number without the unique constraint noticing.
        let row = sqlx::query(
            "insert into episode_event (episode_id, seq, kind, url, detail, created_at, updated_at)
             select $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $5 from episode_event where episode_id = $1
             returning seq",
        )
        .bind(episode_id)
        .bind(kind)
        .bind(url)
        .bind(detail)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("seq")?)
    }

    async fn finish_episode(&self, episode_id: &str, verdict: &str, rationale: &str) -> StoreResult<bool> {
        let done = sqlx::query(
            "update episode set status = 'done', verdict = $2, rationale = $3, updated_at = $4
             where episode_id = $1 and status = 'open'",
        )
        .bind(episode_id)
        .bind(verdict)
        .bind(rationale)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn episode_events(&self, episode_id: &str) -> StoreResult<Vec<EpisodeEvent>> {
        let rows = sqlx::query(
            "select seq, kind, url, detail, created_at from episode_event where episode_id = $1 order by seq",
        )
        .bind(episode_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(EpisodeEvent {
                    seq: r.try_get("seq")?,
                    kind: r.try_get("kind")?,
                    url: r.try_get("url")?,
                    detail: r.try_get("detail")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }

    async fn create_run(&self, run_id: &str, spec: &str, corpus_version: &str, trials: &[NewTrial]) -> StoreResult<()> {
        let now = now_ms();
        let total = i64::try_from(trials.len()).unwrap_or(i64::MAX);
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "insert into run (run_id, spec, status, corpus_version, trials_total, created_at, updated_at)
             values ($1, $2, 'active', $3, $4, $5, $5)",
        )
        .bind(run_id)
        .bind(spec)
        .bind(corpus_version)
        .bind(total)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        for (i, t) in trials.iter().enumerate() {
            let ordinal = i64::try_from(i).unwrap_or(i64::MAX);
            sqlx::query(
                "insert into trial (trial_id, run_id, ordinal, task_id, agent, level, condition, seed, state, attempts, created_at, updated_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', 0, $9, $9)",
            )
            .bind(format!("{run_id}-{ordinal:06}"))
            .bind(run_id)
            .bind(ordinal)
            .bind(&t.task_id)
            .bind(&t.agent)
            .bind(&t.level)
            .bind(&t.condition)
            .bind(t.seed)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn run(&self, run_id: &str) -> StoreResult<RunRow> {
        let row = sqlx::query(&format!("select {RUN_COLUMNS} from run where run_id = $1"))
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?;
        let row = row.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?;
        Ok(run_from(&row)?)
    }

    async fn runs(&self) -> StoreResult<Vec<RunRow>> {
        let rows = sqlx::query(&format!("select {RUN_COLUMNS} from run order by created_at desc, run_id desc"))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(run_from).collect::<Result<_, _>>()?)
    }

    async fn set_run_status(&self, run_id: &str, status: &str) -> StoreResult<()> {
        sqlx::query("update run set status = $2, updated_at = $3 where run_id = $1")
            .bind(run_id)
            .bind(status)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn cancel_run(&self, run_id: &str) -> StoreResult<()> {
        self.run(run_id).await?;
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        sqlx::query("update run set status = 'cancelled', updated_at = $2 where run_id = $1")
            .bind(run_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query("update trial set state = 'cancelled', finished_at = $2, updated_at = $2 where run_id = $1 and state = 'queued'")
            .bind(run_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn progress(&self, run_id: &str) -> StoreResult<Progress> {
        let rows = sqlx::query("select state, count(*) as n from trial where run_id = $1 group by state")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        let mut p = Progress::default();
        for row in rows {
            let state: String = row.try_get("state")?;
            let n: i64 = row.try_get("n")?;
            match state.as_str() {
                "queued" => p.queued = n,
                "running" => p.running = n,
                "done" => p.done = n,
                "error" => p.error = n,
                "cancelled" => p.cancelled = n,
                other => return Err(StoreError::Corrupt(format!("unknown trial state {other:?}"))),
            }
        }
        Ok(p)
    }

    async fn finished_since(&self, run_id: &str, since: i64) -> StoreResult<i64> {
        let row = sqlx::query(
            "select count(*) as n from trial where run_id = $1 and state in ('done', 'error') and finished_at >= $2",
        )
        .bind(run_id)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    async fn trials(&self, run_id: &str) -> StoreResult<Vec<TrialRow>> {
        let rows = sqlx::query(&format!("select {TRIAL_COLUMNS} from trial where run_id = $1 order by ordinal"))
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(trial_from).collect::<Result<_, _>>()?)
    }

    async fn claim_trial(&self, run_id: &str, worker: &str, lease_until: i64) -> StoreResult<Option<TrialRow>> {
        // One short statement; nothing is held while the trial runs. PostgreSQL skips rows
        // another worker is claiming at the same moment; SQLite serialises writers anyway.
        let lock = if self.postgres { "for update skip locked" } else { "" };
        let sql = format!(
            "update trial set state = 'running', attempts = attempts + 1, lease_until = $3, worker = $2,
                    started_at = coalesce(started_at, $4), updated_at = $4
              where trial_id = (select trial_id from trial where run_id = $1 and state = 'queued' order by ordinal limit 1 {lock})
                and state = 'queued'
             returning {TRIAL_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(run_id)
            .bind(worker)
            .bind(lease_until)
            .bind(now_ms())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(trial_from).transpose()?)
    }

    async fn heartbeat(&self, trial_id: &str, worker: &str, lease_until: i64) -> StoreResult<bool> {
        let r = sqlx::query("update trial set lease_until = $3, updated_at = $4 where trial_id = $1 and worker = $2 and state = 'running'")
            .bind(trial_id)
            .bind(worker)
            .bind(lease_until)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn requeue_expired(&self, run_id: &str, now: i64) -> StoreResult<u64> {
        let r = sqlx::query(
            "update trial set state = 'queued', worker = null, lease_until = null, updated_at = $2
              where run_id = $1 and state = 'running' and lease_until < $2",
        )
        .bind(run_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected())
    }

    async fn append_step(&self, trial_id: &str, t: i64, body: &str) -> StoreResult<()> {
        let r = sqlx::query(
            "insert into trial_step (trial_id, t, body, created_at, updated_at) values ($1, $2, $3, $4, $4)",
        )
        .bind(trial_id)
        .bind(t)
        .bind(body)
        .bind(now_ms())
        .execute(&self.pool)
        .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.as_database_error().is_some_and(|d| d.is_unique_violation()) => {
                Err(StoreError::Conflict(format!("step {t} of trial {trial_id} is already stored")))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn steps(&self, trial_id: &str) -> StoreResult<Vec<String>> {
        let rows = sqlx::query("select body from trial_step where trial_id = $1 order by t")
            .bind(trial_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(|r| r.try_get("body")).collect::<Result<_, _>>()?)
    }

    async fn run_steps(&self, run_id: &str) -> StoreResult<std::collections::HashMap<String, Vec<String>>> {
        let rows = sqlx::query(
            "select s.trial_id, s.body from trial_step s join trial t on t.trial_id = s.trial_id \
             where t.run_id = $1 order by s.trial_id, s.t",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        let mut out: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
        for r in rows {
            out.entry(r.try_get("trial_id")?).or_default().push(r.try_get("body")?);
        }
        Ok(out)
    }

    async fn trial(&self, trial_id: &str) -> StoreResult<TrialRow> {
        let row = sqlx::query(&format!("select {TRIAL_COLUMNS} from trial where trial_id = $1"))
            .bind(trial_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("trial {trial_id}")))?;
        Ok(trial_from(&row)?)
    }

    async fn finish_trial(&self, trial_id: &str, worker: &str, end: &TrialEnd) -> StoreResult<bool> {
        let (state, verdict, rationale, error, appeal) = match end {
            TrialEnd::Done { verdict, rationale, appeal } => {
                ("done", verdict.clone(), rationale.clone(), None, appeal.clone())
            }
            TrialEnd::Error(reason) => ("error", None, None, Some(reason.clone()), None),
        };
        let now = now_ms();
        let r = sqlx::query(
            "update trial set state = $3, verdict = $4, rationale = $5, error = $6, appeal = $8, lease_until = null, finished_at = $7, updated_at = $7
              where trial_id = $1 and worker = $2 and state = 'running'",
        )
        .bind(trial_id)
        .bind(worker)
        .bind(state)
        .bind(verdict)
        .bind(rationale)
        .bind(error)
        .bind(now)
        .bind(appeal)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn scores(&self, run_id: &str) -> StoreResult<Vec<StoredScore>> {
        let rows = sqlx::query("select trial_id, judge_version, body from trial_score where run_id = $1")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(StoredScore {
                    trial_id: r.try_get("trial_id")?,
                    judge_version: r.try_get("judge_version")?,
                    body: r.try_get("body")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }

    async fn put_scores(&self, run_id: &str, scores: &[StoredScore], labels: &[LabelEvent]) -> StoreResult<()> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        for s in scores {
            sqlx::query(
                "insert into trial_score (trial_id, run_id, judge_version, body, created_at) values ($1, $2, $3, $4, $5) \
                 on conflict (trial_id) do update set judge_version = excluded.judge_version, body = excluded.body, \
                 created_at = excluded.created_at",
            )
            .bind(&s.trial_id)
            .bind(run_id)
            .bind(&s.judge_version)
            .bind(&s.body)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for e in labels {
            insert_label(&mut tx, e, now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn add_label(&self, event: &LabelEvent) -> StoreResult<i64> {
        let mut tx = self.pool.begin().await?;
        let id = insert_label(&mut tx, event, now_ms()).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn label_events(&self, run_id: &str) -> StoreResult<Vec<LabelEvent>> {
        let rows = sqlx::query(&format!(
            "select {LABEL_COLUMNS} from label_event \
             where trial_id in (select trial_id from trial where run_id = $1) order by event_id"
        ))
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(label_from).collect::<Result<_, _>>()?)
    }

    async fn trial_label_events(&self, trial_id: &str) -> StoreResult<Vec<LabelEvent>> {
        let rows =
            sqlx::query(&format!("select {LABEL_COLUMNS} from label_event where trial_id = $1 order by event_id"))
                .bind(trial_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(label_from).collect::<Result<_, _>>()?)
    }

    async fn label_generation(&self) -> StoreResult<i64> {
        let row = sqlx::query("select coalesce(max(event_id), 0) as g from label_event").fetch_one(&self.pool).await?;
        Ok(row.try_get("g")?)
    }

    async fn finished_after(&self, after: (i64, &str), limit: i64) -> StoreResult<Vec<(TrialRow, i64)>> {
        let rows = sqlx::query(&format!(
            "select {TRIAL_COLUMNS}, finished_at from trial where state in ('done', 'error') \
             and (finished_at > $1 or (finished_at = $1 and trial_id > $2)) order by finished_at, trial_id limit $3"
        ))
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((trial_from(r)?, r.try_get::<Option<i64>, _>("finished_at")?.unwrap_or(0))))
            .collect::<Result<_, sqlx::Error>>()?)
    }

    async fn score_judges(&self, run_id: &str) -> StoreResult<Vec<String>> {
        let rows =
            sqlx::query("select distinct judge_version from trial_score where run_id = $1 order by judge_version")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(|r| r.try_get("judge_version")).collect::<Result<_, _>>()?)
    }

    async fn trial_score(&self, trial_id: &str) -> StoreResult<Option<StoredScore>> {
        let row = sqlx::query("select trial_id, judge_version, body from trial_score where trial_id = $1")
            .bind(trial_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(StoredScore {
                trial_id: r.try_get("trial_id")?,
                judge_version: r.try_get("judge_version")?,
                body: r.try_get("body")?,
            })
        })
        .transpose()
        .map_err(|e: sqlx::Error| StoreError::from(e))
    }

    async fn trial_page(
        &self,
        run_id: &str,
        filter: &TrialFilter,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<TrialRow>, i64)> {
        // Absent filters bind NULL and match everything, so one statement serves all shapes.
        let clause = "run_id = $1 and ($2 is null or agent = $2) and ($3 is null or level = $3) \
                      and ($4 is null or state = $4)";
        let total: i64 = sqlx::query(&format!("select count(*) as n from trial where {clause}"))
            .bind(run_id)
            .bind(filter.agent.as_deref())
            .bind(filter.level.as_deref())
            .bind(filter.state.as_deref())
            .fetch_one(&self.pool)
            .await?
            .try_get("n")?;
        let rows = sqlx::query(&format!(
            "select {TRIAL_COLUMNS} from trial where {clause} order by ordinal limit $5 offset $6"
        ))
        .bind(run_id)
        .bind(filter.agent.as_deref())
        .bind(filter.level.as_deref())
        .bind(filter.state.as_deref())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        Ok((rows.iter().map(trial_from).collect::<Result<_, _>>()?, total))
    }

    async fn coverage(&self, run_id: &str) -> StoreResult<Vec<(String, String, String, String, i64)>> {
        let rows = sqlx::query(
            "select agent, level, condition, state, count(*) as n from trial where run_id = $1 \
             group by agent, level, condition, state order by agent, level, condition, state",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("agent")?,
                    r.try_get("level")?,
                    r.try_get("condition")?,
                    r.try_get("state")?,
                    r.try_get("n")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }

    async fn add_tap_node(
        &self,
        trial_id: &str,
        node_id: i64,
        parent: Option<i64>,
        depth: i64,
        score: f64,
        body: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "insert into tap_node (trial_id, node_id, parent, depth, body, score, created_at) values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(trial_id)
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

    async fn tap_nodes(&self, trial_id: &str) -> StoreResult<Vec<String>> {
        let rows = sqlx::query("select body from tap_node where trial_id = $1 order by node_id")
            .bind(trial_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(|r| r.try_get("body")).collect::<Result<_, _>>()?)
    }

    async fn reset_tap(&self, trial_id: &str) -> StoreResult<()> {
        sqlx::query("delete from tap_node where trial_id = $1").bind(trial_id).execute(&self.pool).await?;
        Ok(())
    }

    async fn put_user(&self, name: &str, password_hash: &str, role: &str) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let existing =
            sqlx::query("select name from app_user where name = $1").bind(name).fetch_optional(&mut *tx).await?;
        if existing.is_some() {
            sqlx::query("update app_user set password_hash = $1, role = $2 where name = $3")
                .bind(password_hash)
                .bind(role)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query("insert into app_user (name, password_hash, role, created_at) values ($1, $2, $3, $4)")
                .bind(name)
                .bind(password_hash)
                .bind(role)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(existing.is_none())
    }

    async fn users(&self) -> StoreResult<Vec<(String, String)>> {
        let rows = sqlx::query("select name, role from app_user order by name").fetch_all(&self.pool).await?;
        Ok(rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("role")?))).collect::<Result<_, sqlx::Error>>()?)
    }

    async fn remove_user(&self, name: &str) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("delete from app_session where name = $1").bind(name).execute(&mut *tx).await?;
        let done = sqlx::query("delete from app_user where name = $1").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn user(&self, name: &str) -> StoreResult<Option<(String, String)>> {
        let row = sqlx::query("select password_hash, role from app_user where name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| Ok::<_, sqlx::Error>((r.try_get("password_hash")?, r.try_get("role")?))).transpose()?)
    }

    async fn has_users(&self) -> StoreResult<bool> {
        Ok(sqlx::query("select name from app_user limit 1").fetch_optional(&self.pool).await?.is_some())
    }

    async fn create_session(&self, token: &str, name: &str, expires_at: i64) -> StoreResult<()> {
        sqlx::query("insert into app_session (token, name, expires_at) values ($1, $2, $3)")
            .bind(token)
            .bind(name)
            .bind(expires_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn session(&self, token: &str, now: i64) -> StoreResult<Option<(String, String)>> {
        let row = sqlx::query(
            "select u.name, u.role from app_session s join app_user u on u.name = s.name \
             where s.token = $1 and s.expires_at > $2",
        )
        .bind(token)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| Ok::<_, sqlx::Error>((r.try_get("name")?, r.try_get("role")?))).transpose()?)
    }

    async fn end_session(&self, token: &str) -> StoreResult<()> {
        sqlx::query("delete from app_session where token = $1").bind(token).execute(&self.pool).await?;
        Ok(())
    }

    async fn lock_label(
        &self,
        trial_id: &str,
        kind: &str,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<(String, i64)>> {
        let mut tx = self.pool.begin().await?;
        // Take a free or expired lock, or extend our own, in one statement per backend row.
        sqlx::query(
            "delete from annotation_lock where trial_id = $1 and kind = $2 and (expires_at <= $3 or holder = $4)",
        )
        .bind(trial_id)
        .bind(kind)
        .bind(now)
        .bind(holder)
        .execute(&mut *tx)
        .await?;
        let held = sqlx::query("select holder, expires_at from annotation_lock where trial_id = $1 and kind = $2")
            .bind(trial_id)
            .bind(kind)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(r) = held {
            let other: (String, i64) = (r.try_get("holder")?, r.try_get("expires_at")?);
            tx.commit().await?;
            return Ok(Some(other));
        }
        let inserted = sqlx::query(
            "insert into annotation_lock (trial_id, kind, holder, expires_at) values ($1, $2, $3, $4) \
             on conflict (trial_id, kind) do nothing",
        )
        .bind(trial_id)
        .bind(kind)
        .bind(holder)
        .bind(until)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        if inserted.rows_affected() == 0 {
            // Someone took it between our read and write.
            return Ok(Some((String::from("another annotator"), until)));
        }
        Ok(None)
    }

    async fn unlock_label(&self, trial_id: &str, kind: &str, holder: &str) -> StoreResult<()> {
        sqlx::query("delete from annotation_lock where trial_id = $1 and kind = $2 and holder = $3")
            .bind(trial_id)
            .bind(kind)
            .bind(holder)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn label_locks(&self, now: i64) -> StoreResult<Vec<(String, String, String, i64)>> {
        let rows = sqlx::query("select trial_id, kind, holder, expires_at from annotation_lock where expires_at > $1")
            .bind(now)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.try_get("trial_id")?, r.try_get("kind")?, r.try_get("holder")?, r.try_get("expires_at")?)))
            .collect::<Result<_, sqlx::Error>>()?)
    }

    async fn cache_get(&self, key: &str) -> StoreResult<Option<String>> {
        let row =
            sqlx::query("select body from judge_cache where key = $1").bind(key).fetch_optional(&self.pool).await?;
        Ok(row.map(|r| r.try_get("body")).transpose()?)
    }

    async fn cache_put(&self, key: &str, judge: &str, body: &str) -> StoreResult<()> {
        sqlx::query(
            "insert into judge_cache (key, judge, body, created_at) values ($1, $2, $3, $4) on conflict (key) do nothing",
        )
        .bind(key)
        .bind(judge)
        .bind(body)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

const RUN_COLUMNS: &str = "run_id, spec, status, corpus_version, trials_total, created_at";
const TRIAL_COLUMNS: &str = "trial_id, run_id, ordinal, task_id, agent, level, condition, seed, state, attempts, worker, verdict, rationale, error, appeal";

fn run_from(row: &sqlx::any::AnyRow) -> Result<RunRow, sqlx::Error> {
    Ok(RunRow {
        run_id: row.try_get("run_id")?,
        spec: row.try_get("spec")?,
        status: row.try_get("status")?,
        corpus_version: row.try_get("corpus_version")?,
        trials_total: row.try_get("trials_total")?,
        created_at: row.try_get("created_at")?,
    })
}

const LABEL_COLUMNS: &str =
    "event_id, trial_id, kind, value, turn, source, confidence, reason, author, judge_version, created_at";

fn label_from(r: &sqlx::any::AnyRow) -> Result<LabelEvent, sqlx::Error> {
    Ok(LabelEvent {
        event_id: r.try_get("event_id")?,
        trial_id: r.try_get("trial_id")?,
        kind: r.try_get("kind")?,
        value: r.try_get::<i32, _>("value")? != 0,
        turn: r.try_get("turn")?,
        source: r.try_get("source")?,
        confidence: r.try_get("confidence")?,
        reason: r.try_get("reason")?,
        author: r.try_get("author")?,
        judge_version: r.try_get("judge_version")?,
        created_at: r.try_get("created_at")?,
    })
}

fn trial_from(row: &sqlx::any::AnyRow) -> Result<TrialRow, sqlx::Error> {
    Ok(TrialRow {
        trial_id: row.try_get("trial_id")?,
        run_id: row.try_get("run_id")?,
        ordinal: row.try_get("ordinal")?,
        task_id: row.try_get("task_id")?,
        agent: row.try_get("agent")?,
        level: row.try_get("level")?,
        condition: row.try_get("condition")?,
        seed: row.try_get("seed")?,
        state: row.try_get("state")?,
        attempts: row.try_get("attempts")?,
        worker: row.try_get("worker")?,
        verdict: row.try_get("verdict")?,
        rationale: row.try_get("rationale")?,
        error: row.try_get("error")?,
        appeal: row.try_get("appeal")?,
    })
}

async fn insert_label(tx: &mut sqlx::Transaction<'_, sqlx::Any>, e: &LabelEvent, now: i64) -> StoreResult<i64> {
    let row = sqlx::query(
        "insert into label_event (trial_id, kind, value, turn, source, confidence, reason, author, judge_version, created_at) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning event_id",
    )
    .bind(&e.trial_id)
    .bind(&e.kind)
    .bind(i32::from(e.value))
    .bind(e.turn)
    .bind(&e.source)
    .bind(e.confidence)
    .bind(&e.reason)
    .bind(&e.author)
    .bind(&e.judge_version)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.try_get("event_id")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_sqlite_urls_and_urls_pass_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/m.db");
        let url = database_url(path.to_str().expect("utf-8")).expect("url");
        assert!(url.starts_with("sqlite://") && url.ends_with("?mode=rwc"));
        assert!(dir.path().join("sub").is_dir());
        assert_eq!(database_url("postgres://u@h/db").expect("url"), "postgres://u@h/db");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://me:secret@h/db"), "postgres://me:***@h/db");
        assert_eq!(redact("sqlite://x.db"), "sqlite://x.db");
    }
}
