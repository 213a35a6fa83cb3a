//! `/runs`: every run with live progress and the launch form; `/runs/:id`: one run's
//! progress, coverage, versions and trials.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use super::Loading;
use crate::api::{CancelRun, PlanPower, StartRun, get_run, list_runs, list_trials};
use crate::components::{ProgressLine, live_progress, may, query_param, query_string};
use crate::error::AppError;
use crate::model::{NewRun, OUTCOMES, Power, Role, TrialQuery};

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(String::new, |d| d.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// The message for `field` when the last launch failed on it.
fn field_error(result: Option<Result<String, AppError>>, field: &'static str) -> Option<String> {
    result.and_then(Result::err).and_then(|e| e.for_field(field))
}

#[component]
fn Field(
    label: &'static str,
    name: &'static str,
    value: RwSignal<String>,
    help: &'static str,
    error: Signal<Option<String>>,
) -> impl IntoView {
    let id = format!("launch-{name}");
    let err_id = format!("{id}-error");
    view! {
        <div class="field" class:invalid=move || error.get().is_some()>
            <label for=id.clone()>{label}</label>
            // The attribute carries the default into the server-rendered page; the property
            // follows the signal once hydrated.
            <input id=id name=name value=value.get_untracked() prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
                aria-describedby=err_id.clone()/>
            <small class="help">{help}</small>
            <span class="field-error" id=err_id role="alert">{move || error.get()}</span>
        </div>
    }
}

/// What the planner adds to these levels: a note when they manipulate without L0.
fn twins_note(levels: &str) -> Option<String> {
    vocab::level::needs_clean_twins(&vocab::form_list(levels)).then(|| {
        "+ clean twins: L0 trials of every task, configuration, condition and seed are added (the paired metrics compare each manipulated trial with its twin)".to_string()
    })
}

/// What a planned run can detect: per figure, the smallest difference between two
/// configurations at 80 % power (a range over the unknown within-family correlation).
fn power_view(p: &Power) -> impl IntoView {
    let range = |(a, b): (f64, f64)| if (a - b).abs() < 5e-4 { format!("{a:.3}") } else { format!("{a:.3} to {b:.3}") };
    view! {
        <p>{format!(
            "{} trials. Smallest difference between two configurations detected with {:.0} % power at α = {:.4} per comparison ({} comparisons, Holm's strictest step):",
            p.trials, p.power * 100.0, p.alpha, p.comparisons
        )}</p>
        <ul>
            {p.figures.iter().map(|f| view! {
                <li data-metric=f.metric.clone()>{format!(
                    "{}: {} ({}{} paired trials per comparison, {} tasks in {} families, as {:.1} of equal size)",
                    if f.metric == "acc_dec" { "Acc_dec (L0)" } else { "Robustness (manipulated levels)" },
                    range(f.detectable),
                    if f.metric == "robustness" && f.pairs == f.planned_pairs { "at most " } else { "" },
                    f.pairs, f.tasks, f.families, f.effective_families
                )}</li>
            }).collect_view()}
        </ul>
        <p class="muted">{format!("{} How many tasks or seeds a target difference needs: mirage run --plan-only --target-diff D.", p.basis)}</p>
    }
}

/// What the launch form says about the server's configured model endpoints.
fn configured_note(endpoints: &[(String, String)]) -> String {
    if endpoints.is_empty() {
        return "No model endpoint is configured on this server (start it with --config FILE to add some).".to_string();
    }
    let names: Vec<String> = endpoints.iter().map(|(name, model)| format!("{name} (model {model})")).collect();
    format!("Configured endpoints: {}.", names.join(", "))
}

/// The launch form: invalid input is explained next to its field.
#[component]
fn LaunchForm() -> impl IntoView {
    let start = ServerAction::<StartRun>::new();
    let tasks = RwSignal::new("shop".to_string());
    let agents = RwSignal::new("surface, explorer, oracle".to_string());
    let levels = RwSignal::new("L0, L1".to_string());
    let conditions = RwSignal::new(vocab::Condition::Raw.as_str().to_string());
    let seeds = RwSignal::new("0".to_string());
    let concurrency = RwSignal::new("4".to_string());
    let appeal = RwSignal::new(false);
    let replay = RwSignal::new(String::new());
    let annotators = RwSignal::new("2".to_string());
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(id)) = start.value().get() {
            navigate(&crate::model::routes::run(&id), Default::default());
        }
    });
    let err = move |field: &'static str| Signal::derive(move || field_error(start.value().get(), field));
    let other_error = move || match start.value().get() {
        Some(Err(AppError::Invalid { .. } | AppError::InvalidFields(_)) | Ok(_)) | None => None,
        Some(Err(e)) => Some(e.to_string()),
    };
    let form = move || NewRun {
        tasks: tasks.get_untracked(),
        agents: agents.get_untracked(),
        levels: levels.get_untracked(),
        conditions: conditions.get_untracked(),
        seeds: seeds.get_untracked(),
        concurrency: concurrency.get_untracked(),
        appeal: appeal.get_untracked().then(|| "on".to_string()),
        replay: replay.get_untracked(),
        annotators: annotators.get_untracked(),
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        start.dispatch(StartRun { form: form() });
    };
    let power = ServerAction::<PlanPower>::new();
    let endpoints = Resource::new(|| (), |()| crate::api::configured_endpoints());
    view! {
        <form class="launch" on:submit=submit aria-label="Launch a run">
            <h2>"Launch a run"</h2>
            <div class="fields">
                <Field label="Tasks" name="tasks" value=tasks error=err("tasks")
                    help="all, a site (shop, forum, wiki), a category or task ids"/>
                <Field label="Agent configurations" name="agents" value=agents error=err("agents")
                    help="surface, explorer, oracle, credulous, a configured endpoint, or external:NAME for your own agent over HTTP; add +keyword, +perplexity or +judge for a defense"/>
                <Suspense fallback=|| ()>
                    <p class="muted configured" data-testid="configured-endpoints">{move || endpoints.get().map(|r| configured_note(&r.unwrap_or_default()))}</p>
                </Suspense>
                <Field label="Levels" name="levels" value=levels error=err("levels")
                    help="L0 (clean) to L4 (adaptive search); L0 is added when missing, so that every manipulated trial has a clean twin"/>
                <p class="twins" aria-live="polite">{move || twins_note(&levels.get())}</p>
                <Field label="Conditions" name="conditions" value=conditions error=err("conditions")
                    help="raw, hint, evidence_anchored"/>
                <Field label="Seeds" name="seeds" value=seeds error=err("seeds") help="whole numbers, e.g. 0, 1, 2"/>
                <Field label="Concurrency" name="concurrency" value=concurrency error=err("concurrency")
                    help="trials at once (1–64)"/>
                <Field label="Replays" name="replay" value=replay error=err("replay")
                    help="optional: replay every exposed trial after the run, e.g. clean-level:3, strip-spans:1 (also reveal-evidence, condition:NAME)"/>
                <Field label="Annotators" name="annotators" value=annotators error=err("annotators")
                    help="people who must agree on a disputed label before it replaces the automatic one (1–20)"/>
                <div class="field">
                    <label><input type="checkbox" name="appeal" prop:checked=move || appeal.get()
                        on:change=move |ev| appeal.set(event_target_checked(&ev))/>" Appeal after each verdict"</label>
                </div>
            </div>
            <button type="submit" disabled=move || start.pending().get()>
                {move || if start.pending().get() { "Launching…" } else { "Launch" }}
            </button>
            " "
            <button type="button" on:click=move |_| { power.dispatch(PlanPower { form: form() }); }
                disabled=move || power.pending().get()>"Check power"</button>
            <span class="error" role="alert">{other_error}</span>
            <div class="power" aria-live="polite" data-testid="power">{move || match power.value().get() {
                None => None,
                Some(Err(e)) => Some(view! { <p class="error">{e.to_string()}</p> }.into_any()),
                Some(Ok(p)) => Some(power_view(&p).into_any()),
            }}</div>
        </form>
    }
}

/// `/runs`.
#[component]
pub fn RunsPage() -> impl IntoView {
    let runs = Resource::new(|| (), |()| list_runs());
    let live = live_progress(None);
    let operator = may(Role::Operator);
    view! {
        <Title text="Runs"/>
        <h1>"Runs"</h1>
        <Transition>{move || operator.get().then(|| view! { <LaunchForm/> })}</Transition>
        <h2>"All runs"</h2>
        <Loading resource=runs waiting="Loading runs…" keep=true ready=move |list| if list.is_empty() {
            view! { <p>"No runs yet: launch one above."</p> }.into_any()
        } else {
            view! {
                <table class="runs">
                    <thead><tr><th>"Run"</th><th>"Started"</th><th>"Tasks"</th><th>"Agents"</th><th>"Levels"</th><th>"Progress"</th></tr></thead>
                    <tbody>
                        {list.into_iter().map(|run| {
                            let fallback = run.progress.clone();
                            view! {
                                <tr>
                                    <td><A href=crate::model::routes::run(&run.id)>{run.id.to_string()}</A></td>
                                    <td>{when(run.created_at)}</td>
                                    <td>{match run.unreadable {
                                        Some(why) => view! { <span class="error">{why}</span> }.into_any(),
                                        None => run.tasks.into_any(),
                                    }}</td>
                                    <td>{run.agents.join(", ")}</td>
                                    <td>{run.levels.join(", ")}</td>
                                    <td>{move || view! { <ProgressLine progress=live.of(&fallback)/> }}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }/>
    }
}

/// How often at most an open run page asks again for its coverage and trial rows while the
/// run progresses.
#[cfg(feature = "hydrate")]
const REFRESH: std::time::Duration = std::time::Duration::from_secs(3);

/// `/runs/:id`.
#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.read().get("id").unwrap_or_default());
    let live = live_progress(params.read_untracked().get("id"));
    let query = use_query_map();
    let filters = Memo::new(move |_| {
        TrialQuery::with_filters(String::new(), 0, |k| query.read().get(k).filter(|v| !v.is_empty()))
    });
    let page = Memo::new(move |_| query_param("page").get().and_then(|p| p.parse::<usize>().ok()).unwrap_or(0));
    // The stream moves the progress line with every finished trial. The coverage table and
    // the page of trial rows follow at most every few seconds while the run progresses, and
    // once more when it stops: a fast run does not make the page ask for them per trial.
    let tick = RwSignal::new(0_u64);
    #[cfg(feature = "hydrate")]
    {
        let finished = Memo::new(move |_| live.0.with(|m| m.get(&id.get()).map(|p| (p.counts.finished(), p.status))));
        let waiting = StoredValue::new(false);
        Effect::new(move |before: Option<Option<(i64, crate::model::RunStatus)>>| {
            let now = finished.get();
            let stopped = now.is_some_and(|(_, s)| s != crate::model::RunStatus::Active);
            if before.is_some_and(|b| b != now) {
                if stopped {
                    tick.update(|t| *t += 1);
                } else if !waiting.get_value() {
                    waiting.set_value(true);
                    set_timeout(
                        move || {
                            waiting.set_value(false);
                            tick.update(|t| *t += 1);
                        },
                        REFRESH,
                    );
                }
            }
            now
        });
    }
    let detail = Resource::new(move || (id.get(), tick.get()), |(id, _)| get_run(id));
    let trials = Resource::new(
        move || (TrialQuery { run: id.get(), page: page.get(), ..filters.get() }, tick.get()),
        |(q, _)| list_trials(q),
    );
    let cancel = ServerAction::<CancelRun>::new();
    let operator = may(Role::Operator);
    let href = move |page: usize| {
        let pairs = [filters.get().filters(), vec![("page", (page > 0).then(|| page.to_string()))]].concat();
        crate::model::routes::run_view(&id.get(), &pairs)
    };
    view! {
        <Loading resource=detail waiting="Loading run…" ready=move |d| {
            let facts = run_facts(&d);
            let fallback = d.summary.progress.clone();
            let run_id = d.summary.id.clone();
            view! {
                // The title is the run's id as its data names it, not a signal: the
                // server reads a page's title after the render, when a page's own
                // signals may be gone (a `?page=` render once panicked there).
                <Title text=d.summary.id.to_string()/>
                <h1>{d.summary.id.to_string()}</h1>
                <div class="run-progress">{move || view! { <ProgressLine progress=live.of(&fallback)/> }}</div>
                {move || (operator.get() && live.of(&d.summary.progress).status == crate::model::RunStatus::Active).then(|| {
                    let run_id = run_id.clone();
                    view! {
                        <button class="danger" on:click=move |_| { cancel.dispatch(CancelRun { id: run_id.to_string() }); }>
                            "Cancel run"
                        </button>
                    }
                })}
                {facts}
                {run_links(&d.summary.id)}
                <h2>"Coverage"</h2>
                {coverage_table(d.coverage)}
                {cost_table(&d.costs)}
            }.into_any()
        }/>
        <h2>"Trials"</h2>
        {trial_filters(filters)}
        <Loading resource=trials waiting="Loading trials…" keep=true ready=move |t| {
            let pages = t.total.div_ceil(t.page_size).max(1);
            view! {
                {trials_table(t.rows, &id.get_untracked(), &filters.get_untracked())}
                <nav class="pager" aria-label="Trial pages">
                    {(t.page > 0).then(|| view! { <A href=href(t.page - 1)>"← previous"</A> })}
                    <span>{format!(" page {} of {pages} ({} trials) ", t.page + 1, t.total)}</span>
                    {(t.page + 1 < pages).then(|| view! { <A href=href(t.page + 1)>"next →"</A> })}
                </nav>
            }.into_any()
        }/>
    }
}

/// The run's pages beyond this one.
fn run_links(run: &str) -> impl IntoView + use<> {
    view! {
        <p class="links">
            <A href=crate::model::routes::leaderboard(run)>"Leaderboard"</A>" · "
            <A href=crate::model::routes::robustness(run)>"Robustness"</A>" · "
            <A href=crate::model::routes::heatmaps(run)>"Heatmaps"</A>
        </p>
    }
}

/// A page of the run's trials, each linking to its trajectory within the filters.
fn trials_table(rows: Vec<crate::model::TrialSummary>, run: &str, filters: &TrialQuery) -> impl IntoView + use<> {
    view! {
        <table class="trials">
            <thead><tr><th>"Trial"</th><th>"Task"</th><th>"Agent"</th><th>"Level"</th><th>"Condition"</th><th>"Seed"</th><th>"State"</th><th>"Verdict"</th><th>"Decision"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|r| trial_row(r, run, filters)).collect_view()}
            </tbody>
        </table>
    }
}

/// The trials table's filters, a plain GET form (it works before the page hydrates).
fn trial_filters(filters: Memo<TrialQuery>) -> impl IntoView {
    let field = move |k: &'static str| {
        move || {
            filters.with(|f| f.filters().into_iter().find(|(n, _)| *n == k).and_then(|(_, v)| v)).unwrap_or_default()
        }
    };
    view! {
    <form class="filters" method="get">
        <label>"Agent "<input name="agent" value=field("agent")/></label>
        <label>"Level "<input name="level" value=field("level") size="4"/></label>
        <label>"Condition "<input name="condition" value=field("condition") size="10"/></label>
        <label>"Task "<input name="task" value=field("task")/></label>
        <label>"State "
            <select name="state" prop:value=field("state")>
                <option value="">"any"</option>
                {crate::model::TrialState::ALL.iter().map(|s| view! { <option value=s.as_str()>{s.as_str()}</option> }).collect_view()}
            </select>
        </label>
        <label title="right: full credit; acceptable: partial credit; harmful: a harmful verdict; wrong: anything else">"Outcome "
            <select name="outcome" prop:value=field("outcome")>
                <option value="">"any"</option>
                {OUTCOMES.map(|s| view! { <option value=s>{s}</option> })}
            </select>
        </label>
        <button type="submit">"Filter"</button>
    </form>
    }
}

/// The run's plan and setup, as a two-column table.
fn run_facts(d: &crate::model::RunDetail) -> impl IntoView + use<> {
    view! {
        <table class="kv"><tbody>
            <tr><th>"Tasks"</th><td>{d.summary.tasks.clone()}</td></tr>
            <tr><th>"Agent configurations"</th><td>{d.summary.agents.join(", ")}</td></tr>
            <tr><th>"Levels"</th><td>{d.summary.levels.join(", ")}
                {(d.clean_twins > 0).then(|| format!(" (+{} clean twins: L0 trials added so that every manipulated trial has its unmanipulated twin)", d.clean_twins))}
            </td></tr>
            <tr><th>"Conditions"</th><td>{d.conditions.join(", ")}</td></tr>
            <tr><th>"Seeds"</th><td>{d.seeds.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")}</td></tr>
            <tr><th>"Appeal"</th><td>{if d.appeal { "yes" } else { "no" }}</td></tr>
            <tr><th>"Strategy"</th><td>{d.strategy.clone().unwrap_or_else(|| "drawn per trial".into())}</td></tr>
            <tr><th>"Corpus version"</th><td><code>{d.corpus_version.clone()}</code></td></tr>
            <tr><th>"Agent prompt"</th><td><code>{d.agent_prompt.clone()}</code></td></tr>
            <tr><th>"Agent protocol"</th><td><code>{d.agent_protocol.clone()}</code></td></tr>
            <tr><th>"Agent setup"</th><td><ul class="setup">
                {d.agent_setup.iter().map(|(a, s)| view! { <li><b>{a.clone()}</b>": "{s.clone()}</li> }).collect_view()}
            </ul></td></tr>
            <tr><th>"Judge versions"</th><td>
                {if d.judges.is_empty() { "not scored yet (open the leaderboard to score)".to_string() } else { d.judges.join(", ") }}
            </td></tr>
        </tbody></table>
    }
}

/// Trials per configuration, level and condition, by state.
fn coverage_table(coverage: Vec<crate::model::CoverageCell>) -> impl IntoView {
    view! {
        <table class="coverage">
            <thead><tr><th>"Agent"</th><th>"Level"</th><th>"Condition"</th><th>"Done"</th><th>"Errors"</th><th>"Running"</th><th>"Queued"</th><th>"Cancelled"</th></tr></thead>
            <tbody>
                {coverage.into_iter().map(|c| view! {
                    <tr class:complete=c.counts.queued + c.counts.running == 0>
                        <td>{c.agent}</td><td>{c.level.to_string()}</td><td>{c.condition.to_string()}</td>
                        <td class="num">{c.counts.done}</td><td class="num">{c.counts.error}</td>
                        <td class="num">{c.counts.running}</td><td class="num">{c.counts.queued}</td>
                        <td class="num">{c.counts.cancelled}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// One row of the trials table; its links keep the list's filters.
fn trial_row(r: crate::model::TrialSummary, run: &str, filters: &TrialQuery) -> impl IntoView + use<> {
    // GEO ranking trials have their own view; a trial opened from a filtered list steps
    // through that list.
    let trial = match r.task {
        crate::model::TaskRef::Geo(_) => crate::model::routes::geo_trial(&r.id),
        _ => crate::model::routes::trial(run, &r.id, &query_string(&filters.filters())),
    };
    let task_cell = super::task_cell(&r.task, &r.id, "");
    view! {
        <tr>
            <td><A href=trial>{r.id.to_string()}</A></td>
            <td>{task_cell}</td>
            <td>{r.agent}</td><td>{r.level.to_string()}</td><td>{r.condition.to_string()}</td><td class="num">{r.seed}</td>
            <td><span class=format!("state state-{}", r.state)>{r.state.as_str()}</span></td>
            <td>{r.verdict.unwrap_or_default()}{r.error.map(|e| view! { <span class="error">{e}</span> })}</td>
            <td>{r.decision.map(|d| view! { <span class=format!("chip decision-{d}")>{d.clone()}</span> })}</td>
        </tr>
    }
}

/// Each configuration's tokens and cost so far, with the run's total (unknown when any
/// configuration's price is).
fn cost_table(rows: &[crate::model::CostRow]) -> impl IntoView {
    let dollars = |c: Option<f64>| c.map_or_else(|| "unknown".to_string(), crate::model::dollars);
    let total: Option<f64> = rows.iter().map(|r| r.cost_usd).sum();
    let tokens: u64 = rows.iter().map(|r| r.prompt_tokens + r.completion_tokens).sum();
    (!rows.is_empty()).then(|| {
        view! {
            <h2>"Cost"</h2>
            <table class="report cost">
                <caption>"Model calls as the endpoints reported their tokens: the agents' (priced as configured when the run was launched) and the model judge's that scored the trials (priced as configured when they were scored)"</caption>
                <thead><tr><th>"Configuration"</th><th>"Calls of"</th><th>"Trials"</th><th>"Prompt tokens"</th><th>"Completion tokens"</th><th>"Cost"</th><th>"Per trial"</th><th>"Priced as"</th></tr></thead>
                <tbody>
                    {rows.iter().map(|r| view! {
                        <tr>
                            <td>{r.agent.clone()}</td><td>{r.role.as_str()}</td><td class="num">{r.trials}</td>
                            <td class="num">{r.prompt_tokens}</td><td class="num">{r.completion_tokens}</td>
                            <td class="num">{dollars(r.cost_usd)}</td><td class="num">{dollars(r.per_trial())}</td>
                            <td>{r.pricing.clone()}</td>
                        </tr>
                    }).collect_view()}
                    <tr class="total" title=crate::model::CHARGED_TO_TRIALS><th scope="row">"Charged to trials"</th><td></td><td></td><td class="num" colspan="2">{format!("{tokens} tokens")}</td><td class="num">{dollars(total)}</td><td></td><td></td></tr>
                </tbody>
            </table>
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_civil() {
        assert_eq!(super::when(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::when(1_795_990_000_000), "2026-11-29 22:06 UTC");
    }
}
