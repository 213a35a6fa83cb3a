//! `/robustness`: the robustness–utility plane (drawn on the server by plotters), pooled
//! or per level; `/heatmaps`: level × configuration / domain / category for one metric.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::Loading;
use crate::api::{get_heatmap, get_robustness};
use crate::components::{AsOfLine, EstCell, PendingLine, RunPicker, query_param, query_string};
use crate::glossary::Column;
use crate::model::Metric;
use crate::model::{HeatCell, HeatQuery};

/// `/robustness`.
#[component]
pub fn RobustnessPage() -> impl IntoView {
    let run = query_param("run");
    let level = query_param("level");
    let as_of = query_param("as_of");
    let data = Resource::new(
        move || (run.get(), level.get(), as_of.get()),
        |(run, level, as_of)| get_robustness(run, level, as_of),
    );
    let refetch = Callback::new(move |()| data.refetch());
    let href = move |run: &str, level: &str| crate::model::routes::robustness_at(run, level, as_of.get_untracked());
    view! {
        <Title text="Robustness"/>
        <h1>"Robustness vs utility"</h1>
        <Loading resource=data waiting="Scoring…" keep=true ready=move |d| {
            let lvl = d.level.clone();
            let picker = Callback::new(move |run: String| href(&run, &lvl));
            let pin = d.frozen.pinned.then(|| d.frozen.param());
            let q = query_string(&[("run", Some(d.run.to_string())), ("level", Some(d.level.clone())), ("as_of", pin)]);
            let (r, l) = (d.run.to_string(), d.level.clone());
            let pinned = Callback::new(move |a: Option<String>| {
                crate::model::routes::robustness_at(&r, &l, a)
            });
            view! {
                <PendingLine pending=d.pending.clone() refetch=refetch/>
                <AsOfLine as_of=d.frozen href=pinned/>
                <div class="controls">
                    <RunPicker runs=d.runs.clone() current=d.run.clone() href=picker/>
                    <span class="toggle" role="group" aria-label="Level">"Level: "
                        {std::iter::once("pooled".to_string()).chain(d.levels.iter().map(ToString::to_string)).map(|l| {
                            let class = if l == d.level { "on" } else { "" };
                            view! { <A href=href(&d.run, &l) attr:class=class>{l.clone()}</A> }
                        }).collect_view()}
                    </span>
                </div>
                {(!d.missing.is_empty()).then(|| view! {
                    <p class="muted">{format!("Not plotted (no L0 trials, or no manipulated trials paired with a clean twin): {}", d.missing.join(", "))}</p>
                })}
                // The SVG is generated on the server by plotters; every piece of text in it is escaped.
                <figure class="plot robustness-plot" inner_html=d.svg.clone()></figure>
                <p class="downloads">"Download: "
                    <a href=crate::model::routes::export("robustness.svg", &q) download="">"plot (SVG)"</a>" · "
                    <a href=crate::model::routes::export("robustness.csv", &q) download="">"points (CSV)"</a>
                </p>
                <table class="points">
                    <thead><tr><th>"Configuration"</th>
                        <th title=crate::glossary::definition_of(Column::Utility)>"Utility"" "<a class="def" href=crate::glossary::href_of(Column::Utility)>"?"</a></th>
                        <th title=crate::glossary::definition_of(Column::Metric(Metric::Robustness))>"Robustness (paired)"" "<a class="def" href=crate::glossary::href_of(Column::Metric(Metric::Robustness))>"?"</a></th>
                        <th>"Frontier"</th></tr></thead>
                    <tbody>
                        {d.points.iter().map(|p| view! {
                            <tr data-agent=p.agent.clone()>
                                <th scope="row">{p.agent.clone()}</th>
                                <EstCell est=Some(p.utility)/>
                                <EstCell est=Some(p.robustness)/>
                                <td>{if p.frontier { "on the frontier" } else { "" }}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
                <h2>"Utility against cost"</h2>
                {cost_plot(d.cost_svg.clone(), &d.costs)}
            }.into_any()
        }/>
    }
}

/// Utility against cost per trial, with its points (a note when no configuration's cost is
/// known).
fn cost_plot(svg: Option<String>, costs: &[crate::model::CostPoint]) -> AnyView {
    match svg {
        // Drawn on the server by plotters, as the robustness plot.
        Some(svg) => view! {
            <figure class="plot cost-plot" inner_html=svg></figure>
            <table class="points cost-points">
                <thead><tr><th>"Configuration"</th><th>"Utility"</th>
                    <th title=crate::glossary::definition_of(Column::Metric(Metric::Cost))>"Cost per trial (US$)"" "<a class="def" href=crate::glossary::href_of(Column::Metric(Metric::Cost))>"?"</a></th>
                    <th>"Frontier"</th></tr></thead>
                <tbody>
                    {costs.iter().map(|p| view! {
                        <tr data-agent=p.agent.clone()>
                            <th scope="row">{p.agent.clone()}</th>
                            <EstCell est=Some(p.utility)/><EstCell est=Some(p.cost) dollars=true/>
                            <td>{if p.frontier { "on the frontier" } else { "" }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }
        .into_any(),
        None => view! {
            <p class="muted">"No configuration's cost is known: give the endpoints a price in the config file (baselines cost 0)."</p>
        }
        .into_any(),
    }
}

/// One heatmap cell (level `l` × column `c`): its mean, interval, n and errors, greyed as
/// [`heat_class`] says; a dash where the metric has no value, empty where no trial is.
fn heat_cell(cell: Option<&crate::model::HeatCell>, l: &str, c: &str) -> AnyView {
    let Some(cell) = cell else { return view! { <td class="heat na">""</td> }.into_any() };
    let class = heat_class(cell);
    match cell.est {
        Some(e) => view! {
            <td class=class title=format!("{l} × {c}: {:.3} {}, n = {}; {} of {} trials errored", e.mean, e.bracket(3), e.n, cell.errors, cell.trials)>
                <span class="mean">{format!("{:.2}", e.mean)}</span>
                <span class="ci">{e.bracket(2)}</span>
                <span class="n">{format!("n={}", e.n)}</span>
                {(cell.errors > 0).then(|| view! { <span class="errors">{format!("{} errors", cell.errors)}</span> })}
            </td>
        }
        .into_any(),
        None => view! { <td class=class>"–"</td> }.into_any(),
    }
}

const METRICS: [&str; 10] = [
    "manipulation_effect",
    "robustness",
    "susceptibility",
    "goal_rate",
    "flip_rate",
    "harm_flip",
    "acc_dec",
    "exposure",
    "verification",
    "recovery",
];

fn heat_class(c: &HeatCell) -> String {
    match (&c.est, c.underpowered) {
        (None, _) => "heat na".into(),
        (Some(_), true) => "heat underpowered".into(),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        (Some(e), false) => format!("heat heat-{}", (e.mean * 10.0).round().clamp(0.0, 10.0) as u8),
    }
}

/// `/heatmaps`.
#[component]
pub fn HeatmapsPage() -> impl IntoView {
    let run = query_param("run");
    let metric = query_param("metric");
    let by = query_param("by");
    let as_of = query_param("as_of");
    let data = Resource::new(
        move || HeatQuery { run: run.get(), metric: metric.get(), by: by.get(), as_of: as_of.get() },
        get_heatmap,
    );
    let refetch = Callback::new(move |()| data.refetch());
    let url = |run: &str, metric: &str, by: &str, as_of: Option<String>| {
        crate::model::routes::heatmaps_at(run, metric, by, as_of)
    };
    let href = move |run: &str, metric: &str, by: &str| url(run, metric, by, as_of.get_untracked());
    view! {
        <Title text="Heatmaps"/>
        <h1>"Heatmaps"</h1>
        <Loading resource=data waiting="Scoring…" keep=true ready=move |h| {
            let (m, b) = (h.metric.clone(), h.by.clone());
            let picker = Callback::new(move |run: String| href(&run, &m, &b));
            let pin = h.frozen.pinned.then(|| h.frozen.param());
            let q = query_string(&[("run", Some(h.run.to_string())), ("metric", Some(h.metric.clone())), ("by", Some(h.by.clone())), ("as_of", pin)]);
            let (r, m, b) = (h.run.to_string(), h.metric.clone(), h.by.clone());
            let pinned = Callback::new(move |a: Option<String>| url(&r, &m, &b, a));
            view! {
                <PendingLine pending=h.pending.clone() refetch=refetch/>
                <AsOfLine as_of=h.frozen href=pinned/>
                <div class="controls">
                    <RunPicker runs=h.runs.clone() current=h.run.clone() href=picker/>
                    <span class="toggle" role="group" aria-label="Metric">"Metric: "
                        {METRICS.iter().map(|x| view! {
                            <A href=href(&h.run, x, &h.by) attr:class=if *x == h.metric { "on" } else { "" }
                                attr:title=crate::glossary::definition(x).unwrap_or_default()>{*x}</A>
                        }).collect_view()}
                    </span>
                    <span class="toggle" role="group" aria-label="Columns">"Columns: "
                        {["agent", "domain", "category"].iter().map(|x| view! {
                            <A href=href(&h.run, &h.metric, x) attr:class=if *x == h.by { "on" } else { "" }>{*x}</A>
                        }).collect_view()}
                    </span>
                </div>
                <p class="muted">{format!(
                    "{} by level × {}. Each cell: mean, 95% interval, n. Grey cells have fewer than {} observations or an interval wider than 0.5.",
                    h.metric, h.by, h.min_n
                )}" "{crate::glossary::definition(&h.metric).unwrap_or_default()}" "
                    <a class="def" href=crate::glossary::href(&h.metric)>"definitions"</a></p>
                <table class="heatmap">
                    <thead><tr><th>"Level"</th>{h.columns.iter().map(|c| view! { <th>{c.clone()}</th> }).collect_view()}</tr></thead>
                    <tbody>
                        {h.levels.iter().map(|l| view! {
                            <tr>
                                <th scope="row">{l.to_string()}</th>
                                {h.columns.iter().map(|c| heat_cell(h.cells.iter().find(|x| &x.level == l && &x.column == c), l.as_str(), c)).collect_view()}
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
                <p class="downloads">"Download: "
                    <a href=crate::model::routes::export("heatmap.csv", &q) download="">"cells (CSV)"</a>" · "
                    <a href=crate::model::routes::export("heatmap.json", &q) download="">"JSON"</a>
                </p>
            }.into_any()
        }/>
    }
}
