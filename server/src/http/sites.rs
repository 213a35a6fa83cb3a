//! The three investigation sites over HTTP, at canonical URLs (people, the tasks page)
//! and under `/ep/<episode>/…` (agents; every request is logged to the episode).
//!
//! `?format=text` returns the text observation instead of HTML. Unknown paths are a real
//! 404 in the site's own chrome.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::HttpError;
use crate::corpus::Domain;
use crate::corpus::urls::normalise;
use crate::db::Episode;
use crate::env::render::EpisodeChrome;
use crate::env::site::{Rendered, domain_of, listing, render_path};
use crate::state::AppState;

/// Query parameters a site page understands.
#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    /// `text` for the observation, anything else for HTML.
    pub format: Option<String>,
    /// Wiki search words.
    pub pattern: Option<String>,
}

/// The response for a rendered page in the requested form (the security headers, including
/// the script-free page policy, come from [`super::security_headers`]).
pub fn respond(page: Rendered, text: bool) -> Response {
    let status = StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if text {
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], page.text).into_response()
    } else {
        (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], page.html).into_response()
    }
}

/// `GET /shop/…`, `/forum/…`, `/wiki/…`: the canonical, unlogged view.
pub async fn canonical(State(state): State<AppState>, uri: Uri, Query(query): Query<PageQuery>) -> Response {
    let text = query.format.as_deref() == Some("text");
    respond(render_path(&state.world, uri.path(), query.pattern.as_deref(), None), text)
}

/// `GET /ep/<id>/…`: the page inside an episode. Logged as a visit (or a search) before it
/// is returned. Pages of another site than the episode's task are not part of its world.
pub async fn in_episode(
    State(state): State<AppState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    Path((id, rest)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Result<Response, HttpError> {
    // Each page is logged: a client's pages are budgeted like its episodes.
    let client = crate::state::client_key(peer.map(|p| p.0.0));
    let budget = state.config.server.episode_pages_per_minute;
    if !state.guard.allow(crate::state::Budget::EpisodePages, &client, budget) {
        return Err(HttpError::TooMany(format!(
            "client {client} fetched {budget} episode pages in the last minute (the [server] episode_pages_per_minute setting); try again later"
        )));
    }
    let text = query.format.as_deref() == Some("text");
    let episode = state.store.episode(&id).await?;
    let task = state
        .world
        .task(&episode.task_id)
        .ok_or_else(|| HttpError::NotFound("the episode's task is no longer stored".into()))?;
    let path = format!("/{rest}");
    let overlay = crate::manip::overlay_for(task, &episode.level, episode.strategy.as_deref(), episode.seed)
        .map_err(|e| HttpError::internal("building the episode's manipulation", e))?;
    let mut chrome = chrome(&episode, task.domain);
    chrome.overlay = Some(&overlay);
    let rendered = if domain_of(&path) == Some(task.domain) {
        render_path(&state.world, &path, query.pattern.as_deref(), Some(chrome))
    } else {
        let intro = "This address is outside the site of this episode.";
        listing(task.domain, &path, "Page not found", intro, vec![], Some(chrome), 404)
    };
    let (kind, url, detail) = match query.pattern.as_deref() {
        Some(p) if normalise(&path) == "/wiki/search" => ("search", path.clone(), Some(p.to_string())),
        _ => ("visit", path.clone(), None),
    };
    let status = rendered.status.to_string();
    let detail = detail.map_or(status.clone(), |d| format!("{status} {d}"));
    // A page the log does not record must not be served: the trajectory would lie.
    state
        .store
        .append_event(&id, kind, Some(&url), Some(&detail))
        .await
        .map_err(|e| HttpError::internal("logging a page visit", e))?;
    Ok(respond(rendered, text))
}

/// The verdict tools shown on every page of an episode.
pub fn chrome(episode: &Episode, domain: Domain) -> EpisodeChrome<'_> {
    EpisodeChrome {
        id: &episode.episode_id,
        actions: domain.actions(),
        closed: episode.status != "open",
        overlay: None,
    }
}
