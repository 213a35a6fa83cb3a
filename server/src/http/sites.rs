//! The three investigation sites over HTTP, at canonical URLs (people, the tasks page)
//! and under `/ep/<episode>/…` (agents; every request is logged to the episode).
//!
//! `?format=text` returns the text observation instead of HTML. Unknown paths are a real
//! 404 in the site's own chrome.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::corpus::Domain;
use crate::corpus::urls::normalise;
use crate::db::Episode;
use crate::env::render::{self, EpisodeChrome, View};
use crate::env::{Resolved, World};
use crate::state::AppState;

/// Sites carry no scripts at all; this policy makes sure injected markup could not run.
pub const SITE_CSP: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Query parameters a site page understands.
#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    /// `text` for the observation, anything else for HTML.
    pub format: Option<String>,
    /// Wiki search words.
    pub pattern: Option<String>,
}

/// A rendered page in both forms and its status.
pub struct Rendered {
    pub status: StatusCode,
    pub html: String,
    pub text: String,
    pub domain: Domain,
}

impl Rendered {
    /// The response in the requested form, with the sites' security headers.
    pub fn respond(self, text: bool) -> Response {
        let mut resp = if text {
            (self.status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], self.text).into_response()
        } else {
            (self.status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], self.html).into_response()
        };
        resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(SITE_CSP));
        resp.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
        resp
    }
}

fn domain_of(path: &str) -> Option<Domain> {
    let path = normalise(path);
    Domain::ALL.into_iter().find(|d| path == d.url_prefix().trim_end_matches('/') || path.starts_with(d.url_prefix()))
}

fn listing(
    domain: Domain,
    path: &str,
    title: &str,
    intro: &str,
    links: Vec<(String, String)>,
    ep: Option<EpisodeChrome<'_>>,
    status: StatusCode,
) -> Rendered {
    let (html, text) = render::listing(domain, path, title, intro, links, ep);
    Rendered { status, html, text, domain }
}

/// Renders any site path. `ep` carries the episode chrome when served inside one.
pub fn render_path(world: &World, path: &str, query: &PageQuery, ep: Option<EpisodeChrome<'_>>) -> Rendered {
    let norm = normalise(path);
    let Some(domain) = domain_of(&norm) else {
        return listing(
            Domain::Wiki,
            &norm,
            "Not found",
            "No site lives at this address.",
            vec![],
            ep,
            StatusCode::NOT_FOUND,
        );
    };
    match norm.as_str() {
        "/shop/admin/dashboard" | "/shop/admin" | "/shop" => {
            let intro = "Orders with an open refund or fraud review.";
            return listing(
                domain,
                &norm,
                "Dashboard: orders awaiting review",
                intro,
                world.queue(Domain::Shop),
                ep,
                StatusCode::OK,
            );
        }
        "/forum" => {
            let intro = "Posts in the moderation queue.";
            return listing(
                domain,
                &norm,
                "Forum: reported posts",
                intro,
                world.queue(Domain::Forum),
                ep,
                StatusCode::OK,
            );
        }
        "/wiki" => {
            let links = vec![("Review queue".to_string(), "/wiki/review/queue".to_string())];
            let intro = "Offline encyclopedia mirror. Use the search box to find articles.";
            return listing(domain, &norm, "Main page", intro, links, ep, StatusCode::OK);
        }
        "/wiki/review/queue" => {
            let intro = "Edits waiting for a reviewer's verdict.";
            return listing(domain, &norm, "Review queue", intro, world.queue(Domain::Wiki), ep, StatusCode::OK);
        }
        "/wiki/search" => {
            let pattern = query.pattern.clone().unwrap_or_default();
            let hits = if pattern.trim().is_empty() { Ok(Vec::new()) } else { world.wiki.search(&pattern, 20) };
            return match hits {
                Ok(hits) => {
                    let intro = if pattern.trim().is_empty() {
                        "Type words into the search box.".to_string()
                    } else {
                        format!("{} results for \"{pattern}\".", hits.len())
                    };
                    let links = hits.into_iter().map(|h| (h.title, h.url)).collect();
                    listing(domain, &norm, "Search", &intro, links, ep, StatusCode::OK)
                }
                Err(e) => {
                    tracing::error!(error = %e, "wiki search failed");
                    listing(
                        domain,
                        &norm,
                        "Search",
                        "Search is unavailable.",
                        vec![],
                        ep,
                        StatusCode::INTERNAL_SERVER_ERROR,
                    )
                }
            };
        }
        _ => {}
    }
    match world.resolve(&norm) {
        Some(Resolved::Page(p)) if p.domain == domain => {
            let links = p.page.links.iter().map(|l| (l.label.clone(), l.url.clone())).collect();
            let view = View { domain, path: &norm, title: &p.page.title, text: &p.page.text, links, episode: ep };
            Rendered { status: StatusCode::OK, html: render::html(&view), text: render::observation(&view), domain }
        }
        Some(Resolved::Index { domain: d, title, links }) if d == domain => {
            listing(domain, &norm, &title, "Pages on this site that link here.", links, ep, StatusCode::OK)
        }
        _ => listing(
            domain,
            &norm,
            "Page not found",
            "There is no page at this address.",
            vec![],
            ep,
            StatusCode::NOT_FOUND,
        ),
    }
}

/// `GET /shop/…`, `/forum/…`, `/wiki/…`: the canonical, unlogged view.
pub async fn canonical(State(state): State<AppState>, uri: Uri, Query(query): Query<PageQuery>) -> Response {
    let text = query.format.as_deref() == Some("text");
    render_path(&state.world, uri.path(), &query, None).respond(text)
}

/// `GET /ep/<id>/…`: the page inside an episode. Logged as a visit (or a search) before it
/// is returned. Pages of another site than the episode's task are not part of its world.
pub async fn in_episode(
    State(state): State<AppState>,
    Path((id, rest)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Response {
    let text = query.format.as_deref() == Some("text");
    let episode = match state.store.episode(&id).await {
        Ok(ep) => ep,
        Err(crate::db::StoreError::NotFound(_)) => {
            return (StatusCode::NOT_FOUND, "no such episode").into_response();
        }
        Err(e) => {
            tracing::error!(error = %e, episode.id = %id, "loading episode");
            return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
        }
    };
    let Some(task) = state.world.task(&episode.task_id) else {
        return (StatusCode::NOT_FOUND, "the episode's task is no longer stored").into_response();
    };
    let path = format!("/{rest}");
    let chrome = chrome(&episode, task.domain);
    let rendered = if domain_of(&path) == Some(task.domain) {
        render_path(&state.world, &path, &query, Some(chrome))
    } else {
        let (html, text) = render::listing(
            task.domain,
            &path,
            "Page not found",
            "This address is outside the site of this episode.",
            vec![],
            Some(chrome),
        );
        Rendered { status: StatusCode::NOT_FOUND, html, text, domain: task.domain }
    };
    let (kind, url, detail) = match query.pattern.as_deref() {
        Some(p) if normalise(&path) == "/wiki/search" => ("search", path.clone(), Some(p.to_string())),
        _ => ("visit", path.clone(), None),
    };
    let status = rendered.status.as_u16().to_string();
    let detail = detail.map_or(status.clone(), |d| format!("{status} {d}"));
    if let Err(e) = state.store.append_event(&id, kind, Some(&url), Some(&detail)).await {
        // A page the log does not record must not be served: the trajectory would lie.
        tracing::error!(error = %e, episode.id = %id, "logging a page visit");
        return (StatusCode::INTERNAL_SERVER_ERROR, "could not record the visit").into_response();
    }
    rendered.respond(text)
}

/// The verdict tools shown on every page of an episode.
pub fn chrome(episode: &Episode, domain: Domain) -> EpisodeChrome<'_> {
    EpisodeChrome { id: &episode.episode_id, actions: domain.actions(), closed: episode.status != "open" }
}
