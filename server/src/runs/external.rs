//! Runs for outside agents: an agent named `external:NAME` drives the sites over HTTP.
//!
//! Its trials are planned like any agent's (tasks × levels × conditions × seeds, clean twins
//! added) but nothing in Mirage executes them: `POST /api/runs/<run>/episodes` hands the next
//! queued one out as an episode, under a lease that each request of the episode renews. The
//! episode's action log becomes the trial's steps when its verdict arrives, and the trial is
//! then finished, stored and scored like any other. An episode left idle past its lease gives
//! its trial back to the queue; after [`crate::db::runs::MAX_ATTEMPTS`] such losses the trial
//! ends in error, a failure that counts.

use anyhow::{Context, bail};

use super::{RunKind, RunSpec};
use crate::agent::{Action, Step};
use crate::corpus::Task;
use crate::corpus::urls::normalise;
use crate::db::{Claim, Episode, EpisodeEvent, RunStatus, Store, StoreError, TrialEnd, TrialRow, now_ms};
use crate::env::World;
use crate::env::render::EpisodeChrome;
use crate::env::site::{Rendered, domain_of, listing, render_path};
use crate::manip::Level;
use vocab::RunId;

/// The prefix of an outside agent's configuration name.
pub const PREFIX: &str = "external:";

/// How long an episode holds its trial without a request, unless the run says otherwise.
pub const DEFAULT_LEASE_SECS: u64 = 30 * 60;

/// Whether a configuration is an outside agent's.
pub fn is_external(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The lease of a run's episodes, in milliseconds.
pub fn lease_ms(spec: &RunSpec) -> i64 {
    let secs = spec.episode_lease_secs.unwrap_or(DEFAULT_LEASE_SECS).max(1);
    i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX)
}

/// Checks an outside agent's configuration against the run that plans it.
pub fn check(name: &str, spec: &RunSpec) -> anyhow::Result<()> {
    let own = &name[PREFIX.len()..];
    if own.is_empty() || !own.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        bail!("agent: {name:?}: an outside agent is named external:NAME, NAME of letters, digits, '.', '_' and '-'");
    }
    if let Some(level) = spec.levels.iter().find(|l| l.as_str() == Level::L4.as_str()) {
        bail!("agent: {name} cannot be run at {level}: L4 searches against an agent that Mirage runs itself");
    }
    let written = spec.levels.iter().any(|l| matches!(Level::parse(l), Ok(Level::L1 | Level::L2)));
    if spec.attacker.is_some() && written {
        bail!(
            "agent: {name} reads the built-in writers' L1/L2 texts, not the attacker endpoint's; launch it without \
             roles.attacker, or in a run of its own"
        );
    }
    if spec.appeal {
        bail!("agent: {name} cannot take appeals: the episode API ends a trial at its verdict");
    }
    Ok(())
}

/// An episode handed out from a run, with the trial it carries out.
pub struct HandedOut {
    pub episode: Episode,
    pub trial: TrialRow,
    pub lease_secs: i64,
}

/// What a request for an episode gets.
pub enum HandOut {
    Episode(Box<HandedOut>),
    /// Trials of outside agents remain, but none can be handed out now: queued ones wait out
    /// their backoff after a lost lease, or other episodes hold them (and may yet lose them).
    Wait,
    /// No trial of an outside agent is queued or running: nothing more will be handed out.
    Finished,
}

/// Hands out the run's next queued trial of an outside agent as an episode: expired leases
/// go back to the queue first. A run with nothing left at all is marked done.
pub async fn hand_out(store: &dyn Store, world: &World, run_id: &RunId) -> anyhow::Result<HandOut> {
    let run = store.run(run_id).await?;
    if run.status != RunStatus::Active {
        return Ok(HandOut::Finished);
    }
    // Only agent runs hand out episodes (a GEO run's rankers and an import's trials never).
    let RunKind::Agent(spec) = RunKind::of(&run)? else { return Ok(HandOut::Finished) };
    store.requeue_expired(run_id, now_ms()).await?;
    let lease = lease_ms(&spec);
    // The trial is claimed under the episode's name, so that the episode's requests renew it.
    let episode_id = uuid::Uuid::new_v4().simple().to_string();
    let holder = format!("episode:{episode_id}");
    let Some(trial) = store.claim_trial_of(run_id, &holder, now_ms() + lease, Claim::External).await? else {
        super::close_finished(store, run_id).await;
        return Ok(if store.progress(run_id).await?.outside > 0 { HandOut::Wait } else { HandOut::Finished });
    };
    let task = world.task(&trial.task_id).with_context(|| format!("task {} is no longer stored", trial.task_id))?;
    let strategy = crate::manip::strategy_for(task, trial.level.as_str(), spec.strategy.as_deref(), trial.seed)?;
    let episode = store
        .create_episode(
            &trial.task_id,
            (trial.level.as_str(), trial.condition.as_str()),
            strategy.as_deref(),
            trial.seed,
            Some((&episode_id, &trial.trial_id)),
        )
        .await?;
    Ok(HandOut::Episode(Box::new(HandedOut { episode, trial, lease_secs: lease / 1000 })))
}

/// Renews the lease of the trial an episode carries out. `false` when the episode no longer
/// holds it (the lease expired and the trial went back to the queue, or the run was cancelled).
pub async fn renew(store: &dyn Store, episode: &Episode) -> anyhow::Result<bool> {
    let Some(trial_id) = &episode.trial_id else { return Ok(true) };
    let trial = store.trial(trial_id).await.map_err(StoreError::dangling)?;
    // A lease that ran out is given back first, so a late request cannot revive it.
    store.requeue_expired(&trial.run_id, now_ms()).await?;
    let run = store.run(&trial.run_id).await.map_err(StoreError::dangling)?;
    let spec = RunKind::of(&run)?.into_agent(&run.run_id)?;
    Ok(store.heartbeat(trial_id, &episode.holder(), now_ms() + lease_ms(&spec)).await?)
}

/// The page of an episode at `path` (with search words), as served over HTTP: the task's
/// site with the episode's manipulated texts and verdict tools; another site's address is a
/// 404 in the task's chrome.
pub fn page(
    world: &World,
    task: &Task,
    episode: &Episode,
    path: &str,
    pattern: Option<&str>,
) -> anyhow::Result<Rendered> {
    let overlay = crate::manip::overlay_for(task, &episode.level, episode.strategy.as_deref(), episode.seed)
        .context("building the episode's manipulation")?;
    let chrome = EpisodeChrome {
        id: &episode.episode_id,
        actions: task.domain.actions(),
        closed: episode.status != "open",
        overlay: Some(&overlay),
        over_http: true,
    };
    Ok(if domain_of(path) == Some(task.domain) {
        render_path(world, path, pattern, Some(chrome))
    } else {
        let intro = "This address is outside the site of this episode.";
        listing(task.domain, path, "Page not found", intro, vec![], Some(chrome), 404)
    })
}

/// A page the agent was on, read back from the action log.
#[derive(Clone, Debug, PartialEq)]
pub struct Visit {
    pub path: String,
    pub pattern: Option<String>,
    pub status: u16,
    pub thought: Option<String>,
    /// The action (as posted to `act`) that led here.
    pub action: Option<Action>,
}

/// The pages of an action log in order, and the trail `back` walks: a visit or a search
/// adds a page, `back` returns to the one before.
pub fn visits(events: &[EpisodeEvent]) -> (Vec<Visit>, Vec<usize>) {
    let (mut pages, mut trail): (Vec<Visit>, Vec<usize>) = (Vec::new(), Vec::new());
    for e in events {
        let Some(url) = e.url.as_deref() else { continue };
        let detail = e.detail.as_deref().unwrap_or_default();
        let (status, rest) = detail.split_once(' ').unwrap_or((detail, ""));
        let visit = Visit {
            path: url.to_string(),
            pattern: (e.kind == "search").then(|| rest.to_string()),
            status: status.parse().unwrap_or(200),
            thought: e.thought.clone(),
            action: e.action.as_deref().and_then(|a| serde_json::from_str(a).ok()),
        };
        match e.kind.as_str() {
            "visit" | "search" => {
                pages.push(visit);
                trail.push(pages.len() - 1);
            }
            "back" => {
                trail.pop();
                pages.push(visit);
            }
            _ => {}
        }
    }
    (pages, trail)
}

/// The trial's steps from an episode's action log: step t is the t-th page the agent was on
/// (the start page when it opened none), its action what took it to the next page, and the
/// last step's action the verdict.
pub fn steps_of(
    world: &World,
    task: &Task,
    episode: &Episode,
    events: &[EpisodeEvent],
    (verdict, rationale): (&str, &str),
) -> anyhow::Result<Vec<Step>> {
    let (mut pages, _) = visits(events);
    if pages.is_empty() {
        pages.push(Visit { path: task.start_url.clone(), pattern: None, status: 200, thought: None, action: None });
    }
    let mut steps = Vec::with_capacity(pages.len());
    for (t, visit) in pages.iter().enumerate() {
        let rendered = page(world, task, episode, &visit.path, visit.pattern.as_deref())?;
        let action = match pages.get(t + 1) {
            Some(next) => next.action.clone().unwrap_or_else(|| match &next.pattern {
                Some(query) => Action::Search { query: query.clone() },
                None => Action::Goto { url: next.path.clone() },
            }),
            None => Action::Verdict { verdict: verdict.to_string(), rationale: rationale.to_string() },
        };
        // A step's thought is the one posted with its action (which arrived with the next page).
        let thought = pages.get(t + 1).and_then(|n| n.thought.clone()).unwrap_or_default();
        steps.push(Step {
            t,
            url: normalise(&visit.path),
            status: Some(visit.status),
            observation: rendered.text,
            thought,
            action,
            usage: None,
            latency_ms: 0,
            spans: rendered.spans,
        });
    }
    Ok(steps)
}

/// Ends the trial an episode carries out with the episode's verdict: its steps are stored
/// and the trial finished under the episode's lease. `false` when the episode no longer
/// holds the trial (nothing is written then).
pub async fn finish(
    store: &dyn Store,
    world: &World,
    episode: &Episode,
    (verdict, rationale): (&str, &str),
    thought: Option<&str>,
) -> anyhow::Result<bool> {
    let Some(trial_id) = &episode.trial_id else { return Ok(true) };
    store.requeue_expired(&store.trial(trial_id).await.map_err(StoreError::dangling)?.run_id, now_ms()).await?;
    let trial = store.trial(trial_id).await.map_err(StoreError::dangling)?;
    if trial.worker.as_deref() != Some(episode.holder().as_str()) || trial.state != crate::db::TrialState::Running {
        return Ok(false);
    }
    let task = world.task(&trial.task_id).with_context(|| format!("task {} is no longer stored", trial.task_id))?;
    let events = store.episode_events(&episode.episode_id).await?;
    let mut steps = steps_of(world, task, episode, &events, (verdict, rationale))?;
    if let (Some(last), Some(thought)) = (steps.last_mut(), thought) {
        last.thought = thought.to_string();
    }
    let bodies = steps.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
    let end =
        TrialEnd::Done { verdict: Some(verdict.to_string()), rationale: Some(rationale.to_string()), appeal: None };
    let finished = store.finish_with_steps(trial_id, &episode.holder(), &bodies, &end).await?;
    if finished {
        super::close_finished(store, &trial.run_id).await;
    }
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, url: &str, detail: &str) -> EpisodeEvent {
        EpisodeEvent {
            seq: 0,
            kind: kind.into(),
            url: Some(url.into()),
            detail: Some(detail.into()),
            created_at: 0,
            thought: None,
            action: None,
        }
    }

    #[test]
    fn the_log_reads_back_as_pages_and_a_trail() {
        let events = [
            event("visit", "/a", "200"),
            event("visit", "/b", "404"),
            event("back", "/a", "200"),
            event("search", "/wiki/search", "200 bridge fine"),
        ];
        let (pages, trail) = visits(&events);
        assert_eq!(pages.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(), ["/a", "/b", "/a", "/wiki/search"]);
        assert_eq!(pages[1].status, 404);
        assert_eq!(pages[3].pattern.as_deref(), Some("bridge fine"));
        assert_eq!(trail, [0, 3]);
    }

    #[test]
    fn names_and_designs_an_outside_agent_cannot_take_are_refused() {
        let spec = RunSpec::basic("all", &["external:mine"], &["L0", "L1"], &["raw"], vec![0]);
        assert!(check("external:mine", &spec).is_ok());
        assert!(check("external:", &spec).is_err());
        assert!(check("external:a b", &spec).is_err());
        assert!(check("external:a+keyword", &spec).is_err());
        let l4 = RunSpec { levels: vec!["L4".into()], ..spec.clone() };
        assert!(check("external:mine", &l4).expect_err("L4").to_string().contains("L4"));
        let appeal = RunSpec { appeal: true, ..spec };
        assert!(check("external:mine", &appeal).is_err());
    }
}
