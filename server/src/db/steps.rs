//! Stored steps read in bulk: every step of a run at once (GEO reports), or a chunk of
//! trials with their steps (scoring and exporting a run with bounded memory).

use std::collections::HashMap;

use async_trait::async_trait;

use super::runs::{TRIAL_COLUMNS, TrialRow};
use super::{SqlStore, StoreResult};

/// Bulk reads of step bodies.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Step bodies of every trial of a run in one query, by trial id, each in order.
    async fn run_steps(&self, run_id: &str) -> StoreResult<HashMap<String, Vec<String>>>;
    /// These trials (absent ones left out), each with its step bodies joined in order by
    /// a record separator (see [`split_steps`]), by trial id: one row per trial, one query per thousand.
    async fn trials_with_steps(&self, trial_ids: &[String]) -> StoreResult<HashMap<String, (TrialRow, String)>>;
    /// The tokens a run's steps report (`usage`), per agent configuration, with the number
    /// of its trials that have any step (done, failed or under way), in agent order.
    async fn token_use(&self, run_id: &str) -> StoreResult<Vec<TokenUse>>;
}

/// One configuration's reported tokens in a run.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenUse {
    pub agent: String,
    pub trials: i64,
    /// Steps that reported their usage.
    pub reported: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

#[async_trait]
impl StepStore for SqlStore {
    async fn token_use(&self, run_id: &str) -> StoreResult<Vec<TokenUse>> {
        // The step body is JSON text on both databases; each reads its own way.
        let (p, c) = if self.postgres {
            (
                "(s.body::jsonb -> 'usage' ->> 'prompt_tokens')::bigint",
                "(s.body::jsonb -> 'usage' ->> 'completion_tokens')::bigint",
            )
        } else {
            ("json_extract(s.body, '$.usage.prompt_tokens')", "json_extract(s.body, '$.usage.completion_tokens')")
        };
        let sql = format!(
            "select t.agent, count(distinct t.trial_id) as trials, count({p}) as reported, \
             cast(coalesce(sum({p}), 0) as bigint) as prompt_tokens, \
             cast(coalesce(sum({c}), 0) as bigint) as completion_tokens \
             from trial_step s join trial t on t.trial_id = s.trial_id where t.run_id = $1 \
             group by t.agent order by t.agent"
        );
        Ok(sqlx::query_as(&sql).bind(run_id).fetch_all(&self.pool).await?)
    }

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

    async fn trials_with_steps(&self, trial_ids: &[String]) -> StoreResult<HashMap<String, (TrialRow, String)>> {
        // A row costs far more than its bytes, so a trial's steps come in its own row,
        // joined by a record separator (U+001E, which JSON text never holds unescaped).
        let joined = if self.postgres {
            "string_agg(body, chr(30) order by t)"
        } else {
            "group_concat(body, char(30) order by t)"
        };
        let mut out = HashMap::with_capacity(trial_ids.len());
        for chunk in trial_ids.chunks(super::sql::BULK_ROWS) {
            let mut b: sqlx::QueryBuilder<'_, sqlx::Any> = sqlx::QueryBuilder::new(format!(
                "select {TRIAL_COLUMNS}, (select {joined} from trial_step s where s.trial_id = trial.trial_id) \
                 as steps from trial where trial_id in ("
            ));
            let mut list = b.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            b.push(")");
            let (sql, args) = super::sql::numbered(&mut b, self.postgres)?;
            let rows: Vec<WithSteps> = sqlx::query_as_with(&sql, args).fetch_all(&self.pool).await?;
            for row in rows {
                out.insert(row.trial.trial_id.clone(), (row.trial, row.steps.unwrap_or_default()));
            }
        }
        Ok(out)
    }
}

/// A trial and its joined step bodies, as [`StepStore::trials_with_steps`] reads them.
#[derive(sqlx::FromRow)]
struct WithSteps {
    #[sqlx(flatten)]
    trial: TrialRow,
    steps: Option<String>,
}

/// What joins a trial's step bodies in [`StepStore::trials_with_steps`].
const SEP: char = '\u{1e}';

/// The step bodies of a joined list, in order (none when it is empty).
pub fn split_steps(joined: &str) -> impl Iterator<Item = &str> {
    joined.split(SEP).filter(|b| !b.is_empty())
}
