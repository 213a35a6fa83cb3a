//! `/geo?run=&ranker=&method=`: the GEO ranking leaderboard of one run — methods per ranker
//! grouped by threat model, with intervals, tie bands, keyword flags and the gain left
//! after the keyword filter; method × dataset NRG; paired comparisons; Spearman between
//! rankers; and the targets of one (ranker, method). `/geo/trials/<trial>`: one target — the
//! list with the target marked, the edit, and its rank in every order, clean and edited,
//! with the raw replies. Every text is shown escaped.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::ErrorNotice;
use crate::api::{get_geo, get_geo_target};
use crate::components::{EstCell, RunPicker, fmt3, query_param, query_string};
use crate::model::{GeoTargetView, GeoView};

/// The heat class of an NRG in [−1, 1] (negative gains are grey).
fn nrg_class(nrg: f64) -> String {
    if nrg <= 0.0 {
        return "heat heat-0".into();
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let step = (nrg * 10.0).round().clamp(0.0, 10.0) as u8;
    format!("heat heat-{step}")
}

/// A heat cell of an NRG estimate (grey when there is none).
#[component]
fn NrgCell(est: Option<crate::model::Est>) -> impl IntoView {
    match est {
        Some(e) => view! {
            <td class=nrg_class(e.mean)>
                {fmt3(e.mean)}
                <span class="ci">{format!("[{:.2}, {:.2}]", e.lo, e.hi)}</span>
                <span class="n">{format!("n={}", e.n)}</span>
            </td>
        }
        .into_any(),
        None => view! { <td class="heat na">""</td> }.into_any(),
    }
}

fn board(v: &GeoView, method: Option<String>) -> AnyView {
    let run = v.run.clone();
    let q = query_string(&[("run", Some(run.clone()))]);
    let picker = Callback::new(|run: String| format!("/geo{}", query_string(&[("run", Some(run))])));
    let methods: Vec<String> = v.rows.iter().fold(Vec::new(), |mut m, r| {
        if !m.contains(&r.method) {
            m.push(r.method.clone());
        }
        m
    });
    let rankers: Vec<String> = {
        let mut r: Vec<String> = v.rows.iter().map(|r| r.ranker.clone()).collect();
        r.sort();
        r.dedup();
        r
    };
    let cells = v.cells.clone();
    view! {
        <div class="controls"><RunPicker runs=v.runs.clone() current=run.clone() href=picker/></div>
        <p class="muted">{format!(
            "{} trials ({} errors, {} unfinished); K = {} orders per target; prompt {}. Each cell: the equal-dataset \
             mean with its 95% list-cluster bootstrap interval and n. Methods in one band do not differ significantly \
             in NRG under that ranker (paired Wald tests, Holm).",
            v.trials, v.errors, v.unfinished, v.k, v.prompt_version
        )}</p>
        <table class="report geo-board">
            <caption>"Methods per ranker"</caption>
            <thead><tr>
                <th>"ranker"</th><th>"group"</th><th>"method"</th><th>"band"</th><th>"NRG"</th><th>"S@0.1"</th>
                <th>"P@0.1"</th><th>"KVR"</th><th>"NRG after keywords"</th><th>"promoted and passed"</th>
                <th>"PPL-R (4-gram)"</th><th>"missing"</th><th>"targets"</th>
            </tr></thead>
            <tbody>
                {v.rows.iter().map(|r| {
                    let href = format!("/geo{}", query_string(&[
                        ("run", Some(run.clone())), ("ranker", Some(r.ranker.clone())), ("method", Some(r.method.clone())),
                    ]));
                    view! {
                        <tr>
                            <td>{r.ranker.clone()}</td><td>{r.group.clone()}</td><td>{r.method.clone()}</td>
                            <td class="num">{r.band}</td>
                            <EstCell est=Some(r.nrg)/><EstCell est=Some(r.s_at_0_1)/><EstCell est=Some(r.p_at_0_1)/>
                            <EstCell est=Some(r.kvr)/><EstCell est=Some(r.nrg_after_keyword)/>
                            <EstCell est=Some(r.promoted_and_passed)/>
                            <td class="num">{r.ppl_r.map_or_else(|| "–".to_string(), fmt3)}</td>
                            <td class="num">{fmt3(r.missing)}</td>
                            <td><a href=href>{format!("{} targets", r.n)}</a></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <h2>"NRG by method and ranker"</h2>
        <table class="heatmap geo-rankers">
            <caption>"The transfer table: each method's equal-dataset NRG under every ranker"</caption>
            <thead><tr><th>"method"</th>{rankers.iter().map(|r| view! { <th>{r.clone()}</th> }).collect_view()}</tr></thead>
            <tbody>
                {methods.iter().map(|m| view! {
                    <tr>
                        <th scope="row">{m.clone()}</th>
                        {rankers.iter().map(|r| {
                            let est = v.rows.iter().find(|row| &row.ranker == r && &row.method == m).map(|row| row.nrg);
                            view! { <NrgCell est=est/> }
                        }).collect_view()}
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>"NRG by method and dataset"</h2>
        {rankers.clone().into_iter().map(|ranker| {
            let cells = cells.clone();
            view! {
                <table class="heatmap geo-heat">
                    <caption>{format!("Ranker {ranker}")}</caption>
                    <thead><tr><th>"method"</th>{v.datasets.iter().map(|d| view! { <th>{d.clone()}</th> }).collect_view()}</tr></thead>
                    <tbody>
                        {methods.iter().map(|m| view! {
                            <tr>
                                <th scope="row">{m.clone()}</th>
                                {v.datasets.iter().map(|d| {
                                    let est = cells
                                        .iter()
                                        .find(|c| c.ranker == ranker && &c.method == m && &c.dataset == d)
                                        .map(|c| c.nrg);
                                    view! { <NrgCell est=est/> }
                                }).collect_view()}
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }
        }).collect_view()}
        <h2>"Paired comparisons"</h2>
        <table class="report">
            <caption>"NRG difference a − b over shared targets"</caption>
            <thead><tr><th>"ranker"</th><th>"a − b"</th><th>"difference"</th><th>"p"</th><th>"p (Holm)"</th></tr></thead>
            <tbody>
                {v.pairs.iter().map(|p| view! {
                    <tr>
                        <td>{p.ranker.clone()}</td><td>{format!("{} − {}", p.a, p.b)}</td>
                        <EstCell est=Some(p.diff)/>
                        <td class="num">{format!("{:.4}", p.p)}</td><td class="num">{format!("{:.4}", p.p_holm)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {(!v.spearman.is_empty()).then(|| view! {
            <ul class="spearman">
                {v.spearman.iter().map(|(a, b, rho, n)| view! {
                    <li>{format!("Spearman's ρ between {a} and {b} over {n} methods: {}", rho.map_or_else(|| "–".to_string(), fmt3))}</li>
                }).collect_view()}
            </ul>
        })}
        {method.map(|m| view! {
            <h2>{format!("Targets of {m}")}</h2>
            <table class="report geo-targets">
                <thead><tr><th>"target"</th><th>"item"</th><th>"ranker"</th><th>"r_b"</th><th>"r_a"</th><th>"NRG"</th><th>"keywords"</th></tr></thead>
                <tbody>
                    {v.targets.iter().map(|t| view! {
                        <tr>
                            <td><a href=format!("/geo/trials/{}", t.trial)>{t.target.clone()}</a></td>
                            <td>{t.name.clone()}</td><td>{t.ranker.clone()}</td>
                            <td class="num">{format!("{:.1}", t.r_b)}</td><td class="num">{format!("{:.1}", t.r_a)}</td>
                            <td class="num">{fmt3(t.nrg)}</td><td>{if t.kvr { "flagged" } else { "" }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
        <p class="downloads">"Download: "
            <a href=format!("/api/export/geo.csv{q}") download="">"rows (CSV)"</a>" · "
            <a href=format!("/api/export/geo.json{q}") download="">"report (JSON)"</a>
        </p>
    }
    .into_any()
}

/// `/geo`.
#[component]
pub fn GeoPage() -> impl IntoView {
    let run = query_param("run");
    let ranker = query_param("ranker");
    let method = query_param("method");
    let data = Resource::new(move || (run.get(), ranker.get(), method.get()), |(r, k, m)| get_geo(r, k, m));
    view! {
        <Title text="GEO ranking"/>
        <h1>"GEO ranking"</h1>
        <Transition fallback=|| view! { <p>"Reading the run's ranks and computing intervals…"</p> }>
            {move || data.get().map(|d| match d {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(v) => board(&v, method.get()),
            })}
        </Transition>
    }
}

fn target(v: &GeoTargetView) -> AnyView {
    let back = format!(
        "/geo{}",
        query_string(&[
            ("run", Some(v.run.clone())),
            ("ranker", Some(v.ranker.clone())),
            ("method", Some(v.method.clone()))
        ])
    );
    view! {
        <p><a href=back>"Back to the leaderboard"</a></p>
        <p class="muted">{format!("{} · ranker {} · method {} · {} ({})", v.instance, v.ranker, v.method, v.state, v.source)}</p>
        {v.error.clone().map(|e| view! { <p class="error">{format!("Error: {e}")}</p> })}
        <p>{format!(
            "Median rank before {} and after {} — NRG {}",
            v.r_b.map_or_else(|| "–".into(), |r| format!("{r:.1}")),
            v.r_a.map_or_else(|| "–".into(), |r| format!("{r:.1}")),
            v.nrg.map_or_else(|| "–".into(), fmt3),
        )}</p>
        <h2>{format!("The list ({})", v.query)}</h2>
        <ol class="geo-list">
            {v.items.iter().enumerate().map(|(i, (name, text))| {
                let class = if i == v.target { "target" } else { "" };
                view! { <li class=class><strong>{name.clone()}</strong>": "{text.clone()}</li> }
            }).collect_view()}
        </ol>
        <h2>{format!("The edit ({})", v.edit_kind)}</h2>
        <div class="geo-diff">
            <div><h3>"Original"</h3><p class="text">{v.orig_text.clone()}</p></div>
            <div><h3>"Edited"</h3><p class="text">{v.adv_text.clone()}</p></div>
        </div>
        <p>{if v.keyword_hits.is_empty() {
            "The keyword filter finds nothing in the edited text.".to_string()
        } else {
            format!("Keyword filter hits: {}", v.keyword_hits.join(", "))
        }}</p>
        {(!v.tap.is_empty()).then(|| view! {
            <h2>"TAP search"</h2>
            <table class="report geo-tap">
                <caption>{format!("{} candidates scored by the ranker (mean rank over the scoring orders; lower is better)", v.tap.len())}</caption>
                <thead><tr><th>"node"</th><th>"parent"</th><th>"depth"</th><th>"score"</th><th>"suffix"</th></tr></thead>
                <tbody>
                    {v.tap.iter().map(|n| view! {
                        <tr>
                            <td class="num">{n.id}</td>
                            <td class="num">{n.parent.map_or_else(|| "–".to_string(), |p| p.to_string())}</td>
                            <td class="num">{n.depth}</td><td class="num">{format!("{:.1}", n.score)}</td>
                            <td>{n.suffix.clone()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
        <h2>"Orders"</h2>
        <table class="report geo-orders">
            <thead><tr><th>"order"</th><th>"target shown at"</th><th>"rank clean"</th><th>"rank edited"</th><th>"replies"</th></tr></thead>
            <tbody>
                {v.orders.iter().map(|o| view! {
                    <tr>
                        <td class="num">{o.order}</td><td class="num">{o.shown_at}</td>
                        <td class="num">{o.clean_rank}</td><td class="num">{o.edited_rank}</td>
                        <td><details><summary>"clean and edited replies"</summary>
                            <pre class="reply">{o.clean_reply.clone()}</pre>
                            <pre class="reply">{o.edited_reply.clone()}</pre>
                        </details></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// `/geo/trials/:trial`.
#[component]
pub fn GeoTargetPage() -> impl IntoView {
    let params = use_params_map();
    let trial = Memo::new(move |_| params.read().get("trial").unwrap_or_default());
    let data = Resource::new(move || trial.get(), get_geo_target);
    view! {
        <Title text="GEO target"/>
        <h1>"GEO target"</h1>
        <Transition fallback=|| view! { <p>"Loading the target…"</p> }>
            {move || data.get().map(|d| match d {
                Err(e) => view! { <ErrorNotice error=e/> }.into_any(),
                Ok(v) => target(&v),
            })}
        </Transition>
    }
}
