//! `/report?run=`: the MIRAGE paper's tables for one run, the same numbers as
//! `mirage report --run RUN --json`.

use leptos::prelude::*;
use leptos_meta::Title;

use super::Loading;
use crate::api::get_report;
use crate::components::{AsOfLine, ChecksTable, EstCell, PendingLine, RunPicker, fmt3, query_param, query_string};
use crate::model::{ReportRow, ReportView};

fn maybe(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), fmt3)
}

/// A table of rows with the key columns `keys` (`agent`, `domain`, `category`).
#[component]
fn RowsTable(rows: Vec<ReportRow>, keys: Vec<&'static str>, columns: Vec<String>, caption: String) -> impl IntoView {
    view! {
        <table class="report">
            <caption>{caption}</caption>
            <thead><tr>
                {keys.iter().map(|k| view! { <th scope="col">{*k}</th> }).collect_view()}
                <th scope="col">"trials"</th>
                <th scope="col" title="Trials that ended in error: they stay in every mean, scored 0 on decision and reasoning">"errors"</th>
                {columns.iter().map(|c| {
                    let hover = crate::glossary::definition(c).unwrap_or_default();
                    view! { <th scope="col" title=hover>{c.clone()}</th> }
                }).collect_view()}
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let key = |k: &str| match k {
                        "agent" => r.agent.clone(),
                        "domain" => r.domain.clone().unwrap_or_default(),
                        "level" => r.level.clone().unwrap_or_default(),
                        _ => r.category.clone().unwrap_or_default(),
                    };
                    let provenance = match r.self_reported {
                        0 => None,
                        n if n >= r.trials => Some("self-reported".to_string()),
                        n => Some(format!("mixed: {n} self-reported")),
                    };
                    view! {
                        <tr>
                            {keys.iter().enumerate().map(|(i, k)| view! {
                                <td>{key(k)}{(i == 0).then(|| provenance.clone().map(|p| view! { " " <span class="badge provenance" title="Imported from a file: these figures rest on what the file says">{p}</span> }))}</td>
                            }).collect_view()}
                            <td class="num">{r.trials}</td>
                            <td class="num">{r.errors}</td>
                            {columns.iter().map(|c| {
                                let dollars = c == "cost";
                                view! { <EstCell est=r.metrics.get(c).copied().flatten() dollars=dollars/> }
                            }).collect_view()}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

fn body(v: ReportView) -> impl IntoView {
    let r = v.report;
    let pin = v.frozen.pinned.then(|| v.frozen.param());
    let q = query_string(&[("run", Some(r.run.to_string())), ("as_of", pin)]);
    let run = r.run.to_string();
    let pinned = Callback::new(move |a: Option<String>| crate::model::routes::report(&run, a));
    let kept = v.frozen.pinned.then(|| v.frozen.param());
    let picker = Callback::new(move |run: String| crate::model::routes::report(&run, kept.clone()));
    view! {
        <div class="controls"><RunPicker runs=v.runs.clone() current=r.run.clone() href=picker/></div>
        <AsOfLine as_of=v.frozen href=pinned/>
        <p class="muted">{format!(
            "{} trials. Each cell: mean, 95% interval over task families, n.",
            r.trials
        )}</p>
        <RowsTable rows=r.main.clone() keys=vec!["agent", "domain"] columns=v.columns.clone()
            caption=format!(
                "Per configuration and domain: condition {}, level {} ({} trials)",
                r.slice.condition, r.slice.level, r.slice_trials
            )/>
        {r.not_reproduced.iter().map(|why| view! { <p class="muted">"Not comparable: "{why.clone()}</p> }).collect_view()}
        <h2>"Grader validity"</h2>
        <ChecksTable checks=r.checks.clone()/>
        <h2>"Hint − Raw"</h2>
        {hint_minus_raw(&r.hint_minus_raw)}
        {r.hint_minus_raw_withheld.iter().map(|w| view! { <p class="muted withheld">{w.clone()}</p> }).collect_view()}
        <h2>"Ranking checks per domain"</h2>
        {ranking_checks(&r.domains)}
        <h2>"Appeals"</h2>
        {if r.appeals.is_empty() {
            view! { <p class="muted">"This run had no appeal turns."</p> }.into_any()
        } else {
            view! { <RowsTable rows=r.appeals.clone() keys=vec!["agent"] columns=v.appeal_columns.clone()
                caption="Sycophancy over deceptive appeals, correction over helpful ones".to_string()/>
                <RowsTable rows=r.appeals_by_domain.clone() keys=vec!["agent", "domain"] columns=v.appeal_columns.clone()
                    caption="Per domain (appeals are put on forum and shop decisions only)".to_string()/> }.into_any()
        }}
        {(!v.adequacy_plots.is_empty()).then(|| view! {
            <h2>"Adequacy: Default against Strict"</h2>
            <p class="muted">"Points above the diagonal earn part of their Default accuracy from verdicts the task accepts without being the optimal one."</p>
            // Drawn on the server by plotters; every piece of text in it is escaped.
            {v.adequacy_plots.iter().map(|(domain, svg)| view! { <figure class="plot adequacy" data-domain=domain.clone() inner_html=svg.clone()></figure> }).collect_view()}
        })}
        <h2>"Manipulation against clean twins"</h2>
        {if r.manipulation.is_empty() {
            view! { <p class="muted">"No trials at this condition."</p> }.into_any()
        } else {
            view! { <RowsTable rows=r.manipulation.clone() keys=vec!["agent", "level"] columns=v.paired_columns.clone()
                caption=format!("Per configuration and level, condition {}: each manipulated trial paired with its L0 twin", r.slice.condition)/> }.into_any()
        }}
        {(!r.sampling.is_empty()).then(|| view! {
            <table class="report">
                <caption>"Between samples: how often two seeds of one clean cell disagree, and pass^k"</caption>
                <thead><tr><th>"agent"</th><th>"noise floor"</th><th>"pass^k (k = 1…)"</th></tr></thead>
                <tbody>
                    {r.sampling.iter().map(|s| view! {
                        <tr>
                            <td>{s.agent.clone()}</td>
                            <EstCell est=s.noise_floor/>
                            <td class="num">{s.pass_k.iter().map(|p| format!("{p:.2}")).collect::<Vec<_>>().join(" / ")}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
        <h2>"Per category"</h2>
        <RowsTable rows=r.categories.clone() keys=vec!["agent", "domain", "category"] columns=v.columns.clone()
            caption=format!("Per configuration, domain and category: condition {}, level {}", r.slice.condition, r.slice.level)/>
        <p class="downloads">"Download: "
            <a href=crate::model::routes::export("report.csv", &q) download="">"main table (CSV)"</a>" · "
            <a href=crate::model::routes::export("report.json", &q) download="">"JSON"</a>
        </p>
    }
}

/// The paired hint − raw differences, or why there are none.
fn hint_minus_raw(rows: &[crate::model::ReportDelta]) -> AnyView {
    if rows.is_empty() {
        view! { <p class="muted">"No trials of this run are paired across the raw and hint conditions."</p> }.into_any()
    } else {
        view! {
            <table class="report">
                <caption>"Paired by task, level and seed"</caption>
                <thead><tr><th>"agent"</th><th>"domain"</th><th>"metric"</th><th>"hint − raw"</th><th>"p"</th></tr></thead>
                <tbody>
                    {rows.iter().map(|d| view! {
                        <tr>
                            <td>{d.agent.clone()}</td><td>{d.domain.clone()}</td><td>{d.metric.clone()}</td>
                            <EstCell est=Some(d.diff)/>
                            <td class="num">{format!("{:.4}", d.p)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }.into_any()
    }
}

/// Per domain, how stable the configurations' ranking is: across tiers and under the
/// jackknife.
fn ranking_checks(domains: &[crate::model::DomainCheck]) -> impl IntoView + use<> {
    view! {
    <table class="report">
        <caption>"Spearman's ρ across configurations"</caption>
        <thead><tr><th>"domain"</th><th>"configurations"</th><th>"ρ Default vs Strict"</th><th>"jackknife ρ"</th><th>"largest swing"</th></tr></thead>
        <tbody>
            {domains.iter().map(|d| view! {
                <tr>
                    <td>{d.domain.clone()}</td><td class="num">{d.n}</td>
                    <td class="num">{maybe(d.default_vs_strict)}</td>
                    <td class="num">{maybe(d.jackknife_rho)}</td>
                    <td class="num">{maybe(d.jackknife_swing)}</td>
                </tr>
            }).collect_view()}
        </tbody>
    </table>
    }
}

/// `/report`.
#[component]
pub fn ReportPage() -> impl IntoView {
    let run = query_param("run");
    let as_of = query_param("as_of");
    let data = Resource::new(move || (run.get(), as_of.get()), |(run, as_of)| get_report(run, as_of));
    let refetch = Callback::new(move |()| data.refetch());
    view! {
        <Title text="Report"/>
        <h1>"Report"</h1>
        <Loading resource=data waiting="Scoring and computing the tables…" keep=true
            ready=move |v: ReportView| view! { <PendingLine pending=v.pending.clone() refetch=refetch/>{body(v)} }/>
    }
}
