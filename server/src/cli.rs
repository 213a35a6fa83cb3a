//! The `mirage` command line: `serve` and `corpus validate|export|import`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use leptos::prelude::LeptosOptions;
use sha2::{Digest, Sha256};

use crate::corpus::jsonl::{read_tasks, write_tasks};
use crate::corpus::validate::validate_corpus;
use crate::corpus::{Task, generate};
use crate::db::{SqlStore, Store, database_url};

/// Mirage: an evaluation lab for web agents that must investigate before they decide.
#[derive(Debug, Parser)]
#[command(name = "mirage", version)]
pub struct Cli {
    /// Database: a SQLite file path, or a `sqlite:` / `postgres://` URL.
    #[arg(long, global = true, env = "MIRAGE_DB", default_value = "data/mirage.db")]
    pub db: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Adds an account (or sets the password and role of an existing one). The password is
    /// read from MIRAGE_PASSWORD, else from the first line of standard input.
    Add {
        name: String,
        /// viewer (reads), annotator (also settles disputed labels), operator (also launches
        /// and cancels runs, adjudicates conflicts).
        #[arg(long)]
        role: String,
    },
    /// Lists accounts and their roles.
    List,
    /// Removes an account and its sessions.
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard and the three investigation sites.
    Serve {
        /// Address to listen on. Keep it on loopback unless accounts are configured.
        #[arg(long, env = "MIRAGE_ADDR", default_value = "127.0.0.1:3000")]
        addr: SocketAddr,
        /// Folder with the built browser bundle (`pkg/`) and public files.
        #[arg(long, env = "MIRAGE_SITE_ROOT", default_value = "target/site")]
        site_root: PathBuf,
        /// Config file with model endpoints and roles (`[endpoints.NAME]`, `[roles]`): agents
        /// the launch form may name, and the judge that scores runs.
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Dashboard accounts. Without any, `serve` listens on loopback only and everyone
    /// local is the operator.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Work with the task corpus.
    Corpus {
        #[command(subcommand)]
        command: CorpusCommand,
    },
    /// Plan and execute a run (or resume one), with a progress bar.
    Run(Box<RunArgs>),
    /// Execute queued trials of active runs: extra workers beside `mirage run` or the
    /// dashboard, e.g. several processes against one PostgreSQL database.
    Worker {
        /// Only this run (default: every active run).
        #[arg(long)]
        run: Option<String>,
        /// Trials executed at once by this process.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Stop when no active run has work left instead of waiting for new runs.
        #[arg(long)]
        once: bool,
        /// Seconds between looks for new work.
        #[arg(long, default_value_t = 2)]
        poll_secs: u64,
        /// Seconds a claimed trial stays reserved without a heartbeat.
        #[arg(long, default_value_t = 30, hide = true)]
        lease_secs: u64,
    },
    /// Score trajectories (a file, or a stored run) with the judges and print the
    /// aggregates: a table by default, DESIGN §5's JSON with --json.
    Score(Box<ScoreArgs>),
    /// Record a person's label for a trial; it overrides the automatic label everywhere.
    Label {
        trial: String,
        /// exposure, adoption, verification or recovery.
        kind: String,
        /// true or false.
        #[arg(action = clap::ArgAction::Set)]
        value: bool,
        /// Why: shown beside the label.
        #[arg(long)]
        note: String,
        #[arg(long, env = "USER", default_value = "annotator")]
        author: String,
        /// The step index the label points at.
        #[arg(long)]
        turn: Option<i64>,
    },
    /// Manipulation levels: see what an interested party's text becomes.
    Manip {
        #[command(subcommand)]
        command: ManipCommand,
    },
    /// Detection filters for manipulated text.
    Detect {
        #[command(subcommand)]
        command: DetectCommand,
    },
    /// Inspect, cancel and export runs.
    Runs {
        #[command(subcommand)]
        command: RunsCommand,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Agent configurations, comma-separated or repeated: a baseline (surface, explorer,
    /// oracle), an endpoint named in the config file, or `llm` with --base-url and --model.
    #[arg(long = "agent", value_delimiter = ',', required_unless_present = "resume")]
    pub agents: Vec<String>,
    /// TOML file with `[endpoints.NAME]` tables (base_url, model, api_key_env, temperature,
    /// seed, max_tokens, timeout_secs, max_retries, tool_calling).
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
    /// Only plan the run and print its id; `mirage worker` processes execute it.
    #[arg(long, conflicts_with = "resume")]
    pub detach: bool,
    /// Resume an interrupted run by id instead of planning a new one.
    #[arg(long, conflicts_with_all = ["agents"])]
    pub resume: Option<String>,
    /// Seconds a claimed trial stays reserved without a heartbeat (a killed worker's
    /// trials return to the queue after this).
    #[arg(long, default_value_t = 30, hide = true)]
    pub lease_secs: u64,
}

#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Trajectory file (JSON Lines, DESIGN §5); the same as --trajectories.
    #[arg(conflicts_with_all = ["trajectories", "run"])]
    pub file: Option<PathBuf>,
    /// Trajectory file (JSON Lines, DESIGN §5).
    #[arg(long, conflicts_with = "run")]
    pub trajectories: Option<PathBuf>,
    /// Task file the trajectories refer to (default: the built-in corpus).
    #[arg(long, conflicts_with = "run")]
    pub tasks: Option<PathBuf>,
    /// Score a stored run instead (scores are stored and reused until the judges change).
    #[arg(long)]
    pub run: Option<String>,
    /// Print one JSON object: {"trials": [...], "aggregate": {...}}.
    #[arg(long)]
    pub json: bool,
    /// Group the table by these fields: run, agent, level, condition, domain, category.
    #[arg(long, value_delimiter = ',', default_value = "agent")]
    pub by: Vec<String>,
    /// Bootstrap resamples per interval.
    #[arg(long, default_value_t = crate::stats::RESAMPLES)]
    pub resamples: usize,
    /// Bootstrap seed (same seed, same intervals).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Config file with `[endpoints.NAME]` and `[roles]` (the judge role scores reasoning).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Endpoint (from the config) to use as the reasoning judge, overriding `roles.judge`.
    #[arg(long)]
    pub judge: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ManipCommand {
    /// Print a task's page at a level with the manipulated spans marked [[id>> … <<id]].
    Preview {
        #[arg(long)]
        task: String,
        /// L0, L1, L2 or L3.
        #[arg(long)]
        level: String,
        /// An L1 style or an L3 form (default: drawn from the seed).
        #[arg(long)]
        strategy: Option<String>,
        #[arg(long, default_value_t = 0)]
        seed: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum DetectCommand {
    /// Thresholds for a false-positive rate on the corpus's clean originals (equal weight
    /// per domain), realised rates per domain, and flag rates on the built-in manipulations.
    Calibrate {
        #[arg(long, default_value_t = 0.05)]
        fpr: f64,
        #[arg(long)]
        json: bool,
        /// Also calibrate the LLM-judge filter (and keyword-or-judge) with the judge endpoint.
        #[arg(long)]
        with_judge: bool,
        /// Config file naming the judge endpoint (`roles.judge`).
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Read a text on stdin and say whether a filter flags it, with the score and matches.
    Check {
        /// keyword, perplexity or judge.
        #[arg(long)]
        filter: String,
        /// The false-positive rate the perplexity and judge thresholds are calibrated to.
        #[arg(long, default_value_t = 0.05)]
        fpr: f64,
        #[arg(long)]
        json: bool,
        /// Config file naming the judge endpoint (`roles.judge`), for --filter judge.
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every run, newest first, with its progress.
    List,
    /// One run: its spec and trial counts.
    Show { run: String },
    /// Stop a run: queued trials are cancelled, running ones finish.
    Cancel { run: String },
    /// The finished trials as trajectory lines (DESIGN §5).
    Export {
        run: String,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Stores trajectories produced elsewhere (DESIGN §5 lines) as a finished run, to replay,
    /// score and compare them on the dashboard. Prints the run id.
    Import { file: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum CorpusCommand {
    /// Check a task file (or, without FILE, the stored corpus) against the schema and rules.
    Validate { file: Option<PathBuf> },
    /// Write the stored corpus as JSON Lines (stdout by default).
    Export {
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Add the tasks of a JSON Lines file. All or nothing: any problem stores nothing.
    Import { file: PathBuf },
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let url = database_url(&cli.db)?;
    let store = Arc::new(SqlStore::connect(&url).await?);
    match cli.command {
        Command::Serve { addr, site_root, config } => serve(store, addr, site_root, config).await,
        Command::User { command } => user(store.as_ref(), command).await,
        Command::Run(args) => {
            seed_if_empty(store.as_ref()).await?;
            run_command(store, *args).await
        }
        Command::Runs { command } => runs(store.as_ref(), command).await,
        Command::Manip { command: ManipCommand::Preview { task, level, strategy, seed } } => {
            seed_if_empty(store.as_ref()).await?;
            crate::manip_cli::preview(store.as_ref(), &task, &level, strategy.as_deref(), seed).await
        }
        Command::Detect { command } => {
            seed_if_empty(store.as_ref()).await?;
            match command {
                DetectCommand::Calibrate { fpr, json, with_judge, config } => {
                    let judge = if with_judge {
                        Some(crate::manip_cli::judge_filter(store.clone(), config.as_deref())?)
                    } else {
                        None
                    };
                    let cache: Arc<dyn Store> = store.clone();
                    crate::manip_cli::calibrate_cmd(store.as_ref(), (Some(cache), config.as_deref()), judge, fpr, json)
                        .await
                }
                DetectCommand::Check { filter, fpr, json, config } => {
                    let arc: Arc<dyn Store> = store.clone();
                    crate::manip_cli::check(store.as_ref(), Some(arc), config.as_deref(), &filter, fpr, json).await
                }
            }
        }
        Command::Score(args) => crate::score_cli::score(store, *args).await,
        Command::Label { trial, kind, value, note, author, turn } => {
            crate::score_cli::label(store.as_ref(), &trial, &kind, value, &note, &author, turn).await
        }
        Command::Worker { run, concurrency, once, poll_secs, lease_secs } => {
            let options =
                crate::runs::PoolOptions { concurrency, lease: std::time::Duration::from_secs(lease_secs.max(1)) };
            worker(store, run, options, once, std::time::Duration::from_secs(poll_secs.max(1))).await
        }
        Command::Corpus { command } => {
            seed_if_empty(store.as_ref()).await?;
            match command {
                CorpusCommand::Validate { file } => validate(store.as_ref(), file).await,
                CorpusCommand::Export { out } => export(store.as_ref(), out).await,
                CorpusCommand::Import { file } => import(store.as_ref(), &file).await,
            }
        }
    }
}

/// A short fingerprint of a corpus: the SHA-256 of its JSON Lines export.
pub fn corpus_version(tasks: &[Task]) -> String {
    hex::encode(Sha256::digest(write_tasks(tasks).as_bytes()))[..16].to_string()
}

/// Stores the built-in corpus when the database holds no task yet.
pub async fn seed_if_empty(store: &dyn Store) -> anyhow::Result<()> {
    if store.task_count().await? > 0 {
        return Ok(());
    }
    let tasks = generate::corpus();
    store.insert_tasks(&tasks, "builtin").await.context("seeding the built-in corpus")?;
    store.set_meta("builtin_corpus_version", &corpus_version(&tasks)).await?;
    tracing::info!(tasks = tasks.len(), "Seeded the built-in corpus ({} tasks)", tasks.len());
    Ok(())
}

async fn user(store: &dyn Store, command: UserCommand) -> anyhow::Result<()> {
    match command {
        UserCommand::Add { name, role } => {
            if app::model::Role::parse(&role).is_none() {
                bail!("--role: {role:?} is not one of viewer, annotator, operator");
            }
            if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_alphanumeric() || "._-".contains(c)) {
                bail!("NAME: {name:?} must be 1–64 letters, digits, '.', '_' or '-'");
            }
            let password = match std::env::var("MIRAGE_PASSWORD") {
                Ok(p) => p,
                Err(_) => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
                    line.trim_end_matches(['\r', '\n']).to_string()
                }
            };
            if password.chars().count() < 8 {
                bail!("password: use at least 8 characters (MIRAGE_PASSWORD or the first line of standard input)");
            }
            let hash = crate::http::auth::hash_password(&password)?;
            let new = store.put_user(&name, &hash, &role).await?;
            println!("{} {name} ({role})", if new { "added" } else { "updated" });
        }
        UserCommand::List => {
            for (name, role) in store.users().await? {
                println!("{name}\t{role}");
            }
        }
        UserCommand::Remove { name } => {
            if !store.remove_user(&name).await? {
                bail!("no account named {name:?}");
            }
            println!("removed {name}");
        }
    }
    Ok(())
}

async fn serve(
    store: Arc<SqlStore>,
    addr: SocketAddr,
    site_root: PathBuf,
    config: Option<PathBuf>,
) -> anyhow::Result<()> {
    let config = crate::config::Config::load(config.as_deref())?;
    if !addr.ip().is_loopback() && !store.has_users().await? {
        bail!(
            "refusing to listen on {addr} without accounts: anyone who can reach it would be the operator. \
             Add one with `mirage user add NAME --role operator`, or listen on 127.0.0.1"
        );
    }
    seed_if_empty(store.as_ref()).await?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
    let addr = listener.local_addr()?;
    let options = LeptosOptions::builder()
        .output_name("mirage")
        .site_root(site_root.to_string_lossy().to_string())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    if !site_root.join("pkg/mirage_bg.wasm").exists() {
        tracing::warn!(site_root = %site_root.display(), "No browser bundle under {}/pkg: pages render but do not hydrate (run scripts/build-site.sh)", site_root.display());
    }
    let state = crate::app_state(store, options, config).await?;
    resume_orphaned_runs(&state).await?;
    let tasks = state.world.task_count();
    let app = crate::router(state);
    println!("Mirage is listening on http://{addr} ({tasks} tasks)");
    axum::serve(listener, app).with_graceful_shutdown(shutdown()).await.context("serving HTTP")
}

/// Runs left active with queued trials and nobody working on them (the server that launched
/// them stopped) continue in this server.
async fn resume_orphaned_runs(state: &crate::AppState) -> anyhow::Result<()> {
    for run in state.store.runs().await?.into_iter().filter(|r| r.status == "active") {
        let p = state.store.progress(&run.run_id).await?;
        if p.queued > 0 && p.running == 0 {
            tracing::info!(run = %run.run_id, queued = p.queued, "resuming an orphaned run");
            crate::services::runs::spawn_execution(
                state.store.clone(),
                state.world.clone(),
                run.run_id,
                crate::runs::PoolOptions::default().concurrency,
                state.insights.clone(),
            );
        }
    }
    Ok(())
}

async fn shutdown() {
    let _ = tokio::signal::ctrl_c().await;
}

async fn validate(store: &dyn Store, file: Option<PathBuf>) -> anyhow::Result<()> {
    match file {
        Some(path) => {
            let name = path.display().to_string();
            let contents = std::fs::read_to_string(&path).with_context(|| format!("reading {name}"))?;
            match read_tasks(&name, &contents) {
                Ok(tasks) => {
                    println!("{name}: {} tasks, all valid", tasks.len());
                    Ok(())
                }
                Err(errors) => {
                    for e in &errors {
                        eprintln!("{e}");
                    }
                    bail!("{name}: {} problems", errors.len())
                }
            }
        }
        None => {
            let tasks = store.all_tasks().await?;
            let findings = validate_corpus(&tasks);
            for f in &findings {
                eprintln!("{f}");
            }
            if findings.is_empty() {
                println!("stored corpus: {} tasks, all valid", tasks.len());
                Ok(())
            } else {
                bail!("stored corpus: {} problems", findings.len())
            }
        }
    }
}

async fn export(store: &dyn Store, out: Option<PathBuf>) -> anyhow::Result<()> {
    let text = write_tasks(&store.all_tasks().await?);
    match out {
        Some(path) => std::fs::write(&path, text).with_context(|| format!("writing {}", path.display())),
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes()).context("writing to stdout")
        }
    }
}

async fn import(store: &dyn Store, path: &std::path::Path) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let contents = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let mut errors = match read_tasks(&name, &contents) {
        Ok(tasks) => {
            let mut errors = Vec::new();
            let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
            let existing = store.existing_task_ids(&ids).await?;
            for (line, task) in line_numbers(&contents).into_iter().zip(&tasks) {
                if existing.contains(&task.id) {
                    errors.push(format!("{name}:{line}:id: task {} is already stored", task.id));
                }
            }
            if errors.is_empty() {
                // The new tasks join the stored world: check them together.
                let mut all = store.all_tasks().await?;
                let stored = all.len();
                all.extend(tasks.iter().cloned());
                let lines = line_numbers(&contents);
                for f in validate_corpus(&all) {
                    let line = all
                        .iter()
                        .position(|t| t.id == f.task_id)
                        .filter(|i| *i >= stored)
                        .map_or(0, |i| lines[i - stored]);
                    errors.push(format!("{name}:{line}:{}: task {}: {}", f.field, f.task_id, f.message));
                }
            }
            if errors.is_empty() {
                store.insert_tasks(&tasks, &format!("import:{name}")).await?;
                println!("imported {} tasks from {name}", tasks.len());
                return Ok(());
            }
            errors
        }
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    };
    errors.dedup();
    for e in &errors {
        eprintln!("{e}");
    }
    bail!("{name}: {} problems; nothing was imported", errors.len())
}

/// 1-based numbers of the non-blank lines, in order (one per task read).
fn line_numbers(contents: &str) -> Vec<usize> {
    contents.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, _)| i + 1).collect()
}

async fn run_command(store: Arc<SqlStore>, args: RunArgs) -> anyhow::Result<()> {
    use std::time::{Duration, Instant};

    use indicatif::{ProgressBar, ProgressStyle};

    use crate::db::TrialEnd;
    use crate::runs::{PoolOptions, RunSpec, create_run, execute};

    let tasks = store.all_tasks().await?;
    let version = corpus_version(&tasks);
    let world = Arc::new(crate::env::World::build(tasks)?);
    let run_id = match args.resume {
        Some(id) => {
            let run = store.run(&id).await?;
            if run.status == "cancelled" {
                bail!("run {id} was cancelled");
            }
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
                strategy: args.strategy,
                tap: crate::manip::tap::TapOptions { budget: args.tap_budget, ..Default::default() },
                attacker,
                judge,
            };
            let id = create_run(store.as_ref(), &world, &spec, &version).await?;
            if args.detach {
                println!("{id}");
                return Ok(());
            }
            id
        }
    };
    let run = store.run(&run_id).await?;
    let before = store.progress(&run_id).await?;
    eprintln!(
        "run {run_id}: {} trials ({} already finished); resume with `mirage run --resume {run_id}`",
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
    let options = PoolOptions { concurrency: args.concurrency, lease: Duration::from_secs(args.lease_secs.max(1)) };
    execute(store.clone(), world, &run_id, options, on_finish).await?;
    bar.finish_and_clear();
    let p = store.progress(&run_id).await?;
    println!(
        "run {run_id}: {} done, {} errors, {} cancelled, {} left, in {:.1}s",
        p.done,
        p.error,
        p.cancelled,
        p.queued + p.running,
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = args.out {
        let (text, _) = crate::runs::export::export_run(store.as_ref(), &run_id).await?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Executes the queued trials of active runs until none is left (`once`) or forever.
async fn worker(
    store: Arc<SqlStore>,
    only: Option<String>,
    options: crate::runs::PoolOptions,
    once: bool,
    poll: std::time::Duration,
) -> anyhow::Result<()> {
    use crate::runs::execute;

    if let Some(id) = &only {
        store.run(id).await?;
    }
    let on_finish: crate::runs::OnFinish = Arc::new(|trial, end| match end {
        crate::db::TrialEnd::Error(reason) => tracing::warn!(trial.id = %trial.trial_id, %reason, "trial errored"),
        crate::db::TrialEnd::Done { .. } => tracing::info!(trial.id = %trial.trial_id, "trial done"),
    });
    let mut world: Option<(i64, Arc<crate::env::World>)> = None;
    loop {
        let mut worked = 0;
        for run in store.runs().await? {
            if run.status != "active" || only.as_ref().is_some_and(|id| *id != run.run_id) {
                continue;
            }
            let p = store.progress(&run.run_id).await?;
            if p.queued == 0 && p.running == 0 {
                continue;
            }
            // Tasks may have been imported since the last pass.
            let count = store.task_count().await?;
            let current = match &world {
                Some((n, w)) if *n == count => w.clone(),
                _ => {
                    let w = Arc::new(crate::env::World::build(store.all_tasks().await?)?);
                    world = Some((count, w.clone()));
                    w
                }
            };
            eprintln!("worker: run {} ({} queued)", run.run_id, p.queued);
            execute(store.clone(), current, &run.run_id, options, on_finish.clone()).await?;
            worked += 1;
        }
        if once && worked == 0 {
            return Ok(());
        }
        if worked == 0 {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = shutdown() => return Ok(()),
            }
        }
    }
}

async fn runs(store: &dyn Store, command: RunsCommand) -> anyhow::Result<()> {
    match command {
        RunsCommand::List => {
            for run in store.runs().await? {
                let p = store.progress(&run.run_id).await?;
                println!(
                    "{}  {:<9}  {}/{} finished ({} errors)",
                    run.run_id,
                    run.status,
                    p.finished(),
                    run.trials_total,
                    p.error
                );
            }
        }
        RunsCommand::Show { run } => {
            let row = store.run(&run).await?;
            let report = crate::runs::progress_report(store, &run).await?;
            let p = report.counts;
            println!("run {}\nstatus {}\ncorpus {}\nspec {}", row.run_id, row.status, row.corpus_version, row.spec);
            println!(
                "trials {}: {} queued, {} running, {} done, {} errors, {} cancelled",
                row.trials_total, p.queued, p.running, p.done, p.error, p.cancelled
            );
            let eta = report.eta_secs.map_or_else(|| "-".to_string(), |s| format!("{s:.0}s"));
            println!("throughput {:.1} trials/min over the last minute, eta {eta}", report.per_minute);
        }
        RunsCommand::Cancel { run } => {
            store.cancel_run(&run).await?;
            println!("run {run} cancelled");
        }
        RunsCommand::Import { file } => {
            let name = file.display().to_string();
            let contents = std::fs::read_to_string(&file).with_context(|| format!("reading {name}"))?;
            seed_if_empty(store).await?;
            let tasks = store.all_tasks().await?;
            let version = corpus_version(&tasks);
            let world = crate::env::World::build(tasks)?;
            let (run, n) = crate::runs::import::import_run(store, &world, &name, &contents, &version).await?;
            eprintln!("{name}: {n} trajectories stored as run {run}");
            println!("{run}");
        }
        RunsCommand::Export { run, out } => {
            store.run(&run).await?;
            let (text, unfinished) = crate::runs::export::export_run(store, &run).await?;
            if unfinished > 0 {
                eprintln!("{unfinished} trials of {run} have not finished and are not exported");
            }
            match out {
                Some(path) => std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?,
                None => {
                    use std::io::Write;
                    std::io::stdout().lock().write_all(text.as_bytes()).context("writing to stdout")?;
                }
            }
        }
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
