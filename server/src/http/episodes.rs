//! The episode API for outside agents: start an episode on a task, read its log, and end
//! it with a verdict (from a JSON client or the site's own verdict form).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::HttpError;
use crate::corpus::model::CONDITIONS;
use crate::db::{Episode, EpisodeEvent};
use crate::env::site::listing;
use crate::manip::Level;
use crate::state::AppState;

/// Body of `POST /api/episodes`.
#[derive(Debug, Deserialize)]
pub struct NewEpisode {
    pub task_id: String,
    #[serde(default = "default_level")]
    pub level: String,
    #[serde(default = "default_condition")]
    pub condition: String,
    /// An L1 style or an L3 form; drawn from the seed when absent.
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub seed: i64,
}

fn default_level() -> String {
    Level::L0.as_str().to_string()
}
fn default_condition() -> String {
    "raw".to_string()
}

/// What an outside agent gets when an episode starts.
#[derive(Debug, Serialize, Deserialize)]
pub struct StartedEpisode {
    pub episode_id: String,
    pub task_id: String,
    pub level: String,
    /// The manipulation strategy the episode shows (levels above L0).
    pub strategy: Option<String>,
    pub seed: i64,
    pub condition: String,
    pub ticket: String,
    /// Where to begin, under the episode prefix.
    pub start_url: String,
    pub verdict_url: String,
    pub actions: Vec<String>,
}

/// An episode with its action log.
#[derive(Debug, Serialize, Deserialize)]
pub struct EpisodeLog {
    #[serde(flatten)]
    pub episode: Episode,
    pub events: Vec<EpisodeEvent>,
}

/// `POST /api/episodes`.
///
/// Each client (peer address) may create `[server] episodes_per_minute` episodes a minute
/// (120 by default), so the open agent API cannot fill the disk; beyond that it gets 429.
pub async fn start(
    State(state): State<AppState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    Json(req): Json<NewEpisode>,
) -> Result<Response, HttpError> {
    let client = crate::state::client_key(peer.map(|p| p.0.0));
    let budget = state.config.server.episodes_per_minute;
    if !state.guard.allow_episode(&client, budget) {
        return Err(HttpError::TooMany(format!(
            "client {client} created {budget} episodes in the last minute (the [server] episodes_per_minute setting); try again later"
        )));
    }
    let task =
        state.world.task(&req.task_id).ok_or_else(|| HttpError::NotFound(format!("task {} not found", req.task_id)))?;
    if req.level == Level::L4.as_str() {
        return Err(HttpError::Invalid(
            "level: L4 is searched against an agent run by Mirage; episodes serve L0-L3".into(),
        ));
    }
    let strategy = crate::manip::strategy_for(task, &req.level, req.strategy.as_deref(), req.seed)
        .map_err(|e| HttpError::Invalid(format!("level/strategy: {e:#}")))?;
    let ticket = task.ticket.for_condition(&req.condition).ok_or_else(|| {
        HttpError::Invalid(format!("condition: {:?} is not one of {}", req.condition, CONDITIONS.join(", ")))
    })?;
    let ep = state.store.create_episode(&task.id, &req.level, &req.condition, strategy.as_deref(), req.seed).await?;
    let started = StartedEpisode {
        start_url: format!("/ep/{}{}", ep.episode_id, task.start_url),
        verdict_url: format!("/ep/{}/verdict", ep.episode_id),
        episode_id: ep.episode_id,
        task_id: task.id.clone(),
        level: ep.level,
        strategy: ep.strategy,
        seed: ep.seed,
        condition: ep.condition,
        ticket: ticket.to_string(),
        actions: task.domain.actions().iter().map(|a| (*a).to_string()).collect(),
    };
    Ok((StatusCode::CREATED, Json(started)).into_response())
}

/// `GET /api/episodes/<id>`.
pub async fn show(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<EpisodeLog>, HttpError> {
    let episode = state.store.episode(&id).await?;
    let events = state.store.episode_events(&id).await?;
    Ok(Json(EpisodeLog { episode, events }))
}

/// A verdict, from the site form (urlencoded) or a JSON client.
#[derive(Debug, Deserialize)]
pub struct VerdictForm {
    pub action: String,
    #[serde(default)]
    pub rationale: String,
}

/// `POST /ep/<id>/verdict`: records the verdict and closes the episode. The verdict is
/// final: a second one answers 409 and changes nothing.
pub async fn verdict(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, HttpError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let parsed: Result<VerdictForm, String> = if json {
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    } else {
        serde_urlencoded::from_bytes(&body).map_err(|e| e.to_string())
    };
    let form = parsed.map_err(|e| HttpError::Invalid(format!("body: {e}")))?;
    let episode = state.store.episode(&id).await?;
    let task = state
        .world
        .task(&episode.task_id)
        .ok_or_else(|| HttpError::NotFound("the episode's task is no longer stored".into()))?;
    let action = task.domain.action(&form.action).ok_or_else(|| {
        HttpError::Invalid(format!(
            "action: {:?} is not a {} action; use one of {}",
            form.action,
            task.domain.as_str(),
            task.domain.actions().join(", ")
        ))
    })?;
    if form.rationale.trim().is_empty() {
        return Err(HttpError::Invalid("rationale: a verdict needs a rationale".into()));
    }
    if !state.store.finish_episode(&id, action, &form.rationale).await? {
        return Err(HttpError::Conflict("this episode already has a verdict".into()));
    }
    let detail = serde_json::json!({ "action": action, "rationale": form.rationale }).to_string();
    state.store.append_event(&id, "verdict", None, Some(&detail)).await?;
    if json {
        return Ok(Json(serde_json::json!({ "episode_id": id, "verdict": action, "status": "done" })).into_response());
    }
    let closed = Episode { status: "done".to_string(), ..episode };
    let chrome = super::sites::chrome(&closed, task.domain);
    let path = format!("/ep/{id}/verdict");
    let intro = format!("Verdict {action} recorded with your rationale. The episode is closed.");
    Ok(super::sites::respond(listing(task.domain, &path, "Verdict recorded", &intro, vec![], Some(chrome), 200), false))
}
