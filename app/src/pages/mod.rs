//! Route components. Each page reads its state from the URL, so every view can be shared.

mod annotate;
mod annotate_item;
mod compare;
mod definitions;
mod geo;
mod geo_target;
mod grade;
mod home;
mod leaderboard;
mod origin;
mod plots;
mod replay;
mod report;
mod runs;
mod search;
mod task;
mod tasks;
mod team;
mod trajectory;

pub use annotate::AnnotatePage;
pub use annotate_item::AnnotateItemPage;
pub use compare::{ComparePage, CompareTrialsPage};
pub use definitions::DefinitionsPage;
pub use geo::GeoPage;
pub use geo_target::GeoTargetPage;
pub use grade::GradePage;
pub use home::HomePage;
pub use leaderboard::LeaderboardPage;
pub use plots::{HeatmapsPage, RobustnessPage};
pub use report::ReportPage;
pub use runs::{RunPage, RunsPage};
pub use search::SearchPage;
pub use task::TaskPage;
pub use tasks::TasksPage;
pub use team::TeamPage;
pub use trajectory::TrajectoryPage;

use leptos::prelude::*;
use leptos_meta::Title;

use crate::error::AppError;

/// What trial `trial` worked on, linked to its page where it has one (a Mirage task's page,
/// a GEO trial's ranking view); another harness's sample shows its id as it came, in a
/// `<code>` of class `class`.
pub fn task_cell(task: &crate::model::TaskRef, trial: &str, class: &'static str) -> AnyView {
    use leptos_router::components::A;
    let text = task.to_string();
    match crate::model::routes::task_of(task, trial) {
        Some(href) => view! { <A href=href>{text}</A> }.into_any(),
        None => view! { <code class=class>{text}</code> }.into_any(),
    }
}

/// The 404 page; sets the status during server rendering.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
        resp.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found"/>
        <h1>"Page not found"</h1>
        <p>"Nothing lives at this address. Try the " <a href="/tasks">"task list"</a> "."</p>
    }
}

/// Shows an error and, during server rendering, sets the matching status.
#[component]
#[expect(clippy::needless_pass_by_value, reason = "component props are passed by value")]
pub fn ErrorNotice(error: AppError) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
        resp.set_status(error.status());
    }
    view! { <p class="error" role="alert">{error.to_string()}</p> }
}

/// A resource's part of a page: `waiting` while it loads, its error as an [`ErrorNotice`]
/// (which sets the status), the waiting line muted, and `ready`'s view of its value. With `keep`, a reload keeps the
/// view shown until the new value arrives (a transition); without, it shows `waiting` again
/// (a suspense).
#[component]
pub fn Loading<T, F, V>(
    resource: Resource<Result<T, AppError>>,
    waiting: &'static str,
    ready: F,
    #[prop(optional)] keep: bool,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let body = move || {
        resource.get().map(|r| match r {
            Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
            Ok(v) => ready(v).into_any(),
        })
    };
    let fallback = move || view! { <p class="muted">{waiting}</p> };
    if keep {
        view! { <Transition fallback=fallback>{body}</Transition> }.into_any()
    } else {
        view! { <Suspense fallback=fallback>{body}</Suspense> }.into_any()
    }
}
