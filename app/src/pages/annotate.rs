//! `/annotate`: the queue of disputed labels of a run and of its audit sample (conflicts first, then recovery,
//! adoption, exposure, verification), filtered by label, configuration, level, task and
//! state, with agreement between people and with the automatic labels;
//! `/annotate/:trial/:kind`: one item, readable by anyone, labelled blind after "Start
//! labelling" (which holds it for a while). Keys on an item: `y`/`n` choose, `j`/`k` move
//! between turns, `]`/`[` next and previous item.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use super::ErrorNotice;
use super::trajectory::Turn;
use crate::api::{Adjudicate, ReleaseItem, SaveLabel, StartLabelling, get_queue, get_trajectory, open_item};
use crate::components::{PendingLine, RunPicker, fmt3, query_param, query_string};
use crate::error::AppError;
use crate::model::{
    AgreementRow, MIN_AGREEMENT_N, NewLabel, OpenItem, QUEUE_STATES, QueueFilter, QueueItem, TURN_PAGE, Vote,
};

fn yes_no(v: bool) -> &'static str {
    if v { "yes" } else { "no" }
}

fn vote_line(v: &Vote) -> String {
    let turn = v.turn.map(|t| format!(" at turn {t}")).unwrap_or_default();
    let what = if v.source == "adjudication" { "adjudicated" } else { "labelled" };
    let note = if v.note.is_empty() { String::new() } else { format!(": {}", v.note) };
    format!("{} {what} {}{turn}{note}", v.author, yes_no(v.value))
}

fn automatic_line(i: &QueueItem) -> String {
    match i.value {
        Some(v) => format!("{} ({}, confidence {:.2})", yes_no(v), i.source, i.confidence),
        None => "hidden until you label it (labels are blind)".to_string(),
    }
}

/// The queue filter in the page's query.
fn filter_of_query() -> Memo<QueueFilter> {
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

fn queue_href(run: &str, filter: &QueueFilter, page: Option<usize>) -> String {
    let mut pairs = vec![("run", Some(run.to_string()))];
    pairs.extend(filter.pairs());
    pairs.push(("page", page.filter(|p| *p > 0).map(|p| p.to_string())));
    format!("/annotate{}", query_string(&pairs))
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
                        <td>{a.kind}</td>
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
        <Transition fallback=|| view! { <p>"Loading the queue…"</p> }>
            {move || queue.get().map(|q| match q {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(q) => {
                    let picker = Callback::new(|run: String| format!("/annotate{}", query_string(&[("run", Some(run))])));
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
                            <input type="hidden" name="run" value=q.run.clone()/>
                            {choice("kind", "Label", &f.kind, plain(&q.kinds))}
                            {choice("agent", "Configuration", &f.agent, plain(&q.agents))}
                            {choice("level", "Level", &f.level, plain(&q.levels))}
                            {choice("state", "State", &f.state, states)}
                            <label class="field inline"><span>"Task"</span><input name="task" value=f.task.clone() placeholder="task id"/></label>
                            <button type="submit">"Filter"</button>
                            <A href=format!("/annotate?run={}", q.run)>"clear"</A>
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
                            "Cohen's κ with a 95 % bootstrap interval over items, shown from n = {MIN_AGREEMENT_N}; raw agreement is the share of compared labels that agree. κ is undefined when every label was one and the same value."
                        )}</p>
                        {agreement_table("Automatic labels against people's settled labels", "judge-people", q.agreement)}
                        {agreement_table("Annotator against annotator (each pair of people on an item both labelled)", "people-people", q.annotators)}
                        <h2>"How people's labels moved the numbers"</h2>
                        {effects_table(q.effects)}
                        <p><A href=format!("/leaderboard?run={}", q.run)>"See the leaderboard with people's labels applied"</A></p>
                    }.into_any()
                }
            })}
        </Transition>
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
                    let href = crate::model::item_href(&i.trial_id, &i.kind, filter);
                    let (kind, trial_href) = (i.kind.clone(), format!("/runs/{}/trials/{}", i.run, i.trial_id));
                    let (trial, status, automatic) = (i.trial_id.clone(), status_badges(&i), automatic_line(&i));
                    view! {
                        <tr class:conflict=i.conflict data-kind=i.kind.clone() data-trial=i.trial_id.clone()>
                            <td><A href=href attr:class="open-item">{kind}</A></td>
                            <td><A href=trial_href>{trial}</A></td>
                            <td>{i.task_id.clone()}</td>
                            <td>{i.agent.clone()}</td><td>{i.level.clone()}</td>
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

/// The item's context: question, automatic label (unless blind), people's labels, lock.
fn context(o: &OpenItem) -> AnyView {
    let i = &o.item;
    let people = if i.blind {
        format!("{} of {} people have labelled it (hidden until you label it)", i.labels, i.needed)
    } else if i.votes.is_empty() {
        format!("nobody yet; {} must agree", i.needed)
    } else {
        format!("{} of {} needed", i.labels, i.needed)
    };
    let lock = match (&i.locked_by, o.mine_until) {
        (_, Some(_)) => format!("You are labelling it (held for you for {} minutes from the start).", o.lock_minutes),
        (Some((who, _)), None) => format!("{who} is labelling it."),
        (None, None) => "Nobody is labelling it.".to_string(),
    };
    let (task, votes) = (i.task_id.clone(), i.votes.clone());
    view! {
        <table class="kv"><tbody>
            <tr><th>"Task"</th><td><A href=format!("/tasks/{task}")>{task.clone()}</A></td></tr>
            <tr><th>"Configuration, level"</th><td>{format!("{}, {}", i.agent, i.level)}</td></tr>
            <tr><th>"Automatic label"</th><td data-testid="automatic">{automatic_line(i)}</td></tr>
            {i.reason.clone().map(|r| view! { <tr><th>"Its reason"</th><td>{r}</td></tr> })}
            <tr><th>"Turn to look at"</th><td>{i.turn.map(|t| t.to_string()).unwrap_or_else(|| "–".into())}</td></tr>
            {i.second_opinion.clone().map(|(v, r)| view! { <tr><th>"Model judge"</th><td>{format!("{}: {r}", yes_no(v))}</td></tr> })}
            <tr><th>"People"</th><td data-testid="people">{people}</td></tr>
            <tr><th>"Lock"</th><td data-testid="lock">{lock}</td></tr>
        </tbody></table>
        {(!votes.is_empty()).then(|| view! {
            <ul class="votes" aria-label="People's labels">
                {votes.into_iter().map(|v| view! { <li data-source=v.source.clone()>{vote_line(&v)}</li> }).collect_view()}
            </ul>
        })}
    }
    .into_any()
}

/// `/annotate/:trial/:kind`. Its length is the label form: its fields, buttons and error
/// lines share the page's four actions and five signals, which a component of their own
/// would take as a dozen props.
#[component]
pub fn AnnotateItemPage() -> impl IntoView {
    let params = use_params_map();
    let filter = filter_of_query();
    let key = Memo::new(move |_| {
        let p = params.read();
        (p.get("trial").unwrap_or_default(), p.get("kind").unwrap_or_default())
    });
    let start = ServerAction::<StartLabelling>::new();
    let save = ServerAction::<SaveLabel>::new();
    let adjudicate = ServerAction::<Adjudicate>::new();
    let release = ServerAction::<ReleaseItem>::new();
    let opened = Resource::new(
        move || (key.get(), filter.get(), start.version().get(), release.version().get()),
        |((trial, kind), filter, _, _)| open_item(trial, kind, filter),
    );
    let turns = Resource::new(
        move || (key.get().0, opened.get().and_then(Result::ok).and_then(|o| o.item.turn)),
        |(trial, turn)| get_trajectory(trial, turn.map_or(0, |t| t / TURN_PAGE), crate::model::TrialQuery::default()),
    );
    provide_context(super::trajectory::AllOpen(RwSignal::new(None)));
    let value = RwSignal::new(String::new());
    let turn = RwSignal::new(String::new());
    let note = RwSignal::new(String::new());
    // Where to go after a save: the next item ("Save and next") or the queue.
    let and_next = RwSignal::new(false);
    let navigate = use_navigate();
    let queue =
        Memo::new(move |_| opened.get().and_then(Result::ok).map(|o| queue_href(&o.item.run, &filter.get(), None)));
    {
        let navigate = navigate.clone();
        Effect::new(move |_| {
            let next = match (save.value().get(), adjudicate.value().get()) {
                (Some(Ok(next)), _) | (_, Some(Ok(next))) => Some(next),
                _ => None,
            };
            let gone = matches!(release.value().get(), Some(Ok(())));
            let target = match next {
                Some(Some(href)) if and_next.get_untracked() => Some(href),
                Some(_) => queue.get_untracked(),
                None if gone => None,
                None => return,
            };
            if let Some(href) = target {
                value.set(String::new());
                note.set(String::new());
                turn.set(String::new());
                navigate(&href, Default::default());
            }
        });
    }
    let failure = move || {
        [
            start.value().get().and_then(Result::err),
            save.value().get().and_then(Result::err),
            adjudicate.value().get().and_then(Result::err),
            release.value().get().and_then(Result::err),
        ]
        .into_iter()
        .flatten()
        .next()
    };
    let field_error = move |field: &'static str| {
        move || match failure() {
            Some(AppError::Invalid { field: f, message }) if f == field => Some(message),
            _ => None,
        }
    };
    // Only the latest action's error is shown: clear the others' before each dispatch.
    let clear = move || {
        start.value().set(None);
        save.value().set(None);
        adjudicate.value().set(None);
        release.value().set(None);
    };
    let label = move || {
        clear();
        let (trial, kind) = key.get_untracked();
        NewLabel {
            trial: trial.into(),
            kind,
            value: value.get_untracked(),
            turn: turn.get_untracked(),
            note: note.get_untracked(),
        }
    };
    let current = move || opened.get().and_then(Result::ok);
    let labelling = Signal::derive(move || current().is_some_and(|o| o.can_label && o.mine_until.is_some()));

    #[cfg(feature = "hydrate")]
    item_keys(opened, turns, value, turn, labelling);

    view! {
        <Title text="Annotate"/>
        <ItemHeader opened=opened queue=queue/>
        <form class="launch annotate-form" on:submit=|ev| ev.prevent_default() aria-label="Your label">
            <h2>"Your label"</h2>
            <Transition>
                {move || current().map(|o| {
                    let why = o.why_not.clone();
                    let mine = o.item.mine.map(|v| format!("You labelled it {}; a new label of yours replaces it.", yes_no(v)));
                    view! {
                        {why.map(|w| view! { <p class="why-not" data-testid="why-not">{format!("You cannot label it now: {w}.")}</p> })}
                        {mine.map(|m| view! { <p class="muted">{m}</p> })}
                        <p class="muted">{if o.can_adjudicate {
                            "As an operator you see the automatic label and everyone's labels, so your label is not blind: \
                             it is an adjudication, which settles the item for good.".to_string()
                        } else {
                            format!(
                                "Your label counts once. It settles the item when {} people agree; if anyone disagrees, an operator adjudicates.",
                                o.item.needed
                            )
                        }}</p>
                        {(o.can_label && o.mine_until.is_none()).then(|| view! {
                            <button type="button" class="start" on:click=move |_| {
                                clear();
                                let (trial, kind) = key.get_untracked();
                                start.dispatch(StartLabelling { trial, kind });
                            }>{format!("Start labelling (holds it for you for {} minutes)", o.lock_minutes)}</button>
                        })}
                    }
                })}
            </Transition>
            <Transition>
            <fieldset class="label-fields" disabled=move || !labelling.get()>
                <fieldset class="field">
                    <legend>"Value"</legend>
                    <label><input type="radio" name="value" value="yes" prop:checked=move || value.get() == "yes" on:change=move |_| value.set("yes".into())/>" yes"</label>
                    <label><input type="radio" name="value" value="no" prop:checked=move || value.get() == "no" on:change=move |_| value.set("no".into())/>" no"</label>
                    <span class="field-error" role="alert">{field_error("value")}</span>
                </fieldset>
                <div class="field">
                    <label for="label-turn">"Turn (optional)"</label>
                    <input id="label-turn" name="turn" prop:value=move || turn.get() on:input=move |ev| turn.set(event_target_value(&ev))/>
                    <span class="field-error" role="alert">{field_error("turn")}</span>
                </div>
                <div class="field">
                    <label for="label-note">"Note (optional; an adjudication that overrules the automatic label needs one)"</label>
                    <textarea id="label-note" name="note" rows="3" maxlength=crate::model::MAX_NOTE_CHARS prop:value=move || note.get() on:input=move |ev| note.set(event_target_value(&ev))></textarea>
                    <span class="field-error" role="alert">{field_error("note")}</span>
                </div>
                <div class="buttons">
                    <Transition>
                        {move || current().filter(|o| !o.can_adjudicate).map(|_| view! {
                            <button type="button" on:click=move |_| { and_next.set(false); save.dispatch(SaveLabel { label: label(), filter: filter.get_untracked() }); }>"Save label"</button>
                            <button type="button" on:click=move |_| { and_next.set(true); save.dispatch(SaveLabel { label: label(), filter: filter.get_untracked() }); }>"Save and next"</button>
                        })}
                    </Transition>
                    <Transition>
                        {move || current().filter(|o| o.can_adjudicate).map(|_| view! {
                            <button type="button" class="secondary" on:click=move |_| { and_next.set(false); adjudicate.dispatch(Adjudicate { label: label(), filter: filter.get_untracked() }); }>
                                "Adjudicate (settles it for good)"
                            </button>
                        })}
                    </Transition>
                    <button type="button" class="secondary" on:click=move |_| {
                        clear();
                        let (trial, kind) = key.get_untracked();
                        release.dispatch(ReleaseItem { trial, kind });
                    }>"Give back"</button>
                </div>
            </fieldset>
            </Transition>
            <p class="error" role="alert">{move || failure().filter(|e| !matches!(e, AppError::Invalid { .. })).map(|e| e.to_string())}</p>
        </form>
        <h2>"The trajectory around it"</h2>
        <TurnsAround turns=turns opened=opened turn=turn/>
    }
}

/// Keys on an item: y/n choose while labelling, ]/[ next and previous item, j/k next and
/// previous turn; and the turn under review brought into view once the turns are shown.
#[cfg(feature = "hydrate")]
fn item_keys(
    opened: Resource<Result<OpenItem, AppError>>,
    turns: Resource<Result<crate::model::TrajectoryView, AppError>>,
    value: RwSignal<String>,
    turn: RwSignal<String>,
    labelling: Signal<bool>,
) {
    let navigate = use_navigate();
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if crate::components::not_for_us(&ev) {
            return;
        }
        let Some(Ok(o)) = opened.get_untracked() else { return };
        match ev.key().as_str() {
            "y" | "n" if labelling.get_untracked() => value.set(if ev.key() == "y" { "yes" } else { "no" }.into()),
            "]" => {
                if let Some(h) = o.next {
                    navigate(&h, Default::default());
                }
            }
            "[" => {
                if let Some(h) = o.prev {
                    navigate(&h, Default::default());
                }
            }
            "j" | "k" => {
                let Some(Ok(v)) = turns.get_untracked() else { return };
                let first = v.turns.first().map_or(0, |t| t.t);
                let last = v.turns.last().map_or(0, |t| t.t);
                let at = turn.get_untracked().parse::<usize>().ok().or(o.item.turn).unwrap_or(first);
                let to = if ev.key() == "j" { (at + 1).min(last) } else { at.saturating_sub(1).max(first) };
                turn.set(to.to_string());
                if let Some(el) = document().get_element_by_id(&format!("turn-{to}")) {
                    el.scroll_into_view();
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
    // Bring the turn under review into view once the turns are on screen.
    Effect::new(move |_| {
        if let (Some(Ok(_)), Some(Ok(o))) = (turns.get(), opened.get_untracked())
            && let Some(t) = o.item.turn
        {
            request_animation_frame(move || {
                if let Some(el) = document().get_element_by_id(&format!("turn-{t}")) {
                    el.scroll_into_view();
                }
            });
        }
    });
}

/// The item's heading, navigation, badges and context.
#[component]
fn ItemHeader(opened: Resource<Result<OpenItem, AppError>>, queue: Memo<Option<String>>) -> impl IntoView {
    view! {
        <Suspense fallback=|| view! { <p>"Opening…"</p> }>
            {move || opened.get().map(|o| match o {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(o) => {
                    let i = o.item.clone();
                    view! {
                        <p class="crumbs"><A href=queue.get().unwrap_or_default()>"Queue"</A>" / "{i.trial_id.clone()}</p>
                        <h1>{format!("Is there {} in {}?", i.kind, i.trial_id)}</h1>
                        <nav class="item-nav" aria-label="Items">
                            {o.prev.clone().map(|h| view! { <A href=h attr:class="prev-item">"← previous item"</A> })}
                            {o.next.clone().map(|h| view! { <A href=h attr:class="next-item">"next item →"</A> })}
                            <span class="muted keys">"Keys: y / n choose · j / k turns · [ / ] items"</span>
                        </nav>
                        {o.settled.then(|| view! { <p class="badge">"Settled by people: their label replaces the automatic one in every number."</p> })}
                        {i.conflict.then(|| view! { <p class="badge warn">"Annotators disagree: an operator's adjudication settles it."</p> })}
                        {i.audit.then(|| view! { <p class="badge audit">"Audit sample: no grader disputed this label; it was drawn at random (one undisputed label in twenty) so that the graders' precision and recall hold for the whole run. Label it as you would any other."</p> })}
                        {context(&o)}
                        <p>
                            <A href=format!("/runs/{}/trials/{}", i.run, i.trial_id)>"Open the whole trajectory"</A>" · "
                            <A href=format!("/grade/{}", i.trial_id)>"Grade its reasoning and decision"</A>
                        </p>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}

/// The turns of the trajectory's page around the item, with the other labels' badges at
/// their turns (the label under review only once the caller may see it).
#[component]
fn TurnsAround(
    turns: Resource<Result<crate::model::TrajectoryView, AppError>>,
    opened: Resource<Result<OpenItem, AppError>>,
    turn: RwSignal<String>,
) -> impl IntoView {
    view! {
        <Suspense fallback=|| view! { <p>"Loading turns…"</p> }>
            {move || turns.get().map(|t| match t {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(v) => {
                    let o = opened.get_untracked().and_then(Result::ok);
                    let at = o.as_ref().and_then(|o| o.item.turn);
                    // Badges of the other labels at their turns; the label under review only
                    // once the caller may see it.
                    let (kind, blind) = o.as_ref().map_or((String::new(), true), |o| (o.item.kind.clone(), o.item.blind));
                    // The turn j/k (or the form's turn field) chose, else the one under review.
                    let selected = Signal::derive(move || turn.get().parse::<usize>().ok().or(at));
                    let labels = v.labels.clone();
                    view! {
                        <super::trajectory::OpenAll/>
                        <div class="turns">
                            {v.turns.into_iter().map(|t| {
                                let marks: Vec<String> = labels
                                    .iter()
                                    .filter(|l| l.value && l.turn == Some(t.t) && !(blind && l.kind == kind))
                                    .map(|l| l.kind.clone())
                                    .collect();
                                view! { <Turn turn=t selected=selected marks=marks/> }
                            }).collect_view()}
                        </div>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
