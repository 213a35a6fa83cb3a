//! One run as a static site (`mirage runs bundle`): the pages the dashboard shows about
//! the run — its run page, leaderboard, plots, heatmaps, report, definitions and every
//! trial's trajectory (a GEO run: its GEO page and every target page) — rendered by the
//! dashboard's own renderer, so every piece of agent, task and manipulated text is
//! escaped exactly as on the server. Scripts are removed, links to pages in the copy
//! become relative file links, links to anything else become plain text, and the
//! downloads those pages offer (CSV, JSON, SVG) are written beside them. The result opens
//! from a `file://` URL and fetches nothing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use app::model::{Identity, Role, RunId};
use app::ssr::Services;
use axum::body::Body;
use axum::extract::{Path as AxPath, Query, State};
use futures::StreamExt;
use leptos::prelude::provide_context;
use scraper::{Html, Node};

use crate::AppState;

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
}

/// What `mirage runs bundle` reports.
#[derive(Debug, Default)]
pub struct Summary {
    pub pages: usize,
    pub downloads: usize,
    pub bytes: u64,
    /// Links to dashboard pages the copy does not hold (made plain text).
    pub outside_links: usize,
}

/// Writes the bundle of `run` into `out`, which must not exist or be an empty folder.
/// Files are written to a sibling folder first and moved into place at the end, so a
/// failure leaves no half-written copy. `progress(done, known)` is called per file. When
/// `stop` resolves first (the command was interrupted), the copy is abandoned and its
/// folder removed.
pub async fn write(
    state: &AppState,
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
    let geo = crate::runs::geo::is_geo(&row)?;
    let trials = state.store.trials(run).await?;
    let mut queue: VecDeque<Place> = VecDeque::new();
    let seeds: Vec<String> = if geo {
        let mut s = vec![format!("/geo?run={run}"), format!("/runs/{run}")];
        s.extend(trials.iter().map(|t| format!("/geo/trials/{}", t.trial_id)));
        s
    } else {
        let mut s = ["/runs/{run}", "/leaderboard", "/robustness", "/heatmaps", "/report", "/definitions"]
            .map(|p| p.replace("{run}", run))
            .to_vec();
        s.extend(trials.iter().map(|t| format!("/runs/{run}/trials/{}", t.trial_id)));
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
        Ok(summary) => {
            if out.exists() {
                std::fs::remove_dir(out).with_context(|| format!("replacing the empty folder {}", out.display()))?;
            }
            std::fs::rename(&staging, out)
                .with_context(|| format!("moving {} to {}", staging.display(), out.display()))?;
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

/// Refuses an output folder that exists and holds anything (`mirage runs bundle` asks
/// before it scores the run, so a mistyped folder is named at once).
pub fn check_out(out: &Path) -> anyhow::Result<()> {
    if out.exists() && std::fs::read_dir(out).with_context(|| format!("reading {}", out.display()))?.next().is_some() {
        bail!("{} exists and is not empty: choose a new folder (nothing was written)", out.display());
    }
    Ok(())
}

/// A fresh folder beside `out` to write into.
fn staging_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("bundle");
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = parent.join(format!(".{name}.partial-{:08x}", rand::random::<u32>()));
    std::fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    Ok(staging)
}

/// Renders every queued file and the ones their links reach, wave by wave.
async fn fill(
    state: &AppState,
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
                    let page = rewrite(&body, run, geo, &place.file);
                    summary.pages += 1;
                    summary.outside_links += page.outside;
                    for next in page.links {
                        if known.insert(next.file.clone()) {
                            queue.push_back(next);
                        }
                    }
                    page.html
                }
                Source::Export { .. } => {
                    summary.downloads += 1;
                    body
                }
            };
            let path = dir.join(&place.file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
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
    state: AppState,
}

impl Renderer {
    fn new(state: &AppState) -> Self {
        Self { state: state.clone() }
    }

    async fn fetch(&self, source: &Source) -> anyhow::Result<String> {
        let response = match source {
            Source::Page(url) => {
                let services = Services::from(&self.state);
                let options = self.state.leptos_options.clone();
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
                super::dashboard::export(State(self.state.clone()), AxPath(name.clone()), Query(q)).await
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
    let page = |file: String, url: String| Some(Place { file, source: Source::Page(url) });
    let numbered = |stem: String| match page_no {
        Some(n) => format!("{stem}-page{n}.html"),
        None => format!("{stem}.html"),
    };
    match segments.as_slice() {
        [""] if pairs.is_empty() => {
            if geo {
                page("geo.html".into(), format!("/geo?run={run}"))
            } else {
                page("index.html".into(), format!("/runs/{run}"))
            }
        }
        ["runs", r] if *r == run && only(&["page"]) => {
            let q = page_no.map(|n| format!("?page={n}")).unwrap_or_default();
            page(numbered(if geo { "run".into() } else { "index".into() }), format!("/runs/{run}{q}"))
        }
        ["runs", r, "trials", t] if *r == run && !geo => {
            let q = page_no.map(|n| format!("?page={n}")).unwrap_or_default();
            page(numbered(format!("trials/{}", safe(t))), format!("/runs/{run}/trials/{t}{q}"))
        }
        ["geo", "trials", t] if geo && only(&[]) => {
            page(format!("targets/{}.html", safe(t)), format!("/geo/trials/{t}"))
        }
        ["geo"] if geo && only(&["run"]) => page("geo.html".into(), format!("/geo?run={run}")),
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
            })
        }
        _ => None,
    }
}

/// A page made static: its HTML, the bundle files its links reach, and how many of its
/// links pointed at pages the copy does not hold.
struct Rewritten {
    html: String,
    links: Vec<Place>,
    outside: usize,
}

/// Removes scripts and preloads, disables forms, declares the bundle's policy and points
/// every link at its file (relative to `file`), or makes it plain text.
fn rewrite(html: &str, run: &str, geo: bool, file: &str) -> Rewritten {
    use html5ever::{QualName, local_name, ns};
    let up = "../".repeat(file.matches('/').count());
    let mut doc = Html::parse_document(html);
    let mut links = Vec::new();
    let mut outside = 0;
    let ids: Vec<_> = doc.tree.nodes().map(|n| n.id()).collect();
    // The run picker offers only this run: the copy holds no other. Found before the loop
    // changes any attribute.
    let other_runs: std::collections::HashSet<_> = doc
        .tree
        .nodes()
        .filter(|n| {
            let option = n.value().as_element().filter(|e| &*e.name.local == "option");
            let picker = n.parent().and_then(|p| p.value().as_element().map(|e| e.attr("name") == Some("run")));
            option.is_some_and(|o| o.attr("value") != Some(run)) && picker == Some(true)
        })
        .map(|n| n.id())
        .collect();
    for id in ids {
        let in_nav = doc
            .tree
            .get(id)
            .and_then(|n| n.parent())
            .is_some_and(|p| p.value().as_element().is_some_and(|e| &*e.name.local == "nav"));
        let Some(mut node) = doc.tree.get_mut(id) else { continue };
        let Node::Element(el) = node.value() else { continue };
        let tag = el.name.local.to_string();
        let rel = el.attr("rel").unwrap_or_default().to_string();
        let drop = match tag.as_str() {
            "option" => other_runs.contains(&id),
            "script" => true,
            "link" => rel != "stylesheet",
            "form" => el.has_class("whoami", scraper::CaseSensitivity::CaseSensitive),
            _ => false,
        };
        if drop {
            node.detach();
            continue;
        }
        match tag.as_str() {
            "link" => {
                for (name, value) in &mut el.attrs {
                    if &*name.local == "href" {
                        *value = format!("{up}mirage.css").into();
                    }
                }
                continue;
            }
            "button" | "input" | "select" | "textarea" => {
                el.attrs.push((QualName::new(None, ns!(), local_name!("disabled")), "".into()));
            }
            "form" => el.attrs.retain(|(name, _)| !matches!(&*name.local, "action" | "method")),
            _ => {}
        }
        let mut inert = false;
        for (name, value) in &mut el.attrs {
            if &*name.local != "href" {
                continue;
            }
            let target = value.to_string();
            match link_of(run, geo, &target) {
                Link::Keep => {}
                Link::To(place, fragment) => {
                    *value = format!("{up}{}{fragment}", place.file).into();
                    links.push(place);
                }
                Link::Outside => {
                    tracing::debug!(href = %target, page = file, "a link outside the bundle");
                    inert = true;
                }
            }
        }
        if inert && in_nav {
            // The main menu keeps only what the copy holds.
            if let Some(mut node) = doc.tree.get_mut(id) {
                node.detach();
            }
            continue;
        }
        if inert {
            outside += 1;
            make_inert(el);
        }
    }
    frame(&mut doc, run);
    Rewritten { html: doc.html(), links, outside }
}

/// A link to a page the copy does not hold becomes plain text that says so.
fn make_inert(el: &mut scraper::node::Element) {
    use html5ever::{QualName, local_name, ns};
    el.attrs.retain(|(name, _)| &*name.local != "href" && &*name.local != "download");
    el.attrs.push((
        QualName::new(None, ns!(), local_name!("title")),
        "Not in this copy: open it on the Mirage server".into(),
    ));
    match el.attrs.iter_mut().find(|(name, _)| &*name.local == "class") {
        Some((_, class)) => *class = format!("{class} outside-bundle").into(),
        None => el.attrs.push((QualName::new(None, ns!(), local_name!("class")), "outside-bundle".into())),
    }
}

/// Declares the bundle's content policy in the head and puts the note saying what the copy
/// is at the top of the body.
fn frame(doc: &mut Html, run: &str) {
    use html5ever::{Attribute, QualName, local_name, ns};
    let find = |doc: &Html, tag: &str| {
        doc.tree.nodes().find(|n| n.value().as_element().is_some_and(|e| &*e.name.local == tag)).map(|n| n.id())
    };
    let (head, body) = (find(doc, "head"), find(doc, "body"));
    let attr = |name: &str, value: &str| Attribute {
        name: QualName::new(None, ns!(), html5ever::LocalName::from(name)),
        value: value.into(),
    };
    if let Some(head) = head {
        let meta = scraper::node::Element::new(
            QualName::new(None, ns!(html), local_name!("meta")),
            vec![attr("http-equiv", "Content-Security-Policy"), attr("content", POLICY)],
        );
        if let Some(mut h) = doc.tree.get_mut(head) {
            h.prepend(Node::Element(meta));
        }
    }
    if let Some(body) = body {
        let note = scraper::node::Element::new(
            QualName::new(None, ns!(html), local_name!("p")),
            vec![attr("class", "bundle-note"), attr("role", "note")],
        );
        let text = format!(
            "A static copy of run {run} (mirage runs bundle): the pages and downloads of this run only; \
             links to anything else are plain text and forms are disabled."
        );
        if let Some(mut b) = doc.tree.get_mut(body) {
            let mut p = b.prepend(Node::Element(note));
            p.append(Node::Text(scraper::node::Text { text: text.as_str().into() }));
        }
    }
}

/// What a link in a bundled page becomes.
enum Link {
    /// Left as it is: a fragment on the same page, or an address outside the dashboard.
    Keep,
    /// A file of the copy, with the fragment to keep.
    To(Place, String),
    /// A dashboard page the copy does not hold.
    Outside,
}

fn link_of(run: &str, geo: bool, href: &str) -> Link {
    let base = url::Url::parse("http://dashboard.invalid/").expect("a valid base");
    let Ok(target) = base.join(href) else { return Link::Outside };
    if href.starts_with('#') || target.host_str() != Some("dashboard.invalid") || target.scheme() != "http" {
        return Link::Keep;
    }
    let turn = target.query_pairs().find(|(k, _)| k == "turn").map(|(_, v)| v.into_owned());
    let query: Vec<(String, String)> =
        target.query_pairs().filter(|(k, _)| k != "turn").map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let trajectory = target.path().contains("/trials/") && target.path().starts_with("/runs/");
    // A trajectory link keeps only its page of turns; its list filters and turn do not
    // change what the page holds enough to earn a file of their own.
    let query: Vec<(String, String)> =
        if trajectory { query.into_iter().filter(|(k, _)| k == "page").collect() } else { query };
    let mut url = target.path().to_string();
    if !query.is_empty() {
        url.push('?');
        url.push_str(&url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&query).finish());
    }
    let fragment = match (target.fragment(), turn) {
        (Some(f), _) => format!("#{f}"),
        (None, Some(t)) if trajectory => format!("#turn-{t}"),
        _ => String::new(),
    };
    match place_of(run, geo, &url) {
        Some(place) => Link::To(place, fragment),
        None => Link::Outside,
    }
}

#[cfg(test)]
mod tests;
