//! `/geo?run=&ranker=&method=`: the GEO ranking leaderboard of one run — methods per ranker
//! grouped by threat model, with intervals, tie bands, keyword flags and the gain left
//! after the keyword filter; method × dataset NRG; paired comparisons; Spearman between
//! rankers; and the targets of one (ranker, method). `/geo/trials/<trial>`: one target — the
//! list with the target marked, the edit, and its rank in every order, clean and edited,
//! with the raw replies (in `geo_target`). With a stored detection report (`mirage geo
//! score`), the judge's columns, the realised rates per dataset and the NRG-against-AUROC
//! scatter. Every text is shown escaped.

use leptos::prelude::*;
use leptos_meta::Title;

use super::Loading;
use crate::api::get_geo;
use crate::components::{EstCell, Picker, RunPicker, fmt3, query_param, query_string};
use crate::model::{GeoDetectionView, GeoRho, GeoView};

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
fn NrgCell(
    est: Option<crate::model::Est>,
    #[prop(optional)] failed: bool,
    /// The cell's trials that are in no mean (‡): the cell says n of all its targets.
    #[prop(optional)]
    incomplete: usize,
    /// The variant ran here but no target was scored (every trial failed): said, not blank.
    #[prop(optional)]
    unscored: bool,
) -> impl IntoView {
    match est {
        Some(e) => view! {
            <td class=nrg_class(e.mean)>
                {fmt3(e.mean)}{failed.then_some(" †")}{(incomplete > 0).then_some(" ‡")}
                <span class="ci">{e.bracket(2)}</span>
                <span class="n">{if incomplete > 0 { format!("n={} of {}", e.n, e.n + incomplete) } else { format!("n={}", e.n) }}</span>
            </td>
        }
        .into_any(),
        None if unscored => view! { <td class="heat na">"‡ no target scored"</td> }.into_any(),
        None => view! { <td class="heat na">""</td> }.into_any(),
    }
}

/// A symmetric matrix of Spearman's ρ (with the number of methods behind each).
#[component]
fn RhoMatrix(names: Vec<String>, rhos: Vec<GeoRho>, caption: String) -> impl IntoView {
    let cell = move |a: &String, b: &String| -> String {
        if a == b {
            return "1".into();
        }
        rhos.iter().find(|r| (&r.a == a && &r.b == b) || (&r.a == b && &r.b == a)).map_or_else(
            || "–".into(),
            |r| {
                let paired = if r.paired.is_empty() { String::new() } else { format!("; {}", r.paired.join(", ")) };
                format!("{} (n={}{paired})", r.rho.map_or_else(|| "–".to_string(), fmt3), r.methods)
            },
        )
    };
    view! {
        <table class="report geo-rho">
            <caption>{caption}</caption>
            <thead><tr><th></th>{names.iter().map(|n| view! { <th>{n.clone()}</th> }).collect_view()}</tr></thead>
            <tbody>
                {names.iter().map(|a| view! {
                    <tr>
                        <th scope="row">{a.clone()}</th>
                        {names.iter().map(|b| view! { <td class="num">{cell(a, b)}</td> }).collect_view()}
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The detection section: the setting, the rate each filter realises per dataset, and the
/// NRG-against-AUROC scatter.
fn detection(d: &GeoDetectionView) -> AnyView {
    view! {
        <h2>"Detection"</h2>
        <p class="muted">{format!(
            "Judge {} ({}{}), threshold calibrated on the originals ({}) for {:.1}% false positives; keyword-or-judge \
             for {:.0}%. {} texts judged, {:.1}% censored (one side missing from the top log-probabilities).{}",
            d.label,
            d.mode,
            if d.mode == "verbalized" { ", not the paper's reading" } else { "" },
            d.calibration,
            100.0 * d.fpr,
            100.0 * d.either_fpr,
            d.texts,
            100.0 * d.censored,
            d.ppl_source.as_ref().map_or_else(
                || " The perplexity filter uses the built-in 4-gram model, at the judge's rate.".to_string(),
                |s| format!(" PPL-R and the perplexity filter (at the judge's rate) from {s}."),
            ),
        )}</p>
        <table class="report geo-rates">
            <caption>"Share of each dataset's originals flagged"</caption>
            <thead><tr><th>"dataset"</th><th>"keyword"</th><th>"judge"</th><th>"keyword or judge"</th><th>"perplexity"</th></tr></thead>
            <tbody>
                {d.rates.iter().map(|r| view! {
                    <tr>
                        <td>{r.dataset.clone()}</td><td class="num">{fmt3(r.keyword)}</td>
                        <td class="num">{fmt3(r.judge)}</td><td class="num">{fmt3(r.either)}</td>
                        <td class="num">{fmt3(r.perplexity)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <table class="report geo-filters">
            <caption>"Edits each filter catches, and the NRG left (a caught edit gains nothing)"</caption>
            <thead><tr>
                <th>"ranker"</th><th>"method"</th><th>"judge AUROC"</th><th>"judge"</th><th>"perplexity"</th>
                <th>"keyword or judge"</th><th>"NRG after judge"</th><th>"after perplexity"</th><th>"after either"</th>
            </tr></thead>
            <tbody>
                {d.rows.iter().map(|r| view! {
                    <tr>
                        <td>{r.ranker.clone()}</td><td>{r.method.clone()}{(r.failed_orders > 0).then_some(" †")}</td>
                        <td class="num">{r.auroc.map_or_else(|| "–".to_string(), fmt3)}</td>
                        <td class="num">{fmt3(r.judge_flagged)}</td><td class="num">{fmt3(r.ppl_flagged)}</td>
                        <td class="num">{fmt3(r.either_flagged)}</td><td class="num">{fmt3(r.nrg_after_judge)}</td>
                        <td class="num">{fmt3(r.nrg_after_ppl)}</td><td class="num">{fmt3(r.nrg_after_either)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {d.rows.iter().any(|r| !r.filters.is_empty()).then(|| view! {
            <table class="report geo-filter-intervals">
                <caption>"What each filter leaves, with 95% list-cluster intervals"</caption>
                <thead><tr>
                    <th>"ranker"</th><th>"method"</th><th>"filter"</th><th>"flagged"</th><th>"NRG left"</th>
                    <th>"promoted and passed"</th>
                </tr></thead>
                <tbody>
                    {d.rows.iter().flat_map(|r| r.filters.iter().map(move |f| view! {
                        <tr>
                            <td>{r.ranker.clone()}</td><td>{r.method.clone()}{(r.failed_orders > 0).then_some(" †")}</td><td>{f.filter.clone()}</td>
                            <EstCell est=Some(f.flagged)/><EstCell est=Some(f.nrg_after)/>
                            <EstCell est=Some(f.promoted_and_passed)/>
                        </tr>
                    })).collect_view()}
                </tbody>
            </table>
        })}
        <figure class="plot geo-scatter" inner_html=d.scatter.clone()></figure>
        <p class="muted">"Each point is a method under a ranker: its NRG with the 95% interval against how well the \
            judge tells its edits from the originals. Red points keep some gain after the judge."</p>
    }
    .into_any()
}

fn board(v: &GeoView, method: Option<String>) -> AnyView {
    let run = v.run.to_string();
    let q = query_string(&[("run", Some(run.clone()))]);
    let picker = Callback::new(|run: String| crate::model::routes::geo(&run));
    let judge_href = {
        let run = run.clone();
        Callback::new(move |judge: String| crate::model::routes::geo_at(&run, None, Some(judge)))
    };
    // A variant none of whose targets was scored has no row: it is listed from the
    // incomplete ones, so that the heat maps say so instead of leaving it out.
    let variants =
        || v.rows.iter().map(|r| (&r.ranker, &r.method)).chain(v.incomplete.iter().map(|e| (&e.ranker, &e.method)));
    let methods: Vec<String> = variants().fold(Vec::new(), |mut m, (_, method)| {
        if !m.contains(method) {
            m.push(method.clone());
        }
        m
    });
    let rankers: Vec<String> = {
        let mut r: Vec<String> = variants().map(|(ranker, _)| ranker.clone()).collect();
        r.sort();
        r.dedup();
        r
    };
    view! {
        <div class="controls">
            <RunPicker runs=v.runs.clone() current=v.run.clone() href=picker/>
            {v.detection.as_ref().map(|d| view! {
                <Picker label="Judge " name="judge" options=v.detections.clone() current=d.label.clone() href=judge_href/>
            })}
        </div>
        {notices(v)}
        {methods_table(v)}
        {heatmaps(v, &methods, &rankers)}
        {comparisons(v, &rankers)}
        {v.detection.as_ref().map_or_else(
            || view! { <p class="muted">"No detection report yet: `mirage geo score --run RUN` adds the judge's columns and the NRG-against-AUROC plot."</p> }.into_any(),
            detection,
        )}
        {method.map(|m| targets_table(v, &m))}
        <p class="downloads">"Download: "
            <a href=crate::model::routes::export("geo.csv", &q) download="">"rows (CSV)"</a>" · "
            <a href=crate::model::routes::export("geo-long.csv", &q) download="">"method × dataset × metric (CSV, GEO-Bench's shape)"</a>" · "
            <a href=crate::model::routes::export("geo.json", &q) download="">"report (JSON)"</a>
        </p>
    }
    .into_any()
}

/// What the report says above its tables: counts, the parser, warnings, failures, and the
/// variants whose trials are in no mean.
fn notices(v: &GeoView) -> AnyView {
    view! {
        <p class="muted">{format!(
            "{} trials ({} errors, {} unfinished); K = {} orders per target; prompt {}. Each cell: the equal-dataset \
             mean with its 95% interval over lists and n. Methods in one band do not differ significantly \
             in NRG under that ranker (paired Wald tests, Holm).",
            v.trials, v.errors, v.unfinished, v.k, v.prompt_version
        )}</p>
        {(v.replies > 0).then(|| view! {
            <p class="muted geo-parser">{crate::model::readings_note(
                &v.parser, &v.compared_parser,
                (v.lines_read_differently, v.lines), (v.target_read_differently, v.replies),
            )}</p>
        })}
        {(!v.single_list_datasets.is_empty()).then(|| view! {
            <p class="notice geo-single-list">{format!(
                "{} hold a single list in this run: lists cannot be resampled there, so every interval leaves out their spread and no paired test is possible (p = 1). Run two or more lists per dataset for intervals and tests.",
                v.single_list_datasets.join(", ")
            )}</p>
        })}
        {v.lists_changed.then(|| view! {
            <p class="notice geo-lists-changed">"The lists differ from those this run was planned on (GEO-Bench \
                originals adopted since?): its replies ranked other originals than the ones PPL-R and the keyword \
                flags read now. Plan a new run to compare like with like."</p>
        })}
        {(v.stale_texts > 0).then(|| view! {
            <p class="notice geo-stale-texts">{format!(
                "{} stored texts of this run's methods were made from another original than the list holds now \
                 (originals adopted since): their PPL-R is left out. A new run writes them again.",
                v.stale_texts
            )}</p>
        })}
        {(v.failed_orders > 0).then(|| view! {
            <p class="notice geo-failed">{format!(
                "† {} orders in {} trials had a ranker call fail after its retries. Each counts as a reply that \
                 names nothing (the target missing in that order) and stays in every mean; rows marked † include them.",
                v.failed_orders, v.failed_trials
            )}</p>
        })}
        {v.rows.iter().any(|r| r.mostly_fallback).then(|| view! {
            <p class="notice geo-fallback">"§ More than half of the row's clean or edited replies ranked nothing on a numbered line and were \
                read by where names are first mentioned (a refusal that names a product reads as ranking it first): \
                its figures rest on that reading."</p>
        })}
        {(!v.incomplete.is_empty()).then(|| view! {
            <ul class="notice geo-incomplete">
                {v.incomplete.iter().map(|e| view! {
                    <li>{e.describe()}</li>
                }).collect_view()}
            </ul>
        })}
    }
    .into_any()
}

/// The methods under each ranker, with the newest detection report's columns.
fn methods_table(v: &GeoView) -> AnyView {
    let run = v.run.to_string();
    let det = v.detection.clone();
    let judge_of = move |ranker: &str, method: &str| {
        det.as_ref().and_then(|d| d.rows.iter().find(|x| x.ranker == ranker && x.method == method).cloned())
    };
    let endpoint_ppl = v.detection.as_ref().is_some_and(|d| d.ppl_source.is_some());
    view! {
        <table class="report geo-board">
            <caption>"Methods per ranker"</caption>
            <thead><tr>
                <th>"ranker"</th><th>"group"</th><th>"method"</th><th>"band"</th><th>"NRG"</th><th>"S@0.1"</th>
                <th>"P@0.1"</th><th>"KVR"</th><th>"NRG after keywords"</th><th>"promoted and passed"</th>
                <th>{if endpoint_ppl { "PPL-R (4-gram / scorer)" } else { "PPL-R (4-gram)" }}</th>
                <th>"judge AUROC"</th><th>"judge flag"</th><th>"NRG after judge"</th><th>"NRG after either"</th>
                <th>"missing (clean, edited)"</th><th>"failed calls"</th><th>"targets"</th>
            </tr></thead>
            <tbody>
                {v.rows.iter().map(|r| {
                    let href = crate::model::routes::geo_at(&run, Some((&r.ranker, &r.method)), None);
                    let j = judge_of(&r.ranker, &r.method);
                    let or_dash = |x: Option<f64>| x.map_or_else(|| "–".to_string(), fmt3);
                    let ppl = match j.as_ref().and_then(|j| j.ppl_r) {
                        Some(e) => format!("{} / {}", or_dash(r.ppl_r), fmt3(e)),
                        None => or_dash(r.ppl_r),
                    };
                    view! {
                        <tr>
                            <td>{r.ranker.clone()}</td><td>{r.group.clone()}</td>
                            <td>{r.method.clone()}
                                {(r.failed_orders > 0 || r.tap.as_ref().is_some_and(|t| t.failed_calls > 0)).then_some(" †")}
                                {(r.incomplete > 0).then_some(" ‡")}
                                {r.mostly_fallback.then(|| view! {
                                    <span title=format!("{} of {} replies named no product on a numbered line and were read by first mention", r.fallback_replies, r.replies)>" §"</span>
                                })}</td>
                            <td class="num">{if r.band == 0 { "—".to_string() } else { r.band.to_string() }}</td>
                            <EstCell est=Some(r.nrg)/><EstCell est=Some(r.s_at_0_1)/><EstCell est=Some(r.p_at_0_1)/>
                            <EstCell est=Some(r.kvr)/><EstCell est=Some(r.nrg_after_keyword)/>
                            <EstCell est=Some(r.promoted_and_passed)/>
                            <td class="num">{ppl}</td>
                            <td class="num">{or_dash(j.as_ref().and_then(|j| j.auroc))}</td>
                            <td class="num">{or_dash(j.as_ref().map(|j| j.judge_flagged))}</td>
                            <td class="num">{or_dash(j.as_ref().map(|j| j.nrg_after_judge))}</td>
                            <td class="num">{or_dash(j.as_ref().map(|j| j.nrg_after_either))}</td>
                            <td class="num">{format!("{}, {}", fmt3(r.missing_clean), fmt3(r.missing))}</td>
                            <td class="num">{if r.failed_orders == 0 {
                                "0".to_string()
                            } else {
                                format!("{} of {} orders, {} targets", r.failed_orders, r.orders, r.failed_targets)
                            }}</td>
                            <td><a href=href>{if r.incomplete > 0 {
                                format!("{} of {} targets", r.n, r.n + r.incomplete)
                            } else {
                                format!("{} targets", r.n)
                            }}</a></td>
                        </tr>
                    }
                }).collect_view()}
                // A row none of whose targets was scored stays, said as such.
                {v.incomplete.iter().filter(|e| e.scored == 0).map(|e| view! {
                    <tr class="unscored">
                        <td>{e.ranker.clone()}</td><td></td><td>{format!("{} ‡", e.method)}</td>
                        <td colspan="15" class="na">{format!("no target scored: {} of {} trials ended in error, {} unfinished", e.errors, e.trials, e.unfinished)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <ul class="geo-tap">
            {v.rows.iter().filter_map(|r| r.tap.as_ref().map(|t| view! { <li>{t.describe(&r.ranker, &r.method)}</li> })).collect_view()}
        </ul>
    }
    .into_any()
}

/// NRG by method and ranker (the transfer table), and by method and dataset per ranker.
fn heatmaps(v: &GeoView, methods: &[String], rankers: &[String]) -> AnyView {
    let cells = v.cells.clone();
    view! {
        <h2>"NRG by method and ranker"</h2>
        <table class="heatmap geo-rankers">
            <caption>"The transfer table: each method's equal-dataset NRG under every ranker"</caption>
            <thead><tr><th>"method"</th>{rankers.iter().map(|r| view! { <th>{r.clone()}</th> }).collect_view()}</tr></thead>
            <tbody>
                {methods.iter().map(|m| view! {
                    <tr>
                        <th scope="row">{m.clone()}</th>
                        {rankers.iter().map(|r| {
                            let row = v.rows.iter().find(|row| &row.ranker == r && &row.method == m);
                            let failed = row.is_some_and(|row| row.failed_orders > 0);
                            let incomplete = row.map_or(0, |row| row.incomplete);
                            let unscored = row.is_none() && v.incomplete.iter().any(|e| &e.ranker == r && &e.method == m);
                            view! { <NrgCell est=row.map(|row| row.nrg) failed=failed incomplete=incomplete unscored=unscored/> }
                        }).collect_view()}
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>"NRG by method and dataset"</h2>
        {rankers.iter().map(|ranker| {
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
                                    let cell = cells
                                        .iter()
                                        .find(|c| &c.ranker == ranker && &c.method == m && &c.dataset == d);
                                    let failed = cell.is_some_and(|c| c.failed_orders > 0);
                                    let unscored = v.incomplete.iter().any(|e| {
                                        &e.ranker == ranker && &e.method == m && e.left_out.contains(d)
                                    });
                                    let incomplete = cell.map_or(0, |c| c.incomplete);
                                    view! { <NrgCell est=cell.map(|c| c.nrg) failed=failed incomplete=incomplete unscored=unscored/> }
                                }).collect_view()}
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }
        }).collect_view()}
    }
    .into_any()
}

/// The paired comparisons and Spearman's ρ between rankers and between datasets.
fn comparisons(v: &GeoView, rankers: &[String]) -> AnyView {
    let rho_set =
        if v.rho_methods.is_empty() { "none (only baselines ran)".to_string() } else { v.rho_methods.join(", ") };
    view! {
        <h2>"Paired comparisons"</h2>
        <table class="report">
            <caption>"NRG difference a − b over shared targets; p (Holm) adjusted within each ranker over its pairs"</caption>
            <thead><tr><th>"ranker"</th><th>"a − b"</th><th>"difference"</th><th>"p"</th><th>"p (Holm)"</th></tr></thead>
            <tbody>
                {v.pairs.iter().map(|p| view! {
                    <tr>
                        <td>{p.ranker.clone()}</td><td>{p.label()}</td>
                        <EstCell est=Some(p.diff)/>
                        <td class="num">{p.p_text()}</td><td class="num">{p.p_holm.map_or_else(|| "—".to_string(), |q| format!("{q:.4}"))}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {(rankers.len() > 1).then(|| view! {
            <h2>"Spearman's ρ between rankers"</h2>
            <p class="muted">"The baselines (clean, stuff, strip) are left out: they anchor the scale and would make any two rankers look alike."</p>
            <RhoMatrix names=rankers.to_vec() rhos=v.spearman.iter().filter(|r| r.ranker.is_none()).cloned().collect()
                caption=format!("over the NRG of the methods both rankers ran, of: {}", rho_set)/>
        })}
        {(v.datasets.len() > 1).then(|| view! {
            <h2>"Spearman's ρ between datasets"</h2>
            {rankers.iter().map(|k| view! {
                <RhoMatrix names=v.datasets.clone()
                    rhos=v.spearman.iter().filter(|r| r.ranker.as_ref() == Some(k)).cloned().collect()
                    caption=format!("Ranker {k}: over the methods' NRG on each dataset, of: {}", rho_set)/>
            }).collect_view()}
        })}
    }
    .into_any()
}

/// The targets of one method, best NRG first, each linking to its trial.
fn targets_table(v: &GeoView, m: &str) -> AnyView {
    view! {
            <h2>{format!("Targets of {m}")}</h2>
            <table class="report geo-targets">
                <thead><tr><th>"target"</th><th>"item"</th><th>"ranker"</th><th>"r_b"</th><th>"r_a"</th><th>"NRG"</th><th>"keywords"</th></tr></thead>
                <tbody>
                    {v.targets.iter().map(|t| view! {
                        <tr>
                            <td><a href=crate::model::routes::geo_trial(&t.trial)>{t.target.clone()}</a></td>
                            <td>{t.name.clone()}</td><td>{t.ranker.clone()}</td>
                            <td class="num">{format!("{:.1}", t.r_b)}</td><td class="num">{format!("{:.1}", t.r_a)}</td>
                            <td class="num">{fmt3(t.nrg)}</td><td>{if t.kvr { "flagged" } else { "" }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
    }
    .into_any()
}

/// `/geo`.
#[component]
pub fn GeoPage() -> impl IntoView {
    let run = query_param("run");
    let ranker = query_param("ranker");
    let method = query_param("method");
    let judge = query_param("judge");
    // No run asked for and none finished yet: nothing is missing, there is just nothing to
    // show (`None`).
    let data = Resource::new(
        move || (run.get(), ranker.get(), method.get(), judge.get()),
        |(r, k, m, j)| async move {
            let asked = r.is_some();
            match get_geo(r, k, m, j).await {
                Err(crate::error::AppError::NotFound(_)) if !asked => Ok(None),
                other => other.map(Some),
            }
        },
    );
    view! {
        <Title text="GEO ranking"/>
        <h1>"GEO ranking"</h1>
        <Loading resource=data waiting="Reading the run's ranks and computing intervals…" keep=true ready=move |d| match d {
                None => {
                    // The server function answered 404 for the missing run; the page is not.
                    #[cfg(feature = "ssr")]
                    if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
                        resp.set_status(http::StatusCode::OK);
                    }
                    view! {
                    <p class="empty" data-testid="geo-empty">
                        "No GEO ranking run has finished trials yet. Start one with "
                        <code>"mirage geo run --ranker NAME"</code>
                        " (the book's GEO ranking chapter explains the rankers, datasets and methods); its leaderboard appears here."
                    </p>
                }.into_any()
                }
                Some(v) => board(&v, method.get()).into_any(),
        }/>
    }
}
