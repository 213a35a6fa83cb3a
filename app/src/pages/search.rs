//! `/search?q=…&kind=…`: tasks, thoughts, rationales and observations; each result links
//! to its task or to the exact turn of its trajectory.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::{A, Form};

use super::Loading;
use crate::api::search;
use crate::components::query_param;
use crate::model::{SearchHit, TURN_PAGE};

fn href(h: &SearchHit) -> String {
    match (&h.run, &h.trial, h.turn) {
        (Some(run), Some(trial), Some(turn)) => crate::model::routes::trial_turn(run, trial, turn / TURN_PAGE, turn),
        _ => crate::model::routes::task(&h.task_id),
    }
}

/// `/search`.
#[component]
pub fn SearchPage() -> impl IntoView {
    let q = query_param("q");
    let kind = query_param("kind");
    let results = Resource::new(move || (q.get().unwrap_or_default(), kind.get()), |(q, k)| search(q, k));
    view! {
        <Title text="Search"/>
        <h1>"Search"</h1>
        <Form method="GET" action="/search" attr:class="filters">
            <label>"Words "<input type="search" name="q" value=move || q.get().unwrap_or_default() size="40"/></label>
            <label>"In "
                <select name="kind" prop:value=move || kind.get().unwrap_or_default()>
                    <option value="">"everything"</option>
                    {["task", "thought", "rationale", "observation"].map(|k| view! { <option value=k>{k}</option> })}
                </select>
            </label>
            <button type="submit">"Search"</button>
        </Form>
        <Loading resource=results waiting="Searching…" keep=true ready=move |r| view! {
            <p class="muted" data-testid="search-count">{format!(
                "{} results ({} trials indexed).", r.hits.len(), r.indexed_trials
            )}</p>
            <ol class="hits">
                {r.hits.into_iter().map(|h| {
                    let link = href(&h);
                    let place = match (&h.trial, h.turn) {
                        (Some(trial), Some(turn)) => format!("{} · {trial} · turn {turn}", h.task_id),
                        _ => h.task_id.clone(),
                    };
                    view! {
                        <li class=format!("hit hit-{}", h.kind)>
                            <span class="badge">{h.kind.clone()}</span>" "
                            <A href=link>{place}</A>
                            <p class="snippet">
                                {h.snippet.into_iter().map(|(text, hit)| if hit {
                                    view! { <mark>{text}</mark> }.into_any()
                                } else {
                                    view! { <span>{text}</span> }.into_any()
                                }).collect_view()}
                            </p>
                        </li>
                    }
                }).collect_view()}
            </ol>
        }.into_any()/>
    }
}
