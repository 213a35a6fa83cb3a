//! `mirage runs list|show|cancel|export|import`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

use crate::db::Store;

/// `mirage runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every run, newest first, with its progress.
    List,
    /// One run: its spec and trial counts.
    Show { run: String },
    /// Stop a run: queued trials are cancelled, running ones stop at their next step.
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

pub(super) async fn runs(store: &dyn Store, command: RunsCommand) -> anyhow::Result<()> {
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
            crate::db::seed_if_empty(store).await?;
            let tasks = store.all_tasks().await?;
            let version = crate::corpus::fingerprint(&tasks);
            let world = crate::env::World::build(tasks)?;
            let (run, n) = crate::runs::import::import_run(store, &world, &name, &contents, &version).await?;
            eprintln!("{name}: {n} trajectories stored as run {run}");
            println!("{run}");
        }
        RunsCommand::Export { run, out } => {
            store.run(&run).await?;
            let unfinished = match out {
                Some(path) => crate::runs::export::export_run_to(store, &run, &path).await?,
                None => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                    crate::runs::export::export_run(store, &run, &mut stdout).await.context("writing to stdout")?
                }
            };
            if unfinished > 0 {
                eprintln!("{unfinished} trials of {run} have not finished and are not exported");
            }
        }
    }
    Ok(())
}
