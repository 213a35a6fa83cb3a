//! Model answers kept by key (judge grades, attacker texts, log-probabilities), so that a
//! question asked twice reaches the endpoint once.

use async_trait::async_trait;

use super::{SqlStore, StoreResult, now_ms};

/// Tokens an answer cost: (prompt, completion), as the endpoint reported them.
pub type Tokens = (u64, u64);

/// The answer cache.
#[async_trait]
pub trait CacheStore: Send + Sync {
    /// A cached answer.
    async fn cache_get(&self, key: &str) -> StoreResult<Option<String>> {
        Ok(self.cache_get_used(key).await?.map(|(body, _)| body))
    }
    /// A cached answer with the tokens it cost when it was asked (`None` when that was not
    /// recorded).
    async fn cache_get_used(&self, key: &str) -> StoreResult<Option<(String, Option<Tokens>)>>;
    /// Keeps an answer and what it cost; `source` names who answered (model and prompt
    /// version). The first answer for a key wins.
    async fn cache_put(&self, key: &str, source: &str, body: &str, usage: Option<Tokens>) -> StoreResult<()>;
}

#[async_trait]
impl CacheStore for SqlStore {
    async fn cache_get_used(&self, key: &str) -> StoreResult<Option<(String, Option<Tokens>)>> {
        let row: Option<(String, Option<i64>, Option<i64>)> =
            sqlx::query_as("select body, prompt_tokens, completion_tokens from judge_cache where key = $1")
                .bind(key)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(body, p, c)| {
            let usage = p.zip(c).map(|(p, c)| (u64::try_from(p).unwrap_or(0), u64::try_from(c).unwrap_or(0)));
            (body, usage)
        }))
    }

    async fn cache_put(&self, key: &str, source: &str, body: &str, usage: Option<Tokens>) -> StoreResult<()> {
        let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        sqlx::query(
            "insert into judge_cache (key, judge, body, created_at, prompt_tokens, completion_tokens) \
             values ($1, $2, $3, $4, $5, $6) on conflict (key) do nothing",
        )
        .bind(key)
        .bind(source)
        .bind(body)
        .bind(now_ms())
        .bind(usage.map(|(p, _)| tokens(p)))
        .bind(usage.map(|(_, c)| tokens(c)))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
