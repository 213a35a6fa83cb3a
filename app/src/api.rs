//! Server functions: one-line adapters from the browser to the ports in `ssr`.

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::{
    BoardQuery, HeatQuery, Heatmap, Leaderboard, NewRun, Robustness, RunDetail, RunSummary, TaskDetail, TaskFilter,
    TaskList, TrajectoryView, TrialPage, TrialQuery,
};

/// Tasks matching the filter.
#[server]
pub async fn list_tasks(filter: TaskFilter) -> Result<TaskList, AppError> {
    crate::ssr::services()?.corpus.list(filter).await
}

/// One task in full.
#[server]
pub async fn get_task(id: String) -> Result<TaskDetail, AppError> {
    crate::ssr::services()?.corpus.get(id).await
}

/// Every run with its progress.
#[server]
pub async fn list_runs() -> Result<Vec<RunSummary>, AppError> {
    crate::ssr::services()?.runs.list().await
}

/// One run in full.
#[server]
pub async fn get_run(id: String) -> Result<RunDetail, AppError> {
    crate::ssr::services()?.runs.get(id).await
}

/// A page of a run's trials.
#[server]
pub async fn list_trials(query: TrialQuery) -> Result<TrialPage, AppError> {
    crate::ssr::services()?.runs.trials(query).await
}

/// Launches a run from the form; returns its id.
#[server]
pub async fn start_run(form: NewRun) -> Result<String, AppError> {
    crate::ssr::services()?.runs.start(form).await
}

/// Cancels a run.
#[server]
pub async fn cancel_run(id: String) -> Result<(), AppError> {
    crate::ssr::services()?.runs.cancel(id).await
}

/// One trial, turn by turn.
#[server]
pub async fn get_trajectory(trial: String, page: usize) -> Result<TrajectoryView, AppError> {
    crate::ssr::services()?.runs.trajectory(trial, page).await
}

/// The leaderboard of a run.
#[server]
pub async fn get_leaderboard(query: BoardQuery) -> Result<Leaderboard, AppError> {
    crate::ssr::services()?.insights.leaderboard(query).await
}

/// The robustness–utility plot of a run.
#[server]
pub async fn get_robustness(run: Option<String>, level: Option<String>) -> Result<Robustness, AppError> {
    crate::ssr::services()?.insights.robustness(run, level).await
}

/// A level-wise heatmap of a run.
#[server]
pub async fn get_heatmap(query: HeatQuery) -> Result<Heatmap, AppError> {
    crate::ssr::services()?.insights.heatmap(query).await
}
