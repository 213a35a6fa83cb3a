//! `mirage run` and `mirage worker`: planning a run and executing its queue.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;

use crate::db::RunStatus;
use crate::db::Store;
use crate::judge::aside::Keep;
use app::model::RunId;

/// `mirage run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Agent configurations, comma-separated or repeated: a baseline (surface, explorer,
    /// oracle, credulous), an endpoint named in the config file, `llm` with --base-url and
    /// --model, or `external:NAME` for an agent of your own that drives the sites over HTTP
    /// (its trials wait for episodes from `POST /api/runs/RUN/episodes` on `mirage serve`);
    /// add +keyword, +perplexity or +judge to a model or baseline for a defense.
    #[arg(long = "agent", value_delimiter = ',', required_unless_present = "resume")]
    pub agents: Vec<String>,
    /// TOML file with `[endpoints.NAME]` tables and `[roles]` (the book's configuration
    /// chapter lists every setting of an endpoint).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
    /// For `--agent llm`: the endpoint's base URL up to /v1.
    #[arg(long, env = "MIRAGE_AGENT_BASE_URL")]
    pub base_url: Option<String>,
    /// For `--agent llm`: the model name.
    #[arg(long, env = "MIRAGE_AGENT_MODEL")]
    pub model: Option<String>,
    /// For `--agent llm`: environment variable holding the API key.
    #[arg(long, env = "MIRAGE_AGENT_API_KEY_ENV")]
    pub api_key_env: Option<String>,
    /// For `--agent llm`: sampling temperature.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// For `--agent llm`: the seed sent to the endpoint.
    #[arg(long)]
    pub model_seed: Option<u64>,
    /// For `--agent llm`: most tokens per reply.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: u32,
    /// For `--agent llm`: seconds per request before it counts as a timeout.
    #[arg(long, default_value_t = 120)]
    pub request_timeout: u64,
    /// For `--agent llm`: ask for actions through native tool calling.
    #[arg(long)]
    pub tool_calling: bool,
    /// For `--agent llm`: ask the server for JSON-constrained output.
    #[arg(long)]
    pub json_mode: bool,
    /// `all`, a site (shop, forum, wiki), a category, or comma-separated task ids.
    #[arg(long, default_value = "all")]
    pub tasks: String,
    /// Manipulation levels, comma-separated: L0 (clean) to L4 (adaptive search per trial).
    #[arg(long, value_delimiter = ',', default_value = "L0")]
    pub levels: Vec<String>,
    /// Manipulation strategy: an L1 style or an L3 form (default: drawn per trial from its seed).
    #[arg(long)]
    pub strategy: Option<String>,
    /// L4: most agent calls one trial's search may spend (3 roots, 5 best × 3 children, 5 levels).
    #[arg(long, default_value_t = 300)]
    pub tap_budget: usize,
    /// Ticket conditions, comma-separated: raw, hint, evidence_anchored.
    #[arg(long, value_delimiter = ',', default_value = "raw")]
    pub conditions: Vec<String>,
    /// Seeds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub seeds: Vec<i64>,
    /// Trials executed at once by this process.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Also write the finished trials as trajectory lines to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// After each verdict, put an appeal to the agent and record its answer.
    #[arg(long)]
    pub appeal: bool,
    /// After the run, replay every exposed trial from its first exposure with these
    /// interventions and numbers of samples (`clean-level:3,strip-spans:1`); see `mirage replay`.
    #[arg(long, value_delimiter = ',')]
    pub replay: Vec<crate::runs::replay::ReplayPlan>,
    /// How many annotators must agree on a disputed label before it replaces the automatic
    /// one in every number (an operator's adjudication settles it at once).
    #[arg(long, default_value_t = crate::judge::aggregate::DEFAULT_ANNOTATORS as u64, value_parser = clap::value_parser!(u64).range(1..=20))]
    pub annotators: u64,
    /// For `external:NAME` agents: seconds an episode holds its trial without a request
    /// before the trial goes back to the queue (default 1800).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub episode_lease: Option<u64>,
    /// Only plan the run and print its id; `mirage worker` processes execute it.
    #[arg(long, conflicts_with = "resume")]
    pub detach: bool,
    /// Store nothing: print the plan's size and its power, the smallest difference between
    /// two configurations it can detect (Acc_dec and robustness, 80 % power).
    #[arg(long, conflicts_with_all = ["resume", "detach"])]
    pub plan_only: bool,
    /// With --plan-only: read the variance and the intra-family correlation of the scores
    /// from this past run instead of assuming the worst.
    #[arg(long, requires = "plan_only")]
    pub power_from: Option<RunId>,
    /// With --plan-only: how many tasks, or seeds, a difference this small needs (e.g. 0.05).
    #[arg(long, requires = "plan_only", value_parser = difference)]
    pub target_diff: Option<f64>,
    /// Resume an interrupted run by id instead of planning a new one.
    #[arg(long, conflicts_with_all = ["agents"])]
    pub resume: Option<RunId>,
    /// With --resume: put the run's trials that ended in error back in the queue first (an
    /// endpoint that was down, a key fixed since), each going on from its stored steps.
    #[arg(long, requires = "resume")]
    pub retry_errors: bool,
    /// Seconds a claimed trial stays reserved without a heartbeat (a killed worker's
    /// trials return to the queue after this).
    #[arg(long, default_value_t = 30, hide = true)]
    pub lease_secs: u64,
}

/// With `--retry-errors` (`retry`): the run's trials that ended in error go back in the
/// queue, said on stderr; without it, a resumed run with such trials says how to retry them.
pub(super) async fn retry_errors(store: &dyn Store, run_id: &RunId, retry: bool) -> anyhow::Result<()> {
    if store.run(run_id).await?.status == RunStatus::Cancelled {
        bail!("run {run_id} was cancelled");
    }
    if retry {
        let n = store.retry_errors(run_id).await?;
        eprintln!("run {run_id}: {n} trials that ended in error are queued again");
    } else {
        let errors = store.progress(run_id).await?.error;
        if errors > 0 {
            eprintln!("run {run_id}: {errors} trials ended in error and stay so (--retry-errors queues them again)");
        }
    }
    Ok(())
}

/// `mirage run`: plans (or resumes) a run and executes it with a progress bar.
pub(super) async fn run(store: Arc<dyn Store>, args: RunArgs) -> anyhow::Result<()> {
    use crate::runs::{RunSpec, create_run};

    let tasks = store.all_tasks().await?;
    let version = crate::corpus::fingerprint(&tasks);
    let world = Arc::new(crate::env::World::build(tasks)?);
    let run_id = match args.resume {
        Some(id) => {
            // Refuses a cancelled run.
            retry_errors(store.as_ref(), &id, args.retry_errors).await?;
            id
        }
        None => {
            let (agents, endpoints) = endpoints_for(&args)?;
            let config = crate::config::Config::load(args.config.as_deref())?;
            let attacker = config.attacker().map(|(_, spec)| spec.clone());
            let judge = config.judge().map(|(_, spec)| spec.clone());
            let spec = RunSpec {
                tasks: args.tasks,
                agents,
                levels: args.levels,
                conditions: args.conditions,
                seeds: args.seeds,
                endpoints,
                appeal: args.appeal,
                replay: args.replay.clone(),
                strategy: args.strategy,
                tap: crate::manip::adaptive::TapOptions { budget: args.tap_budget, ..Default::default() },
                attacker,
                judge,
                agent_prompt: crate::agent::llm::PROMPT_VERSION.to_string(),
                agent_protocol: crate::agent::protocol::PROTOCOL_VERSION.to_string(),
                episode_lease_secs: args.episode_lease,
                origin: None,
                geo: None,
                clean_twins: 0,
                annotators: usize::try_from(args.annotators).unwrap_or(1),
                concurrency: None,
            };
            if args.plan_only {
                return plan_only(&store, &world, &spec, args.power_from.as_ref(), args.target_diff, &config).await;
            }
            let twins = crate::runs::twins_added(&world, &spec)?;
            if twins > 0 {
                eprintln!(
                    "+{twins} clean twins: L0 trials added so that every manipulated trial has its unmanipulated twin"
                );
            }
            let id = create_run(store.as_ref(), &world, &spec, &version).await?;
            let skipped = crate::runs::appeal_skips(&world, &spec)?;
            if skipped > 0 {
                eprintln!(
                    "appeal: {skipped} trials on wiki tasks get no appeal (appeals are put on forum and shop decisions only)"
                );
            }
            if args.detach {
                println!("{id}");
                return Ok(());
            }
            id
        }
    };
    follow(store.clone(), world, &run_id, args.concurrency, args.lease_secs, "mirage run").await?;
    if let Some(path) = args.out {
        crate::runs::export::export_run_to(store.as_ref(), &run_id, &path).await?;
    }
    refuse_all_failed(store.as_ref(), &run_id).await
}

/// A run none of whose trials finished without error measured nothing: the command fails,
/// naming the first reason (the run and its error states stay stored). A run with some
/// errors succeeds; its summary counts them, and they stay in every denominator.
async fn refuse_all_failed(store: &dyn Store, run_id: &RunId) -> anyhow::Result<()> {
    let p = store.progress(run_id).await?;
    if p.error == 0 || p.done > 0 || p.queued + p.running > 0 {
        return Ok(());
    }
    let trials = store.trials(run_id).await?;
    let first = trials.iter().find_map(|t| t.error.as_deref().map(|e| (t.trial_id.as_str(), e)));
    let reason = first.map_or_else(String::new, |(trial, e)| format!(" (the first, {trial}: {e})"));
    bail!(
        "every one of run {run_id}'s {} finished trials ended in error{reason}; nothing was measured. Once the cause \
         is fixed, `mirage run --resume {run_id} --retry-errors` runs them again",
        p.error
    )
}

/// A difference between 0 and 1 (exclusive).
fn difference(text: &str) -> Result<f64, String> {
    let d: f64 = text.parse().map_err(|_| format!("{text:?} is not a number"))?;
    if d > 0.0 && d < 1.0 { Ok(d) } else { Err(format!("{d} is not between 0 and 1 (exclusive)")) }
}

/// `mirage run --plan-only`: the plan's size and power; nothing is stored.
async fn plan_only(
    store: &Arc<dyn Store>,
    world: &crate::env::World,
    spec: &crate::runs::RunSpec,
    power_from: Option<&RunId>,
    target: Option<f64>,
    config: &crate::config::Config,
) -> anyhow::Result<()> {
    use crate::runs::power;

    let trials = crate::runs::plan(world, spec)?;
    let past = match power_from {
        Some(run) => {
            let judge = crate::judge::rsn::ModelJudge::from_config(config, store.clone())?;
            let scores = super::score::run_scores(store, run, &judge, Keep::Figures).await?;
            power::spread_of(&scores)
        }
        None => std::collections::BTreeMap::new(),
    };
    let p = power::of_plan(world, &trials, &past, power_from.map(RunId::as_str), target);
    if p.configurations < 2 {
        println!("plan: {} trials of one configuration; nothing to compare, so no power to report", trials.len());
        return Ok(());
    }
    println!(
        "plan: {} trials ({} configurations × tasks × levels × conditions × seeds, clean twins included); nothing stored",
        trials.len(),
        p.configurations
    );
    println!(
        "power {:.0} % at α = {:.4} two-sided per comparison ({} between configurations; Holm's strictest step)",
        p.power * 100.0,
        p.alpha,
        p.comparisons
    );
    for f in &p.figures {
        print_figure(f);
    }
    println!("  {}", p.basis);
    Ok(())
}

/// One metric's line of the power report: the pairs that count, the smallest detectable
/// difference (a range over ρ unless a past run gave it), and what a target difference needs.
fn print_figure(f: &crate::runs::power::Figure) {
    let range = |(a, b): (f64, f64)| {
        if (a - b).abs() < 5e-4 {
            format!("{a:.3}")
        } else {
            format!("{a:.3} (ρ = {:.2}) to {b:.3} (ρ = {:.2})", f.icc.0, f.icc.1)
        }
    };
    let pairs = if f.pairs != f.planned_pairs {
        format!("{} of the {} planned paired trials expected to count", f.pairs, f.planned_pairs)
    } else if f.metric == "robustness" {
        // Without a past run every pair is taken to count; a pair whose clean twin reaches
        // the party's goal on either side does not.
        format!("at most {} paired trials", f.pairs)
    } else {
        format!("{} paired trials", f.pairs)
    };
    // ρ read from a past run is one number, and it decides the answer: say it.
    let rho = if f.icc.0 == f.icc.1 { format!(", ρ {:.2}", f.icc.0) } else { String::new() };
    println!(
        "  {}: {pairs} per comparison ({} tasks × {} each, {} families, as {:.1} of equal size, σ² {:.3}{rho}): \
         smallest detectable difference {}",
        f.metric,
        f.tasks,
        f.per_task,
        f.families,
        f.effective_families,
        f.variance,
        range(f.detectable)
    );
    if let Some(n) = &f.needed {
        let tasks =
            if n.tasks.0 == n.tasks.1 { n.tasks.0.to_string() } else { format!("{} to {}", n.tasks.0, n.tasks.1) };
        let seeds = |s: Option<usize>| {
            s.map_or_else(|| "no number of seeds".to_string(), |s| format!("{s} seed{}", if s == 1 { "" } else { "s" }))
        };
        let seeds = if n.seeds.0 == n.seeds.1 {
            seeds(n.seeds.0)
        } else {
            format!("{} (ρ = {:.2}) to {} (ρ = {:.2})", seeds(n.seeds.0), f.icc.0, seeds(n.seeds.1), f.icc.1)
        };
        let beyond = if n.tasks.1.max(n.tasks.0) > f.available_tasks {
            format!(
                " (the corpus holds {} tasks in these domains: add seeds or tasks of your own, or aim at a larger \
                 difference)",
                f.available_tasks
            )
        } else {
            String::new()
        };
        println!(
            "    a difference of {:.3} needs {tasks} tasks{beyond} at {} seeds; with these {} tasks, {seeds}",
            n.target, f.seeds, f.tasks
        );
    }
}

/// Executes a run's queued trials in this process with a progress bar, then prints the
/// counts (`mirage run`, `mirage geo run`).
pub(super) async fn follow(
    store: Arc<dyn Store>,
    world: Arc<crate::env::World>,
    run_id: &RunId,
    concurrency: usize,
    lease_secs: u64,
    command: &str,
) -> anyhow::Result<()> {
    use std::time::{Duration, Instant};

    use indicatif::{ProgressBar, ProgressStyle};

    use crate::db::TrialEnd;
    use crate::runs::{PoolOptions, execute};

    let run = store.run(run_id).await?;
    let before = store.progress(run_id).await?;
    eprintln!(
        "run {run_id}: {} trials ({} already finished); resume with `{command} --resume {run_id}`",
        run.trials_total,
        before.finished()
    );
    let bar = ProgressBar::new(u64::try_from(run.trials_total).unwrap_or(0));
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} trials  {per_sec}  eta {eta}  {msg}")
            .map_err(|e| anyhow::anyhow!("progress template: {e}"))?,
    );
    bar.set_position(u64::try_from(before.finished()).unwrap_or(0));
    let started = Instant::now();
    let errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let on_finish = {
        let (bar, errors) = (bar.clone(), errors.clone());
        Arc::new(move |_: &crate::db::TrialRow, end: &TrialEnd| {
            if matches!(end, TrialEnd::Error(_)) {
                errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                bar.set_message(format!("{} errors", errors.load(std::sync::atomic::Ordering::Relaxed)));
            }
            bar.inc(1);
        })
    };
    // Ctrl-C or SIGTERM: running trials go back to the queue; `mirage worker` resumes them.
    let stop = super::serve::stop_on_signal();
    let options =
        PoolOptions { concurrency, lease: Duration::from_secs(lease_secs.max(1)), stop: stop.clone(), slice: None };
    execute(store.clone(), world.clone(), run_id, options, on_finish).await?;
    if stop.is_cancelled() {
        bar.finish_and_clear();
        let p = store.progress(run_id).await?;
        println!(
            "run {run_id}: stopped with {} trials left (resume them with `mirage worker --run {run_id}`)",
            p.queued + p.running
        );
        return Ok(());
    }
    bar.finish_and_clear();
    let made = crate::runs::replay::replay_exposed(store.clone(), &world, run_id).await?;
    if made > 0 {
        eprintln!("run {run_id}: {made} replays of exposed trials");
    }
    print_outcome(store.as_ref(), run_id, command, started.elapsed()).await
}

/// The counts a run ended with, and what to do about its outside agents and its errors.
async fn print_outcome(
    store: &dyn Store,
    run_id: &RunId,
    command: &str,
    took: std::time::Duration,
) -> anyhow::Result<()> {
    let p = store.progress(run_id).await?;
    println!(
        "run {run_id}: {} done, {} errors, {} cancelled, {} left, in {:.1}s",
        p.done,
        p.error,
        p.cancelled,
        p.queued + p.running,
        took.as_secs_f64()
    );
    if p.outside > 0 {
        println!(
            "run {run_id}: {} trials of outside agents wait for their episodes: with `mirage serve` on this database, \
             POST /api/runs/{run_id}/episodes hands them out one at a time",
            p.outside
        );
    }
    if p.error > 0 {
        eprintln!(
            "run {run_id}: once the cause of its errors is fixed, `{command} --resume {run_id} --retry-errors` \
             runs the failed trials again"
        );
    }
    Ok(())
}

/// The model endpoints a run uses: those of the config file that `--agent` names, plus an
/// ad-hoc `llm` endpoint from the flags (named `llm:MODEL`). Returns the agent names too.
fn endpoints_for(
    args: &RunArgs,
) -> anyhow::Result<(Vec<String>, std::collections::BTreeMap<String, crate::llm::EndpointSpec>)> {
    use crate::llm::EndpointSpec;

    let configured = crate::config::Config::load(args.config.as_deref())?.endpoints;
    let mut agents = Vec::new();
    let mut endpoints = std::collections::BTreeMap::new();
    for name in &args.agents {
        if name == "llm" {
            let (Some(base_url), Some(model)) = (&args.base_url, &args.model) else {
                bail!("agent llm needs --base-url URL and --model NAME");
            };
            let mut spec = EndpointSpec::new(base_url, model);
            spec.api_key_env = args.api_key_env.clone();
            spec.temperature = args.temperature;
            spec.seed = args.model_seed;
            spec.max_tokens = args.max_tokens;
            spec.timeout_secs = args.request_timeout;
            spec.tool_calling = args.tool_calling;
            spec.json_mode = args.json_mode;
            let name = format!("llm:{model}");
            endpoints.insert(name.clone(), spec);
            agents.push(name);
        } else {
            endpoints.extend(crate::runs::configured_endpoints(std::slice::from_ref(name), &configured)?);
            agents.push(name.clone());
        }
    }
    Ok((agents, endpoints))
}
