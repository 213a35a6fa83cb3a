//! `/tasks`: the corpus, filterable by site, category, difficulty and surface contradiction.
//!
//! Filters live in the URL query. Without JavaScript the form submits with GET; after
//! hydration each change navigates on the client and refetches only the list.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};

use super::Loading;
use crate::api::list_tasks;
use crate::model::{TaskFilter, TaskList};

/// The task filter as the tasks page's query pairs.
fn filter_pairs(f: &TaskFilter) -> [(&'static str, Option<String>); 4] {
    [
        ("domain", f.domain.clone()),
        ("category", f.category.clone()),
        ("difficulty", f.difficulty.clone()),
        ("contradiction", f.contradiction.map(|b| b.to_string())),
    ]
}

/// The filterable task table.
#[component]
pub fn TasksPage() -> impl IntoView {
    let query = use_query_map();
    let filter = Memo::new(move |_| {
        let q = query.read();
        let get = |k: &str| q.get(k).filter(|v| !v.is_empty());
        TaskFilter {
            domain: get("domain"),
            category: get("category"),
            difficulty: get("difficulty"),
            contradiction: get("contradiction").and_then(|v| v.parse().ok()),
        }
    });
    let list = Resource::new(move || filter.get(), list_tasks);
    let navigate = use_navigate();
    let set = move |key: &'static str, value: String| {
        let mut f = filter.get_untracked();
        let v = Some(value).filter(|v| !v.is_empty());
        match key {
            "domain" => {
                f.domain = v;
                f.category = None;
            }
            "category" => f.category = v,
            "difficulty" => f.difficulty = v,
            _ => f.contradiction = v.and_then(|v| v.parse().ok()),
        }
        navigate(&crate::model::routes::tasks(&filter_pairs(&f)), Default::default());
    };
    let on = move |key: &'static str| {
        let set = set.clone();
        move |ev: leptos::ev::Event| set(key, event_target_value(&ev))
    };

    view! {
        <Title text="Tasks"/>
        <h1>"Tasks"</h1>
        <form class="filters" method="get" action="/tasks">
            {fixed_select("Site ", "domain", SITES, move || filter.get().domain.unwrap_or_default(), on("domain"))}
            <label>"Category "
                <select name="category" on:change=on("category") prop:value=move || filter.get().category.unwrap_or_default()>
                    <option value="">"all"</option>
                    <Transition>
                        {move || list.get().and_then(Result::ok).map(|l| {
                            let domain = filter.get().domain;
                            let selected = filter.get().category.unwrap_or_default();
                            l.categories.into_iter()
                                .filter(|(d, _, _)| domain.as_deref().is_none_or(|want| want == d))
                                .map(|(d, c, n)| {
                                    let is_selected = c == selected;
                                    view! { <option value=c.clone() selected=is_selected>{format!("{c} ({d}, {n})")}</option> }
                                })
                                .collect_view()
                        })}
                    </Transition>
                </select>
            </label>
            {fixed_select("Difficulty ", "difficulty", DIFFICULTIES, move || filter.get().difficulty.unwrap_or_default(), on("difficulty"))}
            {fixed_select("Surface ", "contradiction", SURFACES, move || filter.get().contradiction.map(|b| b.to_string()).unwrap_or_default(), on("contradiction"))}
            <noscript><button type="submit">"Apply"</button></noscript>
        </form>
        <Loading resource=list waiting="Loading tasks…" keep=true ready=move |l| task_table(l).into_any()/>
    }
}

const SITES: &[(&str, &str)] = &[("", "all"), ("shop", "shop"), ("forum", "forum"), ("wiki", "wiki")];
const DIFFICULTIES: &[(&str, &str)] = &[("", "all"), ("easy", "easy"), ("medium", "medium"), ("hard", "hard")];
const SURFACES: &[(&str, &str)] = &[("", "any"), ("true", "misleading (contradiction)"), ("false", "aligned")];

/// A select of the tasks filter over fixed choices (value, text); `on_change` navigates to
/// the new filter.
fn fixed_select(
    label: &'static str,
    name: &'static str,
    choices: &'static [(&'static str, &'static str)],
    current: impl Fn() -> String + Send + Sync + 'static,
    on_change: impl FnMut(leptos::ev::Event) + 'static,
) -> impl IntoView {
    view! {
        <label>{label}
            <select name=name on:change=on_change prop:value=current>
                {choices.iter().map(|(value, text)| view! { <option value=*value>{*text}</option> }).collect_view()}
            </select>
        </label>
    }
}

/// The listed tasks, with how many of the corpus the filter kept.
fn task_table(l: TaskList) -> impl IntoView {
    view! {
        <p class="count" data-testid="task-count">{format!("{} of {} tasks", l.tasks.len(), l.corpus_size)}</p>
        <table class="tasks">
            <thead><tr>
                <th>"Task"</th><th>"Site"</th><th>"Category"</th><th>"Difficulty"</th>
                <th>"Surface"</th><th>"Optimal"</th><th>"Graph"</th><th>"Ticket (raw)"</th>
            </tr></thead>
            <tbody>
                {l.tasks.into_iter().map(|t| view! {
                    <tr>
                        <td><A href=crate::model::routes::task(&t.id)>{t.id.clone()}</A></td>
                        <td>{t.domain}</td>
                        <td>{t.category}</td>
                        <td>{t.difficulty}</td>
                        <td>{if t.surface_contradiction { "misleading" } else { "aligned" }}</td>
                        <td>{t.optimal}</td>
                        <td>{t.graph_size}</td>
                        <td class="ticket">{t.ticket}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_string_skips_empty_filters_and_encodes_values() {
        assert_eq!(crate::model::routes::tasks(&filter_pairs(&TaskFilter::default())), "/tasks");
        let f = TaskFilter {
            domain: Some("shop".into()),
            category: Some("A B".into()),
            difficulty: None,
            contradiction: Some(true),
        };
        assert_eq!(
            crate::model::routes::tasks(&filter_pairs(&f)),
            "/tasks?domain=shop&category=A%20B&contradiction=true"
        );
    }
}
