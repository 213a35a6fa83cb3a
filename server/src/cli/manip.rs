//! `mirage manip preview` and `mirage detect calibrate|check`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::json;

use crate::db::Store;
use crate::detect::{
    CleanCorpus, EndpointPerplexity, KeywordFilter, Perplexity, PerplexityFilter, calibrate, realised,
};
use crate::env::World;
use crate::env::render::EpisodeChrome;
use crate::env::site::render_path;

/// `mirage manip …`.
#[derive(Debug, Subcommand)]
pub enum ManipCommand {
    /// Print a task's page at a level with the manipulated spans marked [[id>> … <<id]].
    Preview {
        #[arg(long)]
        task: String,
        /// L0, L1, L2 or L3.
        #[arg(long)]
        level: String,
        /// An L1 style or an L3 form (default: drawn from the seed).
        #[arg(long)]
        strategy: Option<String>,
        #[arg(long, default_value_t = 0)]
        seed: i64,
    },
}

/// `mirage detect …`.
#[derive(Debug, Subcommand)]
pub enum DetectCommand {
    /// Thresholds for a false-positive rate on the corpus's clean originals (equal weight
    /// per domain), realised rates per domain, and flag rates on the built-in manipulations.
    Calibrate {
        #[arg(long, default_value_t = 0.05)]
        fpr: f64,
        #[arg(long)]
        json: bool,
        /// Also calibrate the LLM-judge filter (and keyword-or-judge) with the judge endpoint.
        #[arg(long)]
        with_judge: bool,
        /// Config file naming the judge endpoint (`roles.judge`).
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Read a text on stdin and say whether a filter flags it, with the score and matches.
    Check {
        /// keyword, perplexity or judge.
        #[arg(long)]
        filter: String,
        /// The false-positive rate the perplexity and judge thresholds are calibrated to.
        #[arg(long, default_value_t = 0.05)]
        fpr: f64,
        #[arg(long)]
        json: bool,
        /// Config file naming the judge endpoint (`roles.judge`), for --filter judge.
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
    },
}

pub(super) async fn manip(store: &dyn Store, command: ManipCommand) -> anyhow::Result<()> {
    let ManipCommand::Preview { task, level, strategy, seed } = command;
    preview(store, &task, &level, strategy.as_deref(), seed).await
}

pub(super) async fn detect(store: Arc<dyn Store>, command: DetectCommand) -> anyhow::Result<()> {
    match command {
        DetectCommand::Calibrate { fpr, json, with_judge, config } => {
            let judge = if with_judge { Some(judge_filter(store.clone(), config.as_deref())?) } else { None };
            let cache: Arc<dyn Store> = store.clone();
            calibrate_cmd(store.as_ref(), (Some(cache), config.as_deref()), judge, fpr, json).await
        }
        DetectCommand::Check { filter, fpr, json, config } => {
            let arc: Arc<dyn Store> = store.clone();
            check(store.as_ref(), Some(arc), config.as_deref(), &filter, fpr, json).await
        }
    }
}

/// The perplexity scorer: the config's `roles.scorer` endpoint, else the built-in model.
async fn perplexity(
    store: Option<std::sync::Arc<dyn Store>>,
    config: Option<&std::path::Path>,
    clean: &CleanCorpus,
) -> anyhow::Result<Perplexity> {
    let config = crate::config::Config::load(config)?;
    match (config.scorer(), store) {
        (Some((name, spec)), Some(cache)) => {
            let model = spec.model.clone();
            let client = crate::llm::HttpLlm::new(spec.clone()).with_context(|| format!("scorer endpoint {name}"))?;
            Perplexity::endpoint(EndpointPerplexity { model, client, cache }, clean).await
        }
        _ => Ok(Perplexity::Ngram(PerplexityFilter::train(clean))),
    }
}
use crate::manip::{Level, overlay_for, strategies};

/// Prints the task's start page as the agent would see it at `level`, with every
/// manipulated span marked `[[id>>` … `<<id]]`, then the spans.
async fn preview(
    store: &dyn Store,
    task_id: &str,
    level: &str,
    strategy: Option<&str>,
    seed: i64,
) -> anyhow::Result<()> {
    let world = World::build(store.all_tasks().await?)?;
    let task = world.task(task_id).with_context(|| format!("--task: no task {task_id:?}"))?;
    let overlay = overlay_for(task, level, strategy, seed)?;
    let mut urls: Vec<&str> = overlay.edits.iter().map(|e| e.url.as_str()).collect();
    if urls.is_empty() {
        urls.push(&task.start_url);
    }
    urls.dedup();
    for url in urls {
        let chrome = EpisodeChrome {
            id: "preview",
            actions: task.domain.actions(),
            closed: false,
            overlay: Some(&overlay),
            over_http: false,
        };
        let page = render_path(&world, url, None, Some(chrome));
        let mut text = page.text.clone();
        let mut spans = page.spans.clone();
        spans.sort_by_key(|s| std::cmp::Reverse(s.start));
        for s in &spans {
            if let (Some(a), Some(b)) = (s.start, s.end) {
                text.insert_str(b, &format!("<<{}]]", s.id));
                text.insert_str(a, &format!("[[{}>>", s.id));
            }
        }
        println!("== {url} ({level}{})\n{text}", strategy.map(|s| format!(", {s}")).unwrap_or_default());
    }
    for e in &overlay.edits {
        println!("span {} on {}\n  original: {}\n  now:      {}", e.span, e.url, e.original, e.text);
    }
    if overlay.is_empty() {
        println!(
            "(level {level} leaves the text clean; strategies of other levels: L1 {}, L3 {})",
            strategies(Level::L1).join(", "),
            strategies(Level::L3).join(", ")
        );
    }
    Ok(())
}

/// `mirage detect calibrate`: thresholds for a false-positive rate on clean originals,
/// realised rates per domain, and flag rates on the built-in manipulations. With
/// `judge`, the LLM-judge filter and the keyword-or-judge union are calibrated too.
async fn calibrate_cmd(
    store: &dyn Store,
    (cache, config): (Option<std::sync::Arc<dyn Store>>, Option<&std::path::Path>),
    judge: Option<crate::detect::JudgeFilter>,
    fpr: f64,
    json_out: bool,
) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&fpr) {
        bail!("--fpr: {fpr} is not a rate between 0 and 1");
    }
    let tasks = store.all_tasks().await?;
    let clean = CleanCorpus::of(&tasks);
    let keyword = KeywordFilter::shipped();
    let ppl = perplexity(cache, config, &clean).await?;
    let kw = realised(
        "keyword",
        &clean.originals.iter().map(|(d, t)| (d.clone(), keyword.check(t).flagged)).collect::<Vec<_>>(),
    );
    let pc = ppl.calibration(&clean, fpr).await?;
    let threshold = pc.threshold.unwrap_or(f64::INFINITY);
    let mut filters = vec![kw, pc];
    let mut judge_threshold = None;
    if let Some(judge) = &judge {
        let mut items = Vec::new();
        for (d, t) in &clean.originals {
            items.push((d.clone(), keyword.check(t).flagged, judge.score(t).await?));
        }
        let scores: Vec<(String, f64)> = items.iter().map(|(d, _, s)| (d.clone(), *s)).collect();
        let jc = calibrate("judge", &scores, fpr);
        judge_threshold = jc.threshold;
        filters.push(jc);
        filters.push(crate::detect::calibrate_union(&items, fpr));
    }
    // How the built-in manipulations fare (seed 0, each strategy drawn per task).
    let mut levels = Vec::new();
    for level in [Level::L1, Level::L2, Level::L3].map(Level::as_str) {
        let (mut n, mut kw_flags, mut ppl_flags, mut either, mut ratios) = (0usize, 0usize, 0usize, 0usize, Vec::new());
        let mut judge_flags = 0usize;
        for t in &tasks {
            for e in overlay_for(t, level, None, 0)?.edits {
                n += 1;
                let k = keyword.check(&e.text).flagged;
                let p = ppl.score(&e.text).await? > threshold;
                kw_flags += usize::from(k);
                ppl_flags += usize::from(p);
                either += usize::from(k || p);
                if let (Some(judge), Some(t)) = (&judge, judge_threshold) {
                    judge_flags += usize::from(judge.score(&e.text).await? > t);
                }
                ratios.push(ppl.ratio(&e.text, &e.original).await?);
            }
        }
        ratios.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let rate = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
        levels.push(json!({"level": level, "texts": n, "keyword": rate(kw_flags), "perplexity": rate(ppl_flags),
            "either": rate(either), "judge": judge.as_ref().map(|_| rate(judge_flags)),
            "median_ppl_ratio": ratios.get(ratios.len() / 2)}));
    }
    if json_out {
        println!(
            "{}",
            json!({"fpr": fpr, "originals": clean.originals.len(), "perplexity_source": ppl.source(), "filters": filters, "manipulated": levels})
        );
        return Ok(());
    }
    println!("clean originals: {} (the parties' texts of {} tasks)", clean.originals.len(), tasks.len());
    println!("perplexity from the {}", ppl.source());
    print_calibration(&filters, &levels);
    Ok(())
}

/// The calibrated filters, each with its threshold and realised false-positive rates, and
/// how often each flags the built-in manipulations of each level.
fn print_calibration(filters: &[crate::detect::Calibration], levels: &[serde_json::Value]) {
    for c in filters {
        let per: Vec<String> = c.per_domain.iter().map(|(d, r)| format!("{d} {:.1}%", r * 100.0)).collect();
        let threshold = c.threshold.map_or_else(|| "none (a list)".to_string(), |t| format!("{t:.4}"));
        println!(
            "{:<10} threshold {threshold:<14} false-positive rate {:.1}% (equal domain weight); per domain: {}",
            c.filter,
            c.fpr * 100.0,
            per.join(", ")
        );
    }
    println!("flag rates on the built-in manipulations (seed 0):");
    for l in levels {
        println!(
            "  {}: {} texts, keyword {:.1}%, perplexity {:.1}%, either {:.1}%, median PPL-R {:.2}",
            l["level"].as_str().unwrap_or_default(),
            l["texts"],
            l["keyword"].as_f64().unwrap_or_default() * 100.0,
            l["perplexity"].as_f64().unwrap_or_default() * 100.0,
            l["either"].as_f64().unwrap_or_default() * 100.0,
            l["median_ppl_ratio"].as_f64().unwrap_or_default()
        );
        if let Some(j) = l["judge"].as_f64() {
            println!("      judge {:.1}%", j * 100.0);
        }
    }
}

/// The judge filter of the configuration's judge role.
fn judge_filter(
    store: std::sync::Arc<dyn Store>,
    config: Option<&std::path::Path>,
) -> anyhow::Result<crate::detect::JudgeFilter> {
    let config = crate::config::Config::load(config)?;
    let Some((name, spec)) = config.judge() else {
        bail!(
            "the judge filter needs a judge endpoint: set roles.judge in the config (--config or MIRAGE_CONFIG) or MIRAGE_JUDGE"
        );
    };
    let mut spec = spec.clone();
    spec.temperature = 0.0;
    let model = spec.model.clone();
    let client = crate::llm::HttpLlm::new(spec).with_context(|| format!("judge endpoint {name}"))?;
    Ok(crate::detect::JudgeFilter { model, client: std::sync::Arc::new(client), cache: store })
}

/// `mirage detect check`: one filter over the text on stdin. The judge filter scores the
/// clean originals too (cached) to set its threshold.
async fn check(
    store: &dyn Store,
    store_arc: Option<std::sync::Arc<dyn Store>>,
    config: Option<&std::path::Path>,
    filter: &str,
    fpr: f64,
    json_out: bool,
) -> anyhow::Result<()> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).context("reading the text from stdin")?;
    let (flagged, score, matched, threshold) = match filter {
        "keyword" => {
            let v = KeywordFilter::shipped().check(&text);
            (v.flagged, v.score, v.matched, None)
        }
        "perplexity" => {
            let tasks = store.all_tasks().await?;
            let clean = CleanCorpus::of(&tasks);
            let ppl = perplexity(store_arc.clone(), config, &clean).await?;
            let t = ppl.calibration(&clean, fpr).await?.threshold.unwrap_or(f64::INFINITY);
            let s = ppl.score(&text).await?;
            (s > t, s, Vec::new(), Some(t))
        }
        "judge" => {
            let judge = judge_filter(store_arc.context("the judge filter needs the database cache")?, config)?;
            let t = judge.threshold(&CleanCorpus::of(&store.all_tasks().await?), fpr).await?;
            let s = judge.score(&text).await?;
            (s > t, s, Vec::new(), Some(t))
        }
        other => bail!("--filter: {other:?} is not one of keyword, perplexity, judge"),
    };
    if json_out {
        println!(
            "{}",
            json!({"filter": filter, "flagged": flagged, "score": score, "threshold": threshold, "matched": matched})
        );
    } else {
        let t = threshold
            .map(|t| format!(" (threshold {t:.4} at {:.0}% false positives)", fpr * 100.0))
            .unwrap_or_default();
        println!("{}: score {score:.4}{t}", if flagged { "flagged" } else { "not flagged" });
        if !matched.is_empty() {
            println!("matched: {}", matched.join(", "));
        }
    }
    Ok(())
}
