//! Episodes of outside agents (the episode API): the episode, its action log and verdict.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{SqlStore, StoreError, StoreResult, now_ms};
use vocab::TrialId;

/// An investigation episode as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
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
    /// The trial of a run this episode carries out (handed out by `POST /api/runs/<run>/episodes`);
    /// `None` for a standalone episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_id: Option<TrialId>,
}

impl Episode {
    /// The name under which the episode's agent holds its trial's lease.
    pub fn holder(&self) -> String {
        format!("episode:{}", self.episode_id)
    }
}

/// One entry of an episode's action log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct EpisodeEvent {
    pub seq: i64,
    /// `visit`, `search`, `back` or `verdict`.
    pub kind: String,
    pub url: Option<String>,
    pub detail: Option<String>,
    pub created_at: i64,
    /// The agent's thought, when the step came as an action posted to `act`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// The action as posted to `act` (JSON), which led to this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// An entry to append to an episode's action log.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewEvent<'a> {
    pub kind: &'a str,
    pub url: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub thought: Option<&'a str>,
    pub action: Option<&'a str>,
}

/// Episodes and their action logs.
#[async_trait]
pub trait EpisodeStore: Send + Sync {
    /// Opens an episode on a stored task. `carrying`: the episode's id and the trial it
    /// carries out, when a run handed it out (a standalone episode gets a fresh id).
    async fn create_episode(
        &self,
        task_id: &str,
        (level, condition): (&str, &str),
        strategy: Option<&str>,
        seed: i64,
        carrying: Option<(&str, &TrialId)>,
    ) -> StoreResult<Episode>;
    /// One episode; `NotFound` when there is none.
    async fn episode(&self, episode_id: &str) -> StoreResult<Episode>;
    /// Appends to the action log; returns the event's sequence number (1-based), or `None`
    /// (nothing appended) when the log holds `cap` events already.
    async fn append_event(&self, episode_id: &str, event: NewEvent<'_>, cap: i64) -> StoreResult<Option<i64>>;
    /// Deletes standalone episodes (those carrying no trial of a run) last touched before
    /// `before` (ms), with their logs; returns how many.
    async fn prune_episodes(&self, before: i64) -> StoreResult<u64>;
    /// Records the verdict and closes the episode. `Ok(false)` when it was already closed
    /// (nothing changes: a verdict is final).
    async fn finish_episode(&self, episode_id: &str, verdict: &str, rationale: &str) -> StoreResult<bool>;
    /// The action log in order.
    async fn episode_events(&self, episode_id: &str) -> StoreResult<Vec<EpisodeEvent>>;
}

#[async_trait]
impl EpisodeStore for SqlStore {
    async fn create_episode(
        &self,
        task_id: &str,
        (level, condition): (&str, &str),
        strategy: Option<&str>,
        seed: i64,
        carrying: Option<(&str, &TrialId)>,
    ) -> StoreResult<Episode> {
        let id = carrying.map_or_else(|| uuid::Uuid::new_v4().simple().to_string(), |(id, _)| id.to_string());
        let now = now_ms();
        sqlx::query(
            "insert into episode (episode_id, task_id, level, condition, strategy, seed, status, created_at, updated_at, trial_id)
             values ($1, $2, $3, $4, $6, $7, 'open', $5, $5, $8)",
        )
        .bind(&id)
        .bind(task_id)
        .bind(level)
        .bind(condition)
        .bind(now)
        .bind(strategy)
        .bind(seed)
        .bind(carrying.map(|(_, trial)| trial.as_str()))
        .execute(&self.pool)
        .await?;
        self.episode(&id).await
    }

    async fn episode(&self, episode_id: &str) -> StoreResult<Episode> {
        sqlx::query_as(
            "select episode_id, task_id, level, condition, strategy, seed, status, verdict, rationale, created_at, trial_id
             from episode where episode_id = $1",
        )
        .bind(episode_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("episode {episode_id}")))
    }

    async fn append_event(&self, episode_id: &str, event: NewEvent<'_>, cap: i64) -> StoreResult<Option<i64>> {
        let now = now_ms();
        // The sequence number is computed inside the insert, so concurrent appends to one
        // episode cannot pick the same number without the unique constraint noticing; a log
        // at its cap gets no row.
        Ok(sqlx::query_scalar(
            "insert into episode_event (episode_id, seq, kind, url, detail, created_at, updated_at, thought, action)
             select $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $5, $6, $7 from episode_event where episode_id = $1
             having coalesce(max(seq), 0) < $8
             returning seq",
        )
        .bind(episode_id)
        .bind(event.kind)
        .bind(event.url)
        .bind(event.detail)
        .bind(now)
        .bind(event.thought)
        .bind(event.action)
        .bind(cap)
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn prune_episodes(&self, before: i64) -> StoreResult<u64> {
        let mut tx = self.pool.begin().await?;
        let stale = "select episode_id from episode where trial_id is null and updated_at < $1";
        sqlx::query(&format!("delete from episode_event where episode_id in ({stale})"))
            .bind(before)
            .execute(&mut *tx)
            .await?;
        let gone = sqlx::query(&format!("delete from episode where episode_id in ({stale})"))
            .bind(before)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(gone)
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
        Ok(sqlx::query_as(
            "select seq, kind, url, detail, created_at, thought, action from episode_event where episode_id = $1 order by seq",
        )
        .bind(episode_id)
        .fetch_all(&self.pool)
        .await?)
    }
}
