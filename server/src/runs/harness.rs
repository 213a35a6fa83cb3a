//! `mirage runs import FILE…` for other harnesses' files (read by `foreign`): every file is read twice, once to
//! check it whole (so a bad file stores nothing) and plan the run's trials, then again to
//! store the trials a batch at a time (memory stays bounded by the batch, not the log).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::RunSpec;
use crate::db::{FinishedTrial, NewTrial, Store};
use crate::env::World;
use crate::foreign::{Format, Imported, Mapping, agentdojo, atif, detect, inspect};
use vocab::{RunId, TrialId};

/// The files to read: the paths given, directories walked for `.json`, `.jsonl` and
/// `.eval` files (in name order).
pub fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found).with_context(|| format!("reading directory {}", p.display()))?;
            if found.is_empty() {
                bail!("{}: no .json, .jsonl or .eval files in this directory", p.display());
            }
            found.sort();
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            bail!("{}: no such file or directory", p.display());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| ["json", "jsonl", "eval"].contains(&e)) {
            out.push(path);
        }
    }
    Ok(())
}

/// A file's format: forced, or recognised from its first bytes.
pub fn format_of(path: &Path, forced: Option<Format>) -> anyhow::Result<Format> {
    if let Some(f) = forced {
        return Ok(f);
    }
    use std::io::Read;
    let mut head = Vec::with_capacity(16 * 1024);
    std::fs::File::open(path)
        .and_then(|f| f.take(16 * 1024).read_to_end(&mut head))
        .with_context(|| format!("reading {}", path.display()))?;
    detect(&head).with_context(|| {
        format!(
            "{}: not a format Mirage imports (Mirage trajectory lines, an Inspect AI log, an ATIF trajectory \
             or an AgentDojo result); name it with --format if it is one",
            path.display()
        )
    })
}

/// Reads every sample of the files, in order, handing each to `visit`.
fn read_all(
    files: &[(PathBuf, Format)],
    (world, mapping, limits): (&World, &Mapping, crate::foreign::Limits),
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    // A subagent's file named by another trajectory is read as that trajectory's subagent,
    // not a second time on its own.
    let mut subagent_files: HashSet<PathBuf> = HashSet::new();
    for (path, format) in files {
        if *format == Format::Atif {
            subagent_files.extend(atif::subagent_files(path).into_iter().map(|p| p.canonicalize().unwrap_or(p)));
        }
    }
    for (path, format) in files {
        if subagent_files.contains(&path.canonicalize().unwrap_or_else(|_| path.clone())) {
            continue;
        }
        let file = path.display().to_string();
        match format {
            Format::Inspect => inspect::read(&file, path, (world, mapping, limits), visit)?,
            Format::Agentdojo => {
                let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
                visit(agentdojo::read(&file, &bytes, world, mapping)?)?;
            }
            Format::Atif => {
                let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
                atif::read(&file, path, &bytes, world, mapping, visit)?;
            }
            Format::Mirage => bail!("{file}: Mirage trajectory lines are imported on their own (one file per run)"),
        }
    }
    Ok(())
}

/// Imports other harnesses' files as one finished run; returns the run id and the number
/// of trials. Nothing is stored unless every file reads cleanly.
pub async fn import_files(
    store: &std::sync::Arc<dyn Store>,
    world: &std::sync::Arc<World>,
    paths: &[PathBuf],
    forced: Option<Format>,
    (mapping, limits): (&Mapping, crate::foreign::Limits),
    corpus_version: &str,
) -> anyhow::Result<(RunId, usize)> {
    let files: Vec<(PathBuf, Format)> =
        expand(paths)?.into_iter().map(|p| format_of(&p, forced).map(|f| (p, f))).collect::<anyhow::Result<_>>()?;
    let reading = Reading { world: world.clone(), mapping: mapping.clone(), files, limits };
    // First pass: everything parses, no trial twice; the plan of the run.
    let (planned, harnesses) = reading.clone().plan().await?;
    if planned.is_empty() {
        bail!("{}: no samples", reading.names().join(", "));
    }
    let spec = spec_of(&reading.names(), &planned, harnesses);
    let run_id = super::new_run_id();
    store.create_run(&run_id, &serde_json::to_string(&spec)?, corpus_version, &planned).await?;
    let total = planned.len();
    drop(planned);

    // Second pass: the same samples in the same order, stored a batch at a time.
    let (stored, outcome) = reading.store(store, &run_id, (total, spec.manipulates())).await?;
    super::import::settle(store.as_ref(), &run_id, outcome, format!(" after {stored} of {total} samples")).await?;
    Ok((run_id, total))
}

/// The files of an import and what reads them, handed to a blocking thread for each pass.
#[derive(Clone)]
struct Reading {
    world: std::sync::Arc<World>,
    mapping: Mapping,
    files: Vec<(PathBuf, Format)>,
    limits: crate::foreign::Limits,
}

impl Reading {
    fn names(&self) -> Vec<String> {
        self.files.iter().map(|(p, _)| p.display().to_string()).collect()
    }

    /// The first pass: every sample's trial, refusing a second sample of one trial, and the
    /// harnesses the files came from.
    async fn plan(self) -> anyhow::Result<(Vec<NewTrial>, BTreeSet<&'static str>)> {
        tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let mut planned: Vec<NewTrial> = Vec::new();
            let mut harnesses = BTreeSet::new();
            let mut keys = HashSet::new();
            read_all(&self.files, (&self.world, &self.mapping, self.limits), &mut |s: Imported| {
                let t = &s.trial;
                let key = (t.task_id.clone(), t.agent.clone(), t.level.clone(), t.condition.clone(), t.seed);
                if !keys.insert(key) {
                    bail!(
                        "{}: a second sample of {} by {} at {} / {} / seed {}",
                        s.place,
                        t.task_id,
                        t.agent,
                        t.level,
                        t.condition,
                        t.seed
                    );
                }
                self.limits.check_steps(&s.place, &s.steps)?;
                harnesses.insert(s.origin.harness.as_str());
                planned.push(s.trial);
                Ok(())
            })?;
            Ok((planned, harnesses))
        })
        .await?
    }

    /// The second pass: reads the samples again, in the order of the first, and stores them
    /// into the run's trials a batch at a time. Returns how many were stored and whether the
    /// pass completed (the files gave the same number of samples and every batch stored).
    async fn store(
        self,
        store: &std::sync::Arc<dyn Store>,
        run_id: &RunId,
        (total, manipulates): (usize, bool),
    ) -> anyhow::Result<(usize, anyhow::Result<()>)> {
        let trials = store.trials(run_id).await?;
        // Samples of Mirage's own tasks are scored once stored; the others get their
        // harness's record when the run is scored.
        let wanted = trials
            .iter()
            .filter(|t| !vocab::TaskRef::is_foreign(&t.task_id) && self.world.task(&t.task_id).is_some())
            .map(|t| t.trial_id.clone())
            .collect();
        let ids: Vec<TrialId> = trials.into_iter().map(|t| t.trial_id).collect();
        let world = self.world.clone();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<anyhow::Result<FinishedTrial>>(16);
        let reader = tokio::task::spawn_blocking(move || {
            let mut ids = ids.into_iter();
            let result = read_all(&self.files, (&self.world, &self.mapping, self.limits), &mut |s: Imported| {
                let trial_id = ids.next().context("the files gave more samples on the second reading")?;
                let steps = s.steps.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
                let origin = Some((s.origin.sample.clone(), serde_json::to_string(&s.origin)?));
                tx.blocking_send(Ok(FinishedTrial { trial_id, steps, end: s.end, origin }))
                    .map_err(|_| anyhow::anyhow!("the import stopped"))
            });
            if let Err(e) = result {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let mut batches = super::import::Batches::new(store, run_id, (&world, wanted, manipulates));
        let outcome: anyhow::Result<()> = async {
            while let Some(item) = rx.recv().await {
                batches.push(item?).await?;
            }
            batches.flush().await?;
            if batches.stored != total {
                bail!("the files gave {} samples on the second reading, {total} on the first", batches.stored);
            }
            Ok(())
        }
        .await;
        let stored = batches.scored().await;
        // A failed batch leaves the reader blocked on a full channel: closing it lets the
        // reader stop at its next sample.
        drop(rx);
        reader.await.context("the reader stopped")?;
        Ok((stored, outcome))
    }
}

/// The spec of an imported run: its name says the harnesses and the files; its agents,
/// levels, conditions and seeds are those of the planned trials.
fn spec_of(names: &[String], planned: &[NewTrial], harnesses: BTreeSet<&str>) -> RunSpec {
    let label = match names {
        [one] => one.clone(),
        [first, ..] => format!("{first} and {} more", names.len() - 1),
        [] => String::new(),
    };
    // In the order of their names, as runs imported before recorded them.
    let harnesses: Vec<&str> = harnesses.into_iter().collect();
    super::import::imported_spec(
        &format!("imported from {} ({label})", harnesses.join(", ")),
        format!("imported:{}", harnesses.join("+")),
        planned,
    )
}
