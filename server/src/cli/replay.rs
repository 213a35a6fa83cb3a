//! `mirage replay`: re-run a finished trial from one of its turns with an intervention on
//! what the agent sees from then on, and print what it decided.

use std::sync::Arc;

use clap::Args;

use crate::db::Store;
use crate::env::World;
use crate::runs::replay::{self, Intervention, ReplayPlan};
use app::model::TrialId;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trial to replay (a finished trial of a stored run).
    pub trial: TrialId,
    /// The turn to branch from: the agent gets the trial's own steps before it as they were
    /// recorded, and the altered pages from it on.
    #[arg(long, default_value_t = 0)]
    pub from_turn: usize,
    /// clean-level (the manipulation taken away: the pages as at L0), strip-spans (the
    /// interested party's text taken out), reveal-evidence (the hidden evidence appended to
    /// every page) or condition:NAME (another ticket condition).
    #[arg(long, default_value = "clean-level")]
    pub intervention: Intervention,
    /// How many replays to make (model agents at a temperature above 0 differ between them).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=replay::MAX_SAMPLES as i64))]
    pub samples: u16,
    /// Print the trial and all its replays as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `mirage replay`.
pub async fn replay(store: Arc<dyn Store>, args: ReplayArgs) -> anyhow::Result<()> {
    let world = World::build(store.all_tasks().await?)?;
    let plan = ReplayPlan { intervention: args.intervention.clone(), samples: usize::from(args.samples) };
    let made = replay::replay(store.clone(), &world, &args.trial, args.from_turn, &plan).await?;
    let report = replay::report(store.as_ref(), &world, &args.trial).await?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "{}: verdict {} ({})",
        report.trial,
        report.verdict.as_deref().unwrap_or("none"),
        if report.goal { "the party's goal" } else { "not the party's goal" }
    );
    for r in report.replays.iter().filter(|r| made.iter().any(|m| m.replay_id == r.trial)) {
        let verdict = r.verdict.as_deref().unwrap_or("none");
        let how = match (&r.error, r.goal, r.attack_success) {
            (Some(e), _, _) => format!("failed: {e}"),
            (None, true, _) => "still the party's goal".to_string(),
            (None, false, true) => "left the party's goal: the text caused it".to_string(),
            (None, false, false) => "not the party's goal".to_string(),
        };
        println!("  {} from turn {} ({}): verdict {verdict}, {how}", r.trial, r.from_turn, r.intervention);
    }
    Ok(())
}
