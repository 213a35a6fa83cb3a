//! `mirage report`: the MIRAGE paper's tables for a stored run (see `judge::report`).

use std::path::PathBuf;
use std::sync::Arc;

use super::score::{cell, run_scores, table};
use crate::config::Config;
use crate::db::Store;
use crate::judge::aggregate::{Metric, Options};
use crate::judge::aside::Keep;
use crate::judge::report::{APPEALS, MAIN, Report, Row, Slice, report};
use crate::judge::rsn::ModelJudge;
use app::model::RunId;

/// `mirage report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The stored run.
    #[arg(long)]
    pub run: RunId,
    /// Print the report as one JSON object (the same as the dashboard's report.json).
    #[arg(long)]
    pub json: bool,
    /// The ticket condition of the main and category tables (`raw`, `hint`,
    /// `evidence_anchored`, or `all`).
    #[arg(long, default_value = "raw")]
    pub condition: String,
    /// The manipulation level of the main and category tables and of the Hint − Raw pairs
    /// (`L0` … `L4`, or `all`).
    #[arg(long, default_value = "L0")]
    pub level: String,
    /// Config file with `[roles] judge` (the reasoning judge behind Acc_rsn and Q_ev).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `mirage report`.
pub(super) async fn run(store: Arc<dyn Store>, args: ReportArgs) -> anyhow::Result<()> {
    let slice = Slice { condition: args.condition.clone(), level: args.level.clone() };
    if slice.condition != "all"
        && let Err(e) = vocab::Condition::parse(&slice.condition)
    {
        anyhow::bail!("--condition: {:?} is not one of {}, all", e.name, e.known);
    }
    if slice.level != "all" && slice.level.parse::<crate::manip::Level>().is_err() {
        anyhow::bail!("--level: {:?} is not one of L0, L1, L2, L3, L4, all", slice.level);
    }
    let config = Config::load(args.config.as_deref())?;
    let judge = ModelJudge::from_config(&config, store.clone())?;
    let scores = run_scores(&store, &args.run, &judge, Keep::Figures).await?;
    let options = Options::default();
    let mut r = report(&scores, &args.run, &options, &slice)?;
    let grades = store.grades(&args.run).await?;
    r.checks.extend(crate::judge::validity::grade_checks(&crate::judge::validation::validate(&scores, &grades)));
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        let run = store.run(&args.run).await?;
        if let Ok(kind) = crate::runs::RunKind::of(&run) {
            let spec = kind.envelope();
            println!("Agent setup of run {}:", args.run);
            for agent in &spec.agents {
                println!("  {agent}: {}", crate::runs::agent_setup(agent, &spec.endpoints));
            }
            println!();
        }
        print_report(&r);
    }
    Ok(())
}

fn rows_table(rows: &[Row], keys: &[&str], metrics: &[Metric]) -> comfy_table::Table {
    let mut header: Vec<String> = keys.iter().map(ToString::to_string).collect();
    header.push("trials".into());
    header.push("errors".into());
    header.extend(metrics.iter().map(|m| m.as_str().to_string()));
    let mut t = table(header);
    for r in rows {
        let mut line: Vec<String> = Vec::new();
        for k in keys {
            line.push(match *k {
                "agent" => r.agent.clone(),
                "domain" => r.domain.clone().unwrap_or_default(),
                "level" => r.level.clone().unwrap_or_default(),
                _ => r.category.clone().unwrap_or_default(),
            });
        }
        line.push(r.trials.to_string());
        line.push(format!("{} ({:.1} %)", r.errors, 100.0 * crate::judge::aggregate::rate(r.errors, r.trials)));
        line.extend(metrics.iter().map(|m| cell(r.metrics.get(m.as_str()).and_then(Option::as_ref))));
        t.add_row(line);
    }
    t
}

/// `mirage report` on a terminal: the paper's tables in order.
fn print_report(r: &Report) {
    println!("Report of run {} ({} trials; mean [95% interval over task families])\n", r.run, r.trials);
    println!(
        "Tables of condition {}, level {}: {} trials (errors stay in every mean, scored 0 on Acc_dec and Acc_rsn)\n",
        r.slice.condition, r.slice.level, r.slice_trials
    );
    println!("Per configuration and domain\n{}\n", rows_table(&r.main, &["agent", "domain"], &MAIN));
    println!("Pooled over domains (domain-equal)\n{}\n", rows_table(&r.pooled, &["agent"], &MAIN));
    let mut t = table(["agent".to_string()].into_iter().chain(MAIN.iter().map(|m| m.as_str().to_string())).collect());
    for row in &r.pooled {
        let mut line = vec![row.agent.clone()];
        line.extend(
            MAIN.iter().map(|m| row.trajectory_weighted.get(m.as_str()).map_or("-".into(), |v| format!("{v:.3}"))),
        );
        t.add_row(line);
    }
    println!("Pooled as shares of trajectories\n{t}\n");
    println!(
        "Manipulation against clean twins (condition {}; every manipulated trial paired with its L0 twin)\n{}\n",
        r.slice.condition,
        rows_table(&r.manipulation, &["agent", "level"], &crate::judge::report::PAIRED)
    );
    for s in &r.sampling {
        let pass: Vec<String> = s.pass_k.iter().map(|p| format!("{p:.2}")).collect();
        println!(
            "{}: noise floor {} (L0 vs L0 across seeds), pass^k {}",
            s.agent,
            cell(s.noise_floor.as_ref()),
            pass.join(" / ")
        );
    }
    print_breakdowns(r);
    print_comparisons(r);
    println!("Per category\n{}\n", rows_table(&r.categories, &["agent", "domain", "category"], &MAIN));
    if r.appeals.is_empty() {
        println!("Appeals: the run had none (run with --appeal).");
    } else {
        println!("Appeals, pooled (domain-equal)\n{}\n", rows_table(&r.appeals, &["agent"], &APPEALS));
        println!("Appeals per domain\n{}\n", rows_table(&r.appeals_by_domain, &["agent", "domain"], &APPEALS));
        let mut t = table(["agent", "domain", "kind", "outcomes"].map(String::from).to_vec());
        for c in &r.appeal_counts {
            let said: Vec<String> = c.outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
            t.add_row(vec![c.agent.clone(), c.domain.clone(), c.kind.clone(), said.join(", ")]);
        }
        println!("Appeal outcomes\n{t}");
    }
    for why in &r.not_reproduced {
        println!("\nNot reproduced: {why}");
    }
    if r.checks.is_empty() {
        println!("\nGrader validity: no grader has been checked against people in this run yet.");
    } else {
        println!("\nGrader validity (each grader against people on the same trials)");
        super::score::print_checks(&r.checks);
    }
}

/// The decision broken down: by contradiction, adequacy lift, the graph-node jackknife, and
/// decision against reasoning.
fn print_breakdowns(r: &Report) {
    let mut t = table(["agent", "contradiction", "trials", "errors", "acc_dec", "acc_inv"].map(String::from).to_vec());
    for c in &r.contradiction {
        let m = |k: Metric| cell(c.metrics.get(k.as_str()).and_then(Option::as_ref));
        t.add_row(vec![
            c.agent.clone(),
            c.contradiction.clone(),
            c.trials.to_string(),
            c.errors.to_string(),
            m(Metric::AccDec),
            m(Metric::AccInv),
        ]);
    }
    println!("By whether the surface contradicts the evidence\n{t}\n");
    let mut t = table(["agent", "domain", "Default", "Strict", "lift"].map(String::from).to_vec());
    for a in &r.adequacy {
        t.add_row(vec![
            a.agent.clone(),
            a.domain.clone(),
            format!("{:.3}", a.default),
            format!("{:.3}", a.strict),
            format!("{:+.3}", a.lift),
        ]);
    }
    println!("Adequacy lift (Default − Strict Acc_dec)\n{t}\n");
    let mut t = table(["agent", "domain", "Acc_inv", "jackknife mean", "mean range"].map(String::from).to_vec());
    for j in &r.jackknife {
        t.add_row(vec![
            j.agent.clone(),
            j.domain.clone(),
            format!("{:.3}", j.full),
            format!("{:.3}", j.jackknife_mean),
            format!("{:.3}", j.mean_range),
        ]);
    }
    println!("Graph-node jackknife of Acc_inv per domain\n{t}\n");
    let mut t = table(
        ["agent", "right & sound", "right & unsound", "wrong & sound", "wrong & unsound"].map(String::from).to_vec(),
    );
    for j in &r.joint {
        t.add_row(vec![
            j.agent.clone(),
            j.right_sound.to_string(),
            j.right_unsound.to_string(),
            j.wrong_sound.to_string(),
            j.wrong_unsound.to_string(),
        ]);
    }
    println!("Decision (credited or not) against reasoning (Acc_rsn ≥ 0.5 or not)\n{t}\n");
}

/// Hint against raw, and the ranking checks per domain.
fn print_comparisons(r: &Report) {
    if r.hint_minus_raw.is_empty() {
        println!("Hint − Raw: the run has no trials paired across the raw and hint conditions.\n");
    } else {
        let mut t = table(["agent", "domain", "metric", "hint − raw", "pairs", "p"].map(String::from).to_vec());
        for d in &r.hint_minus_raw {
            t.add_row(vec![
                d.agent.clone(),
                d.domain.clone(),
                d.metric.clone(),
                cell(Some(&d.diff)),
                d.diff.n.to_string(),
                format!("{:.4}", d.p),
            ]);
        }
        println!("Hint − Raw, paired by task, level and seed\n{t}\n");
    }
    for w in &r.hint_minus_raw_withheld {
        println!("Hint − Raw withheld: {w}");
    }
    let mut t = table(
        ["domain", "configurations", "ρ Default vs Strict", "jackknife ρ", "largest swing"].map(String::from).to_vec(),
    );
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"));
    for d in &r.domains {
        t.add_row(vec![
            d.domain.clone(),
            d.n.to_string(),
            num(d.default_vs_strict),
            num(d.jackknife_rho),
            num(d.jackknife_swing),
        ]);
    }
    println!("Ranking checks per domain (Spearman's ρ across configurations)\n{t}\n");
}
