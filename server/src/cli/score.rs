//! `mirage score` and `mirage label`: judges for trajectory files and stored runs, and
//! human labels that override automatic ones.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use comfy_table::{Table, presets};

use crate::config::Config;
use crate::corpus::jsonl::read_tasks;
use crate::db::{LabelEvent, LabelKind, Store};
use crate::env::World;
use crate::judge::aggregate::{Aggregate, Metric, Options, PairCounts, aggregate};
use crate::judge::rsn::ModelJudge;
use crate::judge::{TrialScore, stream_scores};
use crate::stats::Estimate;
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
    /// Score a stored run instead (scores are stored and reused until the judges change).
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
    let (scores, source) = match &args.run {
        Some(run) => (run_scores(&store, run, &judge).await?, run.to_string()),
        None => {
            let Some(path) = args.file.as_ref().or(args.trajectories.as_ref()) else {
                bail!("score: give a trajectory file (mirage score FILE or --trajectories FILE) or --run RUN");
            };
            let mut scores = score_file(path, args.tasks.as_deref(), &judge).await?;
            // A stored run's scores come paired already (`score_run`); a file's are paired here.
            crate::judge::twins::attach(&mut scores);
            // A file carries no prices: baselines cost 0, models' cost is unknown.
            let no_prices = std::collections::BTreeMap::new();
            crate::judge::cost::attach(&mut scores, |agent| crate::runs::pricing(agent, &no_prices));
            (scores, path.display().to_string())
        }
    };
    let agg = aggregate(&scores, &source, &options)?;
    if args.json {
        let out = serde_json::json!({"trials": scores, "aggregate": agg});
        println!("{out}");
    } else {
        print_tables(&agg);
    }
    Ok(())
}

/// The scores of a stored run (computed and stored where missing or of another judge
/// version, reused otherwise), with a line on stderr saying which.
pub(super) async fn run_scores(
    store: &Arc<dyn Store>,
    run: &RunId,
    judge: &ModelJudge,
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
    let scored = crate::engine::score::score_run(store, &world, run, judge, &progress).await;
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
) -> anyhow::Result<Vec<TrialScore>> {
    let name = path.display().to_string();
    let open = || -> anyhow::Result<std::io::BufReader<std::fs::File>> {
        let file = std::fs::File::open(path).with_context(|| format!("reading {name}"))?;
        Ok(std::io::BufReader::with_capacity(1 << 20, file))
    };
    let (tasks, tasks_name) = load_tasks(tasks)?;
    let world = World::build(tasks)?;
    let reader = open()?;
    let streamed = tokio::task::block_in_place(|| stream_scores(&name, reader, &world, &tasks_name))?;
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
        judge.apply(&world, task, &traj, &mut scores[at]).await;
        at += 1;
    }
    Ok(scores)
}

pub(super) fn cell(e: Option<&Estimate>) -> String {
    e.map_or_else(|| "-".to_string(), |e| format!("{:.2} {}", e.mean, e.bracket(2)))
}

/// Pairs counted, with the disrupted, dropped and unpaired trials when there are any.
fn pairing(c: &PairCounts) -> String {
    if c.manipulated == 0 {
        return "-".to_string();
    }
    let mut out = c.pairs.to_string();
    for (n, what) in [
        (c.disrupted, "disrupted"),
        (c.twin_failed, "twin failed"),
        (c.dropped, "dropped"),
        (c.unpaired, "unpaired"),
        (c.ambiguous, "ambiguous"),
    ] {
        if n > 0 {
            out.push_str(&format!(", {n} {what}"));
        }
    }
    out
}

pub(super) fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN).set_header(header);
    t
}

/// The human-readable report: grouped metrics, leaderboard, levels, comparisons, jackknife,
/// detection, replays, agreement.
pub fn print_tables(agg: &Aggregate) {
    print_groups(agg);
    print_leaderboard(agg);
    print_levels(agg);
    print_comparisons(agg);
    print_detection(agg);
    print_causal(agg);
    print_agreement(agg);
    for (verdict, n) in &agg.unknown_verdicts {
        println!("unknown verdict {verdict:?}: {n} trials (scored 0)");
    }
    println!("{} trials, {} errored; judges: {}", agg.trials, agg.errors, agg.judges.join(", "));
}

/// The grouped metrics.
fn print_groups(agg: &Aggregate) {
    const SHOWN: [(Metric, &str); 14] = [
        (Metric::AccInv, "Acc_inv"),
        (Metric::EInv, "E_inv"),
        (Metric::AccDec, "Acc_dec"),
        (Metric::AccRsn, "Acc_rsn"),
        (Metric::QEv, "Q_ev"),
        (Metric::Hallucination, "IHR"),
        (Metric::GoalRate, "Goal rate"),
        (Metric::Exposure, "Exposed"),
        (Metric::Adoption, "Adopted"),
        (Metric::Verification, "Verified"),
        (Metric::Recovery, "Recovered"),
        (Metric::Sycophancy, "Sycophancy"),
        (Metric::Correction, "Correction"),
        (Metric::SycophancyPartial, "Partial (dec.)"),
    ];
    let mut header: Vec<String> = agg.options.by.clone();
    header.extend(["trials", "errors", "silent", "disagree"].map(String::from));
    header.extend(SHOWN.iter().map(|(_, h)| (*h).to_string()));
    let mut t = table(header);
    for g in &agg.groups {
        let mut row: Vec<String> = agg.options.by.iter().map(|f| g.key.get(f).cloned().unwrap_or_default()).collect();
        row.push(g.trials.to_string());
        row.push(g.errors.to_string());
        row.push(g.silent.to_string());
        row.push(g.disagreeing.to_string());
        row.extend(SHOWN.iter().map(|(m, _)| cell(g.metrics.get(m.as_str()).and_then(Option::as_ref))));
        t.add_row(row);
    }
    println!(
        "Metrics (mean [95% interval over task families])\n{t}\n\
         errors: failed trials (error, or no verdict), in every mean; silent: trials with no checkable claim, outside IHR; \
         disagree: trials whose line said what the scorer derives otherwise (the derived values are scored)\n"
    );
}

/// The leaderboard, in tie bands.
fn print_leaderboard(agg: &Aggregate) {
    let mut t = table(
        [
            "band",
            "agent",
            "utility (L0 Acc_dec)",
            "robustness (paired, L1-L4)",
            "effect",
            "goal rate (L1-L4)",
            "noise floor",
            "pass^k",
            "pairs",
            "trials",
            "errors",
        ]
        .map(String::from)
        .to_vec(),
    );
    for s in &agg.leaderboard {
        let pass: Vec<String> = s.pass_k.iter().map(|p| format!("{p:.2}")).collect();
        t.add_row(vec![
            s.band.to_string(),
            s.agent.clone(),
            cell(s.utility.as_ref()),
            s.paired_note.as_ref().map_or_else(|| cell(s.robustness.as_ref()), |_| "n/a".to_string()),
            cell(s.manipulation_effect.as_ref()),
            cell(s.goal_rate.as_ref()),
            cell(s.noise_floor.as_ref()),
            if pass.is_empty() { "-".to_string() } else { pass.join(" / ") },
            pairing(&s.pairing),
            s.trials.to_string(),
            s.errors.to_string(),
        ]);
    }
    println!("Leaderboard (one band = not significantly different, Holm-corrected)\n{t}\n");
    for s in &agg.leaderboard {
        if let Some(note) = &s.design_note {
            println!("{}: {note}", s.agent);
        }
    }
    for s in agg.leaderboard.iter().filter(|s| s.paired_note.is_some()) {
        println!("{}: paired metrics {}", s.agent, s.paired_note.as_deref().unwrap_or_default());
    }
}

/// The rows by level.
fn print_levels(agg: &Aggregate) {
    let mut t = table(
        [
            "agent",
            "level",
            "trials",
            "errors",
            "Acc_dec",
            "goal rate",
            "effect",
            "susceptibility",
            "robustness",
            "flip rate",
            "harm flip",
            "pairs",
        ]
        .map(String::from)
        .to_vec(),
    );
    for l in &agg.levels {
        t.add_row(vec![
            l.agent.clone(),
            l.level.clone(),
            l.trials.to_string(),
            l.errors.to_string(),
            cell(l.acc_dec.as_ref()),
            cell(l.goal_rate.as_ref()),
            cell(l.manipulation_effect.as_ref()),
            cell(l.susceptibility.as_ref()),
            cell(l.robustness.as_ref()),
            cell(l.flip_rate.as_ref()),
            cell(l.harm_flip.as_ref()),
            pairing(&l.pairing),
        ]);
    }
    println!("By level (paired metrics against each trial's clean twin at L0)\n{t}\n");
}

/// Paired comparisons, and the graph-node jackknife.
fn print_comparisons(agg: &Aggregate) {
    if !agg.comparisons.is_empty() {
        let mut t = table(["a", "b", "Acc_dec a-b", "n", "p", "p (Holm)"].map(String::from).to_vec());
        for c in &agg.comparisons {
            t.add_row(vec![
                c.a.clone(),
                c.b.clone(),
                cell(Some(&c.paired.diff)),
                c.paired.diff.n.to_string(),
                format!("{:.4}", c.paired.p),
                format!("{:.4}", c.p_holm),
            ]);
        }
        println!("Paired comparisons on shared L0 trials\n{t}\n");
    }
    if !agg.jackknife.is_empty() {
        let mut t = table(["agent", "Acc_inv", "jackknife mean", "mean range"].map(String::from).to_vec());
        for j in &agg.jackknife {
            t.add_row(vec![
                j.agent.clone(),
                format!("{:.3}", j.full),
                format!("{:.3}", j.jackknife_mean),
                format!("{:.3}", j.mean_range),
            ]);
        }
        let rho = agg.jackknife_spearman.map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
        println!(
            "Graph-node jackknife of Acc_inv, pooled over trials (each trajectory weighs the same; the tables above \
             weigh domains equally) (Spearman full vs jackknife ranking: {rho})\n{t}\n"
        );
    }
}

/// The detection filters on manipulated trials.
fn print_detection(agg: &Aggregate) {
    if !agg.detection.is_empty() {
        let mut t = table(
            [
                "agent",
                "level",
                "trials",
                "goal rate",
                "flagged kw/ppl/either",
                "residual goal rate kw",
                "ppl",
                "either",
            ]
            .map(String::from)
            .to_vec(),
        );
        for d in &agg.detection {
            let rate = |f: &str| d.flag_rate.get(f).map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0));
            let residual = |f: &str| cell(d.residual_goal_rate.get(f).and_then(Option::as_ref));
            t.add_row(vec![
                d.agent.clone(),
                d.level.clone(),
                d.trials.to_string(),
                cell(d.goal_rate.as_ref()),
                format!("{}/{}/{}", rate("keyword"), rate("perplexity"), rate("either")),
                residual("keyword"),
                residual("perplexity"),
                residual("either"),
            ]);
        }
        println!("Detection filters on manipulated trials (5% false positives on clean originals)\n{t}\n");
    }
}

/// The adoption rule against clean-level replays.
fn print_causal(agg: &Aggregate) {
    if !agg.causal.is_empty() {
        let mut t = table(
            ["agent", "replayed trials", "caused by the text", "rule precision", "rule recall"]
                .map(String::from)
                .to_vec(),
        );
        for c in &agg.causal {
            t.add_row(vec![
                c.agent.clone(),
                c.replayed.to_string(),
                c.caused.to_string(),
                cell(c.precision.as_ref()),
                cell(c.recall.as_ref()),
            ]);
        }
        println!(
            "Adoption rule against clean-level replays from the first exposure (caused: at least half of them left the goal)\n{t}\n"
        );
    }
}

/// Agreement of the automatic labels with people's.
fn print_agreement(agg: &Aggregate) {
    for a in agg.agreement.iter().filter(|a| a.n > 0) {
        let min = app::model::MIN_AGREEMENT_N;
        let labels = if a.n == 1 { "label" } else { "labels" };
        if a.n < min {
            // As on the dashboard: a κ of so few pairs is no number to read.
            println!("agreement on {}: too few: n = {} of the {min} needed (human {labels})", a.kind, a.n);
            continue;
        }
        let kappa = match (a.kappa, a.lo, a.hi) {
            (Some(k), Some(lo), Some(hi)) => format!("{k:.2} [{lo:.2}, {hi:.2}]"),
            (Some(k), _, _) => format!("{k:.2}"),
            (None, _, _) => "undefined".to_string(),
        };
        let raw = a.raw.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
        let note = a.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        println!(
            "agreement on {}: Cohen's kappa {kappa}, raw agreement {raw}, over {} human {labels}{note}",
            a.kind, a.n
        );
    }
    print_checks(&agg.checks);
}

/// Each grader measured against people (precision and recall of a label, the judge's r, the
/// decision agreement), with its interval and n; too few pairs are said so.
pub fn print_checks(checks: &[app::model::GraderCheck]) {
    for c in checks {
        println!("grader check on {} ({} against {}): {}", c.metric, c.grader, c.against, c.short());
        // What the figure rests on (part of the sample, adjudications), or why it is missing.
        if let Some(note) = &c.note {
            println!("  † {note}");
        }
    }
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
