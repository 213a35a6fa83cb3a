//! Storage: the `Store` seam and its SQL implementation for SQLite (default) and
//! PostgreSQL. Both backends run the same runtime queries through sqlx's `Any` driver;
//! only the migrations differ per dialect.
//!
//! The seam is split by concern, one sub-trait per file: [`CorpusStore`] (tasks),
//! [`EpisodeStore`] (outside agents' episodes), [`RunStore`] (runs, the trial queue, steps,
//! L4 search nodes), [`ScoreStore`] (scores, label events, annotation locks),
//! [`AccountStore`] (accounts and sessions), [`CacheStore`] (model answers),
//! [`GeoStore`] (GEO ranking texts and detection reports), [`OverviewStore`] (the runs
//! list and the progress hub's probe), [`StepStore`] (step bodies in bulk),
//! [`ImportStore`] (trials imported from other harnesses) and [`ReplayStore`]
//! (counterfactual replays of trials). [`Store`]
//! is all of them; code that needs one concern imports that trait and may take
//! `&dyn ThatStore`.

mod accounts;
mod cache;
mod corpus;
mod episodes;
mod geo;
mod imports;
mod leases;
mod overview;
mod replays;
mod runs;
mod scores;
mod sql;
mod steps;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;

pub use accounts::{Account, AccountStore, Credentials};
pub use cache::CacheStore;
pub use corpus::{CorpusStore, seed_if_empty};
pub use episodes::{Episode, EpisodeEvent, EpisodeStore, NewEvent};
pub use geo::{GeoStore, GeoText};
pub use imports::{FinishedTrial, ImportStore};
pub use leases::{Claim, LeaseStore};
pub use overview::{OverviewStore, RunOverview};
pub use replays::{ReplayRow, ReplayStore};
pub use runs::{
    BACKOFF_MS, CoverageRow, MAX_ATTEMPTS, NewTrial, Progress, RunRow, RunStatus, RunStore, TrialEnd, TrialFilter,
    TrialKey, TrialRow, TrialState,
};
pub use scores::{
    DecisionClass, Flag, JudgeUse, LabelEvent, LabelKind, LabelLock, ReasoningGrade, ScoreStore, StoredScore,
};
pub use sql::SqlStore;
pub use steps::{ModelCalls, ModelUse, StepStore, TokenUse, UNPARSEABLE, split_steps};

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

impl StoreError {
    /// For a lookup of a reference the store itself holds (a trial's run, an episode's
    /// trial): a record that is not there is corrupt data, not the caller's mistake.
    pub fn dangling(self) -> StoreError {
        match self {
            StoreError::NotFound(what) => StoreError::Corrupt(format!("a stored reference to {what} leads nowhere")),
            other => other,
        }
    }

    /// The store error somewhere in `e`'s chain of causes, found by its type: how a failure
    /// deep in a pipeline keeps its meaning (a missing or conflicting record) at the edge.
    pub fn within(e: &anyhow::Error) -> Option<&StoreError> {
        e.chain().find_map(|cause| cause.downcast_ref::<StoreError>())
    }
}

/// The whole storage interface: every concern. Implemented for anything that implements
/// all of them (the SQL store).
pub trait Store:
    CorpusStore
    + EpisodeStore
    + RunStore
    + ScoreStore
    + AccountStore
    + CacheStore
    + GeoStore
    + OverviewStore
    + StepStore
    + ImportStore
    + ReplayStore
    + LeaseStore
{
}

impl<T> Store for T where
    T: CorpusStore
        + EpisodeStore
        + RunStore
        + ScoreStore
        + AccountStore
        + CacheStore
        + GeoStore
        + OverviewStore
        + StepStore
        + ImportStore
        + ReplayStore
        + LeaseStore
{
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
}
