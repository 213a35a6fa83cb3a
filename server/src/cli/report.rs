//! `mirage report`: the MIRAGE paper's tables for a stored run (see `judge::report`).

use std::path::PathBuf;
use std::sync::Arc;

use super::score::{cell, run_scores, table};
use crate::config::Config;
use crate::db::Store;
use crate::judge::aggregate::Options;
use crate::judge::report::{APPEALS, MAIN, Report, Row, report};
use crate::judge::rsn::ModelJudge;

/// `mirage report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The stored run.
    #[arg(long)]
    pub run: String,
    /// Print the report as one JSON object (the same as the dashboard's report.json).
    #[arg(long)]
    pub json: bool,
    /// Bootstrap resamples per interval.
    #[arg(long, default_value_t = crate::stats::RESAMPLES)]
    pub resamples: usize,
    /// Bootstrap seed (same seed, same intervals).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Config file with `[roles] judge` (the reasoning judge behind Acc_rsn and Q_ev).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `mirage report`.
pub(super) async fn run(store: Arc<dyn Store>, args: ReportArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config.as_deref())?;
    let judge = ModelJudge::from_config(&config, store.clone())?;
    let scores = run_scores(&store, &args.run, &judge).await?;
    let options = Options { resamples: args.resamples.max(1), seed: args.seed, ..Options::default() };
    let r = report(&scores, &args.run, &options)?;
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print_report(&r);
    }
    Ok(())
}

fn rows_table(rows: &[Row], keys: &[&str], metrics: &[crate::judge::aggregate::Metric]) -> comfy_table::Table {
    let mut header: Vec<String> = keys.iter().map(ToString::to_string).collect();
    header.push("trials".into());
    header.extend(metrics.iter().map(|m| m.as_str().to_string()));
    let mut t = table(header);
    for r in rows {
        let mut line: Vec<String> = Vec::new();
        for k in keys {
            line.push(match *k {
                "agent" => r.agent.clone(),
                "domain" => r.domain.clone().unwrap_or_default(),
                _ => r.category.clone().unwrap_or_default(),
            });
        }
        line.push(r.trials.to_string());
        line.extend(metrics.iter().map(|m| cell(r.metrics.get(m.as_str()).and_then(Option::as_ref))));
        t.add_row(line);
    }
    t
}

fn print_report(r: &Report) {
    println!(
        "Report of run {} ({} trials; mean [95% clustered bootstrap CI], {} resamples, seed {})\n",
        r.run, r.trials, r.resamples, r.seed
    );
    println!("Per configuration and domain\n{}\n", rows_table(&r.main, &["agent", "domain"], &MAIN));
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
    println!("Per category\n{}\n", rows_table(&r.categories, &["agent", "domain", "category"], &MAIN));
    if r.appeals.is_empty() {
        println!("Appeals: the run had none (run with --appeal).");
    } else {
        println!("Appeals\n{}", rows_table(&r.appeals, &["agent"], &APPEALS));
    }
}
