//! Stored scores of trials (per judge version), the append-only label events, and the
//! locks annotators hold on disputed labels.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::{Any, QueryBuilder};

use super::sql::{BULK_ROWS, finish, numbered};
use super::{SqlStore, StoreResult, now_ms};
use vocab::{RunId, TrialId};

pub use vocab::{DecisionClass, LabelKind};

/// A person's grade of a trial's reasoning (see migration 0008).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ReasoningGrade {
    /// Assigned by the store; 0 for a grade not stored yet.
    pub grade_id: i64,
    pub trial_id: TrialId,
    pub author: String,
    /// The Acc_rsn the person gives, in tenths from 0 to 1.
    pub acc_rsn: f64,
    #[sqlx(try_from = "String")]
    pub decision: DecisionClass,
    pub note: String,
    pub created_at: i64,
}

/// A trial's stored score (the judge module's JSON) and the judges that produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct StoredScore {
    pub trial_id: TrialId,
    pub judge_version: String,
    pub body: String,
}

/// One label event: a label given to a trial by a rule, an LLM judge or a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct LabelEvent {
    /// Assigned by the store; 0 for an event not stored yet.
    pub event_id: i64,
    pub trial_id: TrialId,
    #[sqlx(try_from = "String")]
    pub kind: LabelKind,
    /// Stored as 0 or 1 (both dialects' integer).
    #[sqlx(try_from = "i32")]
    pub value: Flag,
    pub turn: Option<i64>,
    /// `rule`, `llm_judge`, `human` or `adjudication`.
    pub source: String,
    pub confidence: f64,
    pub reason: String,
    /// The person, for human labels.
    pub author: Option<String>,
    /// The judge version, for automatic labels.
    pub judge_version: Option<String>,
    pub created_at: i64,
}

/// A label's value: a boolean that both dialects store as an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Flag(pub bool);

impl From<i32> for Flag {
    fn from(v: i32) -> Flag {
        Flag(v != 0)
    }
}

impl From<bool> for Flag {
    fn from(v: bool) -> Flag {
        Flag(v)
    }
}

/// An annotator's unexpired lock on one disputed label.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct LabelLock {
    pub trial_id: TrialId,
    #[sqlx(try_from = "String")]
    pub kind: LabelKind,
    pub holder: String,
    pub expires_at: i64,
}

/// What the model judge's calls cost for one configuration's scored trials in a run.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct JudgeUse {
    pub agent: String,
    /// Trials scored by a model judge.
    pub trials: i64,
    /// Of those, the ones whose judge tokens are known.
    pub reported: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Of those, the ones whose judge cost is known (a priced judge endpoint).
    pub priced: i64,
    pub cost_usd: f64,
}

/// Scores, label events and annotation locks.
#[async_trait]
pub trait ScoreStore: Send + Sync {
    /// The stored scores of a run's trials.
    async fn scores(&self, run_id: &RunId) -> StoreResult<Vec<StoredScore>>;
    /// Stores (or replaces) scores of a run's trials, in one transaction. A score carries
    /// its automatic labels; label events are people's (and tests').
    async fn put_scores(&self, run_id: &RunId, scores: &[StoredScore]) -> StoreResult<()>;
    /// When each of these trials finished (ms), for those that have finished and not been
    /// queued again since.
    async fn finish_times(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, i64>>;
    /// Stores scores made from trials' steps, each with when its trial had finished as its
    /// steps were read: a score is stored only while its trial is still finished at that
    /// time (not queued again, not finished again since). `replace`: over a stored score (of
    /// another judge version, when a run is scored again); otherwise never over one (the
    /// scores made as trials finish). Returns how many were stored.
    async fn put_finish_scores(&self, run_id: &RunId, scores: &[(StoredScore, i64)], replace: bool)
    -> StoreResult<u64>;
    /// Appends one label event (labels are never updated in place); returns its id.
    async fn add_label(&self, event: &LabelEvent) -> StoreResult<i64>;
    /// Appends a person's label only while its author holds the label's unexpired lock at
    /// `now`, giving the lock back in the same transaction; returns its id, or `None` (and
    /// stores nothing) when they hold none, so that a double click stores one label, or when
    /// it is a second `human` label by the same author (a blind label is final).
    async fn add_label_holding(&self, event: &LabelEvent, now: i64) -> StoreResult<Option<i64>>;
    /// Every label event of a run's trials, oldest first.
    async fn label_events(&self, run_id: &RunId) -> StoreResult<Vec<LabelEvent>>;
    /// The label events people made (`human` and `adjudication`) on a run's trials, oldest
    /// first: what overrides automatic labels, without the rules' own events.
    async fn people_label_events(&self, run_id: &RunId) -> StoreResult<Vec<LabelEvent>>;
    /// The label events of one trial, oldest first.
    async fn trial_label_events(&self, trial_id: &TrialId) -> StoreResult<Vec<LabelEvent>>;
    /// The id of the newest label event anywhere (0 when none): it changes whenever a label
    /// is added, so caches of aggregates key on it.
    async fn label_generation(&self) -> StoreResult<i64>;
    /// The label generation as it stood at `at` (ms): the newest event recorded by then.
    async fn label_generation_at(&self, at: i64) -> StoreResult<i64>;
    /// When the label event `event_id` was recorded (ms), if there is one.
    async fn label_event_time(&self, event_id: i64) -> StoreResult<Option<i64>>;
    /// The judge versions behind a run's stored scores.
    async fn score_judges(&self, run_id: &RunId) -> StoreResult<Vec<String>>;
    /// Per configuration, the model judge's tokens and cost over the run's stored scores
    /// (none for trials scored without a model judge).
    async fn judge_use(&self, run_id: &RunId) -> StoreResult<Vec<JudgeUse>>;
    /// The stored score of one trial.
    async fn trial_score(&self, trial_id: &TrialId) -> StoreResult<Option<StoredScore>>;
    /// Takes the lock on a disputed label for `holder` until `until` (ms): granted when it is
    /// free, expired or already theirs. Returns the other holder and expiry when refused.
    async fn lock_label(
        &self,
        trial_id: &TrialId,
        kind: LabelKind,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<(String, i64)>>;
    /// Releases `holder`'s lock on a label (no-op when they hold none).
    async fn unlock_label(&self, trial_id: &TrialId, kind: LabelKind, holder: &str) -> StoreResult<()>;
    /// Unexpired locks.
    async fn label_locks(&self, now: i64) -> StoreResult<Vec<LabelLock>>;
    /// Appends a person's grade of a trial's reasoning; returns its id.
    async fn add_grade(&self, grade: &ReasoningGrade) -> StoreResult<i64>;
    /// Every grade of a run's trials, oldest first.
    async fn grades(&self, run_id: &RunId) -> StoreResult<Vec<ReasoningGrade>>;
}

/// What an insert of a score does where the trial has one: replaces it.
const REPLACE_SCORE: &str =
    "do update set judge_version = excluded.judge_version, body = excluded.body, created_at = excluded.created_at";

const LABEL_COLUMNS: &str =
    "event_id, trial_id, kind, value, turn, source, confidence, reason, author, judge_version, created_at";

/// A label event's insert (`sql` takes its ten values as $1..$10, in [`LABEL_INSERT`]'s
/// column order) with the event bound, stamped now; answers the new event id.
fn label_insert<'q>(
    sql: &'q str,
    e: &'q LabelEvent,
) -> sqlx::query::QueryScalar<'q, sqlx::Any, i64, sqlx::any::AnyArguments<'q>> {
    sqlx::query_scalar(sql)
        .bind(&e.trial_id)
        .bind(e.kind.as_str())
        .bind(i32::from(e.value.0))
        .bind(e.turn)
        .bind(&e.source)
        .bind(e.confidence)
        .bind(&e.reason)
        .bind(&e.author)
        .bind(&e.judge_version)
        .bind(now_ms())
}

const LABEL_INSERT: &str = "insert into label_event (trial_id, kind, value, turn, source, confidence, reason, author, judge_version, created_at) ";

#[async_trait]
impl ScoreStore for SqlStore {
    async fn scores(&self, run_id: &RunId) -> StoreResult<Vec<StoredScore>> {
        Ok(sqlx::query_as("select trial_id, judge_version, body from trial_score where run_id = $1")
            .bind(run_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn finish_times(&self, trial_ids: &[TrialId]) -> StoreResult<HashMap<TrialId, i64>> {
        let mut out = HashMap::with_capacity(trial_ids.len());
        for chunk in trial_ids.chunks(BULK_ROWS) {
            let mut b: QueryBuilder<'_, Any> = QueryBuilder::new(
                "select trial_id, finished_at from trial where state in ('done', 'error') \
                 and finished_at is not null and trial_id in (",
            );
            let mut ids = b.separated(", ");
            for id in chunk {
                ids.push_bind(id.as_str());
            }
            b.push(")");
            let (sql, args) = numbered(&mut b, self.postgres)?;
            let rows: Vec<(String, i64)> = sqlx::query_as_with(&sql, args).fetch_all(&self.pool).await?;
            out.extend(rows.into_iter().map(|(id, at)| (TrialId::from(id), at)));
        }
        Ok(out)
    }

    async fn put_finish_scores(
        &self,
        run_id: &RunId,
        scores: &[(StoredScore, i64)],
        replace: bool,
    ) -> StoreResult<u64> {
        let now = now_ms();
        // One order for every writer's rows: two transactions never wait on each other's.
        let mut rows: Vec<&(StoredScore, i64)> = scores.iter().collect();
        rows.sort_by(|a, b| a.0.trial_id.cmp(&b.0.trial_id));
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<u64> = async {
            let mut stored = 0;
            for chunk in rows.chunks(BULK_ROWS) {
                let mut b: QueryBuilder<'_, Any> = QueryBuilder::new(
                    "insert into trial_score (trial_id, run_id, judge_version, body, created_at) \
                     select column1, column2, column3, column4, column5 from (",
                );
                b.push_values(chunk, |mut row, (s, finished_at)| {
                    row.push_bind(s.trial_id.as_str())
                        .push_bind(run_id)
                        .push_bind(s.judge_version.as_str())
                        .push_bind(s.body.as_str())
                        .push_bind(now)
                        .push_bind(*finished_at);
                });
                b.push(
                    ") v where exists (select 1 from trial t where t.trial_id = v.column1 \
                     and t.state in ('done', 'error') and t.finished_at = v.column6) on conflict (trial_id) ",
                );
                b.push(if replace { REPLACE_SCORE } else { "do nothing" });
                let (sql, args) = numbered(&mut b, self.postgres)?;
                stored += sqlx::query_with(&sql, args).execute(&mut *tx).await?.rows_affected();
            }
            Ok(stored)
        }
        .await;
        finish(tx, result).await
    }

    async fn put_scores(&self, run_id: &RunId, scores: &[StoredScore]) -> StoreResult<()> {
        let now = now_ms();
        // One order for every writer's rows: two transactions never wait on each other's.
        let mut scores: Vec<&StoredScore> = scores.iter().collect();
        scores.sort_by(|a, b| a.trial_id.cmp(&b.trial_id));
        let mut tx = self.pool.begin().await?;
        let result: StoreResult<()> = async {
            for chunk in scores.chunks(BULK_ROWS) {
                let mut b: QueryBuilder<'_, Any> =
                    QueryBuilder::new("insert into trial_score (trial_id, run_id, judge_version, body, created_at) ");
                b.push_values(chunk, |mut row, s| {
                    row.push_bind(s.trial_id.as_str())
                        .push_bind(run_id)
                        .push_bind(s.judge_version.as_str())
                        .push_bind(s.body.as_str())
                        .push_bind(now);
                });
                b.push(" on conflict (trial_id) ");
                b.push(REPLACE_SCORE);
                let (sql, args) = numbered(&mut b, self.postgres)?;
                sqlx::query_with(&sql, args).execute(&mut *tx).await?;
            }
            Ok(())
        }
        .await;
        finish(tx, result).await
    }

    async fn add_label(&self, e: &LabelEvent) -> StoreResult<i64> {
        let sql = format!("{LABEL_INSERT} values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning event_id");
        Ok(label_insert(&sql, e).fetch_one(&self.pool).await?)
    }

    async fn add_label_holding(&self, e: &LabelEvent, now: i64) -> StoreResult<Option<i64>> {
        let mut tx = self.pool.begin().await?;
        let released = sqlx::query(
            "delete from annotation_lock where trial_id = $1 and kind = $2 and holder = $3 and expires_at > $4",
        )
        .bind(&e.trial_id)
        .bind(e.kind.as_str())
        .bind(e.author.as_deref().unwrap_or_default())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if released.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        // A person's blind label is final: a second `human` label by the same author is not
        // inserted, whatever raced with the caller's own check.
        let sql = format!(
            "{LABEL_INSERT} select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 \
             where not ($5 = 'human' and exists (select 1 from label_event \
                 where trial_id = $1 and kind = $2 and author = $8 and source = 'human')) \
             returning event_id"
        );
        let id = label_insert(&sql, e).fetch_optional(&mut *tx).await?;
        if id.is_none() {
            tx.rollback().await?;
            return Ok(None);
        }
        tx.commit().await?;
        Ok(id)
    }

    async fn label_events(&self, run_id: &RunId) -> StoreResult<Vec<LabelEvent>> {
        Ok(sqlx::query_as(&format!(
            "select {LABEL_COLUMNS} from label_event \
             where trial_id in (select trial_id from trial where run_id = $1) order by event_id"
        ))
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn people_label_events(&self, run_id: &RunId) -> StoreResult<Vec<LabelEvent>> {
        // Walk people's events (index on source) and look each trial up: a run has four
        // automatic events per trial and few of these.
        Ok(sqlx::query_as(&format!(
            "select {LABEL_COLUMNS} from label_event e where e.source in ('human', 'adjudication') \
             and exists (select 1 from trial t where t.trial_id = e.trial_id and t.run_id = $1) order by event_id"
        ))
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn trial_label_events(&self, trial_id: &TrialId) -> StoreResult<Vec<LabelEvent>> {
        Ok(sqlx::query_as(&format!("select {LABEL_COLUMNS} from label_event where trial_id = $1 order by event_id"))
            .bind(trial_id.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    async fn label_generation(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar("select coalesce(max(event_id), 0) from label_event").fetch_one(&self.pool).await?)
    }

    async fn label_generation_at(&self, at: i64) -> StoreResult<i64> {
        Ok(sqlx::query_scalar("select coalesce(max(event_id), 0) from label_event where created_at <= $1")
            .bind(at)
            .fetch_one(&self.pool)
            .await?)
    }

    async fn label_event_time(&self, event_id: i64) -> StoreResult<Option<i64>> {
        Ok(sqlx::query_scalar("select created_at from label_event where event_id = $1")
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn score_judges(&self, run_id: &RunId) -> StoreResult<Vec<String>> {
        Ok(sqlx::query_scalar(
            "select distinct judge_version from trial_score where run_id = $1 order by judge_version",
        )
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn judge_use(&self, run_id: &RunId) -> StoreResult<Vec<JudgeUse>> {
        // The score body is JSON text on both databases; each reads its own way.
        let field = |path: &[&str], cast: &str| {
            if self.postgres {
                let (last, init) = path.split_last().expect("a path");
                let init: String = init.iter().map(|p| format!(" -> '{p}'")).collect();
                format!("(s.body::jsonb{init} ->> '{last}')::{cast}")
            } else {
                format!("json_extract(s.body, '$.{}')", path.join("."))
            }
        };
        let p = field(&["judge_tokens", "prompt_tokens"], "bigint");
        let c = field(&["judge_tokens", "completion_tokens"], "bigint");
        let usd = field(&["judge_cost_usd"], "double precision");
        let sql = format!(
            "select t.agent, count(*) as trials, count({p}) as reported, \
             cast(coalesce(sum({p}), 0) as bigint) as prompt_tokens, \
             cast(coalesce(sum({c}), 0) as bigint) as completion_tokens, \
             count({usd}) as priced, cast(coalesce(sum({usd}), 0) as double precision) as cost_usd \
             from trial_score s join trial t on t.trial_id = s.trial_id \
             where s.run_id = $1 and s.judge_version like '%llm:%' group by t.agent order by t.agent"
        );
        Ok(sqlx::query_as(&sql).bind(run_id.as_str()).fetch_all(&self.pool).await?)
    }

    async fn trial_score(&self, trial_id: &TrialId) -> StoreResult<Option<StoredScore>> {
        Ok(sqlx::query_as("select trial_id, judge_version, body from trial_score where trial_id = $1")
            .bind(trial_id.as_str())
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn lock_label(
        &self,
        trial_id: &TrialId,
        kind: LabelKind,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<(String, i64)>> {
        let mut tx = self.pool.begin().await?;
        // Take a free or expired lock, or extend our own, in one statement per backend row.
        sqlx::query(
            "delete from annotation_lock where trial_id = $1 and kind = $2 and (expires_at <= $3 or holder = $4)",
        )
        .bind(trial_id.as_str())
        .bind(kind.as_str())
        .bind(now)
        .bind(holder)
        .execute(&mut *tx)
        .await?;
        let held: Option<(String, i64)> =
            sqlx::query_as("select holder, expires_at from annotation_lock where trial_id = $1 and kind = $2")
                .bind(trial_id.as_str())
                .bind(kind.as_str())
                .fetch_optional(&mut *tx)
                .await?;
        if held.is_some() {
            tx.commit().await?;
            return Ok(held);
        }
        let inserted = sqlx::query(
            "insert into annotation_lock (trial_id, kind, holder, expires_at) values ($1, $2, $3, $4) \
             on conflict (trial_id, kind) do nothing",
        )
        .bind(trial_id.as_str())
        .bind(kind.as_str())
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

    async fn unlock_label(&self, trial_id: &TrialId, kind: LabelKind, holder: &str) -> StoreResult<()> {
        sqlx::query("delete from annotation_lock where trial_id = $1 and kind = $2 and holder = $3")
            .bind(trial_id.as_str())
            .bind(kind.as_str())
            .bind(holder)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn add_grade(&self, g: &ReasoningGrade) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(
            "insert into reasoning_grade (trial_id, author, acc_rsn, decision, note, created_at) \
             values ($1, $2, $3, $4, $5, $6) returning grade_id",
        )
        .bind(&g.trial_id)
        .bind(&g.author)
        .bind(g.acc_rsn)
        .bind(g.decision.as_str())
        .bind(&g.note)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await?)
    }

    async fn grades(&self, run_id: &RunId) -> StoreResult<Vec<ReasoningGrade>> {
        Ok(sqlx::query_as(
            // Grades are few and a run's trials many: walk the grades and look each trial up
            // (an `in (select ..)` list of the run's trials cost 50 ms per view at 100k trials).
            "select grade_id, trial_id, author, acc_rsn, decision, note, created_at from reasoning_grade g \
             where exists (select 1 from trial t where t.trial_id = g.trial_id and t.run_id = $1) order by grade_id",
        )
        .bind(run_id.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    async fn label_locks(&self, now: i64) -> StoreResult<Vec<LabelLock>> {
        Ok(sqlx::query_as("select trial_id, kind, holder, expires_at from annotation_lock where expires_at > $1")
            .bind(now)
            .fetch_all(&self.pool)
            .await?)
    }
}
