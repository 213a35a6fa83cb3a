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
use crate::env::site::{Rendered, render_path};
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
    page_budget(&state, peer.map(|p| p.0.0))?;
    let text = query.format.as_deref() == Some("text");
    let (episode, task) = open_episode(&state, &id).await?;
    let path = format!("/{rest}");
    let kind = if query.pattern.is_some() && normalise(&path) == "/wiki/search" { "search" } else { "visit" };
    let rendered =
        visit(&state, (&episode, &task), Visit { kind, path: &path, pattern: query.pattern.as_deref() }, None).await?;
    Ok(respond(rendered, text))
}

/// Each page of an episode is logged: a client's pages are budgeted like its episodes.
pub fn page_budget(state: &AppState, peer: Option<std::net::SocketAddr>) -> Result<(), HttpError> {
    let client = crate::state::client_key(peer);
    let budget = state.config.server.episode_pages_per_minute;
    if !state.guard.allow(crate::state::Budget::EpisodePages, &client, budget) {
        return Err(HttpError::TooMany(format!(
            "client {client} fetched {budget} episode pages in the last minute (the [server] episode_pages_per_minute setting); try again later"
        )));
    }
    Ok(())
}

/// An episode and its task; an episode that carries out a run's trial renews its lease here,
/// and one that lost it (idle past the lease, or its run cancelled) is gone.
pub async fn open_episode(
    state: &AppState,
    id: &str,
) -> Result<(Episode, std::sync::Arc<crate::corpus::Task>), HttpError> {
    let episode = state.store.episode(id).await?;
    let task = state
        .world
        .task(&episode.task_id)
        .ok_or_else(|| HttpError::NotFound("the episode's task is no longer stored".into()))?
        .clone();
    if episode.status == "open"
        && !crate::runs::external::renew(state.store.as_ref(), &episode)
            .await
            .map_err(|e| HttpError::failed("renewing an episode's lease", e))?
    {
        return Err(HttpError::Gone(format!(
            "episode {id} no longer holds its trial: it was idle past its lease, or its run was cancelled; \
             take a new episode from the run"
        )));
    }
    Ok((episode, task))
}

/// A page an episode moves to.
pub struct Visit<'a> {
    /// `visit`, `search` or `back`.
    pub kind: &'a str,
    pub path: &'a str,
    pub pattern: Option<&'a str>,
}

/// Renders a page of an episode and logs it (with the thought and the action that led there,
/// when it came through `act`). A page the log does not record is never served.
pub async fn visit(
    state: &AppState,
    (episode, task): (&Episode, &crate::corpus::Task),
    to: Visit<'_>,
    posted: Option<(&str, &crate::agent::Action)>,
) -> Result<Rendered, HttpError> {
    let rendered = crate::runs::external::page(&state.world, task, episode, to.path, to.pattern)
        .map_err(|e| HttpError::failed("rendering an episode's page", e))?;
    let status = rendered.status.to_string();
    let detail = to.pattern.map_or(status.clone(), |p| format!("{status} {p}"));
    let action = posted
        .map(|(_, a)| serde_json::to_string(a))
        .transpose()
        .map_err(|e| HttpError::failed("logging an action", e))?;
    let event = crate::db::NewEvent {
        kind: to.kind,
        url: Some(to.path),
        detail: Some(&detail),
        thought: posted.map(|(t, _)| t),
        action: action.as_deref(),
    };
    let cap = i64::from(state.config.server.episode_max_events);
    let logged = state
        .store
        .append_event(&episode.episode_id, event, cap)
        .await
        .map_err(|e| HttpError::failed("logging a page visit", e))?;
    if logged.is_none() {
        return Err(HttpError::Conflict(format!(
            "episode {} has logged {cap} pages, the most one episode keeps (the [server] episode_max_events \
             setting): record its verdict",
            episode.episode_id
        )));
    }
    Ok(rendered)
}

/// The verdict tools shown on every page of an episode.
pub fn chrome(episode: &Episode, domain: Domain) -> EpisodeChrome<'_> {
    EpisodeChrome {
        id: &episode.episode_id,
        actions: domain.actions(),
        closed: episode.status != "open",
        overlay: None,
        over_http: true,
    }
}
