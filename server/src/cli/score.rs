//! `mirage score` and `mirage label`: judges for trajectory files and stored runs, and
//! human labels that override automatic ones.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};

pub(super) use super::score_tables::{cell, print_checks, print_tables, table};
use crate::config::Config;
use crate::corpus::jsonl::read_tasks;
use crate::db::{LabelEvent, LabelKind, Store};
use crate::env::World;
use crate::judge::aggregate::{Options, aggregate};
use crate::judge::aside::{Keep, Spill};
use crate::judge::rsn::ModelJudge;
use crate::judge::{TrialScore, stream_scores};
use app::model::{RunId, TrialId};

/// `mirage score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Trajectory file (JSON Lines, schemas/trajectory.schema.json); the same as --trajectories.
    #[arg(conflicts_with_all = ["trajectories", "run"])]
    pub file: Option<PathBuf>,
    /// Trajectory file (JSON Lines, schemas/trajectory.schema.json).
    #[arg(long, conflicts_with = "run")]
    pub trajectories: Option<PathBuf>,
    /// Task file the trajectories refer to (default: the built-in corpus).
    #[arg(long, conflicts_with = "run")]
    pub tasks: Option<PathBuf>,
    /// Score a stored run instead (scores are stored, by the run as its trials finish or by
    /// the first scoring, and reused until the judges change).
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print one JSON object: {"trials": [...], "aggregate": {...}}.
    #[arg(long)]
    pub json: bool,
    /// Group the table by these fields: run, agent, level, condition, domain, category.
    #[arg(long, value_delimiter = ',', default_value = "agent")]
    pub by: Vec<String>,
    /// Config file with `[endpoints.NAME]` and `[roles]` (the judge role scores reasoning).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Endpoint (from the config) to use as the reasoning judge, overriding `roles.judge`.
    #[arg(long)]
    pub judge: Option<String>,
    /// Test the graders instead: every task's correct trajectory (of --tasks, or the
    /// built-in corpus) with its decisive visit dropped, its verdict swapped for a harmful
    /// one, an invented URL or amount cited, or its facts pasted without the visits; fails
    /// naming any mutation the figure meant to catch it lets through.
    #[arg(long, conflicts_with_all = ["file", "trajectories", "run"])]
    pub self_test: bool,
}

/// `mirage label`.
#[derive(Debug, clap::Args)]
pub struct LabelArgs {
    pub trial: TrialId,
    /// exposure, adoption, verification or recovery.
    pub kind: String,
    /// true or false.
    #[arg(action = clap::ArgAction::Set)]
    pub value: bool,
    /// Why: shown beside the label.
    #[arg(long)]
    pub note: String,
    #[arg(long, env = "USER", default_value = "annotator")]
    pub author: String,
    /// The step index the label points at.
    #[arg(long)]
    pub turn: Option<i64>,
    /// Record an adjudication, which settles the label at once; without it this is one
    /// annotator's label, which settles it only when the run's number of annotators agree.
    #[arg(long)]
    pub adjudicate: bool,
}

/// `mirage score`.
pub(super) async fn score(store: Arc<dyn Store>, args: ScoreArgs) -> anyhow::Result<()> {
    if args.self_test {
        return tokio::task::block_in_place(|| self_test(args.tasks.as_deref(), args.json));
    }
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(name) = &args.judge {
        config.set_judge(name)?;
    }
    let judge = ModelJudge::from_config(&config, store.clone())?;
    let options = Options { by: args.by.clone(), ..Options::default() };
    // The scores keep only what the figures need in memory; the rest of each record waits
    // in a temporary file when it is printed, or when the model judge reads a file's.
    let model_reads_file = args.run.is_none() && !matches!(judge, ModelJudge::Coverage);
    let spill = (args.json || model_reads_file).then(Spill::new).transpose()?;
    let keep = spill.as_ref().map_or(Keep::Figures, Keep::Spilled);
    let (scores, source) = match &args.run {
        Some(run) => (run_scores(&store, run, &judge, keep).await?, run.to_string()),
        None => {
            let Some(path) = args.file.as_ref().or(args.trajectories.as_ref()) else {
                bail!("score: give a trajectory file (mirage score FILE or --trajectories FILE) or --run RUN");
            };
            let mut scores = score_file(path, args.tasks.as_deref(), &judge, keep).await?;
            // A stored run's scores come paired already (`score_run`); a file's are paired here.
            crate::judge::twins::attach(&mut scores);
            // A file carries no prices: baselines cost 0, models' cost is unknown.
            let no_prices = std::collections::BTreeMap::new();
            crate::judge::cost::attach(&mut scores, |agent| crate::runs::pricing(agent, &no_prices));
            (scores, path.display().to_string())
        }
    };
    if !args.json {
        print_tables(&aggregate(&scores, &source, &options)?);
        return Ok(());
    }
    // The records are written while the tables are made (nothing is written when the
    // options cannot be aggregated by).
    options.check()?;
    let (agg, printed) =
        rayon::join(|| aggregate(&scores, &source, &options), || print_trials(&scores, spill.as_ref()));
    printed?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer(&mut out, &agg?)?;
    out.write_all(b"}\n")?;
    out.flush()?;
    Ok(())
}

/// Records serialised side by side before they are written, in order: a window of them
/// at a time, in pieces for whichever core is free (the aggregate is made beside them). A
/// window's records are held whole while it is serialised, so a window ends at
/// [`PRINT_WINDOW`] records or once their set-aside detail passes [`PRINT_BYTES`].
const PRINT_WINDOW: usize = 1024;
const PRINT_BYTES: usize = 8 << 20;
const PRINT_PIECE: usize = 32;

/// `records` cut into print windows (`bytes`: how much a record adds to what a window
/// holds), each with the index of its first record.
fn print_windows<T>(records: &[T], bytes: impl Fn(&T) -> usize) -> impl Iterator<Item = (usize, &[T])> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start == records.len() {
            return None;
        }
        let (mut end, mut held) = (start, 0);
        while end < records.len() && end - start < PRINT_WINDOW && (end == start || held < PRINT_BYTES) {
            held += bytes(&records[end]);
            end += 1;
        }
        let window = (start, &records[start..end]);
        start = end;
        Some(window)
    })
}

/// `{"trials": [...], "aggregate":` on stdout, written as it is made: each record whole
/// (its detail read back from `spill` into a copy) and then let go. Records are written up
/// to the first (in file order) whose detail cannot be read back, whose error is returned.
fn print_trials(scores: &[TrialScore], spill: Option<&Spill>) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let record = |s: &TrialScore, into: &mut Vec<u8>| -> anyhow::Result<()> {
        match spill {
            Some(spill) => {
                let mut whole = s.clone();
                spill.restore(&mut whole)?;
                serde_json::to_writer(into, &whole)?;
            }
            None => serde_json::to_writer(into, s)?,
        }
        Ok(())
    };
    // A piece's bytes up to its first failing record, and that record's error.
    let piece = |(k, records): (usize, &[TrialScore])| -> (Vec<u8>, anyhow::Result<()>) {
        let mut bytes = Vec::with_capacity(records.len() << 12);
        for (i, s) in records.iter().enumerate() {
            let before = bytes.len();
            if k + i > 0 {
                bytes.push(b',');
            }
            if let Err(e) = record(s, &mut bytes) {
                bytes.truncate(before);
                return (bytes, Err(e));
            }
        }
        (bytes, Ok(()))
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    out.write_all(b"{\"trials\":[")?;
    for (first, window) in print_windows(scores, TrialScore::aside_bytes) {
        let pieces: Vec<(Vec<u8>, anyhow::Result<()>)> = window
            .par_chunks(PRINT_PIECE)
            .enumerate()
            .map(|(p, records)| piece((first + p * PRINT_PIECE, records)))
            .collect();
        for (bytes, done) in pieces {
            out.write_all(&bytes)?;
            done?;
        }
    }
    out.write_all(b"],\"aggregate\":")?;
    out.flush()?;
    Ok(())
}

/// The scores of a stored run (computed and stored where missing or of another judge
/// version, reused otherwise), with a line on stderr saying which.
pub(super) async fn run_scores(
    store: &Arc<dyn Store>,
    run: &RunId,
    judge: &ModelJudge,
    keep: Keep<'_>,
) -> anyhow::Result<Vec<TrialScore>> {
    store.run(run).await?;
    crate::db::seed_if_empty(store.as_ref()).await?;
    let world = Arc::new(World::build(store.all_tasks().await?)?);
    // A bar on stderr while a large run is scored (hidden when stderr is not a terminal).
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} trials scored  {per_sec}  eta {eta}")
            .map_err(|e| anyhow::anyhow!("progress template: {e}"))?,
    );
    let progress = |done: usize, total: usize| {
        bar.set_length(u64::try_from(total).unwrap_or(0));
        bar.set_position(u64::try_from(done).unwrap_or(0));
    };
    let scored = crate::engine::score::score_run_as_of(store, &world, run, judge, &progress, (None, keep)).await;
    bar.finish_and_clear();
    let (scores, computed) = scored?;
    let records = scores.iter().filter(|s| vocab::TaskRef::is_foreign(&s.task_id)).count();
    let from_records = if records > 0 { format!(", {records} from their harness's record") } else { String::new() };
    eprintln!(
        "run {run}: {} trials scored ({computed} computed now, {} reused{from_records}) by {}",
        scores.len(),
        scores.len() - computed - records,
        judge.version()
    );
    Ok(scores)
}

/// Scores a trajectory file against a task file (or the built-in corpus). Every problem
/// (schema, unknown task, repeated trial id) is reported with file and line; nothing is
/// scored unless the whole file is sound. The file is streamed: the rule-based judges run
/// on every core as lines are read, and only the scores are kept; with a model judge the
/// lines are read once more to ask it.
/// The tasks of `--tasks FILE` (each problem printed), or the built-in corpus; with the
/// name to report them by.
fn load_tasks(tasks: Option<&std::path::Path>) -> anyhow::Result<(Vec<crate::corpus::Task>, String)> {
    let Some(t) = tasks else {
        return Ok((crate::corpus::generate::corpus(), "the built-in corpus".to_string()));
    };
    let tname = t.display().to_string();
    let text = std::fs::read_to_string(t).with_context(|| format!("reading {tname}"))?;
    match read_tasks(&tname, &text) {
        Ok(tasks) => Ok((tasks, tname)),
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            bail!("{tname}: {} problems; nothing was scored", errors.len());
        }
    }
}

/// `mirage score --self-test`: the graders against mutations of every task's correct
/// trajectory; fails naming each mutation a grader let through.
fn self_test(tasks: Option<&std::path::Path>, json: bool) -> anyhow::Result<()> {
    use crate::judge::selftest;
    let (tasks, name) = load_tasks(tasks)?;
    let world = World::build(tasks)?;
    let outcomes = selftest::run(&world, &selftest::rules(&world));
    if json {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else {
        let mut t =
            table(["mutation", "caught by", "tasks", "caught", "missed (first tasks)"].map(String::from).to_vec());
        for o in &outcomes {
            t.add_row(vec![
                o.mutation.to_string(),
                o.figure.to_string(),
                o.tried.to_string(),
                (o.tried - o.missed.len()).to_string(),
                o.missed.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            ]);
        }
        println!("Grader self-tests over {name}: each task's correct trajectory, mutated\n{t}");
    }
    let missed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.missed.is_empty())
        .map(|o| format!("{} ({} tasks)", o.mutation, o.missed.len()))
        .collect();
    if !missed.is_empty() {
        bail!("the graders let these mutations through: {}", missed.join(", "));
    }
    Ok(())
}

async fn score_file(
    path: &std::path::Path,
    tasks: Option<&std::path::Path>,
    judge: &ModelJudge,
    keep: Keep<'_>,
) -> anyhow::Result<Vec<TrialScore>> {
    let name = path.display().to_string();
    let open = || -> anyhow::Result<std::io::BufReader<std::fs::File>> {
        let file = std::fs::File::open(path).with_context(|| format!("reading {name}"))?;
        Ok(std::io::BufReader::with_capacity(1 << 20, file))
    };
    let (tasks, tasks_name) = load_tasks(tasks)?;
    let reader = open()?;
    let bytes = reader.get_ref().metadata().ok().map(|m| m.len());
    let (world, streamed) = tokio::task::block_in_place(|| -> anyhow::Result<_> {
        // The perplexity filter (which the first manipulated trial needs, and every worker
        // would wait for) is trained from the tasks while the world is built from them.
        let world = crate::detect::world_trained(tasks.into_iter().map(Arc::new).collect())?;
        let scores = stream_scores((&name, bytes), reader, &world, &tasks_name, keep)?;
        Ok((world, scores))
    })?;
    let mut scores = match streamed {
        Ok(scores) => scores,
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            bail!("{name}: {} problems; nothing was scored", problems.len());
        }
    };
    if matches!(judge, ModelJudge::Coverage) {
        for s in &mut scores {
            s.judge_version = judge.version();
        }
        return Ok(scores);
    }
    // A model judge reads each trajectory again (the file was checked whole above).
    use std::io::BufRead;
    let mut at = 0;
    for line in open()?.lines() {
        let line = line.with_context(|| format!("reading {name}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let traj: crate::judge::Trajectory =
            serde_json::from_str(&line).with_context(|| format!("{name}: re-reading"))?;
        let task = world.task(&traj.task_id).context("the trajectory's task was checked")?;
        let score = &mut scores[at];
        if let Keep::Spilled(spill) = keep {
            spill.restore(score)?;
        }
        judge.apply(&world, task, &traj, score).await;
        score.keep(keep)?;
        at += 1;
    }
    Ok(scores)
}

/// `mirage label`: appends a person's label event (an adjudication with `--adjudicate`).
pub(super) async fn label(store: &dyn Store, args: LabelArgs) -> anyhow::Result<()> {
    let LabelArgs { trial, kind, value, note, author, turn, adjudicate } = args;
    let (trial, note, author) = (&trial, note.as_str(), author.as_str());
    let kind = LabelKind::parse(&kind).map_err(|e| anyhow::anyhow!("kind: {:?} is not one of {}", e.name, e.known))?;
    if note.trim().is_empty() {
        bail!("--note: say why (it is shown beside the label)");
    }
    // The dashboard's cap holds here too.
    if note.chars().count() > app::model::MAX_NOTE_CHARS {
        bail!("--note: at most {} characters, not {}", app::model::MAX_NOTE_CHARS, note.chars().count());
    }
    store.trial(trial).await?;
    // A person's blind label is final here as on the dashboard: a second one by the same
    // author is refused (an adjudication changes a label).
    if !adjudicate
        && let Some(first) = store
            .trial_label_events(trial)
            .await?
            .into_iter()
            .find(|e| e.kind == kind && e.source == "human" && e.author.as_deref() == Some(author))
    {
        bail!(
            "{author} labelled the {kind} label of {trial} {} already; a label is final once given \
             (--adjudicate changes it)",
            if first.value.0 { "yes" } else { "no" }
        );
    }
    let id = store
        .add_label(&LabelEvent {
            event_id: 0,
            trial_id: trial.clone(),
            kind,
            value: value.into(),
            turn,
            source: if adjudicate { "adjudication" } else { "human" }.to_string(),
            confidence: 1.0,
            reason: note.to_string(),
            author: Some(author.to_string()),
            judge_version: None,
            created_at: crate::db::now_ms(),
        })
        .await?;
    let what = if adjudicate { "adjudicated" } else { "labelled" };
    println!("label {id}: {trial} {kind} = {value}, {what} by {author}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{PRINT_BYTES, PRINT_WINDOW, print_windows};

    /// Every record is in one window, in order; a window ends at its count, or at the record
    /// that takes what it holds past the bound (a record larger than the bound stands alone).
    #[test]
    fn print_windows_cover_the_records_and_hold_a_bounded_share() {
        let sized: Vec<usize> = (0..5_000).map(|i| if i % 700 == 0 { 20 << 20 } else { (i % 700) * 40 }).collect();
        for records in [vec![0; 10_000], sized, vec![7], Vec::new()] {
            let windows: Vec<(usize, &[usize])> = print_windows(&records, |&b| b).collect();
            let mut next = 0;
            for (first, window) in &windows {
                assert_eq!(*first, next);
                assert!(!window.is_empty() && window.len() <= PRINT_WINDOW);
                assert!(window[..window.len() - 1].iter().sum::<usize>() < PRINT_BYTES);
                next += window.len();
            }
            assert_eq!(next, records.len());
            if records.len() == 10_000 {
                assert!(windows[..9].iter().all(|(_, w)| w.len() == PRINT_WINDOW));
            }
            if records.len() == 5_000 {
                assert!(windows.iter().all(|(_, w)| w.len() < PRINT_WINDOW), "the bytes end these windows");
                assert!(windows.iter().any(|(_, w)| w.len() == 1 && w[0] > PRINT_BYTES));
            }
        }
    }
}
