//! Model answers kept by key (judge grades, attacker texts, log-probabilities), so that a
//! question asked twice reaches the endpoint once.

use async_trait::async_trait;

use super::{SqlStore, StoreResult, now_ms};

/// The answer cache.
#[async_trait]
pub trait CacheStore: Send + Sync {
    /// A cached answer.
    async fn cache_get(&self, key: &str) -> StoreResult<Option<String>>;
    /// Keeps an answer; `source` names who answered (model and prompt version). The first
    /// answer for a key wins.
    async fn cache_put(&self, key: &str, source: &str, body: &str) -> StoreResult<()>;
}

#[async_trait]
impl CacheStore for SqlStore {
    async fn cache_get(&self, key: &str) -> StoreResult<Option<String>> {
        Ok(sqlx::query_scalar("select body from judge_cache where key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn cache_put(&self, key: &str, source: &str, body: &str) -> StoreResult<()> {
        sqlx::query(
            "insert into judge_cache (key, judge, body, created_at) values ($1, $2, $3, $4) on conflict (key) do nothing",
        )
        .bind(key)
        .bind(source)
        .bind(body)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
