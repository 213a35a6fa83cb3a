//! GEO ranking texts: the edited description of each (method, target), stored once and
//! reused by every ranker and run.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{SqlStore, StoreResult, now_ms};
use vocab::RunId;

/// One stored text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct GeoText {
    pub method: String,
    pub dataset: String,
    pub category: String,
    pub target_idx: i64,
    pub orig_text: String,
    pub adv_text: String,
    /// `rewrite`, `suffix` or `prepend`.
    pub edit_kind: String,
    pub source: String,
    /// JSON: anything the writer kept (suffix, select rule, import row).
    pub meta: String,
}

impl GeoText {
    /// The ranking target the text was written for; a stored index below 1 is corrupt
    /// data, named as stored.
    pub fn target(&self) -> Result<vocab::GeoTarget, super::StoreError> {
        match usize::try_from(self.target_idx) {
            Ok(index) if index >= 1 => {
                Ok(vocab::GeoTarget { dataset: self.dataset.clone(), list: self.category.clone(), index })
            }
            _ => Err(super::StoreError::Corrupt(format!(
                "a {} text of {}/{} has target index {}",
                self.method, self.dataset, self.category, self.target_idx
            ))),
        }
    }
}

impl GeoText {
    /// Whether this text was made from `original` (whitespace collapsed): a text made from
    /// another original (one adopted since, say) is not this target's edit any more.
    pub fn made_on(&self, original: &str) -> bool {
        self.orig_text.split_whitespace().eq(original.split_whitespace())
    }
}

/// The GEO texts.
#[async_trait]
pub trait GeoStore: Send + Sync {
    /// Stores texts; a key already stored keeps its first text. All or nothing.
    async fn put_geo_texts(&self, texts: &[GeoText]) -> StoreResult<()>;
    /// The text of one (method, target).
    async fn geo_text(
        &self,
        method: &str,
        dataset: &str,
        category: &str,
        target_idx: i64,
    ) -> StoreResult<Option<GeoText>>;
    /// Every text of a method.
    async fn geo_texts(&self, method: &str) -> StoreResult<Vec<GeoText>>;
    /// Methods with stored texts and how many each has.
    async fn geo_methods(&self) -> StoreResult<Vec<(String, i64)>>;
    /// Stores a run's detection report under its setting's label, replacing an older one.
    async fn put_geo_detection(&self, run: &RunId, label: &str, body: &str) -> StoreResult<()>;
    /// A run's detection reports as (label, body), newest first.
    async fn geo_detections(&self, run: &RunId) -> StoreResult<Vec<(String, String)>>;
}

#[async_trait]
impl GeoStore for SqlStore {
    async fn put_geo_texts(&self, texts: &[GeoText]) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let now = now_ms();
        for t in texts {
            sqlx::query(
                "insert into geo_text (method, dataset, category, target_idx, orig_text, adv_text, edit_kind, source, \
                 meta, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 on conflict (method, dataset, category, target_idx) do nothing",
            )
            .bind(&t.method)
            .bind(&t.dataset)
            .bind(&t.category)
            .bind(t.target_idx)
            .bind(&t.orig_text)
            .bind(&t.adv_text)
            .bind(&t.edit_kind)
            .bind(&t.source)
            .bind(&t.meta)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn geo_text(
        &self,
        method: &str,
        dataset: &str,
        category: &str,
        target_idx: i64,
    ) -> StoreResult<Option<GeoText>> {
        Ok(sqlx::query_as(
            "select method, dataset, category, target_idx, orig_text, adv_text, edit_kind, source, meta from geo_text \
             where method = $1 and dataset = $2 and category = $3 and target_idx = $4",
        )
        .bind(method)
        .bind(dataset)
        .bind(category)
        .bind(target_idx)
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn geo_texts(&self, method: &str) -> StoreResult<Vec<GeoText>> {
        Ok(sqlx::query_as(
            "select method, dataset, category, target_idx, orig_text, adv_text, edit_kind, source, meta from geo_text \
             where method = $1 order by dataset, category, target_idx",
        )
        .bind(method)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn geo_methods(&self) -> StoreResult<Vec<(String, i64)>> {
        Ok(sqlx::query_as("select method, count(*) from geo_text group by method order by method")
            .fetch_all(&self.pool)
            .await?)
    }

    async fn put_geo_detection(&self, run: &RunId, label: &str, body: &str) -> StoreResult<()> {
        sqlx::query(
            "insert into geo_detection (run_id, label, body, created_at) values ($1, $2, $3, $4) \
             on conflict (run_id, label) do update set body = excluded.body, created_at = excluded.created_at",
        )
        .bind(run.as_str())
        .bind(label)
        .bind(body)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn geo_detections(&self, run: &RunId) -> StoreResult<Vec<(String, String)>> {
        Ok(sqlx::query_as("select label, body from geo_detection where run_id = $1 order by created_at desc, label")
            .bind(run.as_str())
            .fetch_all(&self.pool)
            .await?)
    }
}
