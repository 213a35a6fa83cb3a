//! `/annotate`: the queue of disputed labels of a run and of its audit sample (conflicts first, then recovery,
//! adoption, exposure, verification), filtered by label, configuration, level, task and
//! state, with agreement between people and with the automatic labels. One item's page is
//! in [`super::annotate_item`].

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use super::Loading;
use crate::api::get_queue;
use crate::components::{PendingLine, RunPicker, fmt3, query_param};
use crate::model::{AgreementRow, MIN_AGREEMENT_N, QUEUE_STATES, QueueFilter, QueueItem, Vote};

pub(super) fn yes_no(v: bool) -> &'static str {
    if v { "yes" } else { "no" }
}

/// One label as given, with its time; `counted` is false for a later label by someone who
/// had labelled the item already (kept in the history, not counted).
pub(super) fn vote_line(v: &Vote, counted: bool) -> String {
    let turn = v.turn.map(|t| format!(" at turn {t}")).unwrap_or_default();
    let what = if v.source == "adjudication" { "adjudicated" } else { "labelled" };
    let note = if v.note.is_empty() { String::new() } else { format!(": {}", v.note) };
    let late = if counted { "" } else { " (not counted: only a person's first label counts)" };
    format!("{} {what} {}{turn} on {}{late}{note}", v.author, yes_no(v.value), crate::model::utc_second(v.at))
}

pub(super) fn automatic_line(i: &QueueItem) -> String {
    match i.value {
        Some(v) => format!("{} ({}, confidence {:.2})", yes_no(v), i.source, i.confidence),
        None => "hidden until you label it (labels are blind)".to_string(),
    }
}

/// The queue filter in the page's query.
pub(super) fn filter_of_query() -> Memo<QueueFilter> {
    let q = use_query_map();
    Memo::new(move |_| {
        let q = q.read();
        let get = |k: &str| q.get(k).unwrap_or_default();
        QueueFilter {
            kind: get("kind"),
            agent: get("agent"),
            level: get("level"),
            task: get("task"),
            state: get("state"),
        }
    })
}

pub(super) fn queue_href(run: &str, filter: &QueueFilter, page: Option<usize>) -> String {
    let mut pairs = vec![("run", Some(run.to_string()))];
    pairs.extend(filter.pairs());
    pairs.push(("page", page.filter(|p| *p > 0).map(|p| p.to_string())));
    crate::model::routes::annotate_queue(&pairs)
}

/// A `<select>` of the filter: "any" and each value with its number of items.
fn choice(name: &'static str, label: &'static str, current: &str, values: Vec<(String, String, usize)>) -> AnyView {
    let current = current.to_string();
    view! {
        <label class="field inline">
            <span>{label}</span>
            <select name=name>
                <option value="" selected=current.is_empty()>"any"</option>
                {values.into_iter().map(|(value, shown, n)| {
                    let selected = value == current;
                    view! { <option value=value selected=selected>{format!("{shown} ({n})")}</option> }
                }).collect_view()}
            </select>
        </label>
    }
    .into_any()
}

/// κ with its interval, raw agreement and n, or why there is no κ.
fn agreement_rows(rows: Vec<AgreementRow>) -> AnyView {
    view! {
        <tbody>
            {rows.into_iter().map(|a| {
                let kappa = if a.n < MIN_AGREEMENT_N {
                    format!("too few: n = {} of the {MIN_AGREEMENT_N} needed", a.n)
                } else {
                    match (a.kappa, a.lo, a.hi) {
                        (Some(k), Some(lo), Some(hi)) => format!("{} [{}, {}]", fmt3(k), fmt3(lo), fmt3(hi)),
                        (Some(k), _, _) => fmt3(k),
                        (None, _, _) => "undefined".to_string(),
                    }
                };
                view! {
                    <tr>
                        <td>{a.kind.as_str()}</td>
                        <td class="num">{a.n}</td>
                        <td class="num">{a.raw.map(fmt3).unwrap_or_else(|| "–".into())}</td>
                        <td class="num kappa">{kappa}</td>
                        <td class="muted">{a.note.unwrap_or_default()}</td>
                    </tr>
                }
            }).collect_view()}
        </tbody>
    }
    .into_any()
}

fn agreement_table(caption: &'static str, class: &'static str, rows: Vec<AgreementRow>) -> AnyView {
    view! {
        <table class=format!("agreement {class}")>
            <caption>{caption}</caption>
            <thead><tr><th>"Label"</th><th>"n"</th><th>"Raw agreement"</th><th>"Cohen's κ [95 % interval]"</th><th>"Note"</th></tr></thead>
            {agreement_rows(rows)}
        </table>
    }
    .into_any()
}

fn status_badges(i: &QueueItem) -> AnyView {
    view! {
        {i.conflict.then(|| view! { <span class="badge warn">"conflict: needs adjudication"</span> })}
        {i.audit.then(|| view! { <span class="badge audit" title="Not disputed: drawn at random so that the graders are measured over the whole run">"audit sample"</span> })}
        {i.mine.map(|v| view! { <span class="badge mine">{format!("you: {}", yes_no(v))}</span> })}
        {i.locked_by.clone().map(|(who, _)| view! { <span class="badge">{format!("{who} is labelling it")}</span> })}
    }
    .into_any()
}

/// `/annotate`.
#[component]
pub fn AnnotatePage() -> impl IntoView {
    let run = query_param("run");
    let page = query_param("page");
    let filter = filter_of_query();
    let queue = Resource::new(
        move || (run.get(), page.get().and_then(|p| p.parse::<usize>().ok()), filter.get()),
        |(run, page, filter)| get_queue(run, page, filter),
    );
    let refetch = Callback::new(move |()| queue.refetch());
    view! {
        <Title text="Annotate"/>
        <h1>"Disputed labels"</h1>
        <Loading resource=queue waiting="Loading the queue…" keep=true ready=move |q| {
            let picker = Callback::new(|run: String| crate::model::routes::annotate(&run));
            let f = q.filter.clone();
            let states: Vec<(String, String, usize)> = QUEUE_STATES
                .iter()
                .map(|(k, words)| {
                    let n = q.states.iter().find(|(s, _)| s == k).map_or(0, |(_, n)| *n);
                    ((*k).to_string(), (*words).to_string(), n)
                })
                .collect();
            let plain = |v: &[(String, usize)]| v.iter().map(|(k, n)| (k.clone(), k.clone(), *n)).collect::<Vec<_>>();
            view! {
                <div class="controls"><RunPicker runs=q.runs.clone() current=q.run.clone() href=picker/></div>
                <PendingLine pending=q.pending.clone() refetch=refetch/>
                <p data-testid="queue-count">{format!(
                    "{} labels wait for people ({} in the whole queue); {} settled so far in this run, from {} labels by people.",
                    q.total, q.unfiltered, q.settled, q.people_labels
                )}</p>
                <p class="muted" data-testid="queue-rule">{format!(
                    "Each label here needs {} people who agree; you label blind (the automatic label and other people's labels show once you have given yours); when people disagree, an operator adjudicates. Besides the disputed labels, one undisputed label in twenty is drawn at random (the audit sample): it is how the graders' precision and recall are measured over the whole run.",
                    q.needed
                )}</p>
                <form class="filters" method="get" action="/annotate" aria-label="Filter the queue">
                    <input type="hidden" name="run" value=q.run.to_string()/>
                    {choice("kind", "Label", &f.kind, plain(&q.kinds))}
                    {choice("agent", "Configuration", &f.agent, plain(&q.agents))}
                    {choice("level", "Level", &f.level, plain(&q.levels))}
                    {choice("state", "State", &f.state, states)}
                    <label class="field inline"><span>"Task"</span><input name="task" value=f.task.clone() placeholder="task id"/></label>
                    <button type="submit">"Filter"</button>
                    <A href=crate::model::routes::annotate(&q.run)>"clear"</A>
                </form>
                {(q.pages > 1).then(|| {
                    let (run, f) = (q.run.clone(), q.filter.clone());
                    let href = move |p: usize| queue_href(&run, &f, Some(p));
                    view! {
                        <nav class="pager" aria-label="Queue pages">
                            {(q.page > 0).then(|| view! { <A href=href(q.page - 1)>"← previous"</A> })}
                            <span>{format!(" page {} of {} ", q.page + 1, q.pages)}</span>
                            {(q.page + 1 < q.pages).then(|| view! { <A href=href(q.page + 1)>"next →"</A> })}
                        </nav>
                    }
                })}
                {queue_table(q.items, &q.filter)}
                <h2>"Agreement"</h2>
                <p class="muted">{format!(
                    "Cohen's κ with a 95 % t interval over items (from 20 items), shown from n = {MIN_AGREEMENT_N}; raw agreement is the share of compared labels that agree. κ is undefined when every label was one and the same value."
                )}</p>
                {agreement_table("Automatic labels against people's settled labels", "judge-people", q.agreement)}
                {agreement_table("Annotator against annotator (each pair of people on an item both labelled)", "people-people", q.annotators)}
                <h2>"How people's labels moved the numbers"</h2>
                {effects_table(q.effects)}
                <p><A href=crate::model::routes::leaderboard(&q.run)>"See the leaderboard with people's labels applied"</A></p>
            }.into_any()
        }/>
    }
}

/// The queue's items, each a link to label it.
fn queue_table(items: Vec<QueueItem>, filter: &QueueFilter) -> impl IntoView + use<> {
    view! {
        <div class="table-box">
        <table class="queue">
            <thead><tr><th>"Label"</th><th>"Trial"</th><th>"Task"</th><th>"Agent"</th><th>"Level"</th><th>"People"</th><th>"Automatic"</th><th>"Status"</th></tr></thead>
            <tbody>
                {items.into_iter().map(|i| {
                    let href = crate::model::item_href(&i.trial_id, i.kind, filter);
                    let (kind, trial_href) = (i.kind.as_str(), crate::model::routes::trial(&i.run, &i.trial_id, ""));
                    let (trial, status, automatic) = (i.trial_id.to_string(), status_badges(&i), automatic_line(&i));
                    view! {
                        <tr class:conflict=i.conflict data-kind=i.kind.as_str() data-trial=i.trial_id.to_string()>
                            <td><A href=href attr:class="open-item">{kind}</A></td>
                            <td><A href=trial_href>{trial}</A></td>
                            <td>{i.task.to_string()}</td>
                            <td>{i.agent.clone()}</td><td>{i.level.to_string()}</td>
                            <td class="num people">{format!("{} of {}", i.labels, i.needed)}</td>
                            <td>{automatic}</td>
                            <td>{status}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        </div>
    }
}

/// Each mean that people's settled labels changed, before and after.
fn effects_table(effects: Vec<(String, String, f64, f64)>) -> AnyView {
    if effects.is_empty() {
        view! { <p class="muted">"No settled label has changed a mean yet."</p> }.into_any()
    } else {
        view! {
            <table class="effects">
                <thead><tr><th>"Configuration"</th><th>"Metric"</th><th>"Automatic labels only"</th><th>"With people's labels"</th></tr></thead>
                <tbody>
                    {effects.into_iter().map(|(agent, metric, before, after)| view! {
                        <tr><td>{agent}</td><td>{metric}</td><td class="num">{fmt3(before)}</td><td class="num">{fmt3(after)}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        }.into_any()
    }
}
