//! The landing page: a quick baseline run to start with, the latest runs and the top of the
//! latest leaderboard, the corpus per site, and where to read on.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use super::{ErrorNotice, Loading};
use crate::api::{StartRun, corpus_counts, get_home_board, list_runs};
use crate::components::{EstCell, PendingLine};
use crate::model::NewRun;

/// Runs shown on the home page.
const RECENT: usize = 5;
/// Leaderboard rows and metric columns shown on the home page.
const TOP_ROWS: usize = 3;
const TOP_COLUMNS: usize = 3;

/// `/`: where to start.
#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text=""/>
        <h1>"Mirage"</h1>
        <p class="lede">
            "An evaluation lab for web agents that must investigate before they decide. "
            "Each task shows a misleading surface; the evidence that settles it sits on other pages of a live site."
        </p>
        <QuickStart/>
        <RecentRuns/>
        <TopOfBoard/>
        <Corpus/>
    }
}

/// One button that launches the quick baseline run, and links onward.
#[component]
fn QuickStart() -> impl IntoView {
    let start = ServerAction::<StartRun>::new();
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(id)) = start.value().get() {
            navigate(&crate::model::routes::run(&id), Default::default());
        }
    });
    view! {
        <section class="start" aria-label="Start here">
            <h2>"Start here"</h2>
            <button class="primary quick-run" disabled=move || start.pending().get()
                on:click=move |_| { start.dispatch(StartRun { form: NewRun::quick() }); }>
                {move || if start.pending().get() { "Launching…" } else { "Run a quick baseline" }}
            </button>
            <p class="help">
                "Three baseline agents (surface, explorer, oracle) on the 20 wardrobing tasks of the shop, clean "
                "and at manipulation level L1: 120 trials that finish in seconds. You land on the run's page."
            </p>
            {move || match start.value().get() {
                Some(Err(e)) => Some(view! { <ErrorNotice error=e/> }),
                _ => None,
            }}
            <ul class="onward">
                <li><A href="/runs">"Launch your own run"</A>" — tasks, agents, levels, seeds"</li>
                <li><A href="/definitions">"Definitions"</A>" — every metric and label"</li>
                <li><a href="/book" rel="external">"The book"</a>" — concepts, the GEO track, configuration, deployment"</li>
            </ul>
        </section>
    }
}

/// The newest runs with their state.
#[component]
fn RecentRuns() -> impl IntoView {
    let runs = Resource::new(|| (), |()| list_runs());
    view! {
        <section class="recent" aria-label="Recent runs">
            <h2>"Recent runs"</h2>
            <Loading resource=runs waiting="Loading runs…" keep=true ready=move |list| match list {
                    list if Vec::is_empty(&list) => view! {
                        <p class="muted">"No runs yet: the button above starts one."</p>
                    }.into_any(),
                    list => view! {
                        <table class="report recent-runs">
                            <thead><tr><th>"run"</th><th>"agents"</th><th>"levels"</th><th>"state"</th><th>"done"</th></tr></thead>
                            <tbody>
                                {list.into_iter().take(RECENT).map(|r| view! {
                                    <tr>
                                        <td><A href=crate::model::routes::run(&r.id)>{r.id.to_string()}</A></td>
                                        <td>{r.agents.join(", ")}</td>
                                        <td>{r.levels.join(", ")}</td>
                                        <td>{r.progress.status.as_str()}</td>
                                        <td class="num">{format!("{:.0} %", r.progress.percent())}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                        <p><A href="/runs">"Every run"</A></p>
                    }.into_any(),
            }/>
        </section>
    }
}

/// The top rows of the latest run's leaderboard.
#[component]
fn TopOfBoard() -> impl IntoView {
    let board = Resource::new(|| (), |()| get_home_board());
    let refetch = Callback::new(move |()| board.refetch());
    view! {
        <section class="top" aria-label="Leaderboard">
            <h2>"Leaderboard"</h2>
            <Loading resource=board waiting="Loading the leaderboard…" keep=true ready=move |result| match result {
                    Some(b) if b.rows.is_empty() => view! {
                        <PendingLine pending=b.pending.clone() refetch=refetch/>
                        <p class="muted">{format!("Run {}: no scores yet.", b.run)}</p>
                    }.into_any(),
                    Some(b) => {
                        let columns: Vec<String> = b.columns.iter().take(TOP_COLUMNS).cloned().collect();
                        let rows: Vec<_> = b.rows.iter().take(TOP_ROWS).cloned().collect();
                        view! {
                            <PendingLine pending=b.pending.clone() refetch=refetch/>
                            <table class="report top-rows">
                                <caption>{format!("Run {} ({} decisions)", b.run, b.tier)}</caption>
                                <thead><tr>
                                    <th>"configuration"</th><th>"trials"</th>
                                    {columns.iter().map(|c| view! { <th>{c.clone()}</th> }).collect_view()}
                                </tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|r| {
                                        let cells: Vec<_> = columns.iter().map(|c| r.cells.get(c).copied().flatten()).collect();
                                        view! {
                                            <tr>
                                                <td>{r.agent.clone()}</td>
                                                <td class="num">{if r.errors > 0 {
                                                    format!("{} ({} failed)", r.trials, r.errors)
                                                } else {
                                                    r.trials.to_string()
                                                }}</td>
                                                {cells.into_iter().map(|e| view! { <EstCell est=e/> }).collect_view()}
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                            <p><A href=crate::model::routes::leaderboard(&b.run)>"The full leaderboard"</A>" · "
                               <A href=crate::model::routes::robustness(&b.run)>"Robustness plot"</A></p>
                        }.into_any()
                    }
                    None => view! {
                        <p class="muted">"No run has finished trials yet."</p>
                    }.into_any(),
            }/>
        </section>
    }
}

/// The corpus per site.
#[component]
fn Corpus() -> impl IntoView {
    let list = Resource::new(|| (), |()| corpus_counts());
    view! {
        <Loading resource=list waiting="Loading corpus…" keep=true ready=move |l| {
            let counts: Vec<(&str, usize)> = ["shop", "forum", "wiki"]
                .into_iter()
                .map(|d| (d, l.categories.iter().filter(|(dom, _, _)| dom == d).map(|(_, _, n)| n).sum()))
                .collect();
            view! {
                <section class="cards" aria-label="Corpus">
                    {counts.into_iter().map(|(d, n)| view! {
                        <A href=crate::model::routes::tasks(&[("domain", Some(d.to_string()))]) attr:class="card">
                            <span class="card-number">{n}</span>
                            <span class="card-label">{format!("{d} tasks")}</span>
                        </A>
                    }).collect_view()}
                </section>
                <p>{format!("{} tasks in the corpus.", l.corpus_size)}</p>
            }.into_any()
        }/>
    }
}
