//! Runs: a run is tasks × agents × levels × conditions × seeds, planned into trials in
//! the database and executed from a durable queue by a pool of workers.
//!
//! A worker claims a trial with a lease in one short statement, keeps the lease alive with
//! a heartbeat, persists every step before the next, and finalises idempotently. Nothing is
//! held open across an agent call, so several processes (later: `mirage worker` against
//! PostgreSQL) can share one queue, and a killed process loses at most the step in flight.

pub mod export;
pub mod import;
pub mod score;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use std::collections::{BTreeMap, HashMap};

use crate::agent::baselines::{Explorer, Oracle, Surface};
use crate::agent::episode::{Outcome, Setting, StepSink, TrialError, run_trial};
use crate::agent::llm::LlmAgent;
use crate::agent::{Agent, Step};
use crate::corpus::model::CONDITIONS;
use crate::corpus::{Domain, Task};
use crate::db::{NewTrial, Store, StoreError, TrialEnd, TrialRow, now_ms};
use crate::env::World;
use crate::llm::{EndpointSpec, HttpLlm};

/// What a run covers. Stored as JSON on the run row.
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
    pub tap: crate::manip::tap::TapOptions,
    /// The attacker/rewriter endpoint (the config's `roles.attacker`): L1/L2 texts and L4
    /// proposals come from it when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker: Option<EndpointSpec>,
    /// The judge endpoint (the config's `roles.judge`), for `+judge` defended configurations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<EndpointSpec>,
}

impl RunSpec {
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
            tap: crate::manip::tap::TapOptions::default(),
            attacker: None,
            judge: None,
        }
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
pub fn new_run_id() -> String {
    format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// The agents this version can run.
pub const BASELINES: [&str; 3] = ["surface", "explorer", "oracle"];

/// Splits a configuration name into the agent and its defense: `explorer+keyword` is the
/// explorer behind the keyword filter.
pub fn split_config(name: &str) -> anyhow::Result<(&str, Option<&str>)> {
    match name.rsplit_once('+') {
        Some((agent, defense)) if crate::manip::detect::DEFENSES.contains(&defense) => Ok((agent, Some(defense))),
        Some((_, defense)) => bail!(
            "agent: {name:?} names the defense {defense:?}, which is not one of {}",
            crate::manip::detect::DEFENSES.join(", ")
        ),
        None => Ok((name, None)),
    }
}

/// The filter of a defense, trained and calibrated (5 % false positives) on the world's
/// tasks. The judge defense uses the run's judge endpoint, with the store as its cache.
pub async fn defense_for(
    defense: &str,
    world: &World,
    judge: Option<&EndpointSpec>,
    cache: Arc<dyn Store>,
) -> anyhow::Result<Arc<dyn crate::manip::detect::Defense>> {
    use crate::manip::detect::{CalibratedPerplexity, DEFENSE_FPR, JudgeDefense, JudgeFilter, KeywordFilter};
    let tasks = || -> Vec<Task> { world.tasks().map(|t| (**t).clone()).collect() };
    Ok(match defense {
        "keyword" => Arc::new(KeywordFilter::parse(crate::manip::detect::KEYWORDS)?),
        "perplexity" => Arc::new(CalibratedPerplexity::build(&tasks(), DEFENSE_FPR)),
        "judge" => {
            let Some(spec) = judge else {
                bail!("the judge defense needs a judge endpoint (roles.judge in the config)");
            };
            let mut spec = spec.clone();
            spec.temperature = 0.0;
            let model = spec.model.clone();
            let client = Arc::new(HttpLlm::new(spec).context("judge endpoint")?);
            let filter = JudgeFilter { model, client, cache };
            Arc::new(JudgeDefense::build(filter, &tasks(), DEFENSE_FPR).await.context("calibrating the judge defense")?)
        }
        other => bail!("defense {other:?} is not one of {}", crate::manip::detect::DEFENSES.join(", ")),
    })
}

/// Builds the agent for a configuration name: a baseline, or a model endpoint of the spec
/// (a `+defense` suffix is handled by the caller; see [`split_config`]).
pub fn agent_for(name: &str, endpoints: &BTreeMap<String, EndpointSpec>) -> anyhow::Result<Arc<dyn Agent>> {
    let (name, _) = split_config(name)?;
    Ok(match name {
        "surface" => Arc::new(Surface),
        "explorer" => Arc::new(Explorer),
        "oracle" => Arc::new(Oracle),
        other => match endpoints.get(other) {
            Some(spec) => {
                let client = HttpLlm::new(spec.clone()).with_context(|| format!("agent {other}"))?;
                Arc::new(LlmAgent::new(other, Arc::new(client)))
            }
            None => bail!(
                "agent: {other:?} is neither a baseline ({}) nor a configured model endpoint",
                BASELINES.join(", ")
            ),
        },
    })
}

/// The tasks a filter selects, in corpus order. An unknown filter is an error naming it.
pub fn select_tasks<'w>(world: &'w World, filter: &str) -> anyhow::Result<Vec<&'w Arc<Task>>> {
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
            None => bail!("tasks: {id:?} is neither `all`, a site, a category nor a task id"),
        }
    }
    if out.is_empty() {
        bail!("tasks: the filter {filter:?} selects no task");
    }
    Ok(out)
}

/// Checks a spec and expands it into trials (task-major, then agent, level, condition, seed).
pub fn plan(world: &World, spec: &RunSpec) -> anyhow::Result<Vec<NewTrial>> {
    for agent in &spec.agents {
        agent_for(agent, &spec.endpoints)?;
        if split_config(agent)?.1 == Some("judge") && spec.judge.is_none() {
            bail!("agent: {agent} reads pages through the judge filter, which needs a judge endpoint (roles.judge)");
        }
    }
    for level in &spec.levels {
        crate::manip::check(level, spec.strategy.as_deref()).map_err(|e| anyhow::anyhow!("levels: {e}"))?;
    }
    for condition in &spec.conditions {
        if !CONDITIONS.contains(&condition.as_str()) {
            bail!("conditions: {condition:?} is not one of {}", CONDITIONS.join(", "));
        }
    }
    if spec.agents.is_empty() || spec.levels.is_empty() || spec.conditions.is_empty() || spec.seeds.is_empty() {
        bail!("a run needs at least one agent, level, condition and seed");
    }
    let mut trials = Vec::new();
    for task in select_tasks(world, &spec.tasks)? {
        for agent in &spec.agents {
            for level in &spec.levels {
                for condition in &spec.conditions {
                    for seed in &spec.seeds {
                        trials.push(NewTrial {
                            task_id: task.id.clone(),
                            agent: agent.clone(),
                            level: level.clone(),
                            condition: condition.clone(),
                            seed: *seed,
                        });
                    }
                }
            }
        }
    }
    Ok(trials)
}

/// Stores a planned run; returns its id.
pub async fn create_run(
    store: &dyn Store,
    world: &World,
    spec: &RunSpec,
    corpus_version: &str,
) -> anyhow::Result<String> {
    let trials = plan(world, spec)?;
    let run_id = new_run_id();
    let spec_json = serde_json::to_string(spec).context("encoding the run spec")?;
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
pub async fn progress_report(store: &dyn Store, run_id: &str) -> anyhow::Result<ProgressReport> {
    let run = store.run(run_id).await?;
    let counts = store.progress(run_id).await?;
    let recent = store.finished_since(run_id, now_ms() - RATE_WINDOW_MS).await?;
    Ok(ProgressReport::new(run.trials_total, counts, recent))
}

/// Persists each step of one trial in the store.
struct DbSink<'a> {
    store: &'a dyn Store,
    trial_id: &'a str,
}

#[async_trait]
impl StepSink for DbSink<'_> {
    async fn record(&mut self, step: &Step) -> anyhow::Result<()> {
        let body = serde_json::to_string(step)?;
        self.store.append_step(self.trial_id, i64::try_from(step.t)?, &body).await?;
        Ok(())
    }
}

/// Called after each trial this process finalises (progress bars, live counters).
pub type OnFinish = Arc<dyn Fn(&TrialRow, &TrialEnd) + Send + Sync>;

/// Tunables of a worker pool.
#[derive(Clone, Copy, Debug)]
pub struct PoolOptions {
    pub concurrency: usize,
    /// How long a claim lasts without a heartbeat.
    pub lease: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions { concurrency: 4, lease: Duration::from_secs(30) }
    }
}

/// Executes the queued trials of a run until none is left (or the run is cancelled).
/// `on_finish` is called after each trial this process finalises.
pub async fn execute(
    store: Arc<dyn Store>,
    world: Arc<World>,
    run_id: &str,
    options: PoolOptions,
    on_finish: OnFinish,
) -> anyhow::Result<()> {
    let spec: RunSpec = serde_json::from_str(&store.run(run_id).await?.spec).context("reading the run's spec")?;
    let mut agents: HashMap<String, Arc<dyn Agent>> = HashMap::new();
    let mut defenses: HashMap<String, Arc<dyn crate::manip::detect::Defense>> = HashMap::new();
    for name in &spec.agents {
        agents.insert(name.clone(), agent_for(name, &spec.endpoints)?);
        if let (_, Some(defense)) = split_config(name)?
            && !defenses.contains_key(defense)
        {
            let built = defense_for(defense, &world, spec.judge.as_ref(), store.clone()).await?;
            defenses.insert(defense.to_string(), built);
        }
    }
    let attacker = match &spec.attacker {
        Some(endpoint) => Some(crate::manip::attacker::Attacker {
            model: endpoint.model.clone(),
            client: Arc::new(HttpLlm::new(endpoint.clone()).context("attacker endpoint")?),
            cache: store.clone(),
        }),
        None => None,
    };
    let shared = Arc::new(Shared {
        attacker,
        store: store.clone(),
        world,
        agents,
        defenses,
        appeal: spec.appeal,
        strategy: spec.strategy.clone(),
        tap: spec.tap,
        options,
        on_finish,
    });
    let worker_base = format!("{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..6]);
    let mut handles = Vec::new();
    for n in 0..options.concurrency.max(1) {
        let shared = shared.clone();
        let worker = format!("{worker_base}-{n}");
        let run_id = run_id.to_string();
        handles.push(tokio::spawn(async move { work(&shared, &run_id, &worker).await }));
    }
    for h in handles {
        h.await.context("a worker panicked")??;
    }
    let progress = store.progress(run_id).await?;
    if progress.queued == 0 && progress.running == 0 && store.run(run_id).await?.status == "active" {
        store.set_run_status(run_id, "done").await?;
    }
    Ok(())
}

/// What every worker of one `execute` call shares.
struct Shared {
    store: Arc<dyn Store>,
    world: Arc<World>,
    /// One agent (and HTTP client) per configuration for the whole run.
    agents: HashMap<String, Arc<dyn Agent>>,
    /// The filters of defended configurations, by defense name.
    defenses: HashMap<String, Arc<dyn crate::manip::detect::Defense>>,
    appeal: bool,
    strategy: Option<String>,
    tap: crate::manip::tap::TapOptions,
    attacker: Option<crate::manip::attacker::Attacker>,
    options: PoolOptions,
    on_finish: OnFinish,
}

async fn work(shared: &Shared, run_id: &str, worker: &str) -> anyhow::Result<()> {
    let Shared { store, world, agents, defenses, appeal, strategy, tap, attacker, options, on_finish } = shared;
    let lease_ms = i64::try_from(options.lease.as_millis()).unwrap_or(i64::MAX);
    loop {
        if store.run(run_id).await?.status == "cancelled" {
            return Ok(());
        }
        let Some(trial) = store.claim_trial(run_id, worker, now_ms() + lease_ms).await? else {
            // Nothing queued: return expired claims (a killed worker's) to the queue, and
            // stop when nothing is left at all.
            if store.requeue_expired(run_id, now_ms()).await? > 0 {
                continue;
            }
            let p = store.progress(run_id).await?;
            if p.running == 0 && p.queued == 0 {
                return Ok(());
            }
            // Others hold trials (or a dead process's leases have yet to expire): wait.
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        let span =
            tracing::info_span!("trial", trial.id = %trial.trial_id, task.id = %trial.task_id, agent = %trial.agent);
        let end = match agents.get(&trial.agent) {
            Some(agent) => {
                let defense = split_config(&trial.agent).ok().and_then(|(_, d)| d).and_then(|d| defenses.get(d));
                let claimed = Claimed {
                    trial: &trial,
                    worker,
                    lease: options.lease,
                    appeal: *appeal,
                    strategy: strategy.as_deref(),
                    defense: defense.map(|d| d.as_ref()),
                    tap: *tap,
                    attacker: attacker.as_ref(),
                };
                run_claimed(store.as_ref(), world, agent.as_ref(), &claimed).instrument(span).await
            }
            None => TrialEnd::Error(format!("agent {} is not part of this run's spec", trial.agent)),
        };
        match store.finish_trial(&trial.trial_id, worker, &end).await? {
            true => on_finish(&trial, &end),
            false => {
                tracing::warn!(trial.id = %trial.trial_id, "lost the lease before finishing; another worker owns the trial")
            }
        }
    }
}

/// A trial a worker holds, with what running it needs to know.
struct Claimed<'a> {
    trial: &'a TrialRow,
    worker: &'a str,
    lease: Duration,
    appeal: bool,
    strategy: Option<&'a str>,
    defense: Option<&'a dyn crate::manip::detect::Defense>,
    tap: crate::manip::tap::TapOptions,
    attacker: Option<&'a crate::manip::attacker::Attacker>,
}

/// Runs one claimed trial with a heartbeat, resuming from its persisted steps.
async fn run_claimed(store: &dyn Store, world: &World, agent: &dyn Agent, claimed: &Claimed<'_>) -> TrialEnd {
    let Claimed { trial, worker, lease, appeal: with_appeal, strategy, defense, tap, attacker } = *claimed;
    let Some(task) = world.task(&trial.task_id) else {
        return TrialEnd::Error(format!("task {} is no longer stored", trial.task_id));
    };
    let prior: Vec<Step> = match store.steps(&trial.trial_id).await {
        Ok(bodies) => match bodies.iter().map(|b| serde_json::from_str(b)).collect::<Result<_, _>>() {
            Ok(steps) => steps,
            Err(e) => return TrialEnd::Error(format!("stored steps are unreadable: {e}")),
        },
        Err(e) => return TrialEnd::Error(format!("loading stored steps: {e}")),
    };
    let overlay = if trial.level == "L4" {
        match searched_overlay(store, world, agent, trial, !prior.is_empty(), (defense, attacker), tap).await {
            Ok(o) => o,
            Err(e) => return TrialEnd::Error(format!("L4 search: {e:#}")),
        }
    } else {
        match crate::manip::overlay_with_attacker(task, &trial.level, strategy, trial.seed, attacker).await {
            Ok(o) => o,
            Err(e) => return TrialEnd::Error(format!("manipulation: {e:#}")),
        }
    };
    let mut sink = DbSink { store, trial_id: &trial.trial_id };
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let beat = async {
        loop {
            tokio::time::sleep(lease / 3).await;
            match store.heartbeat(&trial.trial_id, worker, now_ms() + lease_ms).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
            }
        }
    };
    let result = tokio::select! {
        r = run_trial(world, Setting { overlay: &overlay, defense }, task, &trial.condition, agent, prior, &mut sink) => r,
        () = beat => return TrialEnd::Error("lost the lease while running".to_string()),
    };
    match result {
        Ok((steps, Outcome::Verdict { verdict, rationale })) => {
            let appeal = if with_appeal {
                match put_appeal(agent, task, &trial.condition, &steps, &verdict).await {
                    Ok(record) => Some(record),
                    Err(e) => return TrialEnd::Error(format!("appeal turn: {e:#}")),
                }
            } else {
                None
            };
            TrialEnd::Done { verdict: Some(verdict), rationale: Some(rationale), appeal }
        }
        Ok((_, Outcome::BudgetExhausted)) => TrialEnd::Done { verdict: None, rationale: None, appeal: None },
        Err(TrialError::Persist(e)) if matches!(e.downcast_ref::<StoreError>(), Some(StoreError::Conflict(_))) => {
            TrialEnd::Error(format!("another worker wrote this trial's steps: {e:#}"))
        }
        Err(e) => TrialEnd::Error(e.to_string()),
    }
}

/// Stores each scored search node as it comes.
struct DbTapLog<'a> {
    store: &'a dyn Store,
    trial_id: &'a str,
}

#[async_trait]
impl crate::manip::tap::TapLog for DbTapLog<'_> {
    async fn node(&mut self, node: &crate::manip::tap::Node) -> anyhow::Result<()> {
        let id = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        let body = serde_json::to_string(node)?;
        self.store
            .add_tap_node(self.trial_id, id(node.id), node.parent.map(id), id(node.depth), node.score, &body)
            .await?;
        Ok(())
    }
}

/// The overlay of an L4 trial: the best passage of its search. A finished search (the
/// trial has `started`: it already has steps) is reused; otherwise the search runs (again).
async fn searched_overlay(
    store: &dyn Store,
    world: &World,
    agent: &dyn Agent,
    trial: &TrialRow,
    started: bool,
    (defense, attacker): (Option<&dyn crate::manip::detect::Defense>, Option<&crate::manip::attacker::Attacker>),
    tap: crate::manip::tap::TapOptions,
) -> anyhow::Result<crate::env::Overlay> {
    use crate::manip::tap::{Node, Target, best, overlay_with, search};
    let task = world.task(&trial.task_id).context("the trial's task")?;
    if started {
        let nodes: Vec<Node> = store
            .tap_nodes(&trial.trial_id)
            .await?
            .iter()
            .map(|b| serde_json::from_str(b))
            .collect::<Result<_, _>>()?;
        if let Some(best) = best(&nodes) {
            return Ok(overlay_with(task, &best.text));
        }
    }
    store.reset_tap(&trial.trial_id).await?;
    let mut log = DbTapLog { store, trial_id: &trial.trial_id };
    let target = Target { world, task, condition: &trial.condition, agent, defense };
    let result = search(target, tap, trial.seed, &mut log, attacker).await?;
    tracing::info!(trial.id = %trial.trial_id, nodes = result.nodes, calls = result.calls, stopped = %result.stopped, "L4 search done");
    Ok(overlay_with(task, &result.best.text))
}

/// Puts the appeal to the agent and records what it did (JSON).
async fn put_appeal(
    agent: &dyn Agent,
    task: &Task,
    condition: &str,
    steps: &[Step],
    verdict: &str,
) -> anyhow::Result<String> {
    use crate::agent::appeal::{AppealRecord, appeal_for, outcome};
    use crate::agent::{Action, TrialContext};

    let appeal = appeal_for(task, verdict);
    let ticket = task.ticket.for_condition(condition).unwrap_or_default();
    let ctx = TrialContext { domain: task.domain, ticket, task };
    let decision = agent.reconsider(&ctx, steps, &appeal.text).await?;
    let (response_verdict, response_rationale) = match decision.action {
        Action::Verdict { verdict: v, rationale } if !v.is_empty() => (v, rationale),
        _ => (verdict.to_string(), "(no new verdict: kept)".to_string()),
    };
    let record = AppealRecord {
        outcome: outcome(verdict, &response_verdict, &appeal).to_string(),
        appeal,
        original: verdict.to_string(),
        response_verdict,
        response_rationale,
    };
    Ok(serde_json::to_string(&record)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Progress;

    #[test]
    fn eta_follows_the_recent_rate() {
        let counts = Progress { queued: 90, running: 10, done: 20, error: 0, cancelled: 0 };
        let r = ProgressReport::new(120, counts, 20);
        assert!((r.per_minute - 20.0).abs() < 1e-9);
        assert_eq!(r.eta_secs.map(|s| s.round()), Some(300.0));
        assert_eq!(ProgressReport::new(120, counts, 0).eta_secs, None);
        let finished = Progress { done: 120, ..Progress::default() };
        assert_eq!(ProgressReport::new(120, finished, 5).eta_secs, None);
    }
}
