//! `/runs/:run/trials/:trial`: one trajectory turn by turn. Manipulated spans are
//! highlighted and named; a timeline marks exposure, adoption, verification and recovery
//! (each a link to its turn); the gold graph shows visited nodes; the verdict is set against
//! the optimal one under the three tiers; the claims of the rationale and thoughts are marked
//! verified, from injected text, or not in any page seen.
//!
//! Turns come a page at a time (`?page=`); `?turn=` selects one. Keys: `j`/`k` next and
//! previous turn, `n`/`p` next and previous page.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use super::Loading;
use super::origin::harness_record;
use crate::api::get_trajectory;
use crate::components::{fmt3, query_param, query_string};
use crate::model::{ClaimView, LabelView, TrajectoryView, TrialQuery, TurnView};

/// The page of turns that holds turn `t`.
fn page_of(t: usize, page_size: usize) -> usize {
    t / page_size.max(1)
}

fn turn_href(base: &str, t: usize, page_size: usize) -> String {
    format!(
        "{base}{}",
        query_string(&[("page", Some(page_of(t, page_size).to_string())), ("turn", Some(t.to_string()))])
    )
}

/// Turns whose observation is open by default: the first few, the exposure turns and the
/// selected one; the rest are collapsed until opened (or "Expand all").
const OPEN_TURNS: usize = 3;

/// "Expand all" / "Collapse all" on a page of turns: `None` leaves each turn's default.
#[derive(Clone, Copy)]
pub(crate) struct AllOpen(pub RwSignal<Option<bool>>);

/// The buttons that open or close every observation of the page (provides [`AllOpen`]).
#[component]
pub(crate) fn OpenAll() -> impl IntoView {
    let all = use_context::<AllOpen>().map_or_else(|| RwSignal::new(None), |a| a.0);
    view! {
        <div class="buttons open-all">
            <button type="button" class="secondary" on:click=move |_| all.set(Some(true))>"Expand all"</button>
            <button type="button" class="secondary" on:click=move |_| all.set(Some(false))>"Collapse all"</button>
        </div>
    }
}

/// One turn: header saying which page the agent saw and what it did, with its marks; the
/// thought; and the observation with manipulated spans named.
#[component]
pub(crate) fn Turn(turn: TurnView, selected: Signal<Option<usize>>, marks: Vec<String>) -> impl IntoView {
    let t = turn.t;
    let all = use_context::<AllOpen>();
    let default_open = t < OPEN_TURNS || marks.iter().any(|m| m == "exposure") || selected.get_untracked() == Some(t);
    let open = move || all.and_then(|a| a.0.get()).unwrap_or(default_open);
    view! {
        <article class="turn" id=format!("turn-{t}") class:current=move || selected.get() == Some(t) tabindex="-1">
            <header>
                <span class="turn-no">{format!("Turn {t}")}</span>
                {marks.into_iter().map(|m| view! { <span class=format!("mark mark-{m}")>{m.clone()}</span> }).collect_view()}
                {turn.url.map(|u| view! { <span class="saw">"saw "<code class="url">{u}</code></span> })}
                <span class="did">" · did "<code class="action">{turn.action}</code></span>
                {turn.tokens.map(|n| view! { <span class="meta">{format!("{n} tokens")}</span> })}
                {turn.latency_ms.map(|ms| view! { <span class="meta">{format!("{ms} ms")}</span> })}
            </header>
            <p class="thought"><strong>"Thought: "</strong>{turn.thought}</p>
            <details open=open>
                <summary>"What the agent saw"</summary>
                <pre class="observation">
                    {turn.observation.into_iter().map(|s| match s.injection {
                        Some(name) => view! {
                            <mark class="manipulated" title=format!("manipulated text: injection point {name}") data-injection=name.clone()>
                                <span class="span-name">{format!("[{name}]")}</span>{s.text}
                            </mark>
                        }.into_any(),
                        None => view! { <span>{s.text}</span> }.into_any(),
                    }).collect_view()}
                </pre>
            </details>
        </article>
    }
}

/// The trials before and after this one in the run, and its siblings: the same task under
/// every configuration, level and condition of the run, each with its decision.
fn siblings(v: &TrajectoryView) -> AnyView {
    let href = |id: &str| crate::model::routes::trial(&v.run, id, "");
    // Previous and next keep the list's filters; a sibling is reached outside them.
    let filters = use_context::<Within>().map(|w| w.0.get_untracked().filters()).unwrap_or_default();
    let stepped = |id: &str| format!("{}{}", href(id), query_string(&filters));
    let prev = v.around.prev.as_deref().map(stepped);
    let next = v.around.next.as_deref().map(stepped);
    let scope: Vec<String> = filters.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}"))).collect();
    let scope = (!scope.is_empty()).then(|| format!("within the list of {}", scope.join(" · ")));
    let chips: Vec<AnyView> = v
        .around
        .siblings
        .iter()
        .map(|s| {
            let label = format!("{} · {} · {} · seed {}", s.agent, s.level, s.condition, s.seed);
            let decision = s.decision.clone().unwrap_or_else(|| s.state.to_string());
            let here = s.id == v.trial.id;
            view! {
                <li class:here=here>
                    <A href=href(&s.id) attr:class=format!("chip decision-{decision}") attr:title=s.verdict.clone().unwrap_or_default()>
                        {format!("{label}: decision {decision}")}
                    </A>
                </li>
            }
            .into_any()
        })
        .collect();
    let task_href = crate::model::routes::run_task(&v.run, &v.trial.task.to_string());
    view! {
        <nav class="item-nav" aria-label="Trials of the run">
            {prev.map(|h| view! { <A href=h attr:class="prev-trial">"← previous trial"</A> })}
            {next.map(|h| view! { <A href=h attr:class="next-trial">"next trial →"</A> })}
            {scope.map(|s| view! { <span class="muted" data-testid="within">{s}</span> })}
            <A href=task_href>"this task's trials in the run"</A>
        </nav>
        {(chips.len() > 1).then(|| view! {
            <details class="siblings" open=true>
                <summary>{format!("Same task, other configurations, levels and conditions ({})", chips.len())}</summary>
                <ul class="chips">{chips}</ul>
            </details>
        })}
    }
    .into_any()
}

fn label_line(l: &LabelView) -> String {
    if l.hidden {
        return l.reason.clone();
    }
    let what = if l.value { "yes" } else { "no" };
    let turn = l.turn.map(|t| format!(" at turn {t}")).unwrap_or_default();
    format!("{what}{turn} ({}, confidence {:.2}): {}", l.source, l.confidence, l.reason)
}

/// The labels as a timeline: each a link to its turn, and to labelling it by hand.
fn timeline(v: &TrajectoryView, base: &str) -> AnyView {
    view! {
        <h2>"Timeline"</h2>
        <ol class="timeline" aria-label="Labels">
            {v.labels.iter().map(|l| {
                let line = label_line(l);
                let link = l.turn.filter(|_| l.value).map(|t| turn_href(base, t, v.page_size));
                let annotate = crate::model::routes::label(&v.trial.id, l.kind);
                view! {
                    <li class=format!("label label-{}", l.kind) class:disputed=l.disputed class:yes=l.value>
                        <strong>{l.kind.as_str()}</strong>" "
                        {match link {
                            Some(href) => view! { <A href=href attr:class="jump" attr:data-kind=l.kind.as_str()>{line}</A> }.into_any(),
                            None => view! { <span>{line}</span> }.into_any(),
                        }}
                        {l.disputed.then(|| view! { <span class="badge warn">"disputed"</span> })}
                        {l.audit.then(|| view! { <span class="badge audit">"audit sample"</span> })}
                        " "<A href=annotate attr:class="annotate-label">"label it"</A>
                        {l.automatic.as_ref().map(|a| view! { <div class="muted">{format!("automatic label: {}", label_line(a))}</div> })}
                    </li>
                }
            }).collect_view()}
        </ol>
    }
    .into_any()
}

/// One claim: verified (green), found only in manipulated text, or in nothing the agent
/// received; a thought's claim links to its turn.
fn claim_item(c: &ClaimView, base: &str, page_size: usize) -> AnyView {
    let (class, tag) = if c.verified {
        ("verified", "verified")
    } else if c.source == "injected" {
        ("injected", "from injected text")
    } else {
        ("hallucinated", "not in any page seen")
    };
    view! {
        <li class=class>
            <span class="claim-tag">{tag}</span>
            " "<code>{c.text.clone()}</code>" "<span class="muted">{format!("({})", c.kind)}</span>
            {c.turn.map(|t| view! { " "<A href=turn_href(base, t, page_size) attr:class="claim-turn">{format!("thought, turn {t}")}</A> })}
        </li>
    }
    .into_any()
}

fn view_of(v: TrajectoryView, base: &str, selected: Signal<Option<usize>>) -> impl IntoView {
    let pages = v.turn_count.div_ceil(v.page_size).max(1);
    let marks_at = |t: usize| -> Vec<String> {
        v.labels.iter().filter(|l| l.value && l.turn == Some(t)).map(|l| l.kind.to_string()).collect()
    };
    let turns: Vec<(TurnView, Vec<String>)> = v.turns.iter().map(|t| (t.clone(), marks_at(t.t))).collect();
    let page_href = {
        let base = base.to_string();
        move |p: usize| format!("{base}{}", query_string(&[("page", (p > 0).then(|| p.to_string()))]))
    };
    // An imported sample that is not a Mirage task: no Mirage metrics, labels or graph.
    let mirage_metrics = v.origin.as_ref().is_none_or(|o| o.metrics_apply);
    let harness_timeline = (!mirage_metrics && !v.labels.is_empty()).then(|| timeline(&v, base));
    let around = siblings(&v);
    // Mirage's own panels, built only where they are shown.
    let panels = mirage_metrics.then(|| {
        (timeline(&v, base), verdict_table(&v), tap_tree(&v.tap), gold_graph(&v, base), claims_list(&v, base))
    });
    let harness = v.origin.as_ref().map(|o| harness_record(o, &v.run));
    let badges = badges(&v);

    view! {
        <Title text=v.trial.id.to_string()/>
        <p class="crumbs"><A href=crate::model::routes::run(&v.run)>{v.run.to_string()}</A>" / trial"</p>
        <h1>{v.trial.id.to_string()}</h1>
        {around}
        {badges}
        {v.trial.error.clone().map(|e| view! { <p class="error" role="alert">{format!("Error: {e}")}</p> })}
        {harness}
        {harness_timeline}
        {panels.map(|(mirage_timeline, verdict, tap, graph, claims)| view! {
        <section class="summary-grid">
            <div>
                <h2>"Ticket"</h2>
                <p class="ticket">{v.ticket.clone()}</p>
                <h2>"Verdict"</h2>
                {verdict}
                {v.rationale.clone().map(|r| view! { <h2>"Rationale"</h2><blockquote class="rationale">{r}</blockquote> })}
                <p><A href=crate::model::routes::grade(&v.trial.id)>"Grade the reasoning and decision"</A></p>
                <h2>"Claims in the rationale and thoughts"</h2>
                {claims}
                {v.appeal.clone().map(|a| view! {
                    <h2>"Appeal"</h2>
                    <table class="kv appeal"><tbody>
                        {a.into_iter().map(|(k, val)| view! { <tr><th>{k}</th><td>{val}</td></tr> }).collect_view()}
                    </tbody></table>
                })}
            </div>
            <div>
                {mirage_timeline}
                <div class="turn-strip" aria-label="Turns">
                    {(0..v.turn_count).map(|t| {
                        let marks = v.labels.iter().filter(|l| l.value && l.turn == Some(t)).map(|l| l.kind.as_str()).collect::<Vec<_>>().join(" ");
                        view! { <A href=turn_href(base, t, v.page_size) attr:class=format!("tick {marks}") attr:title=format!("turn {t} {marks}")>{t}</A> }
                    }).collect_view()}
                </div>
                {tap}
                {graph}
            </div>
        </section>
        }.into_any())}
        <h2>{format!("Turns ({})", v.turn_count)}</h2>
        <p class="muted keys">"Keys: j / k next and previous turn, n / p next and previous page."</p>
        <nav class="pager" aria-label="Turn pages">
            {(v.page > 0).then(|| view! { <A href=page_href(v.page - 1)>"← previous turns"</A> })}
            <span>{format!(" page {} of {pages} ", v.page + 1)}</span>
            {(v.page + 1 < pages).then(|| view! { <A href=page_href(v.page + 1)>"next turns →"</A> })}
        </nav>
        <OpenAll/>
        <div class="turns">
            {turns.into_iter().map(|(t, marks)| view! { <Turn turn=t selected=selected marks=marks/> }).collect_view()}
        </div>
    }
}

/// The trial's cell (agent, level, condition, seed), its state and its task (a link to a
/// Mirage task; an imported sample's own id as it came).
fn badges(v: &TrajectoryView) -> AnyView {
    let task_badge = super::task_cell(&v.trial.task, &v.trial.id, "badge");
    view! {
        <p class="badges">
            <span class="badge">{v.trial.agent.clone()}</span>
            <span class="badge">{v.trial.level.to_string()}</span>
            <span class="badge">{v.trial.condition.to_string()}</span>
            <span class="badge">{format!("seed {}", v.trial.seed)}</span>
            <span class=format!("badge state-{}", v.trial.state)>{v.trial.state.as_str()}</span>
            {task_badge}
        </p>
    }
    .into_any()
}

/// The claims of the rationale and thoughts, each checked against what the agent was shown.
fn claims_list(v: &TrajectoryView, base: &str) -> AnyView {
    if v.claims.is_empty() {
        view! { <p class="muted">"No checkable claims."</p> }.into_any()
    } else {
        view! {
            <ul class="claims">
                {v.claims.iter().map(|c| claim_item(c, base, v.page_size)).collect_view()}
            </ul>
        }
        .into_any()
    }
}

/// The verdict against the optimal one, with the trial's scores.
fn verdict_table(v: &TrajectoryView) -> impl IntoView + use<> {
    view! {
        <table class="kv verdict"><tbody>
            <tr><th>"Agent's verdict"</th><td data-testid="verdict">{v.trial.verdict.clone().unwrap_or_else(|| "none".into())}</td></tr>
            <tr><th>"Optimal"</th><td>{v.optimal.clone()}</td></tr>
            {v.tiers.iter().map(|(tier, s)| view! {
                <tr><th>{format!("Acc_dec {tier}")}</th><td class="num">{fmt3(*s)}</td></tr>
            }).collect_view()}
            <tr><th>"Acc_inv"</th><td class="num">{v.acc_inv.map(fmt3).unwrap_or_else(|| "–".into())}</td></tr>
            <tr><th>"Acc_rsn"</th><td class="num" title=v.rsn_judge.clone().unwrap_or_default()>{v.acc_rsn.map(fmt3).unwrap_or_else(|| "–".into())}</td></tr>
            <tr><th>"Q_ev (1–5)"</th><td class="num">{v.q_ev.map(|q| format!("{q:.0}")).unwrap_or_else(|| "–".into())}</td></tr>
            // The decision's class is what the sibling chips and the run's list call it; the
            // outcome reads the labels too (a harmful decision the agent was not steered to
            // is "wrong-for-other-reasons").
            <tr><th>"Decision"</th><td data-testid="decision">{
                v.around.siblings.iter().find(|s| s.id == v.trial.id).and_then(|s| s.decision.clone()).unwrap_or_else(|| "–".into())
            }</td></tr>
            <tr><th>"Outcome"</th><td>{v.outcome.clone().unwrap_or_else(|| "not finished".into())}</td></tr>
        </tbody></table>
    }
}

/// The L4 search tree of candidate texts, the best-scoring one marked (none without a search).
fn tap_tree(tap: &[crate::model::TapNodeView]) -> Option<impl IntoView + use<>> {
    (!tap.is_empty()).then(|| {
        let best = tap.iter().max_by(|a, b| a.score.total_cmp(&b.score).then(b.id.cmp(&a.id))).map(|n| n.id);
        view! {
            <h2>"L4 search"</h2>
            <p class="muted">{format!(
                "{} candidates scored against the agent, {} agent calls. Score 1: the agent took the party's goal.",
                tap.len(),
                tap.iter().map(|n| n.calls).sum::<usize>()
            )}</p>
            <ol class="tap-tree">
                {tap.iter().map(|n| view! {
                    <li class=format!("tap-node depth-{}{}", n.depth.min(6), if Some(n.id) == best { " best" } else { "" })
                        data-node=n.id>
                        <span class="tap-score">{format!("score {:.2}", n.score)}</span>" "
                        <span class="muted">{format!(
                            "node {}{} · verdict {} · {} calls",
                            n.id,
                            n.parent.map(|p| format!(" ← {p}")).unwrap_or_default(),
                            n.verdict.clone().unwrap_or_else(|| "none".into()),
                            n.calls
                        )}</span>
                        <blockquote>{n.text.chars().take(400).collect::<String>()}</blockquote>
                    </li>
                }).collect_view()}
            </ol>
        }
    })
}

/// The task's gold graph: each required page, visited or not, with the turn that visited it.
fn gold_graph(v: &TrajectoryView, base: &str) -> impl IntoView + use<> {
    view! {
        <h2>"Gold graph"</h2>
        <ul class="graph-nodes">
            {v.graph.iter().map(|n| view! {
                <li class=if n.visited { "visited" } else { "unvisited" }>
                    <span class="node-state">{if n.visited { "visited" } else { "not visited" }}</span>" "
                    <code>{n.url.clone()}</code>
                    {n.turn.map(|t| view! { " " <A href=turn_href(base, t, v.page_size)>{format!("turn {t}")}</A> })}
                </li>
            }).collect_view()}
        </ul>
    }
}

/// The trial list's filters the page was opened under (previous and next step through it).
#[derive(Clone, Copy)]
struct Within(Memo<TrialQuery>);

/// `/runs/:run/trials/:trial`.
#[component]
pub fn TrajectoryPage() -> impl IntoView {
    let params = use_params_map();
    let trial = Memo::new(move |_| params.read().get("trial").unwrap_or_default());
    let run = Memo::new(move |_| params.read().get("run").unwrap_or_default());
    let page = query_param("page");
    let turn = query_param("turn");
    let selected = Signal::derive(move || turn.get().and_then(|t| t.parse::<usize>().ok()));
    // Opened from a filtered trial list, previous and next step through that list.
    let query = use_query_map();
    let within = Memo::new(move |_| {
        TrialQuery::with_filters(String::new(), 0, |k| query.read().get(k).filter(|v| !v.is_empty()))
    });
    let data = Resource::new(
        move || (trial.get(), page.get().and_then(|p| p.parse::<usize>().ok()).unwrap_or(0), within.get()),
        |(trial, page, within)| get_trajectory(trial, page, within),
    );
    provide_context(Within(within));
    let base = move || crate::model::routes::trial(&run.get(), &trial.get(), "");
    provide_context(AllOpen(RwSignal::new(None)));

    // Bring the selected turn into view once its page is on screen.
    // The page's (page, page size, turn count) for the key handler, copied by an effect:
    // a handler runs outside any <Suspense/>, where reading the resource is a hydration hazard.
    #[cfg(feature = "hydrate")]
    let dims: RwSignal<Option<(usize, usize, usize)>> = RwSignal::new(None);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(v)) = data.get() {
            dims.set(Some((v.page, v.page_size, v.turn_count)));
        }
    });
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let (Some(t), Some(Ok(_))) = (selected.get(), data.get()) {
            request_animation_frame(move || {
                if let Some(el) = document().get_element_by_id(&format!("turn-{t}")) {
                    el.scroll_into_view();
                }
            });
        }
    });

    // Keyboard navigation between turns and pages.
    let navigate = use_navigate();
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |ev| {
            if crate::components::not_for_us(&ev) {
                return;
            }
            let Some((page, page_size, turn_count)) = dims.get_untracked() else { return };
            let current = selected.get_untracked().unwrap_or(page * page_size);
            let last = turn_count.saturating_sub(1);
            let target = match ev.key().as_str() {
                "j" => Some(current.saturating_add(1).min(last)),
                "k" => Some(current.saturating_sub(1)),
                "n" => Some(((page + 1) * page_size).min(last)),
                "p" => Some(page.saturating_sub(1) * page_size),
                _ => None,
            };
            if let Some(t) = target.filter(|_| turn_count > 0) {
                navigate(&turn_href(&base(), t, page_size), Default::default());
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = navigate;

    view! {
        <Loading resource=data waiting="Loading trajectory…" ready=move |v| view_of(v, &base(), selected).into_any()/>
        {super::replay::ReplayPanel(super::replay::ReplayPanelProps { trial })}
    }
}
