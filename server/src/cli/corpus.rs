//! `mirage corpus validate|export|import`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::corpus::jsonl::{read_tasks, write_tasks};
use crate::corpus::validate::validate_corpus;
use crate::db::Store;

/// `mirage corpus …`.
#[derive(Debug, Subcommand)]
pub enum CorpusCommand {
    /// Check a task file (or, without FILE, the stored corpus) against the schema and rules,
    /// and print its shape per site: pages per investigation and their depth, the category,
    /// difficulty and verdict mix, what a constant answer earns, and the scenario families.
    Validate {
        file: Option<PathBuf>,
        /// Also hold it to the MIRAGE paper's profile (graph sizes and depth, category and
        /// difficulty mix, no constant answer above the bound, families of several variants):
        /// the built-in corpus keeps it; a corpus of one's own need not.
        #[arg(long)]
        paper: bool,
    },
    /// Write the stored corpus as JSON Lines (stdout by default).
    Export {
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Add the tasks of a JSON Lines file. All or nothing: any problem stores nothing.
    Import { file: PathBuf },
}

pub(super) async fn corpus(store: &dyn Store, command: CorpusCommand) -> anyhow::Result<()> {
    match command {
        CorpusCommand::Validate { file, paper } => validate(store, file, paper).await,
        CorpusCommand::Export { out } => export(store, out).await,
        CorpusCommand::Import { file } => import(store, &file).await,
    }
}

async fn validate(store: &dyn Store, file: Option<PathBuf>, paper: bool) -> anyhow::Result<()> {
    match file {
        Some(path) => {
            let name = path.display().to_string();
            let contents = std::fs::read_to_string(&path).with_context(|| format!("reading {name}"))?;
            match read_tasks(&name, &contents) {
                Ok(tasks) => {
                    println!("{name}: {} tasks, all valid\n", tasks.len());
                    shape_of(&name, &tasks, paper)
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
                println!("stored corpus: {} tasks, all valid\n", tasks.len());
                shape_of("stored corpus", &tasks, paper)
            } else {
                bail!("stored corpus: {} problems", findings.len())
            }
        }
    }
}

/// Prints the shape of `tasks`; with `paper`, fails on every departure from the paper's
/// profile, each named by task and field.
fn shape_of(name: &str, tasks: &[crate::corpus::Task], paper: bool) -> anyhow::Result<()> {
    use crate::corpus::shape;
    print!("{}", shape::table(&shape::shape(tasks)));
    if !paper {
        return Ok(());
    }
    let findings = shape::paper_findings(tasks);
    for f in &findings {
        eprintln!("{name}: {f}");
    }
    if findings.is_empty() {
        println!("{name}: keeps the paper's profile");
        Ok(())
    } else {
        bail!("{name}: {} departures from the paper's profile", findings.len())
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
