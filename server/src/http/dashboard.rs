//! Dashboard routes that are not server functions: the live progress stream and the
//! downloads (CSV, JSON, SVG) of every table and plot.

use std::convert::Infallible;

mod cells;

use app::model::{BoardQuery, BoardRow, HeatQuery, Progress, RunStatus};
use app::ssr::Insights;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use futures::{Stream, StreamExt};
use serde::Deserialize;

use super::HttpError;
use crate::services::runs::progress;
use crate::state::AppState;
use cells::{coverage_cell, csv_text, digits_of, est_cells, est_head};

#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    /// One run; every active run when absent.
    pub run: Option<app::model::RunId>,
}

/// `GET /api/runs/events`: server-sent `progress` events (a JSON [`Progress`]) as the
/// progress hub sees them change: first what is known now, then each change. For one run
/// the stream ends after the run stops. Streams do not read the store themselves.
pub async fn events(State(state): State<AppState>, Query(q): Query<EventsQuery>) -> Response {
    let first = match &q.run {
        Some(run) => match progress(state.store.as_ref(), run).await {
            Ok(p) => vec![p],
            Err(e) => return HttpError::from(e).into_response(),
        },
        None => state.pulse.latest().into_iter().filter(|p| p.status == RunStatus::Active).collect(),
    };
    Sse::new(progress_stream(state.pulse.clone(), q.run, first)).keep_alive(KeepAlive::default()).into_response()
}

fn progress_stream(
    pulse: std::sync::Arc<crate::services::pulse::Pulse>,
    run: Option<app::model::RunId>,
    first: Vec<Progress>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let changes = pulse.subscribe();
    let send = |batch: Vec<Progress>| -> futures::stream::Iter<std::vec::IntoIter<Result<Event, Infallible>>> {
        futures::stream::iter(
            batch
                .iter()
                .map(|p| Ok(Event::default().event("progress").json_data(p).unwrap_or_default()))
                .collect::<Vec<_>>(),
        )
    };
    let stopped = |run: &Option<app::model::RunId>, batch: &[Progress]| {
        run.as_ref().is_some_and(|r| batch.iter().any(|p| &p.run_id == r && p.status != RunStatus::Active))
    };
    let done = stopped(&run, &first);
    futures::stream::once(async move { send(first) })
        .chain(futures::stream::unfold((changes, run, done), move |(mut changes, run, done)| {
            let pulse = pulse.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    let batch: Vec<Progress> = match changes.recv().await {
                        Ok(batch) => {
                            batch.iter().filter(|p| run.as_ref().is_none_or(|r| &p.run_id == r)).cloned().collect()
                        }
                        // This client fell behind: what the hub knows now replaces what it missed.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            pulse.latest().into_iter().filter(|p| run.as_ref().is_none_or(|r| &p.run_id == r)).collect()
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    };
                    if batch.is_empty() {
                        continue;
                    }
                    let finished = stopped(&run, &batch);
                    return Some((send(batch), (changes, run, finished)));
                }
            }
        }))
        .flatten()
}

#[derive(Debug, Deserialize)]
pub struct ExportQuery {
    pub run: Option<String>,
    pub tier: Option<String>,
    pub by: Option<String>,
    pub level: Option<String>,
    pub metric: Option<String>,
    /// Leaderboard tables: `rows` (default), `breakdown`, `pairs`, `agreement`, `checks`.
    pub table: Option<String>,
    /// People's labels as they stood at this label generation or time.
    pub as_of: Option<String>,
}

/// A download. Its policy forbids everything: an SVG opened on its own runs nothing.
fn attachment(name: &str, content_type: &str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
            (header::CONTENT_SECURITY_POLICY, "default-src 'none'; style-src 'unsafe-inline'".to_string()),
        ],
        body,
    )
        .into_response()
}

fn board_csv(columns: &[String], rows: &[(String, &BoardRow)], group: Option<&str>) -> Result<String, HttpError> {
    let mut head: Vec<String> = group.map(|g| vec![g.to_string()]).unwrap_or_default();
    head.extend(["agent", "band", "trials", "errors", "error_rate", "disputed"].map(String::from));
    for c in columns {
        head.extend([c.clone(), format!("{c}_lo"), format!("{c}_hi"), format!("{c}_n"), format!("{c}_coverage")]);
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(g, r)| {
            let mut line: Vec<String> = group.map(|_| vec![g.clone()]).unwrap_or_default();
            line.extend([
                r.agent.clone(),
                r.band.to_string(),
                r.trials.to_string(),
                r.errors.to_string(),
                format!("{:.4}", crate::judge::aggregate::rate(r.errors, r.trials)),
                r.disputed.to_string(),
            ]);
            for c in columns {
                line.extend(est_cells(r.cells.get(c).and_then(Option::as_ref), digits_of(c)));
            }
            line
        })
        .collect();
    csv_text(&head, &body)
}

/// Asks until the answer has every number: a download is complete however long the
/// computation behind it takes (each ask waits on the running job for the page's wait).
async fn complete<T, F, Fut>(ask: F, pending: impl Fn(&T) -> bool) -> Result<T, HttpError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, app::error::AppError>>,
{
    loop {
        let answer = ask().await.map_err(HttpError::from)?;
        if !pending(&answer) {
            return Ok(answer);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `GET /api/export/{name}`: `leaderboard.csv|json`, `robustness.svg|csv|json`,
/// `heatmap.csv|json`, `report.csv|json`, `geo.csv|json`, `geo-long.csv`, with the page's
/// query parameters.
pub async fn export(State(state): State<AppState>, Path(name): Path<String>, Query(q): Query<ExportQuery>) -> Response {
    let sources = Exports { insights: state.insights.clone(), geo: state.geo.clone() };
    download(&sources, &name, &q).await
}

/// What the downloads are computed from (a server's engines, or a bundle's).
#[derive(Clone)]
pub struct Exports {
    pub insights: std::sync::Arc<crate::services::insights::InsightsService>,
    pub geo: std::sync::Arc<crate::services::geo::GeoService>,
}

/// The download `name` with the page's query, as [`export`] answers it.
pub async fn download(state: &Exports, name: &str, q: &ExportQuery) -> Response {
    let result = match name {
        "leaderboard.json" | "leaderboard.csv" => export_leaderboard(state, name, q).await,
        "robustness.svg" | "robustness.csv" | "robustness.json" => export_robustness(state, name, q).await,
        "report.csv" | "report.json" => export_report(state, name, q).await,
        "heatmap.csv" | "heatmap.json" => export_heatmap(state, name, q).await,
        "geo.csv" | "geo.json" => export_geo(state, name, q).await,
        "geo-long.csv" => export_geo_long(state, q).await,
        other => Err(HttpError::NotFound(format!("no export named {other:?}"))),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// `leaderboard.json|csv` (`table`: rows, breakdown, pairs, agreement or checks).
async fn export_leaderboard(state: &Exports, name: &str, q: &ExportQuery) -> Result<Response, HttpError> {
    let insights = &state.insights;
    let board = complete(
        || {
            insights.leaderboard(BoardQuery {
                run: q.run.clone(),
                tier: q.tier.clone(),
                by: q.by.clone(),
                as_of: q.as_of.clone(),
            })
        },
        |b| b.pending.is_some(),
    )
    .await?;
    if name.ends_with("json") {
        return Ok(Json(board).into_response());
    }
    let file = format!("leaderboard-{}-{}.csv", board.run, board.tier);
    let text = match q.table.as_deref().unwrap_or("rows") {
        "rows" => board_csv(&board.columns, &board.rows.iter().map(|r| (String::new(), r)).collect::<Vec<_>>(), None)?,
        "breakdown" => board_csv(
            &board.columns,
            &board.breakdown.iter().flat_map(|(g, rs)| rs.iter().map(move |r| (g.clone(), r))).collect::<Vec<_>>(),
            Some(board.by.as_deref().unwrap_or("group")),
        )?,
        "pairs" => csv_text(
            &["a", "b", "diff", "lo", "hi", "n", "p", "p_holm", "coverage"].map(String::from),
            &board
                .pairs
                .iter()
                .map(|p| {
                    vec![
                        p.a.clone(),
                        p.b.clone(),
                        format!("{:.4}", p.diff),
                        if p.no_interval { String::new() } else { format!("{:.4}", p.lo) },
                        if p.no_interval { String::new() } else { format!("{:.4}", p.hi) },
                        p.n.to_string(),
                        format!("{:.6}", p.p),
                        format!("{:.6}", p.p_holm),
                        coverage_cell(p.coverage),
                    ]
                })
                .collect::<Vec<_>>(),
        )?,
        // Below the dashboard's minimum the κ cell stays empty, as the page says "too few".
        "agreement" => csv_text(
            &["kind", "n", "kappa", "too_few"].map(String::from),
            &board
                .agreement
                .iter()
                .map(|(k, n, kappa)| {
                    let few = *n < app::model::MIN_AGREEMENT_N;
                    let kappa = kappa.filter(|_| !few).map(|v| format!("{v:.4}")).unwrap_or_default();
                    vec![k.clone(), n.to_string(), kappa, few.to_string()]
                })
                .collect::<Vec<_>>(),
        )?,
        "checks" => checks_csv(&board.checks)?,
        other => {
            return Err(HttpError::Invalid(format!(
                "table: {other:?} is not one of rows, breakdown, pairs, agreement, checks"
            )));
        }
    };
    Ok(attachment(&file, "text/csv; charset=utf-8", text))
}

/// Each grader against people, as CSV; below the minimum the value cells stay empty.
fn checks_csv(checks: &[app::model::GraderCheck]) -> Result<String, HttpError> {
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            let v = c.value.filter(|_| c.enough);
            let f = |x: Option<f64>| x.map(|x| format!("{x:.4}")).unwrap_or_default();
            vec![
                c.metric.clone(),
                c.grader.clone(),
                c.against.clone(),
                c.statistic.clone(),
                c.n.to_string(),
                f(v.map(|v| v.mean)),
                f(v.map(|v| v.lo)),
                f(v.map(|v| v.hi)),
                (!c.enough).to_string(),
            ]
        })
        .collect();
    csv_text(
        &["metric", "grader", "against", "statistic", "n", "value", "lo", "hi", "too_few"].map(String::from),
        &rows,
    )
}

/// `robustness.svg|csv|json`: the robustness–utility points of a level.
async fn export_robustness(state: &Exports, name: &str, q: &ExportQuery) -> Result<Response, HttpError> {
    let insights = &state.insights;
    let r = complete(|| insights.robustness(q.run.clone(), q.level.clone(), q.as_of.clone()), |r| r.pending.is_some())
        .await?;
    let stem = format!("robustness-{}-{}", r.run, r.level);
    if name.ends_with("svg") {
        return Ok(attachment(&format!("{stem}.svg"), "image/svg+xml", r.svg));
    }
    if name.ends_with("json") {
        return Ok(Json(r).into_response());
    }
    let mut head = vec!["agent".to_string()];
    head.extend(["utility", "robustness"].into_iter().flat_map(|c| {
        let [_, lo, hi, n, coverage] = est_head(c);
        [c.to_string(), lo, hi, n, coverage]
    }));
    head.push("frontier".to_string());
    let rows: Vec<Vec<String>> = r
        .points
        .iter()
        .map(|p| {
            let mut line = vec![p.agent.clone()];
            line.extend(est_cells(Some(&p.utility), 4));
            line.extend(est_cells(Some(&p.robustness), 4));
            line.push(p.frontier.to_string());
            line
        })
        .collect();
    Ok(attachment(&format!("{stem}.csv"), "text/csv; charset=utf-8", csv_text(&head, &rows)?))
}

/// `report.csv|json`: the paper's main table.
async fn export_report(state: &Exports, name: &str, q: &ExportQuery) -> Result<Response, HttpError> {
    let insights = &state.insights;
    let v = complete(|| insights.report(q.run.clone(), q.as_of.clone()), |v| v.pending.is_some()).await?;
    if name.ends_with("json") {
        return Ok(Json(v.report).into_response());
    }
    let mut head = ["agent", "domain", "trials", "errors", "error_rate"].map(String::from).to_vec();
    for c in &v.columns {
        head.extend(est_head(c));
    }
    let rows: Vec<Vec<String>> = v
        .report
        .main
        .iter()
        .map(|r| {
            let mut line = vec![
                r.agent.clone(),
                r.domain.clone().unwrap_or_default(),
                r.trials.to_string(),
                r.errors.to_string(),
                format!("{:.4}", crate::judge::aggregate::rate(r.errors, r.trials)),
            ];
            for c in &v.columns {
                line.extend(est_cells(r.metrics.get(c).and_then(Option::as_ref), digits_of(c)));
            }
            line
        })
        .collect();
    let file = format!("report-{}.csv", v.report.run);
    Ok(attachment(&file, "text/csv; charset=utf-8", csv_text(&head, &rows)?))
}

/// `heatmap.csv|json`: a metric by level and column.
async fn export_heatmap(state: &Exports, name: &str, q: &ExportQuery) -> Result<Response, HttpError> {
    let insights = &state.insights;
    let h = complete(
        || {
            insights.heatmap(HeatQuery {
                run: q.run.clone(),
                metric: q.metric.clone(),
                by: q.by.clone(),
                as_of: q.as_of.clone(),
            })
        },
        |h| h.pending.is_some(),
    )
    .await?;
    if name.ends_with("json") {
        return Ok(Json(h).into_response());
    }
    let mut head = vec!["level".to_string(), h.by.clone()];
    head.extend(est_head(""));
    head.extend(["underpowered", "trials", "errors", "error_rate"].map(String::from));
    let rows: Vec<Vec<String>> = h
        .cells
        .iter()
        .map(|c| {
            let mut line = vec![c.level.to_string(), c.column.clone()];
            line.extend(est_cells(c.est.as_ref(), 4));
            line.push(c.underpowered.to_string());
            line.push(c.trials.to_string());
            line.push(c.errors.to_string());
            line.push(format!("{:.4}", crate::judge::aggregate::rate(c.errors, c.trials)));
            line
        })
        .collect();
    let file = format!("heatmap-{}-{}-{}.csv", h.run, h.metric, h.by);
    Ok(attachment(&file, "text/csv; charset=utf-8", csv_text(&head, &rows)?))
}

/// `geo-long.csv`: the GEO report in GEO-Bench's long shape, one line per ranker × method ×
/// dataset × metric (dataset `all`: the equal-dataset row), with the interval where the
/// figure has one and the row's missing targets (`incomplete`, as ‡ marks them).
async fn export_geo_long(state: &Exports, q: &ExportQuery) -> Result<Response, HttpError> {
    use app::ssr::Geo as _;
    let view = state.geo.board(q.run.clone(), None, None, None).await.map_err(HttpError::from)?;
    let report = state.geo.report(&view.run).await.map_err(HttpError::from)?;
    let mut head = ["ranker", "method", "dataset", "metric"].map(String::from).to_vec();
    head.extend(est_head(""));
    head.push("incomplete".to_string());
    let mut rows = Vec::new();
    let overall = report.rows.iter().map(|r| (&r.ranker, &r.method, "all", &r.summary, r.incomplete));
    let per = report.datasets.iter().map(|r| (&r.ranker, &r.method, r.dataset.as_str(), &r.summary, r.incomplete));
    for (ranker, method, dataset, s, incomplete) in overall.chain(per) {
        let mut line = |metric: &str, cells: [String; 5]| {
            let mut l = vec![ranker.clone(), method.clone(), dataset.to_string(), metric.to_string()];
            l.extend(cells);
            l.push(incomplete.to_string());
            rows.push(l);
        };
        let estimates = [
            ("nrg", &s.nrg),
            ("s_at_0_1", &s.s_at_0_1),
            ("p_at_0_1", &s.p_at_0_1),
            ("s_at_0_2", &s.s_at_0_2),
            ("p_at_0_2", &s.p_at_0_2),
            ("kvr", &s.kvr),
            ("nrg_after_keyword", &s.nrg_after_keyword),
            ("promoted_and_passed", &s.promoted_and_passed),
        ];
        for (metric, e) in estimates {
            line(metric, est_cells(Some(e), 4));
        }
        let n = s.n.to_string();
        let plain = |v: f64| [format!("{v:.4}"), String::new(), String::new(), n.clone(), String::new()];
        line("missing", plain(s.missing));
        line("missing_clean", plain(s.missing_clean));
        line("nrg_target_weighted", plain(s.nrg_target_weighted));
        if let Some(p) = s.ppl_r {
            line("ppl_r_ngram", plain(p));
        }
    }
    Ok(attachment(&format!("geo-long-{}.csv", view.run), "text/csv; charset=utf-8", csv_text(&head, &rows)?))
}

/// `geo.csv|json`: the GEO report's rows, with the newest detection report's columns.
async fn export_geo(state: &Exports, name: &str, q: &ExportQuery) -> Result<Response, HttpError> {
    use app::ssr::Geo as _;
    let view = state.geo.board(q.run.clone(), None, None, None).await.map_err(HttpError::from)?;
    let report = state.geo.report(&view.run).await.map_err(HttpError::from)?;
    if name.ends_with("json") {
        return Ok(Json(report.as_ref().clone()).into_response());
    }
    let head = geo_wide_head();
    let detection = view.detection.as_ref();
    let mut rows: Vec<Vec<String>> = view.rows.iter().map(|r| geo_wide_row(r, detection)).collect();
    // A variant none of whose targets was scored keeps a row: its name and its failed trials.
    for e in view.incomplete.iter().filter(|e| e.scored == 0) {
        let mut line = vec![String::new(); head.len()];
        line[0].clone_from(&e.ranker);
        line[1].clone_from(&e.method);
        if let Some(at) = head.iter().position(|h| h == "incomplete_trials") {
            line[at] = e.trials.to_string();
        }
        rows.push(line);
    }
    Ok(attachment(&format!("geo-{}.csv", view.run), "text/csv; charset=utf-8", csv_text(&head, &rows)?))
}

/// The columns of `geo.csv`: one line per ranker × method, each estimate as mean, interval and
/// n, then the counts, then the newest detection report's columns.
fn geo_wide_head() -> Vec<String> {
    let mut head: Vec<String> = ["ranker", "method", "group", "band"].map(String::from).to_vec();
    for c in ["nrg", "s_at_0_1", "p_at_0_1", "kvr", "nrg_after_keyword", "promoted_and_passed"] {
        head.extend(est_head(c));
    }
    head.extend(
        [
            "missing",
            "missing_clean",
            "orders",
            "failed_orders",
            "failed_targets",
            "nrg_target_weighted",
            "ppl_r_ngram",
            "incomplete_trials",
            "replies",
            "fallback_replies",
            "tap_dead_searches",
        ]
        .map(String::from),
    );
    // The newest detection report's columns (empty cells without one).
    head.extend(
        ["judge_auroc", "judge_flagged", "either_flagged", "nrg_after_judge", "nrg_after_either", "ppl_r_scorer"]
            .map(String::from),
    );
    head
}

/// One line of `geo.csv` (see [`geo_wide_head`]); the detection columns are empty without a
/// detection report or a row of it for this variant.
fn geo_wide_row(r: &vocab::GeoRow, detection: Option<&vocab::GeoDetectionView>) -> Vec<String> {
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let mut line = vec![r.ranker.clone(), r.method.clone(), r.group.clone(), r.band.to_string()];
    for e in [r.nrg, r.s_at_0_1, r.p_at_0_1, r.kvr, r.nrg_after_keyword, r.promoted_and_passed] {
        line.extend(est_cells(Some(&e), 4));
    }
    line.extend([
        r.missing.to_string(),
        r.missing_clean.to_string(),
        r.orders.to_string(),
        r.failed_orders.to_string(),
        r.failed_targets.to_string(),
        r.nrg_target_weighted.to_string(),
        opt(r.ppl_r),
        // Trials in error or unfinished (‡: the figures are over the others), and
        // TAP searches that measured nothing.
        r.incomplete.to_string(),
        r.replies.to_string(),
        r.fallback_replies.to_string(),
        r.tap.as_ref().map(|t| t.dead_searches.to_string()).unwrap_or_default(),
    ]);
    let j = detection.and_then(|d| d.rows.iter().find(|x| x.ranker == r.ranker && x.method == r.method));
    line.extend([
        opt(j.and_then(|j| j.auroc)),
        opt(j.map(|j| j.judge_flagged)),
        opt(j.map(|j| j.either_flagged)),
        opt(j.map(|j| j.nrg_after_judge)),
        opt(j.map(|j| j.nrg_after_either)),
        opt(j.and_then(|j| j.ppl_r)),
    ]);
    line
}

/// The pages that always name their run: the figure pages and the labelling queue.
pub const PINNED_PAGES: [&str; 6] = ["/team", "/annotate", "/leaderboard", "/robustness", "/heatmaps", "/report"];

/// Where a request for one of the [`PINNED_PAGES`] goes instead, when it names no run:
/// the same page with the default run's `?run=…` (the rest of the query kept; see
/// `engine::default_run`), so a shared link keeps showing the same run after another is
/// launched. `None` when it names a run, or there is no run with finished trials yet (the
/// page then says so itself). Only the pinned pages' own routes ask.
pub async fn pinned_to(state: &AppState, uri: &axum::http::Uri) -> Option<String> {
    let query = uri.query().unwrap_or_default();
    let named = query.split('&').any(|p| p.strip_prefix("run=").is_some_and(|v| !v.is_empty()));
    if named {
        return None;
    }
    let run = crate::engine::default_run(state.store.as_ref()).await.ok().flatten()?;
    let mut to = format!("{}?run={}", uri.path(), urlencoding::encode(&run));
    for p in query.split('&').filter(|p| !p.is_empty() && !p.starts_with("run=")) {
        to.push('&');
        to.push_str(p);
    }
    Some(to)
}

/// `/book`: the book in `docs/` where it was built beside the dashboard's files
/// (`scripts/build-site.sh` builds it when mdBook is installed), else a page saying how
/// to build it. Its pages are served as static files under `/book/`.
pub async fn book(State(state): State<AppState>) -> Response {
    let root = std::path::Path::new(state.leptos_options.site_root.as_ref());
    if root.join("book/index.html").is_file() {
        return Redirect::to("/book/index.html").into_response();
    }
    let content = maud::html! {
        h1 { "The book is not built here" }
        p {
            "The book lives in " code { "docs/" } " of the repository (Markdown you can read as it is). "
            "To serve it here, install mdBook and build it beside the dashboard's files:"
        }
        pre { "scripts/setup.sh          # installs mdBook (scripts/serve.sh runs it)\nscripts/build-site.sh     # builds the dashboard's files and the book" }
    };
    (StatusCode::NOT_FOUND, axum::response::Html(super::plain_page("The book", &content))).into_response()
}
