//! The `mirage` command line: one file per command family, each holding its clap types
//! beside the code that runs them. Commands parse and print; the work is done by the
//! library modules they call.

mod compare;
mod corpus;
mod geo;
mod geo_tables;
mod manage_runs;
mod manip;
mod replay;
mod report;
mod run;
mod score;
mod score_tables;
mod serve;
mod users;
mod worker;

use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::db::{SqlStore, Store, database_url, seed_if_empty};

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

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard and the three investigation sites.
    Serve(serve::ServeArgs),
    /// Dashboard accounts. Without any, `serve` listens on loopback only and everyone
    /// local is the operator.
    User {
        #[command(subcommand)]
        command: users::UserCommand,
    },
    /// Work with the task corpus.
    Corpus {
        #[command(subcommand)]
        command: corpus::CorpusCommand,
    },
    /// Plan and execute a run (or resume one), with a progress bar.
    Run(Box<run::RunArgs>),
    /// Execute queued trials of active runs: extra workers beside `mirage run` or the
    /// dashboard, e.g. several processes against one PostgreSQL database.
    Worker(worker::WorkerArgs),
    /// Score trajectories (a file, or a stored run) with the judges and print the
    /// aggregates: a table by default, the documented JSON with --json.
    Score(Box<score::ScoreArgs>),
    /// Record a person's label for a trial. An adjudication (`--adjudicate`) overrides the
    /// automatic label everywhere at once; annotators' labels do when enough of them agree.
    Label(score::LabelArgs),
    /// The MIRAGE paper's tables for a stored run: per configuration and domain, Hint − Raw
    /// deltas, per category, ranking checks, appeals.
    Report(Box<report::ReportArgs>),
    /// Two runs, or two configurations (`RUN:CONFIG`), trial by trial: trials paired by
    /// task, condition, level and seed, each metric's difference b − a with a paired
    /// interval and Holm-adjusted p, and the verdicts that changed.
    Compare(Box<compare::CompareArgs>),
    /// Manipulation levels: see what an interested party's text becomes.
    Manip {
        #[command(subcommand)]
        command: manip::ManipCommand,
    },
    /// Detection filters for manipulated text.
    Detect {
        #[command(subcommand)]
        command: manip::DetectCommand,
    },
    /// The GEO ranking track: datasets, the ranking prompt, offline evaluation.
    Geo {
        #[command(subcommand)]
        command: geo::GeoCommand,
    },
    /// Counterfactual replay: re-run a finished trial from a turn with an intervention on
    /// what the agent sees (its manipulated text stripped, the clean level, the hidden
    /// evidence revealed, another ticket condition).
    Replay(replay::ReplayArgs),
    /// Inspect, cancel and export runs.
    Runs {
        #[command(subcommand)]
        command: manage_runs::RunsCommand,
    },
}

/// Whether a command failed because the reader of its output went away (a broken pipe),
/// also while JSON was being written: serde_json's error does not show the I/O error it
/// wraps as its source, so the chain is asked for either.
pub fn reader_went_away(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let io = c.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        let json = c.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind);
        io.or(json) == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Geo { command } = cli.command {
        return geo::geo(command, &cli.db).await;
    }
    let url = database_url(&cli.db)?;
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&url).await?);
    match cli.command {
        Command::Serve(args) => serve::serve(store, &cli.db, args).await,
        Command::User { command } => users::user(store.as_ref(), command).await,
        Command::Run(args) => {
            seed_if_empty(store.as_ref()).await?;
            run::run(store, *args).await
        }
        Command::Worker(args) => worker::worker(store, args).await,
        Command::Runs { command } => manage_runs::runs(store, command).await,
        Command::Manip { command } => {
            seed_if_empty(store.as_ref()).await?;
            manip::manip(store.as_ref(), command).await
        }
        Command::Detect { command } => {
            seed_if_empty(store.as_ref()).await?;
            manip::detect(store, command).await
        }
        Command::Score(args) => score::score(store, *args).await,
        Command::Label(args) => score::label(store.as_ref(), args).await,
        Command::Report(args) => report::run(store, *args).await,
        Command::Compare(args) => compare::run(store, *args).await,
        Command::Replay(args) => replay::replay(store, args).await,
        Command::Corpus { command } => {
            seed_if_empty(store.as_ref()).await?;
            corpus::corpus(store.as_ref(), command).await
        }
        Command::Geo { .. } => unreachable!("answered before the database is opened"),
    }
}

#[cfg(test)]
mod tests {
    /// A writer whose reader has gone.
    struct Gone;

    impl std::io::Write for Gone {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A broken pipe is told apart whether it came while writing bytes or JSON, with context
    /// added or not; another I/O error is not one.
    #[test]
    fn a_broken_pipe_is_told_apart_in_bytes_and_in_json() {
        use std::io::Write;
        let bytes = anyhow::Error::from(Gone.write_all(b"x").expect_err("gone"));
        let json = anyhow::Error::from(serde_json::to_writer(Gone, &[1, 2, 3]).expect_err("gone"));
        assert!(super::reader_went_away(&bytes) && super::reader_went_away(&json));
        assert!(super::reader_went_away(&json.context("writing the aggregate")));
        let full = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(!super::reader_went_away(&full));
        let parse = anyhow::Error::from(serde_json::from_str::<u8>("x").expect_err("not JSON"));
        assert!(!super::reader_went_away(&parse));
    }
}
