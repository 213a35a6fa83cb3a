//! `/tasks/:id`: one task with its tickets, surface and hidden layers, graph, gold facts,
//! verdict specification and injection points, and its trials over every run. Graph nodes
//! link to the live pages.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::Loading;
use crate::api::{get_task, list_task_trials};
use crate::model::{PageView, TaskDetail, TaskTrials};

#[component]
fn PageCard(page: PageView) -> impl IntoView {
    view! {
        <article class="page-card">
            <h3><a href=page.url.clone() rel="external">{page.title}</a></h3>
            <p class="url"><code>{page.url}</code></p>
            {(!page.facts.is_empty()).then(|| view! {
                <p class="facts">"Gold facts here: "
                    {page.facts.into_iter().map(|f| view! { <mark>{f}</mark>" " }).collect_view()}
                </p>
            })}
            <pre class="page-text">{page.text}</pre>
        </article>
    }
}

fn detail(t: TaskDetail) -> impl IntoView {
    let s = t.summary;
    view! {
        <Title text=s.id.clone()/>
        <h1>{s.id.clone()}</h1>
        <p class="badges">
            <span class="badge">{s.domain}</span>
            <span class="badge">{s.category}</span>
            <span class="badge">{s.difficulty}</span>
            <span class="badge">{s.variant.unwrap_or_else(|| "unspecified".into())}</span>
            <span class=if s.surface_contradiction { "badge warn" } else { "badge" }>
                {if s.surface_contradiction { "surface misleads" } else { "surface aligned" }}
            </span>
        </p>
        <section aria-labelledby="tickets"><h2 id="tickets">"Tickets"</h2>
            <dl class="tickets">
                {t.tickets.into_iter().map(|(c, text)| view! { <dt>{c}</dt><dd>{text}</dd> }).collect_view()}
            </dl>
        </section>
        <section aria-labelledby="verdict"><h2 id="verdict">"Verdict"</h2>
            <table class="kv"><tbody>
                <tr><th>"Optimal"</th><td>{s.optimal}</td></tr>
                <tr><th>"Acceptable"</th><td>{if t.acceptable.is_empty() { "none".to_string() } else { t.acceptable.iter().map(|(a, c)| format!("{a} ({c})")).collect::<Vec<_>>().join(", ") }}</td></tr>
                <tr><th>"Harmful"</th><td>{t.harmful.join(", ")}</td></tr>
            </tbody></table>
            <p class="justification">{t.justification}</p>
        </section>
        <section aria-labelledby="graph"><h2 id="graph">"Investigation graph"</h2>
            <ol class="graph">
                {t.graph.into_iter().map(|u| view! { <li><a href=u.clone() rel="external">{u.clone()}</a></li> }).collect_view()}
            </ol>
            <h3>"Gold facts"</h3>
            <ul>{t.gold_facts.into_iter().map(|(f, u)| view! { <li><mark>{f}</mark>" on "<code>{u}</code></li> }).collect_view()}</ul>
        </section>
        <section aria-labelledby="surface"><h2 id="surface">"Surface layer (start page)"</h2>
            <PageCard page=t.surface/>
        </section>
        <section aria-labelledby="hidden"><h2 id="hidden">"Hidden layer"</h2>
            {t.hidden.into_iter().map(|p| view! { <PageCard page=p/> }).collect_view()}
        </section>
        <section aria-labelledby="injection"><h2 id="injection">"Injection points"</h2>
            <table class="injections">
                <thead><tr><th>"Id"</th><th>"Party"</th><th>"Wants"</th><th>"Page"</th><th>"Text"</th></tr></thead>
                <tbody>
                    {t.injection_points.into_iter().map(|p| view! {
                        <tr><td>{p.id}</td><td>{p.party}</td><td>{p.goal}</td><td><code>{p.url}</code></td><td>{p.text}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <section aria-labelledby="distractors"><h2 id="distractors">"Distractors"</h2>
            {t.distractors.into_iter().map(|p| view! { <PageCard page=p/> }).collect_view()}
        </section>
    }
}

/// The task detail page.
#[component]
pub fn TaskPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let task = Resource::new(id, get_task);
    let trials = Resource::new(id, list_task_trials);
    view! {
        <p><a href="/tasks">"← all tasks"</a></p>
        <Loading resource=task waiting="Loading task…" keep=true ready=move |t| detail(t).into_any()/>
        <section aria-labelledby="trials"><h2 id="trials">"Trials of this task"</h2>
            <Loading resource=trials waiting="Loading trials…" keep=true ready=move |t| trial_table(t).into_any()/>
        </section>
    }
}

/// The task's trials over every run, each linking to its trajectory.
fn trial_table(t: TaskTrials) -> impl IntoView {
    if t.rows.is_empty() {
        return view! { <p class="muted">"No run has tried this task yet."</p> }.into_any();
    }
    let shown = if t.rows.len() < t.total {
        format!("The {} trials of the newest runs, of {} in all.", t.rows.len(), t.total)
    } else {
        format!("{} trials in all.", t.total)
    };
    view! {
        <p class="muted" data-testid="task-trials">{shown}</p>
        <table class="trials">
            <thead><tr><th>"Run"</th><th>"Trial"</th><th>"Agent"</th><th>"Level"</th><th>"Condition"</th><th>"Seed"</th><th>"State"</th><th>"Decision"</th></tr></thead>
            <tbody>
                {t.rows.into_iter().map(|r| view! {
                    <tr>
                        <td><a href=crate::model::routes::run_task(&r.run, &r.task.to_string())>{r.run.to_string()}</a></td>
                        <td><a href=crate::model::routes::trial(&r.run, &r.id, "")>{r.id.to_string()}</a></td>
                        <td>{r.agent}</td><td>{r.level.to_string()}</td><td>{r.condition.to_string()}</td><td class="num">{r.seed}</td>
                        <td><span class=format!("state state-{}", r.state)>{r.state.as_str()}</span></td>
                        <td>{r.decision.map(|d| view! { <span class=format!("chip decision-{d}")>{d.clone()}</span> })}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
