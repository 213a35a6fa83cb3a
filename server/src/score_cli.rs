//! `mirage score` and `mirage label`: judges for trajectory files and stored runs, and
//! human labels that override automatic ones.

use std::sync::Arc;

use anyhow::{Context, bail};
use comfy_table::{Table, presets};

use crate::cli::ScoreArgs;
use crate::config::Config;
use crate::corpus::jsonl::read_tasks;
use crate::db::{LabelEvent, SqlStore, Store};
use crate::env::World;
use crate::judge::aggregate::{Aggregate, Options, aggregate};
use crate::judge::rsn::ModelJudge;
use crate::judge::{Scorer, TrialScore, read_trajectories};
use crate::llm::HttpLlm;
use crate::stats::Estimate;

/// The reasoning judge the configuration asks for (temperature forced to 0).
pub fn judge_from(config: &Config, cache: Arc<dyn Store>) -> anyhow::Result<ModelJudge> {
    Ok(match config.judge() {
        Some((name, spec)) => {
            let mut spec = spec.clone();
            spec.temperature = 0.0;
            let model = spec.model.clone();
            let client = HttpLlm::new(spec).with_context(|| format!("judge endpoint {name}"))?;
            ModelJudge::Llm { model, client: Arc::new(client), cache, filter_threshold: Arc::default() }
        }
        None => ModelJudge::Coverage,
    })
}

/// `mirage score`.
pub async fn score(store: Arc<SqlStore>, args: ScoreArgs) -> anyhow::Result<()> {
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(name) = &args.judge {
        config.set_judge(name)?;
    }
    let judge = judge_from(&config, store.clone())?;
    let options =
        Options { by: args.by.clone(), resamples: args.resamples.max(1), seed: args.seed, ..Options::default() };
    let (scores, source) = match &args.run {
        Some(run) => {
            store.run(run).await?;
            crate::cli::seed_if_empty(store.as_ref()).await?;
            let world = World::build(store.all_tasks().await?)?;
            let (scores, computed) = crate::runs::score::score_run(store.as_ref(), &world, run, &judge).await?;
            eprintln!(
                "run {run}: {} trials scored ({computed} computed now, {} reused) by {}",
                scores.len(),
                scores.len() - computed,
                judge.version()
            );
            (scores, run.clone())
        }
        None => {
            let Some(path) = args.file.as_ref().or(args.trajectories.as_ref()) else {
                bail!("score: give a trajectory file (mirage score FILE or --trajectories FILE) or --run RUN");
            };
            let scores = score_file(path, args.tasks.as_deref(), &judge).await?;
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

/// Scores a trajectory file against a task file (or the built-in corpus). Every problem
/// (schema, unknown task, repeated trial id) is reported with file and line; nothing is
/// scored unless the whole file is sound.
async fn score_file(
    path: &std::path::Path,
    tasks: Option<&std::path::Path>,
    judge: &ModelJudge,
) -> anyhow::Result<Vec<TrialScore>> {
    let name = path.display().to_string();
    let contents = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let (tasks, tasks_name) = match tasks {
        Some(t) => {
            let tname = t.display().to_string();
            let text = std::fs::read_to_string(t).with_context(|| format!("reading {tname}"))?;
            match read_tasks(&tname, &text) {
                Ok(tasks) => (tasks, tname),
                Err(errors) => {
                    for e in &errors {
                        eprintln!("{e}");
                    }
                    bail!("{tname}: {} problems; nothing was scored", errors.len());
                }
            }
        }
        None => (crate::corpus::generate::corpus(), "the built-in corpus".to_string()),
    };
    let world = World::build(tasks)?;
    let lines = match read_trajectories(&name, &contents) {
        Ok(lines) => lines,
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            bail!("{name}: {} problems; nothing was scored", errors.len());
        }
    };
    let mut problems = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (line, t) in &lines {
        if world.task(&t.task_id).is_none() {
            problems.push(format!("{name}:{line}:task_id: task {:?} is not in {tasks_name}", t.task_id));
        }
        if let Some(first) = seen.insert(t.trial_id.clone(), *line) {
            problems.push(format!("{name}:{line}:trial_id: {:?} repeats line {first}", t.trial_id));
        }
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("{p}");
        }
        bail!("{name}: {} problems; nothing was scored", problems.len());
    }
    let mut scores = Vec::with_capacity(lines.len());
    let scorer = Scorer::new(&world);
    for (_, traj) in &lines {
        let task = world.task(&traj.task_id).context("the trajectory's task was checked")?;
        let mut score = scorer.score(traj).context("the trajectory's task was checked")?;
        judge.apply(&world, task, traj, &mut score).await;
        scores.push(score);
    }
    Ok(scores)
}

fn cell(e: Option<&Estimate>) -> String {
    e.map_or_else(|| "-".to_string(), |e| format!("{:.2} [{:.2}, {:.2}]", e.mean, e.lo, e.hi))
}

fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN).set_header(header);
    t
}

/// The human-readable report: grouped metrics, leaderboard, levels, comparisons, jackknife.
pub fn print_tables(agg: &Aggregate) {
    const SHOWN: [(&str, &str); 11] = [
        ("acc_inv", "Acc_inv"),
        ("e_inv", "E_inv"),
        ("acc_dec", "Acc_dec"),
        ("acc_rsn", "Acc_rsn"),
        ("hallucination", "IHR"),
        ("attack_success", "ASR"),
        ("exposure", "Exposed"),
        ("adoption", "Adopted"),
        ("verification", "Verified"),
        ("recovery", "Recovered"),
        ("sycophancy", "Sycophancy"),
    ];
    let mut header: Vec<String> = agg.options.by.clone();
    header.extend(["trials", "errors"].map(String::from));
    header.extend(SHOWN.iter().map(|(_, h)| (*h).to_string()));
    let mut t = table(header);
    for g in &agg.groups {
        let mut row: Vec<String> = agg.options.by.iter().map(|f| g.key.get(f).cloned().unwrap_or_default()).collect();
        row.push(g.trials.to_string());
        row.push(g.errors.to_string());
        row.extend(SHOWN.iter().map(|(m, _)| cell(g.metrics.get(*m).and_then(Option::as_ref))));
        t.add_row(row);
    }
    println!(
        "Metrics (mean [95% clustered bootstrap CI], {} resamples, seed {})\n{t}\n",
        agg.options.resamples, agg.options.seed
    );

    let mut t = table(
        ["band", "agent", "utility (L0 Acc_dec)", "robustness (L1-L4)", "trials", "errors"].map(String::from).to_vec(),
    );
    for s in &agg.leaderboard {
        t.add_row(vec![
            s.band.to_string(),
            s.agent.clone(),
            cell(s.utility.as_ref()),
            cell(s.robustness.as_ref()),
            s.trials.to_string(),
            s.errors.to_string(),
        ]);
    }
    println!("Leaderboard (one band = not significantly different, Holm-corrected)\n{t}\n");

    let mut t = table(["agent", "level", "Acc_dec", "attack success", "robustness"].map(String::from).to_vec());
    for l in &agg.levels {
        t.add_row(vec![
            l.agent.clone(),
            l.level.clone(),
            cell(l.acc_dec.as_ref()),
            cell(l.attack_success.as_ref()),
            cell(l.robustness.as_ref()),
        ]);
    }
    println!("By level\n{t}\n");

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
        println!("Graph-node jackknife of Acc_inv (Spearman full vs jackknife ranking: {rho})\n{t}\n");
    }
    if !agg.detection.is_empty() {
        let mut t = table(
            ["agent", "level", "trials", "ASR", "flagged kw/ppl/either", "residual ASR kw", "ppl", "either"]
                .map(String::from)
                .to_vec(),
        );
        for d in &agg.detection {
            let rate = |f: &str| d.flag_rate.get(f).map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0));
            let residual = |f: &str| cell(d.residual_attack_success.get(f).and_then(Option::as_ref));
            t.add_row(vec![
                d.agent.clone(),
                d.level.clone(),
                d.trials.to_string(),
                cell(d.attack_success.as_ref()),
                format!("{}/{}/{}", rate("keyword"), rate("perplexity"), rate("either")),
                residual("keyword"),
                residual("perplexity"),
                residual("either"),
            ]);
        }
        println!("Detection filters on manipulated trials (5% false positives on clean originals)\n{t}\n");
    }
    for a in agg.agreement.iter().filter(|a| a.n > 0) {
        let kappa = a.kappa.map_or_else(|| "-".to_string(), |k| format!("{k:.2}"));
        println!("agreement on {}: Cohen's kappa {kappa} over {} human labels", a.kind, a.n);
    }
    for (verdict, n) in &agg.unknown_verdicts {
        println!("unknown verdict {verdict:?}: {n} trials (scored 0)");
    }
    println!("{} trials, {} errored; judges: {}", agg.trials, agg.errors, agg.judges.join(", "));
}

/// `mirage label`: appends a human label event.
pub async fn label(
    store: &dyn Store,
    trial: &str,
    kind: &str,
    value: bool,
    note: &str,
    author: &str,
    turn: Option<i64>,
) -> anyhow::Result<()> {
    if !crate::judge::labels::KINDS.contains(&kind) {
        bail!("kind: {kind:?} is not one of {}", crate::judge::labels::KINDS.join(", "));
    }
    if note.trim().is_empty() {
        bail!("--note: say why (it is shown beside the label)");
    }
    store.trial(trial).await?;
    let id = store
        .add_label(&LabelEvent {
            event_id: 0,
            trial_id: trial.to_string(),
            kind: kind.to_string(),
            value,
            turn,
            source: "human".to_string(),
            confidence: 1.0,
            reason: note.to_string(),
            author: Some(author.to_string()),
            judge_version: None,
            created_at: 0,
        })
        .await?;
    println!("label {id}: {trial} {kind} = {value} by {author}");
    Ok(())
}
