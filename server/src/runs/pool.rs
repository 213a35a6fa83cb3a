//! The worker pool: claims queued trials of a run, runs each (resuming from its persisted
//! steps) with a heartbeat on its lease, and records how it ended.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{GeoRun, RunKind, agent_for, split_config};
use crate::agent::episode::{Outcome, Setting, StepSink, TrialError, run_trial};
use crate::agent::{Agent, Step};
use crate::corpus::Task;
use crate::db::RunStatus;
use crate::db::{Store, StoreError, TrialEnd, TrialRow, now_ms};
use crate::env::World;
use crate::llm::HttpLlm;
use crate::manip::Level;
use vocab::{RunId, TrialId};

/// Persists each step of one trial in the store.
struct DbSink<'a> {
    store: &'a dyn Store,
    trial_id: &'a TrialId,
    run_id: &'a RunId,
}

/// Raised by the step sink when the trial's run was cancelled: the trial stops there.
#[derive(Debug, thiserror::Error)]
#[error("the run was cancelled")]
struct RunCancelled;

#[async_trait]
impl StepSink for DbSink<'_> {
    async fn record(&mut self, step: &Step) -> anyhow::Result<()> {
        let body = serde_json::to_string(step)?;
        self.store.append_step(self.trial_id, i64::try_from(step.t)?, &body).await?;
        // A cancelled run stops its running trials at their next step (one primary-key read).
        if self.store.run(self.run_id).await?.status == RunStatus::Cancelled {
            return Err(RunCancelled.into());
        }
        Ok(())
    }
}

/// Called after each trial this process finalises (progress bars, live counters).
pub type OnFinish = Arc<dyn Fn(&TrialRow, &TrialEnd) + Send + Sync>;

/// Tunables of a worker pool.
#[derive(Clone, Debug)]
pub struct PoolOptions {
    pub concurrency: usize,
    /// How long a claim lasts without a heartbeat.
    pub lease: Duration,
    /// Cancelled when the process is stopping: workers claim nothing more, and each gives
    /// its running trial back to the queue (its persisted steps kept) instead of finishing it.
    pub stop: CancellationToken,
    /// At most this many trials claimed by one call, then it returns with the run still
    /// active: a worker that serves several runs takes them in turns. `None`: until the run
    /// has nothing left.
    pub slice: Option<usize>,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions { concurrency: 4, lease: Duration::from_secs(30), stop: CancellationToken::new(), slice: None }
    }
}

/// How many times a pool restarts a worker that failed (a store error) before it gives up
/// on the run; each restart waits longer.
const WORKER_RESTARTS: u32 = 8;

/// Executes the queued trials of a run until none is left (or the run is cancelled).
/// `on_finish` is called after each trial this process finalises.
pub async fn execute(
    store: Arc<dyn Store>,
    world: Arc<World>,
    run_id: &RunId,
    options: PoolOptions,
    on_finish: OnFinish,
) -> anyhow::Result<()> {
    let kind = RunKind::load(store.as_ref(), run_id).await?;
    let mut agents: HashMap<String, Arc<dyn Agent>> = HashMap::new();
    if let RunKind::Agent(spec) = &kind {
        for name in spec.agents.iter().filter(|a| !super::external::is_external(a)) {
            agents.insert(name.clone(), agent_for(name, &spec.endpoints)?);
        }
    }
    run_pool(store, world, (run_id, kind), options, on_finish, agents).await
}

/// [`execute`] with the agents of the run's configurations given (by configuration name)
/// instead of built from its spec: for agents that live outside this crate, and tests.
pub async fn execute_with(
    store: Arc<dyn Store>,
    world: Arc<World>,
    run_id: &RunId,
    options: PoolOptions,
    on_finish: OnFinish,
    agents: HashMap<String, Arc<dyn Agent>>,
) -> anyhow::Result<()> {
    let kind = RunKind::load(store.as_ref(), run_id).await?;
    run_pool(store, world, (run_id, kind), options, on_finish, agents).await
}

async fn run_pool(
    store: Arc<dyn Store>,
    world: Arc<World>,
    (run_id, kind): (&RunId, RunKind),
    options: PoolOptions,
    on_finish: OnFinish,
    agents: HashMap<String, Arc<dyn Agent>>,
) -> anyhow::Result<()> {
    let (geo, spec) = match kind {
        RunKind::Geo(GeoRun { geo, run }) => {
            let mut exec = super::geo::GeoExec::new(*geo, &store, run_id).await?;
            exec.lists_changed = super::geo::lists_changed(store.as_ref(), run_id, &exec.lists).await?;
            (Some(Arc::new(exec)), run)
        }
        RunKind::Agent(run) => (None, run),
        RunKind::Imported(_) => {
            anyhow::bail!("run {run_id} was read from a file: its trials are stored, never executed")
        }
    };
    let mut defenses: HashMap<String, Arc<dyn crate::detect::Defense>> = HashMap::new();
    for name in spec.agents.iter().filter(|a| geo.is_none() && !super::external::is_external(a)) {
        if let (_, Some(defense)) = split_config(name)?
            && !defenses.contains_key(defense)
        {
            let built = crate::detect::defense_for(defense, &world, spec.judge.as_ref(), store.clone()).await?;
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
    // An agent run's trials are scored and their scores stored as they finish (a GEO run's
    // trials are ranked, not scored).
    let prescore = geo.is_none().then(|| super::scoring::Prescore::start(&store, &world, run_id, spec.manipulates()));
    let shared = Arc::new(Shared {
        finished: prescore.as_ref().map(super::scoring::Prescore::sender),
        geo,
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
        claimed: std::sync::atomic::AtomicUsize::new(0),
    });
    let supervised = supervise(&shared, run_id).await;
    let stopping = shared.options.stop.is_cancelled();
    // Every worker is gone: the last sender of finished trials goes with `shared`.
    drop(shared);
    if let Some(prescore) = prescore {
        prescore.finish(run_id).await;
    }
    supervised?;
    if stopping {
        // Stopping: the run stays active with its trials queued, for the next start.
        return Ok(());
    }
    super::close_finished(store.as_ref(), run_id).await;
    Ok(())
}

/// Runs the pool's workers in one set and watches them: a worker that fails (a store error
/// it could not get past) is restarted after a growing pause, up to [`WORKER_RESTARTS`]
/// times; past that, or on a panic, every worker is stopped and the error returned. No
/// worker outlives the call.
async fn supervise(shared: &Arc<Shared>, run_id: &RunId) -> anyhow::Result<()> {
    let worker_base = format!("{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..6]);
    let spawn = |set: &mut tokio::task::JoinSet<(usize, anyhow::Result<()>)>, n: usize, pause: Duration| {
        let (shared, run_id, worker) = (shared.clone(), run_id.clone(), format!("{worker_base}-{n}"));
        set.spawn(async move {
            tokio::time::sleep(pause).await;
            (n, work(&shared, &run_id, &worker).await)
        });
    };
    let mut set = tokio::task::JoinSet::new();
    for n in 0..shared.options.concurrency.max(1) {
        spawn(&mut set, n, Duration::ZERO);
    }
    let mut restarts = 0;
    while let Some(joined) = set.join_next().await {
        let (n, result) = joined.context("a worker panicked")?;
        let Err(e) = result else { continue };
        restarts += 1;
        if restarts > WORKER_RESTARTS || shared.options.stop.is_cancelled() {
            set.shutdown().await;
            return Err(e.context(format!("worker {n} failed {restarts} times")));
        }
        tracing::warn!(run = %run_id, worker = n, restarts, "a worker failed; restarting it: {e:#}");
        spawn(&mut set, n, Duration::from_millis(250) * 2u32.pow(restarts.min(5)));
    }
    Ok(())
}

/// What every worker of one `execute` call shares.
struct Shared {
    /// Where each finished trial's id goes to be scored and its score stored (agent runs).
    finished: Option<tokio::sync::mpsc::UnboundedSender<TrialId>>,
    /// A GEO ranking run's lists and rankers (its trials need no agent).
    geo: Option<Arc<super::geo::GeoExec>>,
    store: Arc<dyn Store>,
    world: Arc<World>,
    /// One agent (and HTTP client) per configuration for the whole run.
    agents: HashMap<String, Arc<dyn Agent>>,
    /// The filters of defended configurations, by defense name.
    defenses: HashMap<String, Arc<dyn crate::detect::Defense>>,
    appeal: bool,
    strategy: Option<String>,
    tap: crate::manip::adaptive::TapOptions,
    attacker: Option<crate::manip::attacker::Attacker>,
    options: PoolOptions,
    on_finish: OnFinish,
    /// Claims made (or about to be) by this call's workers, against `options.slice`.
    claimed: std::sync::atomic::AtomicUsize,
}

async fn work(shared: &Shared, run_id: &RunId, worker: &str) -> anyhow::Result<()> {
    let Shared { store, options, on_finish, .. } = shared;
    let lease_ms = i64::try_from(options.lease.as_millis()).unwrap_or(i64::MAX);
    // Expired claims (a killed process's) go back to the queue as their leases run out, not
    // only once the queue is empty: swept every half lease while there is work.
    let sweep_every = (options.lease / 2).max(Duration::from_secs(1));
    let mut swept = tokio::time::Instant::now();
    loop {
        if options.stop.is_cancelled() || store.run(run_id).await?.status == RunStatus::Cancelled {
            return Ok(());
        }
        if swept.elapsed() >= sweep_every {
            store.requeue_expired(run_id, now_ms()).await?;
            swept = tokio::time::Instant::now();
        }
        // This call's share of the run is taken: other runs' turn. (Only claims that got a
        // trial count; workers of one call may overshoot the share by one each.)
        if options.slice.is_some_and(|n| shared.claimed.load(std::sync::atomic::Ordering::SeqCst) >= n) {
            return Ok(());
        }
        let Some(trial) = store.claim_trial(run_id, worker, now_ms() + lease_ms).await? else {
            // Nothing queued: return expired claims (a killed worker's) to the queue, and
            // stop when nothing is left at all.
            if store.requeue_expired(run_id, now_ms()).await? > 0 {
                continue;
            }
            // Trials of outside agents wait for episodes over HTTP, not for this pool.
            if store.progress(run_id).await?.executable_left() == 0 {
                return Ok(());
            }
            // Others hold trials (or a dead process's leases have yet to expire): wait.
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        shared.claimed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let span =
            tracing::info_span!("trial", trial.id = %trial.trial_id, task.id = %trial.task_id, agent = %trial.agent);
        // What the trial's attacker and defense calls cost, kept also when it stops half-way.
        let meter = crate::llm::cache::Meter::default();
        let running = run_one(shared, &trial, worker, &meter).instrument(span);
        // Stopping: the trial goes back to the queue between two persisted steps (what was
        // persisted stays; the step in flight is asked again on resumption).
        let end = tokio::select! {
            end = running => end,
            () = options.stop.cancelled() => {
                record_spending(store.as_ref(), &trial.trial_id, meter.spent()).await?;
                store.release_trial(&trial.trial_id, worker).await?;
                return Ok(());
            }
        };
        record_spending(store.as_ref(), &trial.trial_id, meter.spent()).await?;
        match store.finish_trial(&trial.trial_id, worker, &end).await? {
            true => {
                // The run is done the moment its last trial is, not when this pool stops: a
                // process stopped in between would leave a finished run active.
                super::close_finished(store.as_ref(), run_id).await;
                if let Some(finished) = &shared.finished {
                    // Gone only when the scoring failed; the trial is scored when read.
                    let _ = finished.send(trial.trial_id.clone());
                }
                on_finish(&trial, &end)
            }
            false => {
                tracing::warn!(trial.id = %trial.trial_id, "lost the lease before finishing; another worker owns the trial")
            }
        }
    }
}

/// Runs one claimed trial to its end: a GEO trial under its lease, an agent's trial with
/// its defense and attacker, metered; a panic inside it ends it as an error with the
/// panic's message.
async fn run_one(shared: &Shared, trial: &TrialRow, worker: &str, meter: &crate::llm::cache::Meter) -> TrialEnd {
    let Shared { geo, store, world, agents, defenses, appeal, strategy, tap, attacker, options, .. } = shared;
    match (geo, agents.get(&trial.agent)) {
        (Some(geo), _) => {
            let running = super::geo::run_geo_trial(store.as_ref(), geo, trial);
            tokio::select! {
                end = running => end,
                () = keep_lease(store.as_ref(), &trial.trial_id, worker, options.lease) => {
                    TrialEnd::Error("lost the lease while running".to_string())
                }
            }
        }
        (None, Some(agent)) => {
            let defense = split_config(&trial.agent).ok().and_then(|(_, d)| d).and_then(|d| defenses.get(d));
            let claimed = Claimed {
                trial,
                worker,
                lease: options.lease,
                appeal: *appeal,
                strategy: strategy.as_deref(),
                defense: defense.map(|d| d.as_ref()),
                tap: *tap,
                attacker: attacker.as_ref(),
            };
            // A panic inside one trial (an agent, a page, a writer) ends that trial as an
            // error with the panic's message; the worker goes on with the next one.
            let running = meter.run(run_claimed(store.as_ref(), world, agent.as_ref(), &claimed));
            match std::panic::AssertUnwindSafe(running).catch_unwind().await {
                Ok(end) => end,
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(ToString::to_string)
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "no message".to_string());
                    tracing::error!(trial.id = %trial.trial_id, "trial panicked: {message}");
                    TrialEnd::Error(format!("the trial panicked: {message}"))
                }
            }
        }
        (None, None) => TrialEnd::Error(format!("agent {} is not part of this run's spec", trial.agent)),
    }
}

/// Adds an attempt's attacker and defense calls to the trial's record (nothing when it
/// made none).
async fn record_spending(
    store: &dyn Store,
    trial_id: &TrialId,
    spent: crate::llm::cache::Spending,
) -> anyhow::Result<()> {
    for (role, s) in [("attacker", spent.attacker), ("defense", spent.judge)] {
        if s.calls > 0 {
            let calls = crate::db::ModelCalls {
                calls: s.calls,
                unknown: s.unknown_calls,
                prompt_tokens: s.usage.prompt_tokens,
                completion_tokens: s.usage.completion_tokens,
            };
            store.add_model_use(trial_id, role, calls).await?;
        }
    }
    Ok(())
}

/// A trial a worker holds, with what running it needs to know.
struct Claimed<'a> {
    trial: &'a TrialRow,
    worker: &'a str,
    lease: Duration,
    appeal: bool,
    strategy: Option<&'a str>,
    defense: Option<&'a dyn crate::detect::Defense>,
    tap: crate::manip::adaptive::TapOptions,
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
    let overlay = if trial.level == Level::L4.as_str() {
        match super::adaptive::searched_overlay(store, world, agent, trial, !prior.is_empty(), (defense, attacker), tap)
            .await
        {
            Ok(o) => o,
            Err(e) => return TrialEnd::Error(format!("L4 search: {e:#}")),
        }
    } else {
        match crate::manip::overlay_with_attacker(task, trial.level.as_str(), strategy, trial.seed, attacker).await {
            Ok(o) => o,
            Err(e) => return TrialEnd::Error(format!("manipulation: {e:#}")),
        }
    };
    let mut sink = DbSink { store, trial_id: &trial.trial_id, run_id: &trial.run_id };
    let beat = keep_lease(store, &trial.trial_id, worker, lease);
    let result = tokio::select! {
        r = run_trial(world, Setting { overlay: &overlay, defense }, task, trial.condition.as_str(), agent, prior, &mut sink) => r,
        () = beat => return TrialEnd::Error("lost the lease while running".to_string()),
    };
    match result {
        Ok((steps, Outcome::Verdict { verdict, rationale })) => {
            // A failed appeal turn keeps the verdict and its scores: the appeal is recorded
            // as failed, with its reason, and the trial is not turned into an error.
            let appeal = if with_appeal && crate::agent::appeal::appeals_in(task.domain) {
                Some(match put_appeal(agent, task, trial.condition.as_str(), &steps, &verdict).await {
                    Ok(record) => record,
                    Err(e) => failed_appeal(task, &verdict, &format!("{e:#}")),
                })
            } else {
                None
            };
            TrialEnd::Done { verdict: Some(verdict), rationale: Some(rationale), appeal }
        }
        Ok((_, Outcome::BudgetExhausted)) => TrialEnd::Done { verdict: None, rationale: None, appeal: None },
        Err(TrialError::Persist(e)) if e.downcast_ref::<RunCancelled>().is_some() => TrialEnd::Cancelled,
        Err(TrialError::Persist(e)) if matches!(e.downcast_ref::<StoreError>(), Some(StoreError::Conflict(_))) => {
            TrialEnd::Error(format!("another worker wrote this trial's steps: {e:#}"))
        }
        Err(e) => TrialEnd::Error(e.to_string()),
    }
}

/// Renews a trial's lease every third of its length; returns when the lease is lost.
async fn keep_lease(store: &dyn Store, trial_id: &TrialId, worker: &str, lease: Duration) {
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    loop {
        tokio::time::sleep(lease / 3).await;
        match store.heartbeat(trial_id, worker, now_ms() + lease_ms).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
    }
}

/// The record of an appeal turn the agent could not answer (JSON).
fn failed_appeal(task: &Task, verdict: &str, error: &str) -> String {
    use crate::agent::appeal::{AppealRecord, appeal_for};
    let record = AppealRecord {
        appeal: appeal_for(task, verdict),
        original: verdict.to_string(),
        response_verdict: verdict.to_string(),
        response_rationale: String::new(),
        outcome: "failed".to_string(),
        error: Some(error.to_string()),
        // A refused call cost nothing; unreadable replies were paid for, uncounted.
        usage: (!error.contains(crate::db::UNPARSEABLE)).then(crate::llm::Usage::default),
    };
    serde_json::to_string(&record).unwrap_or_else(|_| r#"{"outcome":"failed"}"#.to_string())
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
        // An answer without a verdict is a failed appeal turn, not a kept verdict.
        _ => (String::new(), "(no verdict given)".to_string()),
    };
    let record = AppealRecord {
        outcome: outcome(task, verdict, &response_verdict, &response_rationale, &appeal).to_string(),
        appeal,
        original: verdict.to_string(),
        response_verdict,
        response_rationale,
        error: None,
        usage: decision.usage,
    };
    Ok(serde_json::to_string(&record)?)
}
