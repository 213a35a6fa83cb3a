//! `/compare?a=…&b=…`: two runs, or two configurations (`RUN:CONFIG`), trial by trial —
//! the same numbers as `mirage compare A B --json` — and `/compare/trials?a=…&b=…`: two
//! paired trials side by side, turn by turn.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::Loading;
use crate::api::{get_compare, get_trajectory};
use crate::components::{AsOfLine, fmt3, query_param};
use crate::model::{Comparison, TrialQuery, TurnView};

/// The run of a side (`RUN` or `RUN:CONFIG`).
fn run_of(side: &str) -> String {
    side.split_once(':').map_or(side, |(r, _)| r).to_string()
}

fn signed(x: f64) -> String {
    format!("{x:+.3}")
}

fn result(c: Comparison) -> impl IntoView {
    let (run_a, run_b) = (run_of(&c.a), run_of(&c.b));
    let verdict = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
    let changed = c.changed.len();
    view! {
        <p class="compare-summary">{format!(
            "a = {}, b = {}: {} paired trials; unpaired: a {}, b {}; paired trials that ended in error (scored as \
             failures): a {}, b {}.",
            c.a, c.b, c.pairs, c.unpaired_a, c.unpaired_b, c.errors_a, c.errors_b
        )}</p>
        {(c.unfinished_a + c.unfinished_b > 0).then(|| view! {
            <p class="notice compare-unfinished">{format!(
                "Trials not finished (queued, running or cancelled) are left out: a {}, b {}.",
                c.unfinished_a, c.unfinished_b
            )}</p>
        })}
        {(c.self_reported_a + c.self_reported_b > 0).then(|| view! {
            <p class="notice compare-self-reported" data-testid="self-reported">{format!(
                "Self-reported: paired trials imported from a file, whose figures rest on what the file says: a {}, b {}.",
                c.self_reported_a, c.self_reported_b
            )}</p>
        })}
        <table class="report compare-metrics">
            <caption>"Each metric on the paired trials: b − a with its 95% paired interval, Holm-adjusted p"</caption>
            <thead><tr><th>"metric"</th><th>"a"</th><th>"b"</th><th>"b − a"</th><th>"95% CI"</th><th>"p (Holm)"</th><th>"pairs"</th></tr></thead>
            <tbody>
                {c.metrics.into_iter().map(|m| view! {
                    <tr>
                        <td title=crate::glossary::definition(&m.metric).unwrap_or_default()>{m.metric.clone()}</td>
                        <td class="num">{fmt3(m.a)}</td><td class="num">{fmt3(m.b)}</td>
                        <td class="num">{signed(m.diff.mean)}</td>
                        <td class="num">{if m.diff.no_interval { "no interval".to_string() } else { format!("[{}, {}]{}", signed(m.diff.lo), signed(m.diff.hi), crate::model::covers(m.diff.coverage)) }}</td>
                        <td class="num">{m.p.map_or_else(|| format!("– ({} families)", m.clusters), |p| format!("{p:.4}"))}</td><td class="num">{m.n}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>{format!("Verdicts that changed ({changed})")}</h2>
        {if changed == 0 {
            view! { <p class="muted">"No paired trial changed its verdict."</p> }.into_any()
        } else {
            view! {
                <table class="report compare-changed">
                    <thead><tr><th>"task"</th><th>"configuration"</th><th>"level"</th><th>"condition"</th><th>"seed"</th>
                        <th>"a"</th><th>"b"</th><th>"change"</th><th></th></tr></thead>
                    <tbody>
                        {c.changed.into_iter().map(|x| view! {
                            <tr data-direction=x.direction.clone()>
                                <td>{x.task_id.clone()}</td><td>{x.agent.clone()}</td><td>{x.level.to_string()}</td>
                                <td>{x.condition.to_string()}</td><td class="num">{x.seed}</td>
                                <td><A href=crate::model::routes::trial(&run_a, &x.a_trial, "")>{verdict(&x.a_verdict)}</A></td>
                                <td><A href=crate::model::routes::trial(&run_b, &x.b_trial, "")>{verdict(&x.b_verdict)}</A></td>
                                <td>{x.direction.clone()}</td>
                                <td><A href=crate::model::routes::compare_trials(&x.a_trial, &x.b_trial, None) attr:class="side-by-side">"side by side"</A></td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}

/// `/compare`.
#[component]
pub fn ComparePage() -> impl IntoView {
    let (a, b, as_of) = (query_param("a"), query_param("b"), query_param("as_of"));
    let data = Resource::new(
        move || (a.get(), b.get(), as_of.get()),
        |(a, b, as_of)| async move {
            // Nothing asked yet is no error: the page asks for two runs.
            match (a, b) {
                (Some(a), Some(b)) => get_compare(a, b, as_of).await.map(Some),
                _ => Ok(None),
            }
        },
    );
    view! {
        <Title text="Compare"/>
        <h1>"Compare two runs or configurations"</h1>
        <form class="filters compare-form" method="get">
            <label>"a "<input name="a" value=move || a.get().unwrap_or_default() placeholder="RUN or RUN:CONFIG"/></label>
            <label>"b "<input name="b" value=move || b.get().unwrap_or_default() placeholder="RUN or RUN:CONFIG"/></label>
            <button type="submit">"Compare"</button>
        </form>
        <p class="muted">"Trials pair by task, condition, level and seed (and configuration, when two whole runs are \
            compared). Differences are b − a; a trial that ended in error stays paired and counts as a failure."</p>
        <Loading resource=data waiting="Comparing…" keep=true ready=move |d| match d {
            None => view! { <p class="muted">"Name two runs, or two configurations as RUN:CONFIG."</p> }.into_any(),
            Some(c) => {
                let (sa, sb) = (c.a.clone(), c.b.clone());
                let pinned = Callback::new(move |x: Option<String>| {
                    crate::model::routes::compare(&sa, &sb, x)
                });
                view! { <AsOfLine as_of=c.frozen href=pinned/>{result(c)} }.into_any()
            }
        }/>
    }
}

/// One side's cell of a turn.
fn turn_cell(t: Option<&TurnView>) -> impl IntoView + use<> {
    match t {
        Some(t) => view! {
            <td>
                <div class="action"><code>{t.action.clone()}</code></div>
                {t.url.clone().map(|u| view! { <div class="muted">{u}</div> })}
                <div class="thought">{t.thought.clone()}</div>
            </td>
        }
        .into_any(),
        None => view! { <td class="muted">"(no turn)"</td> }.into_any(),
    }
}

/// `/compare/trials?a=TRIAL&b=TRIAL`: two trials turn by turn, the first turn whose
/// actions differ marked.
#[component]
pub fn CompareTrialsPage() -> impl IntoView {
    let (a, b) = (query_param("a"), query_param("b"));
    let page = move || query_param("page").get().and_then(|p| p.parse::<usize>().ok()).unwrap_or(0);
    let data = Resource::new(
        move || (a.get(), b.get(), page()),
        |(a, b, page)| async move {
            let (Some(a), Some(b)) = (a, b) else { return Ok(None) };
            let (ta, tb) = (
                get_trajectory(a, page, TrialQuery::default()).await,
                get_trajectory(b, page, TrialQuery::default()).await,
            );
            ta.and_then(|ta| tb.map(|tb| Some((ta, tb))))
        },
    );
    view! {
        <Title text="Two trials side by side"/>
        <h1>"Two trials side by side"</h1>
        <Loading resource=data waiting="Loading both trials…" keep=true ready=move |d| match d {
                None => view! { <p class="muted">"Name two trials: ?a=TRIAL&b=TRIAL."</p> }.into_any(),
                Some((ta, tb)) => {
                    let n = ta.turns.len().max(tb.turns.len());
                    let first_diff = (0..n).find(|&i| {
                        ta.turns.get(i).map(|t| &t.action) != tb.turns.get(i).map(|t| &t.action)
                    });
                    let pages = ta.turn_count.max(tb.turn_count).div_ceil(ta.page_size.max(1));
                    let (qa, qb) = (ta.trial.id.to_string(), tb.trial.id.to_string());
                    let about = |t: &crate::model::TrialSummary| format!(
                        "{}: task {}, level {}, condition {}, seed {}, {}{}",
                        t.id, t.task, t.level, t.condition, t.seed, t.state,
                        t.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
                    );
                    let unrelated = ta.trial.task != tb.trial.task;
                    view! {
                        <ul class="compare-about">
                            <li>{format!("a = {}", about(&ta.trial))}</li>
                            <li>{format!("b = {}", about(&tb.trial))}</li>
                        </ul>
                        {unrelated.then(|| view! {
                            <p class="notice">"These two trials are of different tasks: their turns are not comparable."</p>
                        })}
                        <table class="report compare-trials">
                            <thead><tr>
                                <th>"turn"</th>
                                <th><A href=crate::model::routes::trial(&ta.run, &ta.trial.id, "")>{format!(
                                    "a: {} ({}, {})", ta.trial.id, ta.trial.agent, ta.trial.verdict.clone().unwrap_or_default()
                                )}</A></th>
                                <th><A href=crate::model::routes::trial(&tb.run, &tb.trial.id, "")>{format!(
                                    "b: {} ({}, {})", tb.trial.id, tb.trial.agent, tb.trial.verdict.clone().unwrap_or_default()
                                )}</A></th>
                            </tr></thead>
                            <tbody>
                                {(0..n).map(|i| {
                                    let t = ta.turns.get(i).or(tb.turns.get(i)).map_or(i, |t| t.t);
                                    view! {
                                        <tr class:diverges=first_diff == Some(i)>
                                            <td class="num">{if first_diff == Some(i) { format!("{t} ≠") } else { t.to_string() }}</td>
                                            {turn_cell(ta.turns.get(i))}
                                            {turn_cell(tb.turns.get(i))}
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                        {(pages > 1).then(|| view! {
                            <p class="pages">{(0..pages).map(|p| view! {
                                <A href=crate::model::routes::compare_trials(&qa, &qb, Some(p))>{format!("turns {}–{} ", p * ta.page_size, (p + 1) * ta.page_size - 1)}</A>
                            }).collect_view()}</p>
                        })}
                    }.into_any()
                }
        }/>
    }
}
