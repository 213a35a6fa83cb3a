//! Stored steps read in bulk: every step of a run at once (exports, GEO reports), or the
//! steps of a chunk of trials (scoring a run with bounded memory).

use std::collections::HashMap;

use async_trait::async_trait;

use super::{SqlStore, StoreResult};

/// Bulk reads of step bodies.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Step bodies of every trial of a run in one query, by trial id, each in order.
    async fn run_steps(&self, run_id: &str) -> StoreResult<HashMap<String, Vec<String>>>;
    /// The step bodies of these trials, in order, by trial (one query per thousand).
    async fn steps_of(&self, trial_ids: &[String]) -> StoreResult<HashMap<String, Vec<String>>>;
}

#[async_trait]
impl StepStore for SqlStore {
    async fn run_steps(&self, run_id: &str) -> StoreResult<HashMap<String, Vec<String>>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "select s.trial_id, s.body from trial_step s join trial t on t.trial_id = s.trial_id \
             where t.run_id = $1 order by s.trial_id, s.t",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for (trial, body) in rows {
            out.entry(trial).or_default().push(body);
        }
        Ok(out)
    }

    async fn steps_of(&self, trial_ids: &[String]) -> StoreResult<HashMap<String, Vec<String>>> {
        // One row per trial, its step bodies joined in order by a record separator (U+001E,
        // which JSON text never holds unescaped): a row costs far more than its bytes.
        const SEP: char = '\u{1e}';
        let joined = if self.postgres {
            "string_agg(body, chr(30) order by t)"
        } else {
            "group_concat(body, char(30) order by t)"
        };
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for chunk in trial_ids.chunks(super::sql::BULK_ROWS) {
            let mut b: sqlx::QueryBuilder<'_, sqlx::Any> =
                sqlx::QueryBuilder::new(format!("select trial_id, {joined} from trial_step where trial_id in ("));
            let mut list = b.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            b.push(") group by trial_id");
            let (sql, args) = super::sql::numbered(&mut b, self.postgres)?;
            let rows: Vec<(String, String)> = sqlx::query_as_with(&sql, args).fetch_all(&self.pool).await?;
            for (trial, bodies) in rows {
                out.insert(trial, bodies.split(SEP).map(str::to_string).collect());
            }
        }
        Ok(out)
    }
}
