//! Ports the server binary implements. Server functions reach the backend only through
//! these traits, so `app` never depends on sqlx, tantivy or the corpus engine.

use std::sync::Arc;

use leptos::prelude::use_context;

use crate::error::AppError;
use crate::model::{
    BoardQuery, HeatQuery, Heatmap, Identity, Leaderboard, NewLabel, NewRun, OpenItem, Queue, Robustness, RunDetail,
    RunId, RunSummary, TaskDetail, TaskFilter, TaskList, TrajectoryView, TrialId, TrialPage, TrialQuery,
};

/// Read access to the task corpus.
#[async_trait::async_trait]
pub trait Corpus: Send + Sync {
    /// Tasks matching the filter, in corpus order, with the facets.
    async fn list(&self, filter: TaskFilter) -> Result<TaskList, AppError>;
    /// One task in full; `NotFound` for an unknown id.
    async fn get(&self, id: String) -> Result<TaskDetail, AppError>;
}

/// Runs: list, launch, cancel, trials and trajectories.
#[async_trait::async_trait]
pub trait Runs: Send + Sync {
    /// Every run, newest first, with live progress.
    async fn list(&self) -> Result<Vec<RunSummary>, AppError>;
    /// One run with its coverage and versions.
    async fn get(&self, id: RunId) -> Result<RunDetail, AppError>;
    /// A page of a run's trials.
    async fn trials(&self, query: TrialQuery) -> Result<TrialPage, AppError>;
    /// A task's trials over every run.
    async fn task_trials(&self, task: String) -> Result<crate::model::TaskTrials, AppError>;
    /// Plans, stores and starts a run; `Invalid` names the form field at fault.
    async fn start(&self, form: NewRun) -> Result<String, AppError>;
    /// Plans a run without storing it and says what it can detect (power before launch);
    /// `Invalid` names the form field at fault.
    async fn power(&self, form: NewRun) -> Result<crate::model::Power, AppError>;
    /// Cancels a run's unfinished trials.
    async fn cancel(&self, id: RunId) -> Result<(), AppError>;
    /// The model endpoints configured on this server, by name, with their model: what the
    /// launch form's agent configurations may name besides the baselines.
    async fn endpoints(&self) -> Result<Vec<(String, String)>, AppError>;
    /// One trial turn by turn (a page of turns), with its score and labels.
    async fn trajectory(
        &self,
        trial: TrialId,
        page: usize,
        within: crate::model::TrialQuery,
    ) -> Result<TrajectoryView, AppError>;
    /// A trial's counterfactual replays, each aligned with the original turn by turn.
    async fn replays(&self, trial: TrialId) -> Result<crate::model::ReplaysView, AppError>;
    /// Starts replays of a trial in the background; `Invalid` names the field at fault.
    async fn start_replay(&self, request: crate::model::NewReplay) -> Result<(), AppError>;
}

/// Aggregates: leaderboard, robustness plot, heatmaps.
#[async_trait::async_trait]
pub trait Insights: Send + Sync {
    async fn leaderboard(&self, query: BoardQuery) -> Result<Leaderboard, AppError>;
    async fn robustness(
        &self,
        run: Option<String>,
        level: Option<String>,
        as_of: Option<String>,
    ) -> Result<Robustness, AppError>;
    async fn heatmap(&self, query: HeatQuery) -> Result<Heatmap, AppError>;
    /// The paper's tables of a run (the newest run with finished trials by default).
    async fn report(&self, run: Option<String>, as_of: Option<String>) -> Result<crate::model::ReportView, AppError>;
}

/// Two runs or configurations compared trial by trial.
#[async_trait::async_trait]
pub trait Compare: Send + Sync {
    /// `a` and `b` are `RUN` or `RUN:CONFIG`; differences are b − a.
    async fn compare(&self, a: String, b: String, as_of: Option<String>) -> Result<crate::model::Comparison, AppError>;
}

/// The annotation queue.
#[async_trait::async_trait]
pub trait Annotate: Send + Sync {
    /// Disputed labels of a run (the newest run when absent), as `who` may see them.
    async fn queue(
        &self,
        who: Option<Identity>,
        run: Option<String>,
        page: usize,
        filter: crate::model::QueueFilter,
    ) -> Result<Queue, AppError>;
    /// An item's page for `who` (anyone may read; no lock is taken).
    async fn open(
        &self,
        who: Option<Identity>,
        trial: TrialId,
        kind: String,
        filter: crate::model::QueueFilter,
    ) -> Result<OpenItem, AppError>;
    /// `who` starts labelling an item: takes its lock (until the returned time); `Conflict`
    /// when someone else holds it.
    async fn start(&self, who: Identity, trial: TrialId, kind: String) -> Result<i64, AppError>;
    /// Records `who`'s label (an adjudication when `adjudicate`) and releases the lock;
    /// returns the next item of the filtered queue `who` can label, if any.
    async fn label(
        &self,
        who: Identity,
        label: NewLabel,
        adjudicate: bool,
        filter: crate::model::QueueFilter,
    ) -> Result<Option<String>, AppError>;
    /// Releases `who`'s lock on an item.
    async fn release(&self, who: Identity, trial: TrialId, kind: String) -> Result<(), AppError>;
    /// A trial's reasoning to grade, with the caller's own latest grade.
    async fn grade_view(&self, who: Identity, trial: TrialId) -> Result<crate::model::GradeView, AppError>;
    /// Stores a person's grade of a trial's reasoning and decision.
    async fn grade(&self, who: Identity, grade: crate::model::NewGrade) -> Result<(), AppError>;
}

/// Full-text search over tasks, thoughts, rationales and observations.
#[async_trait::async_trait]
pub trait Search: Send + Sync {
    async fn search(&self, query: String, kind: Option<String>) -> Result<crate::model::SearchResults, AppError>;
}

/// The GEO ranking track's pages.
#[async_trait::async_trait]
pub trait Geo: Send + Sync {
    /// A GEO run's leaderboard (the newest GEO run by default), with the targets of one
    /// (ranker, method) when asked, and the judge's columns of one stored detection report
    /// (`judge`: its label; the newest by default).
    async fn board(
        &self,
        run: Option<String>,
        ranker: Option<String>,
        method: Option<String>,
        judge: Option<String>,
    ) -> Result<crate::model::GeoView, AppError>;
    /// One GEO trial.
    async fn target(&self, trial: TrialId) -> Result<crate::model::GeoTargetView, AppError>;
}

/// Everything a server function may touch. Provided once per request via context.
#[derive(Clone)]
pub struct Services {
    pub corpus: Arc<dyn Corpus>,
    pub runs: Arc<dyn Runs>,
    pub insights: Arc<dyn Insights>,
    pub compare: Arc<dyn Compare>,
    pub annotate: Arc<dyn Annotate>,
    pub search: Arc<dyn Search>,
    pub geo: Arc<dyn Geo>,
}

/// The person behind the current request, as the server's access layer found them.
pub fn identity() -> Result<crate::model::Identity, AppError> {
    use_context::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<crate::model::Identity>().cloned())
        .ok_or(AppError::Unauthorized)
}

/// The identity of the request, if its role is at least `role`.
pub fn require(role: crate::model::Role) -> Result<crate::model::Identity, AppError> {
    let who = identity()?;
    if who.role < role {
        let a = |r: crate::model::Role| if r == crate::model::Role::Viewer { "a" } else { "an" };
        return Err(AppError::Forbidden(format!(
            "{} is {} {}; this needs {} {}",
            who.name,
            a(who.role),
            who.role.as_str(),
            a(role),
            role.as_str()
        )));
    }
    Ok(who)
}

/// Runs a server function's body and gives its error the matching HTTP status (the
/// framework would answer 500 for every error).
pub async fn respond<T>(body: impl std::future::Future<Output = Result<T, AppError>>) -> Result<T, AppError> {
    let result = body.await;
    if let (Err(e), Some(resp)) = (&result, use_context::<leptos_axum::ResponseOptions>()) {
        resp.set_status(e.status());
    }
    result
}

/// The services of the current request.
pub fn services() -> Result<Services, AppError> {
    use_context::<Services>().ok_or(AppError::Internal)
}
