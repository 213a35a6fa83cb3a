//! The episode API for outside agents: start an episode on a task, read its log, and end
//! it with a verdict (from a JSON client or the site's own verdict form).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::HttpError;
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
    vocab::Condition::Raw.as_str().to_string()
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
    /// Where one action of the agent protocol is posted as JSON (the reply of a model).
    pub act_url: String,
    pub actions: Vec<String>,
    /// The run's trial this episode carries out (episodes handed out by a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Seconds the episode holds its trial without a request (episodes handed out by a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_secs: Option<i64>,
}

impl StartedEpisode {
    fn new(episode: &crate::db::Episode, task: &crate::corpus::Task, ticket: &str) -> StartedEpisode {
        let id = &episode.episode_id;
        StartedEpisode {
            episode_id: id.clone(),
            task_id: task.id.clone(),
            level: episode.level.clone(),
            strategy: episode.strategy.clone(),
            seed: episode.seed,
            condition: episode.condition.clone(),
            ticket: ticket.to_string(),
            start_url: format!("/ep/{id}{}", task.start_url),
            verdict_url: format!("/ep/{id}/verdict"),
            act_url: format!("/ep/{id}/act"),
            actions: task.domain.actions().iter().map(|a| (*a).to_string()).collect(),
            trial_id: episode.trial_id.as_ref().map(ToString::to_string),
            run_id: None,
            lease_secs: None,
        }
    }
}

/// An episode with its action log.
#[derive(Debug, Serialize, Deserialize)]
pub struct EpisodeLog {
    #[serde(flatten)]
    pub episode: Episode,
    pub events: Vec<EpisodeEvent>,
}

/// Each client (peer address) may create `[server] episodes_per_minute` episodes a minute.
fn episode_budget(state: &AppState, peer: Option<std::net::SocketAddr>) -> Result<(), HttpError> {
    let client = crate::state::client_key(peer);
    let budget = state.config.server.episodes_per_minute;
    if !state.guard.allow_episode(&client, budget) {
        return Err(HttpError::TooMany(format!(
            "client {client} created {budget} episodes in the last minute (the [server] episodes_per_minute setting); try again later"
        )));
    }
    Ok(())
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
    episode_budget(&state, peer.map(|p| p.0.0))?;
    let task =
        state.world.task(&req.task_id).ok_or_else(|| HttpError::NotFound(format!("task {} not found", req.task_id)))?;
    if req.level == Level::L4.as_str() {
        return Err(HttpError::Invalid(
            "level: L4 is searched against an agent run by Mirage; episodes serve L0-L3".into(),
        ));
    }
    let strategy = crate::manip::strategy_for(task, &req.level, req.strategy.as_deref(), req.seed)
        .map_err(|e| HttpError::Invalid(format!("level/strategy: {e:#}")))?;
    let condition = vocab::Condition::parse(&req.condition)
        .map_err(|e| HttpError::Invalid(format!("condition: {:?} is not one of {}", e.name, e.known)))?;
    let ticket = task.ticket.get(condition);
    let ep =
        state.store.create_episode(&task.id, (&req.level, &req.condition), strategy.as_deref(), req.seed, None).await?;
    let started = StartedEpisode::new(&ep, task, ticket);
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

/// `POST /ep/<id>/verdict`: records the verdict and closes the episode (and ends the run's
/// trial it carries out). The verdict is final: a second one answers 409 and changes nothing.
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
    let (episode, task) = super::sites::open_episode(&state, &id).await?;
    let action = decide(&state, (&episode, &task), (&form.action, &form.rationale), None).await?;
    if json {
        return Ok(Json(decided(&id, action)).into_response());
    }
    Ok(super::sites::respond(closed_page(&episode, &task, action), false))
}

fn decided(id: &str, action: &str) -> serde_json::Value {
    serde_json::json!({ "episode_id": id, "verdict": action, "status": "done" })
}

/// The page that confirms a verdict.
fn closed_page(episode: &Episode, task: &crate::corpus::Task, action: &str) -> crate::env::site::Rendered {
    let closed = Episode { status: "done".to_string(), ..episode.clone() };
    let chrome = super::sites::chrome(&closed, task.domain);
    let path = format!("/ep/{}/verdict", episode.episode_id);
    let intro = format!("Verdict {action} recorded with your rationale. The episode is closed.");
    listing(task.domain, &path, "Verdict recorded", &intro, vec![], Some(chrome), 200)
}

/// Checks and records a verdict: the episode closes, and the trial it carries out (if any)
/// ends with the episode's pages as its steps. Returns the verdict in its canonical name.
async fn decide(
    state: &AppState,
    (episode, task): (&Episode, &crate::corpus::Task),
    (action, rationale): (&str, &str),
    thought: Option<&str>,
) -> Result<&'static str, HttpError> {
    let id = &episode.episode_id;
    let action = task.domain.action(action).ok_or_else(|| {
        HttpError::Invalid(format!(
            "action: {action:?} is not a {} action; use one of {}",
            task.domain.as_str(),
            task.domain.actions().join(", ")
        ))
    })?;
    if rationale.trim().is_empty() {
        return Err(HttpError::Invalid("rationale: a verdict needs a rationale".into()));
    }
    if episode.status != "open" {
        return Err(HttpError::Conflict("this episode already has a verdict".into()));
    }
    let ended =
        crate::runs::external::finish(state.store.as_ref(), &state.world, episode, (action, rationale), thought)
            .await
            .map_err(|e| HttpError::failed("ending the episode's trial", e))?;
    if !ended {
        return Err(HttpError::Gone(format!(
            "episode {id} no longer holds its trial (idle past its lease, or the run was cancelled); the verdict was not recorded"
        )));
    }
    if !state.store.finish_episode(id, action, rationale).await? {
        return Err(HttpError::Conflict("this episode already has a verdict".into()));
    }
    let detail = serde_json::json!({ "action": action, "rationale": rationale }).to_string();
    let event = crate::db::NewEvent { kind: "verdict", detail: Some(&detail), thought, ..Default::default() };
    // The verdict is always logged, past the cap too.
    state.store.append_event(id, event, i64::MAX).await?;
    Ok(action)
}

/// `POST /ep/<id>/act`: one action of the agent protocol, as a model replies it
/// (`{"thought": …, "action": {"type": …, …}}`). A move answers with the text of the page it
/// leads to (with that page's status), a verdict with the JSON of `POST /ep/<id>/verdict`.
/// An action the page cannot take (a link number it does not show, `back` on the first page,
/// a search outside the wiki) is refused with 422 and costs no page.
pub async fn act(
    State(state): State<AppState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, HttpError> {
    use super::sites::Visit;
    use crate::agent::Action;

    super::sites::page_budget(&state, peer.map(|p| p.0.0))?;
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| HttpError::Invalid(format!("body: not JSON: {e}")))?;
    let (thought, action) =
        crate::agent::protocol::read_action(&value).map_err(|e| HttpError::Invalid(format!("action: {e}")))?;
    let (episode, task) = super::sites::open_episode(&state, &id).await?;
    if let Action::Verdict { verdict, rationale } = &action {
        let action = decide(&state, (&episode, &task), (verdict, rationale), Some(&thought)).await?;
        return Ok(Json(decided(&id, action)).into_response());
    }
    if episode.status != "open" {
        return Err(HttpError::Conflict("this episode already has a verdict".into()));
    }
    let events = state.store.episode_events(&id).await?;
    let (pages, trail) = crate::runs::external::visits(&events);
    let here = trail.last().map(|i| &pages[*i]);
    let (here_path, here_pattern) =
        here.map_or((task.start_url.as_str(), None), |v| (v.path.as_str(), v.pattern.as_deref()));
    let target: (&str, String, Option<String>) = match &action {
        Action::Click { link } => {
            let page = crate::runs::external::page(&state.world, &task, &episode, here_path, here_pattern)
                .map_err(|e| HttpError::failed("rendering an episode's page", e))?;
            let Some((_, url)) = link.checked_sub(1).and_then(|i| page.links.get(i)) else {
                return Err(HttpError::Invalid(format!(
                    "action: there is no link number {link} on the current page ({here_path}, {} links); nothing was visited",
                    page.links.len()
                )));
            };
            ("visit", url.clone(), None)
        }
        Action::Goto { url } => ("visit", site_path(url, &id), None),
        Action::Search { query } if task.domain == crate::corpus::Domain::Wiki => {
            ("search", "/wiki/search".to_string(), Some(query.clone()))
        }
        Action::Search { .. } => {
            return Err(HttpError::Invalid("action: this site has no search; nothing was visited".into()));
        }
        Action::Back => match trail.len().checked_sub(2).map(|i| &pages[trail[i]]) {
            Some(before) => ("back", before.path.clone(), before.pattern.clone()),
            None => return Err(HttpError::Invalid("action: there is no previous page; nothing was visited".into())),
        },
        Action::Verdict { .. } | Action::Tool { .. } | Action::Answer { .. } => {
            return Err(HttpError::Invalid("action: use click, goto, search, back or verdict".into()));
        }
    };
    let (kind, path, pattern) = target;
    let to = Visit { kind, path: &path, pattern: pattern.as_deref() };
    let rendered = super::sites::visit(&state, (&episode, &task), to, Some((&thought, &action))).await?;
    Ok(super::sites::respond(rendered, true))
}

/// The site path of an address an agent wrote: the episode's prefix and a web URL's scheme
/// and host taken off (the path is kept as written otherwise).
fn site_path(url: &str, episode: &str) -> String {
    let url = url.trim();
    let path = match url::Url::parse(url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
            let mut p = u.path().to_string();
            if let Some(q) = u.query() {
                p = format!("{p}?{q}");
            }
            p
        }
        _ => url.to_string(),
    };
    let prefix = format!("/ep/{episode}");
    match path.strip_prefix(&prefix) {
        Some(rest) if rest.starts_with('/') => rest.to_string(),
        _ => path,
    }
}

/// `POST /api/runs/<run>/episodes`: hands out the run's next queued trial of an outside
/// agent as an episode (the JSON of `POST /api/episodes` with `trial_id`, `run_id` and
/// `lease_secs`); 204 when the run has none left, queued or running; 503 with Retry-After
/// when some remain but none can be handed out now (waiting out a backoff after a lost
/// lease, or held by other episodes that may still lose them).
pub async fn from_run(
    State(state): State<AppState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    Path(run): Path<String>,
) -> Result<Response, HttpError> {
    episode_budget(&state, peer.map(|p| p.0.0))?;
    let run_id = app::model::RunId::from(run);
    let handed = crate::runs::external::hand_out(state.store.as_ref(), &state.world, &run_id)
        .await
        .map_err(|e| HttpError::failed("handing out an episode", e))?;
    let handed = match handed {
        crate::runs::external::HandOut::Episode(h) => h,
        crate::runs::external::HandOut::Finished => return Ok(StatusCode::NO_CONTENT.into_response()),
        crate::runs::external::HandOut::Wait => {
            let body = serde_json::json!({
                "error": "trials of outside agents remain, but none can be handed out now (a backoff after a lost lease, or held by other episodes); ask again later",
                "retry_after": RETRY_AFTER_SECS,
            });
            return Ok((
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
                Json(body),
            )
                .into_response());
        }
    };
    let task = state
        .world
        .task(&handed.trial.task_id)
        .ok_or_else(|| HttpError::NotFound("the trial's task is no longer stored".into()))?;
    let ticket = task.ticket.for_condition(handed.trial.condition.as_str()).unwrap_or_default();
    let mut started = StartedEpisode::new(&handed.episode, task, ticket);
    started.run_id = Some(run_id.to_string());
    started.lease_secs = Some(handed.lease_secs);
    Ok((StatusCode::CREATED, Json(started)).into_response())
}

/// Seconds a client is asked to wait when a run has trials left but none to hand out now.
const RETRY_AFTER_SECS: u64 = 2;

/// Query of `GET /api/episodes/<id>/trajectory`.
#[derive(Debug, Deserialize)]
pub struct TrajectoryQuery {
    /// The agent name the line carries (default `episode`).
    pub agent: Option<String>,
}

/// `GET /api/episodes/<id>/trajectory`: a finished episode as one trajectory line, as
/// `mirage score` reads it and `mirage runs import` stores it.
pub async fn trajectory(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<TrajectoryQuery>,
) -> Result<Response, HttpError> {
    let episode = state.store.episode(&id).await?;
    let (Some(verdict), Some(rationale)) = (episode.verdict.as_deref(), episode.rationale.as_deref()) else {
        return Err(HttpError::Conflict(format!("episode {id} has no verdict yet; a trajectory ends with one")));
    };
    let task = state
        .world
        .task(&episode.task_id)
        .ok_or_else(|| HttpError::NotFound("the episode's task is no longer stored".into()))?;
    let events = state.store.episode_events(&id).await?;
    let steps = crate::runs::external::steps_of(&state.world, task, &episode, &events, (verdict, rationale))
        .map_err(|e| HttpError::failed("reading an episode's steps", e))?;
    let line = serde_json::json!({
        "trial_id": format!("episode-{id}"),
        "task_id": episode.task_id,
        "agent": query.agent.unwrap_or_else(|| "episode".to_string()),
        "level": episode.level,
        "condition": episode.condition,
        "seed": episode.seed,
        "steps": steps,
        "verdict": {"action": verdict, "rationale": rationale},
        "status": "done",
    });
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], format!("{line}\n")).into_response())
}
