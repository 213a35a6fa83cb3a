//! One run as a static site (`mirage runs bundle`): the pages the dashboard shows about
//! the run — its run page, leaderboard, plots, heatmaps, report, definitions and every
//! trial's trajectory (a GEO run: its GEO page and every target page) — rendered by the
//! dashboard's own renderer, so every piece of agent, task and manipulated text is
//! escaped exactly as on the server. Scripts are removed, links to pages in the copy
//! become relative file links, links to anything else become plain text, and the
//! downloads those pages offer (CSV, JSON, SVG) are written beside them. What an agent saw
//! on a turn is written once per distinct text, in `seen/`, and each turn links to it: the
//! same page seen by many trials of a task would otherwise fill most of the copy. The
//! result opens from a `file://` URL and fetches nothing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use anyhow::{Context, bail};
use app::model::{Identity, Role, RunId};
use app::ssr::Services;
use axum::body::Body;
use futures::StreamExt;
use leptos::prelude::{LeptosOptions, provide_context};

use super::dashboard::Exports;
use crate::db::Store;
use vocab::routes;

/// The stylesheet the dashboard serves as `/pkg/mirage.css`, copied into every bundle.
const STYLE: &str = include_str!("../../../style/main.css");

/// The policy every bundled page declares: no scripts, no requests, styles from the copy.
const POLICY: &str = "default-src 'none'; style-src 'self' file:; img-src data:; base-uri 'none'; form-action 'none'";

/// Where a page of the copy comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// A dashboard page, by its path and query.
    Page(String),
    /// A download of `/api/export/{name}` with this query.
    Export { name: String, query: String },
}

/// A file of the copy: its path inside the bundle and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    file: String,
    source: Source,
    /// A later page of a trajectory's turns: the file of its first page.
    first: Option<String>,
}

/// What the copy is rendered from: the store, the dashboard's ports and its downloads,
/// without anything a server runs in the background (no search index, no executor).
#[derive(Clone)]
pub struct Sources {
    store: std::sync::Arc<dyn Store>,
    services: Services,
    exports: Exports,
    options: LeptosOptions,
}

impl Sources {
    /// The sources over `store` with the engines of `reading`.
    pub fn new(
        store: std::sync::Arc<dyn Store>,
        reading: &crate::Reading,
        config: crate::config::Config,
        options: LeptosOptions,
    ) -> Self {
        let services = crate::services::services(crate::services::Parts {
            world: reading.world.clone(),
            store: store.clone(),
            config: std::sync::Arc::new(config),
            corpus_version: reading.corpus_version.clone(),
            insights: reading.insights.clone(),
            geo: reading.geo.clone(),
            search: None,
            executor: None,
        });
        let exports = Exports { insights: reading.insights.clone(), geo: reading.geo.clone() };
        Sources { store, services, exports, options }
    }
}

/// What `mirage runs bundle` reports.
#[derive(Debug, Default)]
pub struct Summary {
    pub pages: usize,
    pub downloads: usize,
    /// Distinct texts the agents saw, one file each in `seen/`.
    pub seen: usize,
    pub bytes: u64,
    /// Links to dashboard pages the copy does not hold (made plain text).
    pub outside_links: usize,
}

/// Writes the bundle of `run` into `out`, which must not exist or be an empty folder; an
/// `out` ending in `.zip` is written as one archive instead, its files under a folder named
/// like the archive. Files are written to a sibling folder first and moved (or archived)
/// into place at the end, so a failure leaves no half-written copy. `progress(done, known)` is called per file. When
/// `stop` resolves first (the command was interrupted), the copy is abandoned and its
/// folder removed.
pub async fn write(
    state: &Sources,
    run: &RunId,
    out: &Path,
    progress: impl Fn(usize, usize),
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<Summary> {
    // The renderer spawns its resources' futures on the global executor (a server sets it
    // up when it mounts the routes; an error means one is set already).
    let _ = any_spawner::Executor::init_tokio();
    let row = state.store.run(run).await.with_context(|| format!("reading run {run}"))?;
    check_out(out)?;
    let geo = matches!(crate::runs::RunKind::of(&row)?, crate::runs::RunKind::Geo(_));
    let trials = state.store.trials(run).await?;
    let mut queue: VecDeque<Place> = VecDeque::new();
    let seeds: Vec<String> = if geo {
        let mut s = vec![routes::geo(run), routes::run(run)];
        s.extend(trials.iter().map(|t| routes::geo_trial(&t.trial_id)));
        s
    } else {
        let mut s = vec![routes::run(run)];
        s.extend(["/leaderboard", "/robustness", "/heatmaps", "/report", "/definitions"].map(String::from));
        s.extend(trials.iter().map(|t| routes::trial(run, &t.trial_id, "")));
        s
    };
    let mut known = BTreeSet::new();
    for url in seeds {
        let place = place_of(run, geo, &url).with_context(|| format!("{url} has no place in the bundle"))?;
        if known.insert(place.file.clone()) {
            queue.push_back(place);
        }
    }

    // Polled once before the staging folder exists, so that its signal handlers are in place
    // before there is anything to clean up.
    let mut stop = std::pin::pin!(stop);
    if futures::poll!(stop.as_mut()).is_ready() {
        bail!("interrupted: nothing was written to {}", out.display());
    }
    let staging = staging_dir(out)?;
    let result = tokio::select! {
        result = fill(state, run, geo, &staging, queue, known, &progress) => result,
        () = stop => Err(anyhow::anyhow!("interrupted: nothing was written to {}", out.display())),
    };
    match result {
        Ok(mut summary) if is_zip(out) => {
            let archived = archive(&staging, out);
            let _ = std::fs::remove_dir_all(&staging);
            summary.bytes = archived?;
            Ok(summary)
        }
        Ok(summary) => {
            let moved = (|| {
                if out.exists() {
                    std::fs::remove_dir(out)
                        .with_context(|| format!("replacing the empty folder {}", out.display()))?;
                }
                std::fs::rename(&staging, out)
                    .with_context(|| format!("moving {} to {}", staging.display(), out.display()))
            })();
            if moved.is_err() {
                let _ = std::fs::remove_dir_all(&staging);
            }
            moved.map(|()| summary)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

/// Renders every queued file and the ones their links reach, wave by wave.
async fn fill(
    state: &Sources,
    run: &str,
    geo: bool,
    dir: &Path,
    mut queue: VecDeque<Place>,
    mut known: BTreeSet<String>,
    progress: &impl Fn(usize, usize),
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    std::fs::write(dir.join("mirage.css"), STYLE).context("writing mirage.css")?;
    summary.bytes += STYLE.len() as u64;
    let parallel = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get) * 2;
    let render = Renderer::new(state);
    let mut done = 0;
    let mut seen = BTreeSet::new();
    while !queue.is_empty() {
        let wave: Vec<Place> = queue.drain(..).collect();
        let mut made = futures::stream::iter(wave.into_iter().map(|place| {
            let render = render.clone();
            // Each page renders on a task of its own, as a request would on the server
            // (a render's reactive owner must not share a task with another's).
            async move {
                let source = place.source.clone();
                let body = match tokio::spawn(async move { render.fetch(&source).await }).await {
                    Ok(body) => body,
                    Err(e) => Err(anyhow::anyhow!("the renderer failed: {e}")),
                };
                (place, body)
            }
        }))
        .buffer_unordered(parallel);
        while let Some((place, body)) = made.next().await {
            let body = body.with_context(|| format!("rendering {} for {}", describe(&place.source), place.file))?;
            let bytes = match place.source {
                Source::Page(_) => {
                    let page = rewrite(&body, run, geo, &place.file, place.first.as_deref());
                    summary.pages += 1;
                    summary.outside_links += page.outside;
                    for next in page.links {
                        if known.insert(next.file.clone()) {
                            queue.push_back(next);
                        }
                    }
                    for (file, pre) in page.seen {
                        if seen.insert(file.clone()) {
                            let html = seen_page(run, &pre);
                            write_file(dir, &file, html.as_bytes())?;
                            summary.seen += 1;
                            summary.bytes += html.len() as u64;
                        }
                    }
                    page.html
                }
                Source::Export { .. } => {
                    summary.downloads += 1;
                    body
                }
            };
            write_file(dir, &place.file, bytes.as_bytes())?;
            summary.bytes += bytes.len() as u64;
            done += 1;
            progress(done, known.len());
        }
    }
    Ok(summary)
}

fn describe(source: &Source) -> String {
    match source {
        Source::Page(url) => url.clone(),
        Source::Export { name, query } => format!("/api/export/{name}?{query}"),
    }
}

/// Renders dashboard pages (waiting for every resource, as a page with all its data) and
/// downloads, in-process, as a viewer.
#[derive(Clone)]
struct Renderer {
    state: Sources,
}

impl Renderer {
    fn new(state: &Sources) -> Self {
        Self { state: state.clone() }
    }

    async fn fetch(&self, source: &Source) -> anyhow::Result<String> {
        let response = match source {
            Source::Page(url) => {
                let services = self.state.services.clone();
                let options = self.state.options.clone();
                let shell_options = options.clone();
                let handler = leptos_axum::render_app_async_with_context(
                    move || {
                        provide_context(services.clone());
                        provide_context(options.clone());
                    },
                    move || app::shell(shell_options.clone()),
                );
                let mut request = axum::http::Request::builder().uri(url.as_str()).body(Body::empty())?;
                request.extensions_mut().insert(Identity { name: "bundle".into(), role: Role::Viewer, open: true });
                handler(request).await
            }
            Source::Export { name, query } => {
                let q: super::dashboard::ExportQuery =
                    serde_urlencoded::from_str(query).with_context(|| format!("reading the query {query:?}"))?;
                super::dashboard::download(&self.state.exports, name, &q).await
            }
        };
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
        let text = String::from_utf8(body.to_vec()).context("the page is not UTF-8")?;
        if !status.is_success() {
            let why: String = text.chars().take(300).collect();
            bail!("the dashboard answered {status}: {why}");
        }
        Ok(text)
    }
}

/// The query keys whose variants of a view the bundle holds (each its own file); a link
/// with any other key (a sort order, a run picker) is not followed.
fn views(name: &str) -> &'static [&'static str] {
    match name {
        "leaderboard" => &["run", "tier", "by"],
        "robustness" => &["run", "level"],
        "heatmaps" => &["run", "metric", "by"],
        _ => &["run"],
    }
}

/// The part of a file name that tells a view's variant: `-key-value` for each query key
/// but the run, in key order (empty for the plain view).
fn variant_of(pairs: &BTreeMap<String, String>) -> String {
    pairs.iter().filter(|(k, _)| *k != "run").map(|(k, v)| format!("-{}-{}", safe(k), safe(v))).collect()
}

/// A file name made of safe characters only (ids become file names).
fn safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_string()
            } else {
                format!("~{:x}", c as u32)
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

/// The file a dashboard URL (path and query, no fragment) becomes in the bundle of `run`,
/// or `None` when the copy does not hold that page. The `turn` of a trajectory link
/// becomes the fragment the caller keeps.
fn place_of(run: &str, geo: bool, url: &str) -> Option<Place> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let pairs: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    if pairs.get("run").is_some_and(|r| r != run) {
        return None;
    }
    let only = |keys: &[&str]| pairs.keys().all(|k| keys.contains(&k.as_str()));
    let page_no = pairs.get("page").and_then(|p| p.parse::<usize>().ok()).filter(|p| *p > 0);
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|s| urlencoding::decode(s).map_or_else(|_| s.to_string(), std::borrow::Cow::into_owned))
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let page = |file: String, url: String| Some(Place { file, source: Source::Page(url), first: None });
    let numbered = |stem: String| match page_no {
        Some(n) => format!("{stem}-page{n}.html"),
        None => format!("{stem}.html"),
    };
    match segments.as_slice() {
        [""] if pairs.is_empty() => {
            if geo {
                page("geo.html".into(), routes::geo(run))
            } else {
                page("index.html".into(), routes::run(run))
            }
        }
        ["runs", r] if *r == run && only(&["page"]) => {
            let q = page_no.map(|n| format!("?page={n}")).unwrap_or_default();
            page(numbered(if geo { "run".into() } else { "index".into() }), format!("{}{q}", routes::run(run)))
        }
        ["runs", r, "trials", t] if *r == run && !geo => {
            let q = page_no.map(|n| format!("?page={n}")).unwrap_or_default();
            let stem = format!("trials/{}", safe(t));
            let first = page_no.map(|_| format!("{stem}.html"));
            page(numbered(stem), routes::trial(run, t, &q)).map(|p| Place { first, ..p })
        }
        ["geo", "trials", t] if geo && only(&[]) => page(format!("targets/{}.html", safe(t)), routes::geo_trial(t)),
        ["geo"] if geo && only(&["run"]) => page("geo.html".into(), routes::geo(run)),
        [name @ ("leaderboard" | "robustness" | "heatmaps" | "report")] if !geo && only(views(name)) => {
            let variant = variant_of(&pairs);
            let mut q = format!("run={}", urlencoding::encode(run));
            for (k, v) in pairs.iter().filter(|(k, _)| *k != "run") {
                q.push_str(&format!("&{k}={}", urlencoding::encode(v)));
            }
            page(format!("{name}{variant}.html"), format!("/{name}?{q}"))
        }
        ["definitions"] if pairs.is_empty() => page("definitions.html".into(), "/definitions".into()),
        ["api", "export", name] if only(&["run", "table", "tier", "by", "metric", "level"]) => {
            let (stem, ext) = name.rsplit_once('.')?;
            let mut q = format!("run={}", urlencoding::encode(run));
            for (k, v) in pairs.iter().filter(|(k, _)| *k != "run") {
                q.push_str(&format!("&{k}={}", urlencoding::encode(v)));
            }
            Some(Place {
                file: format!("data/{}{}.{}", safe(stem), variant_of(&pairs), safe(ext)),
                source: Source::Export { name: (*name).to_string(), query: q },
                first: None,
            })
        }
        _ => None,
    }
}

mod output;
mod rewrite;
#[cfg(test)]
mod tests;

use output::{archive, staging_dir, write_file};
pub use output::{archive_folder, check_out, is_zip};
use rewrite::{rewrite, seen_page};
