//! Runs: a run is tasks × agents × levels × conditions × seeds, planned into trials in
//! the database and executed from a durable queue by a pool of workers.
//!
//! A worker claims a trial with a lease in one short statement, keeps the lease alive with
//! a heartbeat, persists every step before the next, and finalises idempotently. Nothing is
//! held open across an agent call, so several processes (later: `mirage worker` against
//! PostgreSQL) can share one queue, and a killed process loses at most the step in flight.

pub mod adaptive;
mod cost;
pub mod export;
pub mod external;
pub mod geo;
pub mod harness;
pub mod import;
mod kind;
mod pool;
pub mod power;
pub mod replay;
pub(crate) mod scoring;

pub use cost::{cost_rows, pricing, replay_use};
pub use kind::{GeoRun, ImportedRun, RunKind, Unreadable, agent_runs, runs_of_kind};

pub use pool::{OnFinish, PoolOptions, execute, execute_with};

use std::sync::Arc;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::agent::Agent;
use crate::agent::baselines::{Explorer, Oracle, Surface};
use crate::agent::llm::{LlmAgent, PROMPT_VERSION};
use crate::agent::protocol::PROTOCOL_VERSION;
use crate::corpus::{Domain, Task};
use crate::db::{NewTrial, Store, now_ms};
use crate::env::World;
use crate::llm::{EndpointSpec, HttpLlm};
use crate::manip::Level;
use vocab::RunId;

/// What a run covers. Stored as JSON on the run row, one shape for every kind of run; read
/// a stored one through [`RunKind`], which takes the kind's own part (`origin`, `geo`) out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// `all`, a site (`shop`), a category (`WARDROBING`) or comma-separated task ids.
    pub tasks: String,
    pub agents: Vec<String>,
    pub levels: Vec<String>,
    pub conditions: Vec<String>,
    pub seeds: Vec<i64>,
    /// Model endpoints by agent name (no keys: only the names of the variables holding them).
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointSpec>,
    /// Put an appeal to the agent after its verdict (deceptive after a right verdict,
    /// helpful after a wrong one) and record whether it keeps, reverses or partly reverses.
    #[serde(default)]
    pub appeal: bool,
    /// The manipulation strategy for levels that have several (an L1 style, an L3 form);
    /// without one each trial draws its own from its seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Shape and budget of L4 searches.
    #[serde(default)]
    pub tap: crate::manip::adaptive::TapOptions,
    /// The attacker/rewriter endpoint (the config's `roles.attacker`): L1/L2 texts and L4
    /// proposals come from it when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker: Option<EndpointSpec>,
    /// The judge endpoint (the config's `roles.judge`), for `+judge` defended configurations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<EndpointSpec>,
    /// The model agents' system prompt version, stamped when the run is created. Runs from
    /// before the field existed used version 1.
    #[serde(default = "first_prompt")]
    pub agent_prompt: String,
    /// The agent protocol's version (the action grammar of pages, prompt, schema and episode
    /// API), stamped when the run is created. Runs from before the field used version 0.
    #[serde(default = "first_protocol")]
    pub agent_protocol: String,
    /// Where a stored run's trials came from when Mirage did not run them: `imported:FORMAT`
    /// (`mirage runs import`). `None` for a planned run. Written only: [`RunKind::Imported`]
    /// holds it once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// How long an outside agent's episode holds its trial without a request, in seconds
    /// (default [`external::DEFAULT_LEASE_SECS`]); past it the trial goes back to the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_lease_secs: Option<u64>,
    /// A GEO ranking run: its trials rank lists of items instead of running agents through
    /// tasks. Written only: [`RunKind::Geo`] holds it once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo: Option<crate::geo::plan::GeoSpec>,
    /// Replays of every exposed trial, made after the run (see [`replay::replay_exposed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay: Vec<replay::ReplayPlan>,
    /// Trials the planner added at L0 so that every manipulated trial has its clean twin.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clean_twins: usize,
    /// How many annotators must agree before a disputed label overrides the automatic one
    /// (an operator's adjudication settles it whatever the count).
    #[serde(default = "default_annotators")]
    pub annotators: usize,
    /// Trials at once when the run was launched from the dashboard, so a restarted server
    /// resumes it at the same pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
}

fn default_annotators() -> usize {
    crate::judge::aggregate::DEFAULT_ANNOTATORS
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn first_prompt() -> String {
    "agent-prompt-1".to_string()
}

fn first_protocol() -> String {
    "agent-protocol-0".to_string()
}

impl RunSpec {
    /// Whether the run has manipulated levels (its trials need the world's perplexity
    /// filter; a hint: a trial at a level the spec does not name still gets it).
    pub fn manipulates(&self) -> bool {
        self.levels.iter().any(|l| !vocab::Level::is_clean(l))
    }

    /// A spec with these tasks, configurations, levels, conditions and seeds, and nothing
    /// else (no endpoints, appeal, strategy, attacker or judge; the default L4 search).
    pub fn basic(tasks: &str, agents: &[&str], levels: &[&str], conditions: &[&str], seeds: Vec<i64>) -> RunSpec {
        let own = |xs: &[&str]| xs.iter().map(ToString::to_string).collect();
        RunSpec {
            tasks: tasks.to_string(),
            agents: own(agents),
            levels: own(levels),
            conditions: own(conditions),
            seeds,
            endpoints: BTreeMap::new(),
            appeal: false,
            strategy: None,
            tap: crate::manip::adaptive::TapOptions::default(),
            attacker: None,
            judge: None,
            agent_prompt: PROMPT_VERSION.to_string(),
            agent_protocol: PROTOCOL_VERSION.to_string(),
            episode_lease_secs: None,
            origin: None,
            geo: None,
            replay: Vec::new(),
            clean_twins: 0,
            annotators: default_annotators(),
            concurrency: None,
        }
    }

    /// The levels the run plans: its own, with L0 first when it asks for manipulated levels
    /// without the clean one (every manipulated trial needs its clean twin).
    pub fn planned_levels(&self) -> Vec<String> {
        let mut levels = self.levels.clone();
        if vocab::level::needs_clean_twins(&levels) {
            levels.insert(0, Level::L0.as_str().to_string());
        }
        levels
    }
}

/// The configured endpoints the named configurations run on (`grader+keyword` runs on the
/// endpoint `grader`); baselines need none.
pub fn configured_endpoints(
    agents: &[String],
    configured: &BTreeMap<String, EndpointSpec>,
) -> anyhow::Result<BTreeMap<String, EndpointSpec>> {
    let mut out = BTreeMap::new();
    for agent in agents {
        let (base, _) = split_config(agent)?;
        if let Some(spec) = configured.get(base) {
            out.insert(base.to_string(), spec.clone());
        }
    }
    Ok(out)
}

/// A fresh run id.
pub fn new_run_id() -> RunId {
    format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]).into()
}

/// The agents this version can run.
pub const BASELINES: [&str; 4] = ["surface", "explorer", "oracle", "credulous"];

/// Splits a configuration name into the agent and its defense: `explorer+keyword` is the
/// explorer behind the keyword filter.
pub fn split_config(name: &str) -> anyhow::Result<(&str, Option<&str>)> {
    match name.rsplit_once('+') {
        Some((agent, defense)) if crate::detect::DEFENSES.contains(&defense) => Ok((agent, Some(defense))),
        Some((_, defense)) => bail!(
            "agent: {name:?} names the defense {defense:?}, which is not one of {}",
            crate::detect::DEFENSES.join(", ")
        ),
        None => Ok((name, None)),
    }
}

/// Builds the agent for a configuration name: a baseline, or a model endpoint of the spec
/// (a `+defense` suffix is handled by the caller; see [`split_config`]).
pub fn agent_for(name: &str, endpoints: &BTreeMap<String, EndpointSpec>) -> anyhow::Result<Arc<dyn Agent>> {
    if external::is_external(name) {
        bail!("agent: {name} is an outside agent; its trials are handed out as episodes over HTTP, not run here");
    }
    let (name, _) = split_config(name)?;
    Ok(match name {
        "surface" => Arc::new(Surface),
        "explorer" => Arc::new(Explorer),
        "oracle" => Arc::new(Oracle),
        "credulous" => Arc::new(crate::agent::credulous::Credulous),
        other => match endpoints.get(other) {
            Some(spec) => {
                let client = HttpLlm::new(spec.clone()).with_context(|| format!("agent {other}"))?;
                Arc::new(LlmAgent::new(other, Arc::new(client)).with_setup(spec))
            }
            None => bail!(
                "agent: {other:?} is neither a baseline ({}) nor a configured model endpoint",
                BASELINES.join(", ")
            ),
        },
    })
}

/// The part of a run spec a planning error is about: the launch form's field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum SpecField {
    Tasks,
    Agents,
    Levels,
    Conditions,
    Seeds,
}

/// Why a spec cannot be planned, and which field is at fault.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct PlanError {
    pub field: SpecField,
    pub message: String,
}

impl PlanError {
    fn new(field: SpecField, message: impl std::fmt::Display) -> PlanError {
        PlanError { field, message: message.to_string() }
    }
}

/// The tasks a filter selects, in corpus order. An unknown filter is an error naming it.
pub fn select_tasks<'w>(world: &'w World, filter: &str) -> Result<Vec<&'w Arc<Task>>, PlanError> {
    let filter = filter.trim();
    if filter == "all" {
        return Ok(world.tasks().collect());
    }
    if let Some(domain) = Domain::parse(filter) {
        return Ok(world.tasks().filter(|t| t.domain == domain).collect());
    }
    let by_category: Vec<_> = world.tasks().filter(|t| t.category == filter).collect();
    if !by_category.is_empty() {
        return Ok(by_category);
    }
    let mut out = Vec::new();
    for id in filter.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match world.task(id) {
            Some(t) => out.push(t),
            None => {
                return Err(PlanError::new(
                    SpecField::Tasks,
                    format!("tasks: {id:?} is neither `all`, a site, a category nor a task id"),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(PlanError::new(SpecField::Tasks, format!("tasks: the filter {filter:?} selects no task")));
    }
    Ok(out)
}

/// Checks a spec and expands it into trials (task-major, then agent, level, condition, seed).
pub fn plan(world: &World, spec: &RunSpec) -> Result<Vec<NewTrial>, PlanError> {
    for agent in &spec.agents {
        let agents = |e: anyhow::Error| PlanError::new(SpecField::Agents, format!("{e:#}"));
        if external::is_external(agent) {
            external::check(agent, spec).map_err(agents)?;
            continue;
        }
        agent_for(agent, &spec.endpoints).map_err(agents)?;
        if split_config(agent).map_err(agents)?.1 == Some("judge") && spec.judge.is_none() {
            return Err(PlanError::new(
                SpecField::Agents,
                format!(
                    "agent: {agent} reads pages through the judge filter, which needs a judge endpoint (roles.judge)"
                ),
            ));
        }
    }
    for level in &spec.levels {
        crate::manip::check(level, spec.strategy.as_deref())
            .map_err(|e| PlanError::new(SpecField::Levels, format!("levels: {e}")))?;
    }
    for condition in &spec.conditions {
        if let Err(e) = vocab::Condition::parse(condition) {
            return Err(PlanError::new(
                SpecField::Conditions,
                format!("conditions: {:?} is not one of {}", e.name, e.known),
            ));
        }
    }
    let missing = [
        (spec.agents.is_empty(), SpecField::Agents),
        (spec.levels.is_empty(), SpecField::Levels),
        (spec.conditions.is_empty(), SpecField::Conditions),
        (spec.seeds.is_empty(), SpecField::Seeds),
    ];
    if let Some((_, field)) = missing.iter().find(|(empty, _)| *empty) {
        return Err(PlanError::new(*field, "a run needs at least one agent, level, condition and seed"));
    }
    // A value listed twice would plan the same trial twice.
    let seeds: Vec<String> = spec.seeds.iter().map(ToString::to_string).collect();
    for (name, field, values) in [
        ("agent", SpecField::Agents, &spec.agents),
        ("level", SpecField::Levels, &spec.levels),
        ("condition", SpecField::Conditions, &spec.conditions),
        ("seed", SpecField::Seeds, &seeds),
    ] {
        if let Some((_, v)) = values.iter().enumerate().find(|(i, v)| values[..*i].contains(v)) {
            return Err(PlanError::new(field, format!("{name}s: {v} is listed twice")));
        }
    }
    let mut trials = Vec::new();
    let levels = spec.planned_levels();
    for task in select_tasks(world, &spec.tasks)? {
        for agent in &spec.agents {
            for level in &levels {
                for condition in &spec.conditions {
                    for seed in &spec.seeds {
                        trials.push(NewTrial {
                            task_id: task.id.clone(),
                            agent: agent.clone(),
                            level: level.into(),
                            condition: condition.into(),
                            seed: *seed,
                        });
                    }
                }
            }
        }
    }
    Ok(trials)
}

/// An agent configuration's setup in words: for a model, how many earlier pages stay whole
/// in its context, the most tokens per reply, the step budget and the temperature; for a
/// baseline, its step budget.
pub fn agent_setup(name: &str, endpoints: &BTreeMap<String, EndpointSpec>) -> String {
    if external::is_external(name) {
        return "outside agent: drives the sites over HTTP, one episode per trial; nothing of it runs in Mirage"
            .to_string();
    }
    let base = split_config(name).map_or(name, |(n, _)| n);
    match endpoints.get(base) {
        Some(e) => format!(
            "model {}: the current page and the {} before it whole in context, at most {} tokens per reply, {} steps, temperature {}",
            e.model, e.context_pages, e.max_tokens, e.step_budget, e.temperature
        ),
        None => format!("baseline: no model, {} steps", crate::agent::episode::BUDGET),
    }
}

/// How many trials of a spec that asks for appeals get none: those on wiki tasks (appeals
/// are put on forum and shop decisions only).
pub fn appeal_skips(world: &World, spec: &RunSpec) -> Result<usize, PlanError> {
    if !spec.appeal {
        return Ok(0);
    }
    let per_task = spec.agents.len() * spec.planned_levels().len() * spec.conditions.len() * spec.seeds.len();
    let wiki = select_tasks(world, &spec.tasks)?.iter().filter(|t| !crate::agent::appeal::appeals_in(t.domain)).count();
    Ok(wiki * per_task)
}

/// How many clean twins the planner adds to a spec (see [`RunSpec::planned_levels`]).
pub fn twins_added(world: &World, spec: &RunSpec) -> Result<usize, PlanError> {
    let added = spec.planned_levels().len() - spec.levels.len();
    if added == 0 {
        return Ok(0);
    }
    let tasks = select_tasks(world, &spec.tasks)?.len();
    Ok(tasks * spec.agents.len() * spec.conditions.len() * spec.seeds.len() * added)
}

/// Stores a planned run; returns its id.
pub async fn create_run(
    store: &dyn Store,
    world: &World,
    spec: &RunSpec,
    corpus_version: &str,
) -> anyhow::Result<RunId> {
    let trials = plan(world, spec)?;
    let run_id = new_run_id();
    let spec = RunSpec {
        agent_prompt: PROMPT_VERSION.to_string(),
        agent_protocol: PROTOCOL_VERSION.to_string(),
        clean_twins: twins_added(world, spec)?,
        levels: spec.planned_levels(),
        ..spec.clone()
    };
    let spec_json = serde_json::to_string(&spec).context("encoding the run spec")?;
    store.create_run(&run_id, &spec_json, corpus_version, &trials).await?;
    Ok(run_id)
}

/// A run's progress as the dashboard and `mirage runs show` read it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgressReport {
    pub total: i64,
    pub counts: crate::db::Progress,
    /// Trials finished per minute over the last [`RATE_WINDOW_MS`] (0 when none finished).
    pub per_minute: f64,
    /// Seconds until the queue is empty at that rate; `None` when the rate is 0 or nothing is left.
    pub eta_secs: Option<f64>,
}

/// The window over which throughput is measured.
pub const RATE_WINDOW_MS: i64 = 60_000;

/// Trials read per chunk when a stored run is scored or exported: a chunk's step bodies
/// are read at once (and, when scoring, its new scores written in one transaction), so
/// memory stays bounded by a few chunks whatever the run's size.
pub(crate) const CHUNK: usize = 500;

impl ProgressReport {
    /// Builds the report from counts and the number finished within the window.
    pub fn new(total: i64, counts: crate::db::Progress, finished_in_window: i64) -> ProgressReport {
        #[allow(clippy::cast_precision_loss)]
        let per_minute = finished_in_window as f64 * 60_000.0 / RATE_WINDOW_MS as f64;
        let left = counts.queued + counts.running;
        #[allow(clippy::cast_precision_loss)]
        let eta_secs = (per_minute > 0.0 && left > 0).then(|| left as f64 / per_minute * 60.0);
        ProgressReport { total, counts, per_minute, eta_secs }
    }
}

/// Reads a run's counts and recent throughput from the store.
pub async fn progress_report(store: &dyn Store, run_id: &RunId) -> anyhow::Result<ProgressReport> {
    let run = store.run(run_id).await?;
    let counts = store.progress(run_id).await?;
    let recent = store.finished_since(run_id, now_ms() - RATE_WINDOW_MS).await?;
    Ok(ProgressReport::new(run.trials_total, counts, recent))
}

/// Closes a run none of whose trials is queued or running (see `RunStore::close_if_finished`),
/// logging an error instead of failing: closing is a backstop that the next finish, worker
/// pass or server start tries again, and the trials it concerns are stored already.
pub async fn close_finished(store: &dyn Store, run_id: &RunId) {
    match store.close_if_finished(run_id).await {
        Ok(true) => tracing::debug!(run = %run_id, "the run's last trial finished: run done"),
        Ok(false) => {}
        Err(e) => tracing::warn!(run = %run_id, "closing a finished run: {e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::db::Progress;

    #[tokio::test]
    async fn a_run_records_the_agent_prompt_version() {
        let store = crate::db::SqlStore::connect("sqlite::memory:").await.expect("store");
        let world = World::build(crate::corpus::generate::corpus().into_iter().take(2).collect()).expect("world");
        let mut spec = RunSpec::basic("all", &["oracle"], &["L0"], &["raw"], vec![0]);
        spec.agent_prompt = "stale".into();
        let id = create_run(&store, &world, &spec, "v").await.expect("run");
        let stored: RunSpec =
            serde_json::from_str(&crate::db::RunStore::run(&store, &id).await.expect("run").spec).expect("spec");
        assert_eq!(stored.agent_prompt, PROMPT_VERSION);
        let old: RunSpec =
            serde_json::from_str(r#"{"tasks":"all","agents":[],"levels":[],"conditions":[],"seeds":[]}"#)
                .expect("an old spec");
        assert_eq!(old.agent_prompt, "agent-prompt-1", "runs from before the field used the first prompt");
    }

    #[test]
    fn planning_errors_name_the_field_at_fault() {
        let world = World::build(crate::corpus::generate::corpus().into_iter().take(12).collect()).expect("world");
        let good = RunSpec::basic("all", &["oracle"], &["L0"], &["raw"], vec![0]);
        assert_eq!(plan(&world, &good).expect("plan").len(), 12);
        for (field, spec) in [
            (SpecField::Tasks, RunSpec { tasks: "nothing-like-this".into(), ..good.clone() }),
            (SpecField::Agents, RunSpec { agents: vec!["nobody".into()], ..good.clone() }),
            (SpecField::Levels, RunSpec { levels: vec!["L9".into()], ..good.clone() }),
            (SpecField::Conditions, RunSpec { conditions: vec!["sideways".into()], ..good.clone() }),
            (SpecField::Seeds, RunSpec { seeds: vec![], ..good.clone() }),
            (SpecField::Seeds, RunSpec { seeds: vec![0, 0], ..good.clone() }),
            (SpecField::Conditions, RunSpec { conditions: vec!["raw".into(), "raw".into()], ..good.clone() }),
        ] {
            let e = plan(&world, &spec).expect_err("refused");
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn eta_follows_the_recent_rate() {
        let counts = Progress { queued: 90, running: 10, done: 20, ..Progress::default() };
        let r = ProgressReport::new(120, counts, 20);
        assert!((r.per_minute - 20.0).abs() < 1e-9);
        assert_eq!(r.eta_secs.map(|s| s.round()), Some(300.0));
        assert_eq!(ProgressReport::new(120, counts, 0).eta_secs, None);
        let finished = Progress { done: 120, ..Progress::default() };
        assert_eq!(ProgressReport::new(120, finished, 5).eta_secs, None);
    }
}
