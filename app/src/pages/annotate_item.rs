//! `/annotate/:trial/:kind`: one item of the queue, readable by anyone, labelled blind after
//! "Start labelling" (which holds it for a while). Each URL gets a page of its own, so after
//! Back, Forward, a reload or in a stale tab the page shows the item its URL names, and a
//! label is saved to the item on screen (the server stores it only while its author holds
//! that item). Keys: `s` start, `y`/`n` choose, Enter save and next, `q` save and go back to
//! the queue, `g` give back, `j`/`k` turns, `]`/`[` items.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

use super::Loading;
use super::annotate::{automatic_line, filter_of_query, queue_href, vote_line, yes_no};
use super::trajectory::Turn;
use crate::api::{Adjudicate, ReleaseItem, SaveLabel, StartLabelling, get_trajectory, open_item};
use crate::error::AppError;
use crate::model::{NewLabel, OpenItem, QueueFilter, TURN_PAGE};

/// The keys of an item page, as the page lists them.
const KEYS: &str =
    "Keys: s start · y / n choose · Enter save and next · q save · g give back · j / k turns · [ / ] items";

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
    let (task, votes) = (super::task_cell(&i.task, &i.trial_id, ""), i.votes.clone());
    view! {
        <table class="kv"><tbody>
            <tr><th>"Task"</th><td>{task}</td></tr>
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
                {votes.iter().enumerate().map(|(k, v)| {
                    let counted = v.source != "human"
                        || !votes[..k].iter().any(|w| w.source == "human" && w.author == v.author);
                    view! { <li data-source=v.source.clone()>{vote_line(v, counted)}</li> }
                }).collect_view()}
            </ul>
        })}
    }
    .into_any()
}

/// `/annotate/:trial/:kind`: a page of its own for each item its URL names.
#[component]
pub fn AnnotateItemPage() -> impl IntoView {
    let params = use_params_map();
    let key = Memo::new(move |_| {
        let p = params.read();
        (p.get("trial").unwrap_or_default(), p.get("kind").unwrap_or_default())
    });
    view! {
        <leptos_meta::Title text="Annotate"/>
        {move || {
            let (trial, kind) = key.get();
            view! { <Item trial=trial kind=kind/> }
        }}
    }
}

/// What the page's buttons and keys do.
#[derive(Clone, Copy)]
struct Acts {
    start: Callback<()>,
    /// Saves (or adjudicates); `true`: then opens the next item, else the queue.
    save: Callback<bool>,
    release: Callback<()>,
}

/// One item: its heading, context, label form and the trajectory around it. Its length is
/// the label form: fields, buttons and error lines share four actions and five signals.
#[component]
fn Item(trial: String, kind: String) -> impl IntoView {
    let filter = filter_of_query();
    let start = ServerAction::<StartLabelling>::new();
    let save = ServerAction::<SaveLabel>::new();
    let adjudicate = ServerAction::<Adjudicate>::new();
    let release = ServerAction::<ReleaseItem>::new();
    let opened = {
        let (trial, kind) = (trial.clone(), kind.clone());
        // Asked again after every action, a failed save included (a hold that ran out shows).
        Resource::new(
            move || {
                let versions = [start.version(), release.version(), save.version(), adjudicate.version()];
                (filter.get(), versions.map(|v| v.get()))
            },
            move |(filter, _)| open_item(trial.clone(), kind.clone(), filter),
        )
    };
    // The page of turns around the item's turn, once the item says which that is.
    let turns = {
        let trial = trial.clone();
        Resource::new(
            || (),
            move |()| {
                let trial = trial.clone();
                async move {
                    let at = opened.await.ok().and_then(|o| o.item.turn);
                    get_trajectory(trial, at.map_or(0, |t| t / TURN_PAGE), crate::model::TrialQuery::default()).await
                }
            },
        )
    };
    provide_context(super::trajectory::AllOpen(RwSignal::new(None)));
    let value = RwSignal::new(String::new());
    let turn = RwSignal::new(String::new());
    let note = RwSignal::new(String::new());
    // Where to go after a save: the next item ("Save and next") or the queue.
    let and_next = RwSignal::new(false);
    let navigate = use_navigate();
    let current = move || opened.get().and_then(Result::ok);
    // The item as last fetched, for event handlers: they run outside any <Suspense/>, where
    // reading the resource itself is a hydration hazard; an effect copies it here.
    let shown: RwSignal<Option<OpenItem>> = RwSignal::new(None);
    Effect::new(move |_| shown.set(opened.get().and_then(Result::ok)));
    let queue_of = move |o: &OpenItem| queue_href(&o.item.run, &filter.get_untracked(), None);
    Effect::new(move |_| {
        let next = match (save.value().get(), adjudicate.value().get()) {
            (Some(Ok(next)), _) | (_, Some(Ok(next))) => Some(next),
            _ => None,
        };
        let gone = matches!(release.value().get(), Some(Ok(())));
        let queue = opened.get_untracked().and_then(Result::ok).map(|o| queue_of(&o));
        let target = match next {
            Some(Some(href)) if and_next.get_untracked() => Some(href),
            Some(_) => queue,
            None if gone => None,
            None => return,
        };
        if let Some(href) = target {
            navigate(&href, Default::default());
        }
    });
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
    let labelling = Signal::derive(move || current().is_some_and(|o| o.can_label && o.mine_until.is_some()));
    let acts = {
        let (t1, k1, t2, k2, t3, k3) = (trial.clone(), kind.clone(), trial.clone(), kind.clone(), trial, kind);
        Acts {
            start: Callback::new(move |()| {
                clear();
                start.dispatch(StartLabelling { trial: t1.clone(), kind: k1.clone() });
            }),
            save: Callback::new(move |next: bool| {
                // One save at a time: a second Enter or click while one is on its way does nothing.
                if save.pending().get_untracked() || adjudicate.pending().get_untracked() {
                    return;
                }
                clear();
                and_next.set(next);
                let label = NewLabel {
                    trial: t2.clone().into(),
                    kind: k2.clone(),
                    value: value.get_untracked(),
                    turn: turn.get_untracked(),
                    note: note.get_untracked(),
                };
                let filter = filter.get_untracked();
                if shown.get_untracked().is_some_and(|o| o.can_adjudicate) {
                    adjudicate.dispatch(Adjudicate { label, filter });
                } else {
                    save.dispatch(SaveLabel { label, filter });
                }
            }),
            release: Callback::new(move |()| {
                clear();
                release.dispatch(ReleaseItem { trial: t3.clone(), kind: k3.clone() });
            }),
        }
    };

    #[cfg(feature = "hydrate")]
    item_keys(shown, turns, value, turn, acts);

    view! {
        <ItemHeader opened=opened filter=filter/>
        <form class="launch annotate-form" on:submit=|ev| ev.prevent_default() aria-label="Your label">
            <h2>"Your label"</h2>
            <Transition>
                {move || current().map(|o| {
                    let why = o.why_not.clone();
                    view! {
                        {why.map(|w| view! { <p class="why-not" data-testid="why-not">{format!("You cannot label it now: {w}.")}</p> })}
                        <p class="muted">{if o.can_adjudicate {
                            "As an operator you see the automatic label and everyone's labels, so your label is not blind: \
                             it is an adjudication, which settles the item for good.".to_string()
                        } else {
                            format!(
                                "Your label counts once and is final once given. It settles the item when {} people agree; if anyone disagrees, an operator adjudicates.",
                                o.item.needed
                            )
                        }}</p>
                        {(o.can_label && o.mine_until.is_none()).then(|| view! {
                            <button type="button" class="start" aria-keyshortcuts="s" on:click=move |_| acts.start.run(())>
                                {format!("Start labelling (holds it for you for {} minutes)", o.lock_minutes)}
                            </button>
                        })}
                    }
                })}
            </Transition>
            <Transition>
            <fieldset class="label-fields" disabled=move || !labelling.get()>
                <fieldset class="field">
                    <legend>"Value"</legend>
                    <label><input type="radio" name="value" value="yes" aria-keyshortcuts="y" prop:checked=move || value.get() == "yes" on:change=move |_| value.set("yes".into())/>" yes"</label>
                    <label><input type="radio" name="value" value="no" aria-keyshortcuts="n" prop:checked=move || value.get() == "no" on:change=move |_| value.set("no".into())/>" no"</label>
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
                    {move || match current().map(|o| o.can_adjudicate) {
                        Some(false) => view! {
                            <button type="button" aria-keyshortcuts="q" on:click=move |_| acts.save.run(false)>"Save label"</button>
                            <button type="button" aria-keyshortcuts="Enter" on:click=move |_| acts.save.run(true)>"Save and next"</button>
                        }.into_any(),
                        Some(true) => view! {
                            <button type="button" class="secondary" aria-keyshortcuts="Enter" on:click=move |_| acts.save.run(false)>
                                "Adjudicate (settles it for good)"
                            </button>
                        }.into_any(),
                        None => ().into_any(),
                    }}
                    <button type="button" class="secondary" aria-keyshortcuts="g" on:click=move |_| acts.release.run(())>"Give back"</button>
                </div>
            </fieldset>
            </Transition>
            <p class="error" role="alert">{move || failure().filter(|e| !matches!(e, AppError::Invalid { .. })).map(|e| e.to_string())}</p>
        </form>
        <h2>"The trajectory around it"</h2>
        <TurnsAround turns=turns opened=opened turn=turn/>
    }
}

/// Whether a key went to a button or a link (which act on Enter themselves).
#[cfg(feature = "hydrate")]
fn on_control(ev: &web_sys::KeyboardEvent) -> bool {
    ev.target()
        .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "BUTTON" | "A"))
}

/// Keys on an item: s starts labelling; y/n choose, Enter saves and opens the next item
/// (an operator's Enter adjudicates), q saves and goes back to the queue, g gives the item
/// back, all while labelling; ]/[ next and previous item, j/k next and previous turn; and
/// the turn under review brought into view once the turns are shown.
#[cfg(feature = "hydrate")]
fn item_keys(
    shown: RwSignal<Option<OpenItem>>,
    turns: Resource<Result<crate::model::TrajectoryView, AppError>>,
    value: RwSignal<String>,
    turn: RwSignal<String>,
    acts: Acts,
) {
    let navigate = use_navigate();
    // The first and last turn on screen, copied by an effect (see `shown`).
    let range: RwSignal<Option<(usize, usize)>> = RwSignal::new(None);
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if crate::components::not_for_us(&ev) {
            return;
        }
        let Some(o) = shown.get_untracked() else { return };
        let on = o.can_label && o.mine_until.is_some();
        match ev.key().as_str() {
            "s" if o.can_label && o.mine_until.is_none() => acts.start.run(()),
            "y" | "n" if on => value.set(if ev.key() == "y" { "yes" } else { "no" }.into()),
            // Enter on a focused button or link is that button's or link's (a click), and a
            // held-down key repeats: neither saves.
            "Enter" if on && !ev.repeat() && !on_control(&ev) => {
                ev.prevent_default();
                acts.save.run(!o.can_adjudicate);
            }
            "q" if on && !o.can_adjudicate => acts.save.run(false),
            "g" if o.mine_until.is_some() => acts.release.run(()),
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
                let Some((first, last)) = range.get_untracked() else { return };
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
        let Some(Ok(v)) = turns.get() else { return };
        range.set(Some((v.turns.first().map_or(0, |t| t.t), v.turns.last().map_or(0, |t| t.t))));
        if let Some(t) = shown.get_untracked().and_then(|o| o.item.turn) {
            request_animation_frame(move || {
                if let Some(el) = document().get_element_by_id(&format!("turn-{t}")) {
                    el.scroll_into_view();
                }
            });
        }
    });
}

/// The item's heading, what its label means, navigation, badges and context.
#[component]
fn ItemHeader(opened: Resource<Result<OpenItem, AppError>>, filter: Memo<QueueFilter>) -> impl IntoView {
    view! {
        <Loading resource=opened waiting="Opening…" ready=move |o| {
            let i = o.item.clone();
            let queue = queue_href(&i.run, &filter.get_untracked(), None);
            let guide = Some(crate::glossary::label_guide(i.kind));
            view! {
                <p class="crumbs"><A href=queue>"Queue"</A>" / "{i.trial_id.to_string()}</p>
                <h1>{format!("Is there {} in {}?", i.kind, i.trial_id)}</h1>
                {guide.map(|(definition, example)| view! {
                    <div class="label-guide" data-testid="label-guide">
                        <p><strong>{format!("What {} means. ", i.kind)}</strong>{definition}</p>
                        <p class="muted">{format!("Example: {example}")}</p>
                    </div>
                })}
                <nav class="item-nav" aria-label="Items">
                    {o.prev.clone().map(|h| view! { <A href=h attr:class="prev-item">"← previous item"</A> })}
                    {o.next.clone().map(|h| view! { <A href=h attr:class="next-item">"next item →"</A> })}
                    <span class="muted keys" data-testid="keys">{KEYS}</span>
                </nav>
                {o.settled.then(|| view! { <p class="badge">"Settled by people: their label replaces the automatic one in every number."</p> })}
                {i.conflict.then(|| view! { <p class="badge warn">"Annotators disagree: an operator's adjudication settles it."</p> })}
                {i.audit.then(|| view! { <p class="badge audit">"Audit sample: no grader disputed this label; it was drawn at random (one undisputed label in twenty) so that the graders' precision and recall hold for the whole run. Label it as you would any other."</p> })}
                {context(&o)}
                <p>
                    <A href=crate::model::routes::trial(&i.run, &i.trial_id, "")>"Open the whole trajectory"</A>" · "
                    <A href=crate::model::routes::grade(&i.trial_id)>"Grade its reasoning and decision"</A>
                </p>
            }.into_any()
        }/>
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
        <Loading resource=turns waiting="Loading turns…" ready=move |v| {
            let o = opened.get_untracked().and_then(Result::ok);
            let at = o.as_ref().and_then(|o| o.item.turn);
            // Badges of the other labels at their turns; the label under review only
            // once the caller may see it.
            let (kind, blind) = o.as_ref().map_or((None, true), |o| (Some(o.item.kind), o.item.blind));
            // The turn j/k (or the form's turn field) chose, else the one under review.
            let selected = Signal::derive(move || turn.get().parse::<usize>().ok().or(at));
            let labels = v.labels.clone();
            view! {
                <super::trajectory::OpenAll/>
                <div class="turns">
                    {v.turns.into_iter().map(|t| {
                        let marks: Vec<String> = labels
                            .iter()
                            .filter(|l| l.value && l.turn == Some(t.t) && !(blind && Some(l.kind) == kind))
                            .map(|l| l.kind.to_string())
                            .collect();
                        view! { <Turn turn=t selected=selected marks=marks/> }
                    }).collect_view()}
                </div>
            }.into_any()
        }/>
    }
}
