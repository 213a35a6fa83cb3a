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
pub enum Command {
    /// Serve the dashboard and the three investigation sites.
    Serve {
        /// Address to listen on. Keep it on loopback unless accounts are configured.
        #[arg(long, env = "MIRAGE_ADDR", default_value = "127.0.0.1:3000")]
        addr: SocketAddr,
        /// Folder with the built browser bundle (`pkg/`) and public files.
        #[arg(long, env = "MIRAGE_SITE_ROOT", default_value = "target/site")]
        site_root: PathBuf,
    },
    /// Work with the task corpus.
    Corpus {
        #[command(subcommand)]
        command: CorpusCommand,
    },
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
        Command::Serve { addr, site_root } => serve(store, addr, site_root).await,
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

async fn serve(store: Arc<SqlStore>, addr: SocketAddr, site_root: PathBuf) -> anyhow::Result<()> {
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
    let state = crate::app_state(store, options).await?;
    let tasks = state.world.task_count();
    let app = crate::router(state);
    println!("Mirage is listening on http://{addr} ({tasks} tasks)");
    axum::serve(listener, app).with_graceful_shutdown(shutdown()).await.context("serving HTTP")
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
