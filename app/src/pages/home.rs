//! The landing page: what Mirage holds, with counts per site.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::ErrorNotice;
use crate::api::list_tasks;
use crate::model::TaskFilter;

/// `/`: corpus counts per site and where to start.
#[component]
pub fn HomePage() -> impl IntoView {
    let list = Resource::new(|| (), |()| list_tasks(TaskFilter::default()));
    view! {
        <Title text=""/>
        <h1>"Mirage"</h1>
        <p class="lede">
            "An evaluation lab for web agents that must investigate before they decide. "
            "Each task shows a misleading surface; the evidence that settles it sits on other pages of a live site."
        </p>
        <Transition fallback=|| view! { <p>"Loading corpus…"</p> }>
            {move || list.get().map(|result| match result {
                Ok(l) => {
                    let counts: Vec<(&str, usize)> = ["shop", "forum", "wiki"]
                        .into_iter()
                        .map(|d| (d, l.categories.iter().filter(|(dom, _, _)| dom == d).map(|(_, _, n)| n).sum()))
                        .collect();
                    view! {
                        <section class="cards" aria-label="Corpus">
                            {counts.into_iter().map(|(d, n)| view! {
                                <A href=format!("/tasks?domain={d}") attr:class="card">
                                    <span class="card-number">{n}</span>
                                    <span class="card-label">{format!("{d} tasks")}</span>
                                </A>
                            }).collect_view()}
                        </section>
                        <p>{format!("{} tasks in the corpus.", l.corpus_size)}</p>
                    }.into_any()
                }
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
            })}
        </Transition>
    }
}
