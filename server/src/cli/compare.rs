//! `mirage compare A B`: two runs, or two configurations, trial by trial (see
//! `judge::compare`).

use std::path::PathBuf;
use std::sync::Arc;

use super::score::{run_scores, table};
use crate::config::Config;
use crate::db::Store;
use crate::judge::TrialScore;
use crate::judge::aside::Keep;
use crate::judge::compare::{Comparison, compare};
use crate::judge::rsn::ModelJudge;

/// `mirage compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The first side: a run (`RUN`) or one configuration of a run (`RUN:CONFIG`).
    pub a: String,
    /// The second side, as the first. Differences are b − a.
    pub b: String,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Config file with `[roles] judge` (the reasoning judge behind Acc_rsn and Q_ev).
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// A side's scores: a run's, or one configuration's of it (an unknown one is named).
async fn side(store: &Arc<dyn Store>, name: &str, judge: &ModelJudge) -> anyhow::Result<Vec<TrialScore>> {
    let (run, config) = name.split_once(':').map_or((name, None), |(r, c)| (r, Some(c)));
    let scores = run_scores(store, &run.into(), judge, Keep::Figures).await?;
    let Some(config) = config else { return Ok(scores) };
    let agents: std::collections::BTreeSet<&str> = scores.iter().map(|s| s.agent.as_str()).collect();
    if !agents.contains(config) {
        let known: Vec<&str> = agents.into_iter().collect();
        anyhow::bail!("{name}: run {run} has no configuration {config:?} (it has {})", known.join(", "));
    }
    Ok(scores.into_iter().filter(|s| s.agent == config).collect())
}

/// `mirage compare`.
pub(super) async fn run(store: Arc<dyn Store>, args: CompareArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config.as_deref())?;
    let judge = ModelJudge::from_config(&config, store.clone())?;
    let (a, b) = (side(&store, &args.a, &judge).await?, side(&store, &args.b, &judge).await?);
    let with_agent = !args.a.contains(':') && !args.b.contains(':');
    let (ra, rb): (Vec<&TrialScore>, Vec<&TrialScore>) = (a.iter().collect(), b.iter().collect());
    let mut c = compare((&args.a, &ra), (&args.b, &rb), with_agent)?;
    for (name, slot) in [(&args.a, &mut c.unfinished_a), (&args.b, &mut c.unfinished_b)] {
        let (run, config) = name.split_once(':').map_or((name.as_str(), None), |(r, c)| (r, Some(c)));
        *slot = crate::services::compare::unfinished(store.as_ref(), &run.into(), config).await?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&c)?);
    } else {
        print(&c);
    }
    Ok(())
}

/// The comparison's first line: each count named by its side.
pub fn summary(c: &Comparison) -> String {
    format!(
        "a = {}, b = {}: {} paired trials; unpaired: a {}, b {}; paired trials that ended in error (scored as \
         failures): a {}, b {}",
        c.a, c.b, c.pairs, c.unpaired_a, c.unpaired_b, c.errors_a, c.errors_b
    )
}

fn print(c: &Comparison) {
    println!("{}", summary(c));
    if c.unfinished_a + c.unfinished_b > 0 {
        println!(
            "warning: trials not finished (queued, running or cancelled) are left out: a {}, b {}",
            c.unfinished_a, c.unfinished_b
        );
    }
    if c.self_reported_a + c.self_reported_b > 0 {
        println!(
            "self-reported: paired trials imported from a file, whose figures rest on what the file says: a {}, b {}",
            c.self_reported_a, c.self_reported_b
        );
    }
    let header = ["metric", "a", "b", "b − a", "95% CI", "p (Holm)", "pairs"];
    let mut t = table(header.map(String::from).to_vec());
    for m in &c.metrics {
        t.add_row(vec![
            m.metric.clone(),
            format!("{:.3}", m.a),
            format!("{:.3}", m.b),
            format!("{:+.3}", m.diff.mean),
            if m.diff.no_interval {
                "no interval".to_string()
            } else {
                format!("[{:+.3}, {:+.3}]{}", m.diff.lo, m.diff.hi, vocab::covers(m.diff.coverage))
            },
            m.p.map_or_else(|| format!("– ({} families)", m.clusters), |p| format!("{p:.4}")),
            m.n.to_string(),
        ]);
    }
    println!("{t}");
    if c.changed.is_empty() {
        println!("No paired trial changed its verdict.");
        return;
    }
    let header = ["task", "configuration", "level", "condition", "seed", "a", "b", "change"];
    let mut t = table(header.map(String::from).to_vec());
    let verdict = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
    for x in &c.changed {
        t.add_row(vec![
            x.task_id.clone(),
            x.agent.clone(),
            x.level.to_string(),
            x.condition.to_string(),
            x.seed.to_string(),
            format!("{} ({})", verdict(&x.a_verdict), x.a_trial),
            format!("{} ({})", verdict(&x.b_verdict), x.b_trial),
            x.direction.clone(),
        ]);
    }
    println!("Verdicts that changed ({}):\n{t}", c.changed.len());
}
