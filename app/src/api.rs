//! Server functions: thin adapters from the browser to the ports in `ssr`. Each checks the
//! caller's role where it writes, and answers errors with their HTTP status. Arguments made
//! only of optional fields are `#[server(default)]`: with every field empty the browser
//! sends no key for them at all.

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::{
    BoardQuery, HeatQuery, Heatmap, Leaderboard, NewRun, Robustness, RunDetail, RunSummary, TaskDetail, TaskFilter,
    TaskList, TrajectoryView, TrialPage, TrialQuery,
};

/// Tasks matching the filter.
#[server(endpoint = "list_tasks")]
pub async fn list_tasks(#[server(default)] filter: TaskFilter) -> Result<TaskList, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.corpus.list(filter).await }).await
}

/// The corpus's size and its categories' counts, without the task rows (the home page's
/// cards need no more; the whole list would weigh hundreds of kilobytes there).
#[server(endpoint = "corpus_counts")]
pub async fn corpus_counts() -> Result<TaskList, AppError> {
    crate::ssr::respond(async move {
        let mut list = crate::ssr::services()?.corpus.list(TaskFilter::default()).await?;
        list.tasks = Vec::new();
        Ok(list)
    })
    .await
}

/// One task in full.
#[server(endpoint = "get_task")]
pub async fn get_task(id: String) -> Result<TaskDetail, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.corpus.get(id).await }).await
}

/// Every run with its progress.
#[server(endpoint = "list_runs")]
pub async fn list_runs() -> Result<Vec<RunSummary>, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.list().await }).await
}

/// One run in full.
#[server(endpoint = "get_run")]
pub async fn get_run(id: String) -> Result<RunDetail, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.get(id.into()).await }).await
}

/// A page of a run's trials.
#[server(endpoint = "list_trials")]
pub async fn list_trials(query: TrialQuery) -> Result<TrialPage, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.trials(query).await }).await
}

/// A task's trials over every run (the newest runs' first).
#[server(endpoint = "list_task_trials")]
pub async fn list_task_trials(task: String) -> Result<crate::model::TaskTrials, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.task_trials(task).await }).await
}

/// Launches a run from the form; returns its id.
#[server(endpoint = "start_run")]
pub async fn start_run(form: NewRun) -> Result<String, AppError> {
    crate::ssr::respond(async move {
        crate::ssr::require(crate::model::Role::Operator)?;
        crate::ssr::services()?.runs.start(form).await
    })
    .await
}

/// What a run planned from the launch form could detect, before launching it.
#[server(endpoint = "plan_power")]
pub async fn plan_power(form: NewRun) -> Result<crate::model::Power, AppError> {
    crate::ssr::respond(async move {
        crate::ssr::require(crate::model::Role::Operator)?;
        crate::ssr::services()?.runs.power(form).await
    })
    .await
}

/// The model endpoints configured on this server (name, model), for the launch form.
#[server(endpoint = "configured_endpoints")]
pub async fn configured_endpoints() -> Result<Vec<(String, String)>, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.endpoints().await }).await
}

/// Cancels a run.
#[server(endpoint = "cancel_run")]
pub async fn cancel_run(id: String) -> Result<(), AppError> {
    crate::ssr::respond(async move {
        crate::ssr::require(crate::model::Role::Operator)?;
        crate::ssr::services()?.runs.cancel(id.into()).await
    })
    .await
}

/// One trial, turn by turn; its previous and next trials are those of the run's trial list
/// under the filters of `within` (its run and page are not read).
#[server(endpoint = "get_trajectory")]
pub async fn get_trajectory(
    trial: String,
    page: usize,
    #[server(default)] within: TrialQuery,
) -> Result<TrajectoryView, AppError> {
    crate::ssr::respond(async move {
        let operator = crate::ssr::identity().is_ok_and(|w| w.role >= crate::model::Role::Operator);
        let mut view = crate::ssr::services()?.runs.trajectory(trial.into(), page, within).await?;
        if !operator {
            view.blind_waiting();
        }
        Ok(view)
    })
    .await
}

/// A trial's counterfactual replays.
#[server(endpoint = "get_replays")]
pub async fn get_replays(trial: String) -> Result<crate::model::ReplaysView, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.runs.replays(trial.into()).await }).await
}

/// Replays a trial from a turn with an intervention (operators).
#[server(endpoint = "start_replay")]
pub async fn start_replay(request: crate::model::NewReplay) -> Result<(), AppError> {
    crate::ssr::respond(async move {
        crate::ssr::require(crate::model::Role::Operator)?;
        crate::ssr::services()?.runs.start_replay(request).await
    })
    .await
}

/// The leaderboard of a run.
#[server(endpoint = "get_leaderboard")]
pub async fn get_leaderboard(#[server(default)] query: BoardQuery) -> Result<Leaderboard, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.insights.leaderboard(query).await }).await
}

/// The home page's leaderboard: the latest run's, or `None` while no run has finished
/// trials (a normal state of a new installation, not an error: the page answers 200).
#[server(endpoint = "get_home_board")]
pub async fn get_home_board() -> Result<Option<Leaderboard>, AppError> {
    crate::ssr::respond(async move {
        match crate::ssr::services()?.insights.leaderboard(BoardQuery::default()).await {
            Ok(board) => Ok(Some(board)),
            Err(AppError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    })
    .await
}

/// The robustness–utility plot of a run.
#[server(endpoint = "get_robustness")]
pub async fn get_robustness(
    run: Option<String>,
    level: Option<String>,
    #[server(default)] as_of: Option<String>,
) -> Result<Robustness, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.insights.robustness(run, level, as_of).await }).await
}

/// The paper's tables of a run.
#[server(endpoint = "get_report")]
pub async fn get_report(
    #[server(default)] run: Option<String>,
    #[server(default)] as_of: Option<String>,
) -> Result<crate::model::ReportView, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.insights.report(run, as_of).await }).await
}

/// A level-wise heatmap of a run.
#[server(endpoint = "get_heatmap")]
pub async fn get_heatmap(#[server(default)] query: HeatQuery) -> Result<Heatmap, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.insights.heatmap(query).await }).await
}

/// Who is signed in (or the local operator when no accounts exist).
#[server(endpoint = "whoami")]
pub async fn whoami() -> Result<crate::model::Identity, AppError> {
    crate::ssr::respond(async move { crate::ssr::identity() }).await
}

/// The disputed labels of a run, filtered.
#[server(endpoint = "get_queue")]
pub async fn get_queue(
    #[server(default)] run: Option<String>,
    #[server(default)] page: Option<usize>,
    #[server(default)] filter: crate::model::QueueFilter,
) -> Result<crate::model::Queue, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::identity().ok();
        crate::ssr::services()?.annotate.queue(who, run, page.unwrap_or(0), filter).await
    })
    .await
}

/// A disputed label's page: its whole context (blind where the caller has not labelled it
/// yet) and whether the caller may label it. Reading takes no lock.
#[server(endpoint = "open_item")]
pub async fn open_item(
    trial: String,
    kind: String,
    #[server(default)] filter: crate::model::QueueFilter,
) -> Result<crate::model::OpenItem, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::identity().ok();
        crate::ssr::services()?.annotate.open(who, trial.into(), kind, filter).await
    })
    .await
}

/// Starts labelling an item: holds it for the caller for a while.
#[server(endpoint = "start_labelling")]
pub async fn start_labelling(trial: String, kind: String) -> Result<i64, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Annotator)?;
        crate::ssr::services()?.annotate.start(who, trial.into(), kind).await
    })
    .await
}

/// Records the caller's label of a disputed item; answers the next item to label.
#[server(endpoint = "save_label")]
pub async fn save_label(
    label: crate::model::NewLabel,
    #[server(default)] filter: crate::model::QueueFilter,
) -> Result<Option<String>, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Annotator)?;
        crate::ssr::services()?.annotate.label(who, label, false, filter).await
    })
    .await
}

/// Settles a label for good (annotators disagreed, or an operator overrules).
#[server(endpoint = "adjudicate")]
pub async fn adjudicate(
    label: crate::model::NewLabel,
    #[server(default)] filter: crate::model::QueueFilter,
) -> Result<Option<String>, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Operator)?;
        crate::ssr::services()?.annotate.label(who, label, true, filter).await
    })
    .await
}

/// Gives an opened item back to the queue.
#[server(endpoint = "release_item")]
pub async fn release_item(trial: String, kind: String) -> Result<(), AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Annotator)?;
        crate::ssr::services()?.annotate.release(who, trial.into(), kind).await
    })
    .await
}

/// Searches tasks and trajectories.
#[server(endpoint = "search")]
pub async fn search(query: String, kind: Option<String>) -> Result<crate::model::SearchResults, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.search.search(query, kind).await }).await
}

/// A trial's reasoning to grade (annotators and operators).
#[server(endpoint = "get_grade")]
pub async fn get_grade(trial: String) -> Result<crate::model::GradeView, AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Annotator)?;
        crate::ssr::services()?.annotate.grade_view(who, trial.into()).await
    })
    .await
}

/// Stores a person's grade of a trial's reasoning band and decision.
#[server(endpoint = "save_grade")]
pub async fn save_grade(grade: crate::model::NewGrade) -> Result<(), AppError> {
    crate::ssr::respond(async move {
        let who = crate::ssr::require(crate::model::Role::Annotator)?;
        crate::ssr::services()?.annotate.grade(who, grade).await
    })
    .await
}

#[server(endpoint = "get_geo")]
pub async fn get_geo(
    #[server(default)] run: Option<String>,
    #[server(default)] ranker: Option<String>,
    #[server(default)] method: Option<String>,
    #[server(default)] judge: Option<String>,
) -> Result<crate::model::GeoView, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.geo.board(run, ranker, method, judge).await }).await
}

#[server(endpoint = "get_geo_target")]
pub async fn get_geo_target(trial: String) -> Result<crate::model::GeoTargetView, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.geo.target(trial.into()).await }).await
}

/// Two runs or configurations (`RUN` or `RUN:CONFIG`) compared trial by trial.
#[server(endpoint = "get_compare")]
pub async fn get_compare(
    a: String,
    b: String,
    #[server(default)] as_of: Option<String>,
) -> Result<crate::model::Comparison, AppError> {
    crate::ssr::respond(async move { crate::ssr::services()?.compare.compare(a, b, as_of).await }).await
}
