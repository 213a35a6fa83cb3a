//! `/annotate`: the queue of disputed labels (conflicts first, then recovery, adoption,
//! exposure, verification) with agreement between judges and people; `/annotate/:trial/:kind`:
//! one item, locked to the annotator while open, with the trajectory around it and the form.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

use super::ErrorNotice;
use super::trajectory::Turn;
use crate::api::{Adjudicate, ReleaseItem, SaveLabel, get_queue, get_trajectory, open_item};
use crate::components::{AgreementCell, PendingLine, RunPicker, fmt3, may, query_param, query_string};
use crate::error::AppError;
use crate::model::{NewLabel, QueueItem, Role, TURN_PAGE};

fn yes_no(v: bool) -> &'static str {
    if v { "yes" } else { "no" }
}

fn votes_line(item: &QueueItem) -> String {
    item.votes
        .iter()
        .map(|v| format!("{} ({}): {}", v.author, v.source, yes_no(v.value)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `/annotate`.
#[component]
pub fn AnnotatePage() -> impl IntoView {
    let run = query_param("run");
    let page = query_param("page");
    let queue = Resource::new(
        move || (run.get(), page.get().and_then(|p| p.parse::<usize>().ok())),
        |(run, page)| get_queue(run, page),
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
                    view! {
                        <div class="controls"><RunPicker runs=q.runs.clone() current=q.run.clone() href=picker/></div>
                        <PendingLine pending=q.pending.clone() refetch=refetch/>
                        <p data-testid="queue-count">{format!(
                            "{} labels wait for a person ({} shown); {} settled so far in this run.",
                            q.total, q.items.len(), q.settled
                        )}</p>
                        {(q.pages > 1).then(|| {
                            let run = q.run.clone();
                            let href = move |p: usize| format!("/annotate{}", query_string(&[("run", Some(run.clone())), ("page", Some(p.to_string()))]));
                            view! {
                                <nav class="pager" aria-label="Queue pages">
                                    {(q.page > 0).then(|| view! { <A href=href(q.page - 1)>"← previous"</A> })}
                                    <span>{format!(" page {} of {} ", q.page + 1, q.pages)}</span>
                                    {(q.page + 1 < q.pages).then(|| view! { <A href=href(q.page + 1)>"next →"</A> })}
                                </nav>
                            }
                        })}
                        <table class="queue">
                            <thead><tr><th>"Label"</th><th>"Trial"</th><th>"Agent"</th><th>"Level"</th><th>"Automatic"</th><th>"Why disputed"</th><th>"People"</th><th>"Status"</th></tr></thead>
                            <tbody>
                                {q.items.into_iter().map(|i| {
                                    let href = format!("/annotate/{}/{}", i.trial_id, i.kind);
                                    let votes = votes_line(&i);
                                    let (kind, trial_href) = (i.kind.clone(), format!("/runs/{}/trials/{}", i.run, i.trial_id));
                                    view! {
                                        <tr class:conflict=i.conflict data-kind=i.kind.clone()>
                                            <td><A href=href attr:class="open-item">{kind}</A></td>
                                            <td><A href=trial_href>{i.trial_id.clone()}</A></td>
                                            <td>{i.agent.clone()}</td><td>{i.level.clone()}</td>
                                            <td>{format!("{} ({}, {:.2})", yes_no(i.value), i.source, i.confidence)}</td>
                                            <td class="reason">{i.reason.clone()}</td>
                                            <td>{votes}</td>
                                            <td>
                                                {i.conflict.then(|| view! { <span class="badge warn">"conflict: needs adjudication"</span> })}
                                                {i.locked_by.clone().map(|(who, _)| view! { <span class="badge">{format!("open by {who}")}</span> })}
                                            </td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                        <h2>"Judge vs people"</h2>
                        <table class="agreement">
                            <thead><tr><th>"Label"</th><th>"Settled by people"</th><th>"Cohen's κ"</th></tr></thead>
                            <tbody>
                                {q.agreement.into_iter().map(|(k, n, kappa)| view! {
                                    <tr><td>{k}</td><td class="num">{n}</td><AgreementCell n=n value=kappa/></tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                        <h2>"How people's labels moved the numbers"</h2>
                        {if q.effects.is_empty() {
                            view! { <p class="muted">"No settled label has changed a mean yet."</p> }.into_any()
                        } else {
                            view! {
                                <table class="effects">
                                    <thead><tr><th>"Configuration"</th><th>"Metric"</th><th>"Automatic labels only"</th><th>"With people's labels"</th></tr></thead>
                                    <tbody>
                                        {q.effects.into_iter().map(|(agent, metric, before, after)| view! {
                                            <tr><td>{agent}</td><td>{metric}</td><td class="num">{fmt3(before)}</td><td class="num">{fmt3(after)}</td></tr>
                                        }).collect_view()}
                                    </tbody>
                                </table>
                            }.into_any()
                        }}
                        <p><A href=format!("/leaderboard?run={}", q.run)>"See the leaderboard with people's labels applied"</A></p>
                    }.into_any()
                }
            })}
        </Transition>
    }
}

/// `/annotate/:trial/:kind`.
#[component]
pub fn AnnotateItemPage() -> impl IntoView {
    let params = use_params_map();
    let key = Memo::new(move |_| {
        let p = params.read();
        (p.get("trial").unwrap_or_default(), p.get("kind").unwrap_or_default())
    });
    let opened = Resource::new(move || key.get(), |(trial, kind)| open_item(trial, kind));
    let turns = Resource::new(
        move || (key.get().0, opened.get().and_then(Result::ok).and_then(|o| o.item.turn)),
        |(trial, turn)| get_trajectory(trial, turn.map_or(0, |t| t / TURN_PAGE)),
    );
    let save = ServerAction::<SaveLabel>::new();
    let adjudicate = ServerAction::<Adjudicate>::new();
    let release = ServerAction::<ReleaseItem>::new();
    let value = RwSignal::new(String::new());
    let turn = RwSignal::new(String::new());
    let note = RwSignal::new(String::new());
    let operator = may(Role::Operator);
    let navigate = use_navigate();
    let back = Memo::new(move |_| opened.get().and_then(Result::ok).map(|o| format!("/annotate?run={}", o.item.run)));
    Effect::new(move |_| {
        let done = matches!(save.value().get(), Some(Ok(())))
            || matches!(adjudicate.value().get(), Some(Ok(())))
            || matches!(release.value().get(), Some(Ok(())));
        if done && let Some(href) = back.get_untracked() {
            navigate(&href, Default::default());
        }
    });
    let failure = move || {
        [save.value().get(), adjudicate.value().get(), release.value().get()]
            .into_iter()
            .find_map(|r| r.and_then(Result::err))
    };
    let field_error = move |field: &'static str| {
        move || match failure() {
            Some(AppError::Invalid { field: f, message }) if f == field => Some(message),
            _ => None,
        }
    };
    let label = move || {
        let (trial, kind) = key.get_untracked();
        NewLabel { trial, kind, value: value.get_untracked(), turn: turn.get_untracked(), note: note.get_untracked() }
    };
    view! {
        <Title text="Annotate"/>
        <Suspense fallback=|| view! { <p>"Opening…"</p> }>
            {move || opened.get().map(|o| match o {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(o) => {
                    let i = o.item;
                    view! {
                        <p class="crumbs"><A href=format!("/annotate?run={}", i.run)>"Queue"</A>" / "{i.trial_id.clone()}</p>
                        <h1>{format!("Is there {} in {}?", i.kind, i.trial_id)}</h1>
                        {o.settled.then(|| view! { <p class="badge">"Already settled by a person; a new label replaces it."</p> })}
                        {i.conflict.then(|| view! { <p class="badge warn">"Annotators disagree: an operator's adjudication settles it."</p> })}
                        <table class="kv"><tbody>
                            <tr><th>"Automatic label"</th><td data-testid="automatic">{format!("{} ({}, confidence {:.2})", yes_no(i.value), i.source, i.confidence)}</td></tr>
                            <tr><th>"Its reason"</th><td>{i.reason.clone()}</td></tr>
                            <tr><th>"At turn"</th><td>{i.turn.map(|t| t.to_string()).unwrap_or_else(|| "–".into())}</td></tr>
                            {i.second_opinion.clone().map(|(v, r)| view! { <tr><th>"Model judge"</th><td>{format!("{}: {r}", yes_no(v))}</td></tr> })}
                            <tr><th>"People so far"</th><td>{if i.votes.is_empty() { "nobody".to_string() } else { votes_line(&i) }}</td></tr>
                            <tr><th>"Lock"</th><td>"Yours until you save or give it back (ten minutes at most)."</td></tr>
                        </tbody></table>
                        <p>
                            <A href=format!("/runs/{}/trials/{}", i.run, i.trial_id)>"Open the whole trajectory"</A>" · "
                            <A href=format!("/grade/{}", i.trial_id)>"Grade its reasoning and decision"</A>
                        </p>
                    }.into_any()
                }
            })}
        </Suspense>
        <form class="launch annotate-form" on:submit=|ev| ev.prevent_default() aria-label="Your label">
            <h2>"Your label"</h2>
            <fieldset class="field">
                <legend>"Value"</legend>
                <label><input type="radio" name="value" value="yes" on:change=move |_| value.set("yes".into())/>" yes"</label>
                <label><input type="radio" name="value" value="no" on:change=move |_| value.set("no".into())/>" no"</label>
                <span class="field-error" role="alert">{field_error("value")}</span>
            </fieldset>
            <div class="field">
                <label for="label-turn">"Turn (optional)"</label>
                <input id="label-turn" name="turn" prop:value=move || turn.get() on:input=move |ev| turn.set(event_target_value(&ev))/>
                <span class="field-error" role="alert">{field_error("turn")}</span>
            </div>
            <div class="field">
                <label for="label-note">"Note"</label>
                <textarea id="label-note" name="note" rows="3" prop:value=move || note.get() on:input=move |ev| note.set(event_target_value(&ev))></textarea>
                <span class="field-error" role="alert">{field_error("note")}</span>
            </div>
            <div class="buttons">
                <button type="button" on:click=move |_| { save.dispatch(SaveLabel { label: label() }); }>"Save label"</button>
                <Transition>
                    {move || operator.get().then(|| view! {
                        <button type="button" class="secondary" on:click=move |_| { adjudicate.dispatch(Adjudicate { label: label() }); }>
                            "Adjudicate (settles it for good)"
                        </button>
                    })}
                </Transition>
                <button type="button" class="secondary" on:click=move |_| {
                    let (trial, kind) = key.get_untracked();
                    release.dispatch(ReleaseItem { trial, kind });
                }>"Give back"</button>
            </div>
            <p class="error" role="alert">{move || failure().filter(|e| !matches!(e, AppError::Invalid { .. })).map(|e| e.to_string())}</p>
        </form>
        <h2>"The trajectory around it"</h2>
        <Suspense fallback=|| view! { <p>"Loading turns…"</p> }>
            {move || turns.get().map(|t| match t {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(v) => {
                    let at = opened.get_untracked().and_then(Result::ok).and_then(|o| o.item.turn);
                    let selected = Signal::derive(move || at);
                    view! {
                        <div class="turns">
                            {v.turns.into_iter().map(|t| view! { <Turn turn=t selected=selected marks=Vec::new()/> }).collect_view()}
                        </div>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
