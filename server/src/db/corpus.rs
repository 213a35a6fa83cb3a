//! Stored tasks and corpus metadata, and seeding the built-in corpus.

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{Any, QueryBuilder};

use super::sql::{BULK_ROWS, is_unique_violation, numbered};
use super::{SqlStore, StoreError, StoreResult, now_ms};
use crate::corpus::Task;

/// Tasks and corpus metadata.
#[async_trait]
pub trait CorpusStore: Send + Sync {
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
}

/// Stores the built-in corpus when the database holds no task yet, and records its
/// fingerprint under `builtin_corpus_version`.
pub async fn seed_if_empty(store: &dyn CorpusStore) -> anyhow::Result<()> {
    if store.task_count().await? > 0 {
        return Ok(());
    }
    let tasks = crate::corpus::generate::corpus();
    store.insert_tasks(&tasks, "builtin").await.context("seeding the built-in corpus")?;
    store.set_meta("builtin_corpus_version", &crate::corpus::fingerprint(&tasks)).await?;
    tracing::info!(tasks = tasks.len(), "Seeded the built-in corpus ({} tasks)", tasks.len());
    Ok(())
}

#[derive(sqlx::FromRow)]
struct TaskBody {
    task_id: String,
    body: String,
}

#[async_trait]
impl CorpusStore for SqlStore {
    async fn task_count(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar("select count(*) from task").fetch_one(&self.pool).await?)
    }

    async fn existing_task_ids(&self, ids: &[String]) -> StoreResult<Vec<String>> {
        let mut found = Vec::new();
        for chunk in ids.chunks(BULK_ROWS) {
            let mut b: QueryBuilder<'_, Any> = QueryBuilder::new("select task_id from task where task_id in (");
            let mut list = b.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            b.push(")");
            let (sql, args) = numbered(&mut b, self.postgres)?;
            found.extend(sqlx::query_scalar_with::<_, String, _>(&sql, args).fetch_all(&self.pool).await?);
        }
        Ok(found)
    }

    async fn insert_tasks(&self, tasks: &[Task], origin: &str) -> StoreResult<()> {
        let bodies = tasks
            .iter()
            .map(|t| serde_json::to_string(t).map_err(|e| StoreError::Corrupt(format!("task {}: {e}", t.id))))
            .collect::<StoreResult<Vec<String>>>()?;
        let mut tx = self.pool.begin().await?;
        let start: i64 = sqlx::query_scalar("select coalesce(max(position), 0) from task").fetch_one(&mut *tx).await?;
        let now = now_ms();
        let rows: Vec<(i64, &Task, &String)> =
            (start + 1..).zip(tasks.iter().zip(&bodies)).map(|(position, (t, b))| (position, t, b)).collect();
        for chunk in rows.chunks(BULK_ROWS) {
            let mut b: QueryBuilder<'_, Any> = QueryBuilder::new(
                "insert into task (task_id, position, domain, category, difficulty, surface_contradiction, origin, body, created_at, updated_at) ",
            );
            b.push_values(chunk, |mut row, (position, task, body)| {
                row.push_bind(task.id.as_str())
                    .push_bind(*position)
                    .push_bind(task.domain.as_str())
                    .push_bind(task.category.as_str())
                    .push_bind(task.difficulty.as_str())
                    .push_bind(i64::from(task.surface_contradiction))
                    .push_bind(origin)
                    .push_bind(body.as_str())
                    .push_bind(now)
                    .push_bind(now);
            });
            let (sql, args) = numbered(&mut b, self.postgres)?;
            if let Err(e) = sqlx::query_with(&sql, args).execute(&mut *tx).await {
                // Roll back now: a dropped transaction is rolled back lazily, and on SQLite
                // its write lock would stall the next writer until then.
                tx.rollback().await?;
                return Err(if is_unique_violation(&e) {
                    let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
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
        let rows: Vec<TaskBody> =
            sqlx::query_as("select task_id, body from task order by position").fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| serde_json::from_str(&r.body).map_err(|e| StoreError::Corrupt(format!("task {}: {e}", r.task_id))))
            .collect()
    }

    async fn meta(&self, key: &str) -> StoreResult<Option<String>> {
        Ok(sqlx::query_scalar("select meta_value from corpus_meta where meta_key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?)
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
}
