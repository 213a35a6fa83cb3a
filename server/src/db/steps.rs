//! Stored steps read in bulk: every step of a run at once (GEO reports), or a chunk of
//! trials with their steps (scoring and exporting a run with bounded memory).

use std::collections::HashMap;

use async_trait::async_trait;

use super::runs::{TRIAL_COLUMNS, TrialRow};
use super::{SqlStore, StoreResult};
use vocab::{RunId, TrialId};

/// Bulk reads of step bodies.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Step bodies of every trial of a run in one query, by trial id, each in order.
    async fn run_steps(&self, run_id: &RunId) -> StoreResult<HashMap<TrialId, Vec<String>>>;
    /// How many bytes a trial's step bodies take together (without sending them here).
    async fn steps_length(&self, trial_id: &TrialId) -> StoreResult<i64>;
    /// These trials (absent ones left out), each with its step bodies joined in order by
    /// a record separator (see [`split_steps`]), by trial id: one row per trial, one query per thousand.
    async fn trials_with_steps(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, (TrialRow, String)>>;
    /// The tokens a run's steps report (`usage`), per agent configuration, with the number
    /// of its trials that have any step (done, failed or under way), in agent order.
    async fn token_use(&self, run_id: &RunId) -> StoreResult<Vec<TokenUse>>;
    /// Adds what one attempt at a trial spent on calls of `role` (`attacker`, `defense`).
    async fn add_model_use(&self, trial_id: &TrialId, role: &str, calls: ModelCalls) -> StoreResult<()>;
    /// Per configuration and role, what the run's trials spent on calls besides the agent's.
    async fn model_use(&self, run_id: &RunId) -> StoreResult<Vec<ModelUse>>;
}

/// Model calls of one role in one attempt at a trial.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelCalls {
    pub calls: u64,
    /// Calls whose tokens are not known.
    pub unknown: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One configuration's calls of one role over a run.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct ModelUse {
    pub agent: String,
    pub role: String,
    pub trials: i64,
    pub calls: i64,
    pub unknown_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

/// What the reason of a trial (or appeal) that failed on unreadable replies says (the
/// agent's error reads so): those replies were answered and paid for, but their usage was
/// not kept, so the cost is unknown.
pub const UNPARSEABLE: &str = "model output could not be parsed";

/// One configuration's reported tokens in a run.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenUse {
    pub agent: String,
    /// Finished trials (those that failed before any step among them) and trials under way
    /// with a step.
    pub trials: i64,
    /// The agent's recorded calls: its steps and its appeal turns.
    pub steps: i64,
    /// Trials that failed on replies that could not be read (paid for, usage not kept).
    pub unmetered: i64,
    /// Calls that reported their usage.
    pub reported: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

#[async_trait]
impl StepStore for SqlStore {
    async fn token_use(&self, run_id: &RunId) -> StoreResult<Vec<TokenUse>> {
        // Each trial keeps its steps' count and tokens (triggers on trial_step, migration 0018),
        // so only the appeal turns, stored on the trial as JSON, are read here.
        let (p, c) = if self.postgres {
            (
                "(t.appeal::jsonb -> 'usage' ->> 'prompt_tokens')::bigint",
                "(t.appeal::jsonb -> 'usage' ->> 'completion_tokens')::bigint",
            )
        } else {
            ("json_extract(t.appeal, '$.usage.prompt_tokens')", "json_extract(t.appeal, '$.usage.completion_tokens')")
        };
        let sql = format!(
            "select t.agent, count(*) as trials, \
             cast(sum(t.step_count + case when t.appeal is null then 0 else 1 end) as bigint) as steps, \
             cast(sum(t.usage_steps + case when t.appeal is not null and {p} is not null then 1 else 0 end) as bigint) as reported, \
             count(case when t.state = 'error' and t.error like '%{UNPARSEABLE}%' then 1 end) as unmetered, \
             cast(sum(t.prompt_tokens + coalesce(case when t.appeal is null then 0 else {p} end, 0)) as bigint) as prompt_tokens, \
             cast(sum(t.completion_tokens + coalesce(case when t.appeal is null then 0 else {c} end, 0)) as bigint) as completion_tokens \
             from trial t where t.run_id = $1 \
             and (t.state in ('done', 'error') or t.step_count > 0 or t.appeal is not null) \
             group by t.agent order by t.agent"
        );
        Ok(sqlx::query_as(&sql).bind(run_id.as_str()).fetch_all(&self.pool).await?)
    }

    async fn add_model_use(&self, trial_id: &TrialId, role: &str, c: ModelCalls) -> StoreResult<()> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        sqlx::query(
            "insert into trial_model_use (trial_id, role, calls, unknown_calls, prompt_tokens, completion_tokens) \
             values ($1, $2, $3, $4, $5, $6) on conflict (trial_id, role) do update set \
             calls = trial_model_use.calls + excluded.calls, \
             unknown_calls = trial_model_use.unknown_calls + excluded.unknown_calls, \
             prompt_tokens = trial_model_use.prompt_tokens + excluded.prompt_tokens, \
             completion_tokens = trial_model_use.completion_tokens + excluded.completion_tokens",
        )
        .bind(trial_id.as_str())
        .bind(role)
        .bind(n(c.calls))
        .bind(n(c.unknown))
        .bind(n(c.prompt_tokens))
        .bind(n(c.completion_tokens))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn model_use(&self, run_id: &RunId) -> StoreResult<Vec<ModelUse>> {
        Ok(sqlx::query_as(
            "select t.agent, u.role, count(*) as trials, cast(sum(u.calls) as bigint) as calls, \
             cast(sum(u.unknown_calls) as bigint) as unknown_calls, \
             cast(sum(u.prompt_tokens) as bigint) as prompt_tokens, \
             cast(sum(u.completion_tokens) as bigint) as completion_tokens \
             from trial_model_use u join trial t on t.trial_id = u.trial_id where t.run_id = $1 \
             group by t.agent, u.role order by t.agent, u.role",
        )
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn steps_length(&self, trial_id: &TrialId) -> StoreResult<i64> {
        let bytes = if self.postgres { "octet_length(body)" } else { "length(cast(body as blob))" };
        Ok(sqlx::query_scalar(&format!(
            "select cast(coalesce(sum({bytes}), 0) as bigint) from trial_step where trial_id = $1"
        ))
        .bind(trial_id.as_str())
        .fetch_one(&self.pool)
        .await?)
    }

    async fn run_steps(&self, run_id: &RunId) -> StoreResult<HashMap<TrialId, Vec<String>>> {
        let rows: Vec<(TrialId, String)> = sqlx::query_as(
            "select s.trial_id, s.body from trial_step s join trial t on t.trial_id = s.trial_id \
             where t.run_id = $1 order by s.trial_id, s.t",
        )
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        let mut out: HashMap<TrialId, Vec<String>> = HashMap::new();
        for (trial, body) in rows {
            out.entry(trial).or_default().push(body);
        }
        Ok(out)
    }

    async fn trials_with_steps(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, (TrialRow, String)>> {
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
