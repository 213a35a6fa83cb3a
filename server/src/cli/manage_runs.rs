//! `mirage runs list|show|cancel|check|export|import|bundle`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::db::Store;
use app::model::RunId;

/// `mirage runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every run, newest first, with its progress.
    List,
    /// One run: its spec and trial counts.
    Show { run: RunId },
    /// Stop a run: queued and running trials are cancelled at once (a live worker stops at its
    /// next step; a killed worker's trial does not stay running).
    Cancel { run: RunId },
    /// Check runs as stored: a finished run has no queued or running trial, an executed run
    /// whose trials all finished is not left active, every finished trial's steps run 0, 1,
    /// 2, … without a gap, and an executed trial that is done ends on its one verdict. Prints
    /// the figures; fails naming every problem.
    Check {
        #[arg(required = true)]
        runs: Vec<RunId>,
    },
    /// The finished trials as trajectory lines (schemas/trajectory.schema.json), or as ATIF trajectories.
    Export {
        run: RunId,
        /// `mirage`: trajectory lines (one JSON object per line). `atif`: one ATIF trajectory
        /// per trial, one per line on stdout, or one `<trial>.json` per trial in the `--out`
        /// directory.
        #[arg(long, value_enum, default_value = "mirage")]
        format: ExportFormat,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// A static copy of one run to share: its run page, leaderboard, plots, heatmaps,
    /// report, definitions and every trial's trajectory (a GEO run: its GEO page and every
    /// target), with the downloads they offer, as HTML, CSS, CSV and JSON files that open
    /// from disk (`DIR/index.html`, or `geo.html`) without a server, scripts or requests.
    /// What an agent saw is written once per distinct text (`seen/`), linked from each turn.
    Bundle {
        run: RunId,
        /// A new folder (or an empty one) for the copy; a name ending in `.zip` writes one
        /// archive instead, its files in a folder of the archive's name.
        #[arg(short, long)]
        out: PathBuf,
        /// The config the server uses (its judge scores the run if it is not scored yet).
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Stores trajectories produced elsewhere as a finished run, to replay, search, label and
    /// (for samples that are Mirage tasks) score them on the dashboard. Reads Mirage's own
    /// trajectory lines (schemas/trajectory.schema.json), Inspect AI logs (`.eval`, `.json`), ATIF trajectories
    /// and AgentDojo result files (directories are searched); the format is recognised from
    /// each file's content. Nothing is stored unless every file reads cleanly. Samples of
    /// Mirage tasks are scored by the rule-based judges as they are stored, so the run's
    /// first scoring with those judges reads their scores. Prints the run id.
    Import {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Read every file as this format instead of recognising it.
        #[arg(long, value_enum)]
        format: Option<crate::foreign::Format>,
        /// A JSON object of harness sample id → Mirage task id: those samples are scored by
        /// Mirage's judges (as are samples whose metadata names a `mirage_task`).
        #[arg(long)]
        map: Option<PathBuf>,
        /// Refuse a file with an entry (an `.eval` sample) that inflates past this many MiB
        /// (reading one takes several times its size in memory).
        #[arg(long, default_value_t = 64)]
        max_entry_mib: u64,
        /// Refuse a file whose entries inflate past this many MiB in all (for a file that is
        /// not compressed, its size).
        #[arg(long, default_value_t = 256)]
        max_file_mib: u64,
        /// Refuse a trajectory with a step larger than this many MiB as stored (JSON).
        #[arg(long, default_value_t = 4)]
        max_step_mib: u64,
        /// Refuse a trajectory whose steps take more than this many MiB as stored in all.
        #[arg(long, default_value_t = 64)]
        max_trajectory_mib: u64,
    },
}

/// What `mirage runs export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Mirage,
    Atif,
}

pub(super) async fn runs(shared: std::sync::Arc<dyn Store>, command: RunsCommand) -> anyhow::Result<()> {
    let store = shared.as_ref();
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
        RunsCommand::Show { run } => show(store, &run).await?,
        RunsCommand::Check { runs } => {
            let mut problems = 0;
            for run in &runs {
                problems += check(store, run).await?;
            }
            if problems > 0 {
                bail!("{problems} problems in {} runs", runs.len());
            }
        }
        RunsCommand::Cancel { run } => {
            store.cancel_run(&run).await?;
            println!("run {run} cancelled");
        }
        RunsCommand::Import { files, format, map, max_entry_mib, max_file_mib, max_step_mib, max_trajectory_mib } => {
            let limits = crate::foreign::Limits {
                entry_bytes: max_entry_mib << 20,
                file_bytes: max_file_mib << 20,
                step_bytes: max_step_mib << 20,
                trajectory_bytes: max_trajectory_mib << 20,
            };
            import(&shared, &files, format, map.as_deref(), limits).await?;
        }
        RunsCommand::Bundle { run, out, config } => bundle(shared.clone(), &run, &out, config.as_deref()).await?,
        RunsCommand::Export { run, format, out } => {
            store.run(&run).await?;
            let unfinished = match (format, out) {
                (ExportFormat::Mirage, Some(path)) => crate::runs::export::export_run_to(store, &run, &path).await?,
                (ExportFormat::Atif, Some(dir)) => crate::runs::export::write_atif_dir(store, &run, &dir).await?,
                (format, None) => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                    match format {
                        ExportFormat::Mirage => crate::runs::export::export_run(store, &run, &mut stdout).await,
                        ExportFormat::Atif => crate::runs::export::write_atif(store, &run, &mut stdout).await,
                    }
                    .context("writing to stdout")?
                }
            };
            if unfinished > 0 {
                eprintln!("{unfinished} trials of {run} have not finished and are not exported");
            }
        }
    }
    Ok(())
}

/// `mirage runs check`: one run's problems printed on stderr, its figures on stdout;
/// returns how many problems.
async fn check(store: &dyn Store, run: &RunId) -> anyhow::Result<usize> {
    use crate::agent::Action;
    use crate::db::{RunStatus, TrialState};
    let row = store.run(run).await?;
    let executed = crate::runs::RunKind::of(&row)?.is_executed();
    let trials = store.trials(run).await?;
    let mut problems = Vec::new();
    let (mut steps, mut retried) = (0usize, 0usize);
    for t in &trials {
        let unfinished = matches!(t.state, TrialState::Queued | TrialState::Running);
        if unfinished && row.status != RunStatus::Active {
            problems.push(format!("trial {} is {} in a run that is {}", t.trial_id, t.state, row.status));
        }
        retried += usize::from(t.attempts > 1);
        let bodies = store.steps(&t.trial_id).await?;
        let parsed = crate::runs::export::parse_steps(&bodies)
            .with_context(|| format!("trial {}: a stored step does not parse", t.trial_id))?;
        steps += parsed.len();
        if let Some((i, s)) = parsed.iter().enumerate().find(|(i, s)| s.t != *i) {
            problems.push(format!("trial {}: step {i} is stored as step {} (a gap or a duplicate)", t.trial_id, s.t));
        }
        let verdicts = parsed.iter().filter(|s| matches!(s.action, Action::Verdict { .. })).count();
        let last_is_verdict = parsed.last().is_some_and(|s| matches!(s.action, Action::Verdict { .. }));
        if executed && t.state == TrialState::Done && t.verdict.is_some() && (verdicts != 1 || !last_is_verdict) {
            problems
                .push(format!("trial {}: done with {verdicts} verdict steps (one, the last, expected)", t.trial_id));
        }
    }
    let count = |s: TrialState| trials.iter().filter(|t| t.state == s).count();
    let left = count(TrialState::Queued) + count(TrialState::Running);
    if executed && row.status == RunStatus::Active && left == 0 {
        problems.push("every trial finished but the run is still active".to_string());
    }
    println!(
        "run {run} ({}): {} trials ({} done, {} errors, {} cancelled, {} queued, {} running), {steps} steps, {retried} \
         trials claimed more than once, {} problems",
        row.status,
        trials.len(),
        count(TrialState::Done),
        count(TrialState::Error),
        count(TrialState::Cancelled),
        count(TrialState::Queued),
        count(TrialState::Running),
        problems.len()
    );
    for p in &problems {
        eprintln!("run {run}: {p}");
    }
    Ok(problems.len())
}

/// `mirage runs show`: the run's spec, progress, throughput and cost per role.
async fn show(store: &dyn Store, run: &RunId) -> anyhow::Result<()> {
    let row = store.run(run).await?;
    let report = crate::runs::progress_report(store, run).await?;
    let p = report.counts;
    println!("run {}\nstatus {}\ncorpus {}\nspec {}", row.run_id, row.status, row.corpus_version, row.spec);
    println!(
        "trials {}: {} queued, {} running, {} done, {} errors, {} cancelled",
        row.trials_total, p.queued, p.running, p.done, p.error, p.cancelled
    );
    let eta = report.eta_secs.map_or_else(|| "-".to_string(), |s| format!("{s:.0}s"));
    println!("throughput {:.1} trials/min over the last minute, eta {eta}", report.per_minute);
    if let Ok(kind) = crate::runs::RunKind::of(&row) {
        let rows = crate::runs::cost_rows(
            kind.envelope(),
            (&store.token_use(run).await?, &crate::runs::replay_use(store, run).await?),
            &store.model_use(run).await?,
            &store.judge_use(run).await?,
        );
        let known = |c: Option<f64>| c.map_or_else(|| "unknown".to_string(), app::model::dollars);
        for c in &rows {
            let cost = c.cost_usd.map_or_else(|| "cost unknown".to_string(), app::model::dollars);
            println!(
                "cost {} ({}): {} trials, {} prompt + {} completion tokens, {cost} ({}); {} per trial",
                c.agent,
                c.role.as_str(),
                c.trials,
                c.prompt_tokens,
                c.completion_tokens,
                c.pricing,
                known(c.per_trial())
            );
        }
        if !rows.is_empty() {
            let tokens: u64 = rows.iter().map(|r| r.prompt_tokens + r.completion_tokens).sum();
            let total: Option<f64> = rows.iter().map(|r| r.cost_usd).sum();
            println!(
                "cost charged to the trials: {tokens} tokens, {} ({})",
                known(total),
                app::model::CHARGED_TO_TRIALS
            );
        }
    }
    Ok(())
}

/// `mirage runs import`: other harnesses' logs (or a Mirage export) stored as a run; the
/// size of every file is checked first, so nothing is half-imported.
async fn import(
    store: &std::sync::Arc<dyn Store>,
    files: &[std::path::PathBuf],
    format: Option<crate::foreign::Format>,
    map: Option<&std::path::Path>,
    limits: crate::foreign::Limits,
) -> anyhow::Result<()> {
    crate::db::seed_if_empty(store.as_ref()).await?;
    let tasks = store.all_tasks().await?;
    let version = crate::corpus::fingerprint(&tasks);
    let world = std::sync::Arc::new(crate::env::World::build(tasks)?);
    let mapping = map.map(crate::foreign::Mapping::read).transpose()?.unwrap_or_default();
    let expanded = crate::runs::harness::expand(files)?;
    // A file read as it is (not a zip) is held whole: its size is its cost.
    for p in &expanded {
        let size = std::fs::metadata(p).with_context(|| format!("reading {}", p.display()))?.len();
        let zipped = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("eval"));
        if !zipped && size > limits.file_bytes {
            bail!(
                "{}: {} MiB, past {} MiB, the limit per file (--max-file-mib); nothing was imported",
                p.display(),
                size >> 20,
                limits.file_bytes >> 20
            );
        }
    }
    let formats =
        expanded.iter().map(|p| crate::runs::harness::format_of(p, format)).collect::<anyhow::Result<Vec<_>>>()?;
    let (run, n) = if let ([file], [crate::foreign::Format::Mirage]) = (expanded.as_slice(), formats.as_slice()) {
        let name = file.display().to_string();
        let contents = std::fs::read_to_string(file).with_context(|| format!("reading {name}"))?;
        crate::runs::import::import_run(store, &world, &name, &contents, (&version, limits)).await?
    } else {
        crate::runs::harness::import_files(store, &world, &expanded, format, (&mapping, limits), &version).await?
    };
    eprintln!("{n} trajectories stored as run {run}");
    println!("{run}");
    Ok(())
}

/// `mirage runs bundle`: the run scored first (as the server would), then every page
/// rendered in this process, with a progress bar.
async fn bundle(
    store: std::sync::Arc<dyn Store>,
    run: &RunId,
    out: &std::path::Path,
    config: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let row = store.run(run).await?;
    crate::http::bundle::check_out(out)?;
    let mut config = crate::config::Config::load(config)?;
    config.server.search_dir = None;
    // Pages wait for every number rather than showing "still computing".
    config.server.page_wait_ms = u64::MAX / 4;
    let options = leptos::prelude::LeptosOptions::builder().output_name("mirage").site_pkg_dir("pkg").build();
    let reading = crate::Reading::build(store.clone(), &config).await?;
    let insights = reading.insights.clone();
    let state = crate::http::bundle::Sources::new(store, &reading, config, options);
    let started = std::time::Instant::now();
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} files")
            .map_err(|e| anyhow::anyhow!("progress bar template: {e}"))?,
    );
    let geo = matches!(crate::runs::RunKind::of(&row)?, crate::runs::RunKind::Geo(_));
    if !geo {
        bar.set_message("scoring");
        insights.scores(run).await.map_err(|e| anyhow::anyhow!("scoring run {run}: {e}"))?;
    }
    let progress = |done: usize, known: usize| {
        bar.set_length(known as u64);
        bar.set_position(done as u64);
    };
    // Ctrl-C or SIGTERM abandons the copy and removes its folder.
    let summary = crate::http::bundle::write(&state, run, out, progress, super::serve::shutdown()).await?;
    bar.finish_and_clear();
    let start = if geo { "geo.html" } else { "index.html" };
    let open = if crate::http::bundle::is_zip(out) {
        format!("unpack it and open {}/{start}", crate::http::bundle::archive_folder(out))
    } else {
        format!("open {}", out.join(start).display())
    };
    println!(
        "Wrote {} pages, {} texts the agents saw and {} downloads ({:.1} MB) in {:.1} s: {open}",
        summary.pages,
        summary.seen,
        summary.downloads,
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
    );
    if summary.outside_links > 0 {
        println!("{} links to pages outside this run's copy are plain text.", summary.outside_links);
    }
    if row.status != crate::db::RunStatus::Done {
        println!("The run is {}: the copy holds the trials finished so far.", row.status);
    }
    Ok(())
}
