//! The manipulation ladder measures something: the `credulous` reading agent's attack
//! success rises with the level (a dose–response over the corpus), and the keyword
//! defense lowers it at L1 while leaving clean (L0) utility where it was. The trials run
//! through the real loop, pages and overlays; the numbers come from the real scorer and
//! the clustered bootstrap.

use app::model::TrialId;
use server::agent::Agent;
use server::agent::credulous::Credulous;
use server::agent::episode::{MemorySink, Outcome, Setting, run_trial};
use server::db::{TrialRow, TrialState};
use server::detect::{Defense, KEYWORDS, KeywordFilter};
use server::env::World;
use server::judge::aggregate::{Metric, Options, groups};
use server::judge::{Scorer, Trajectory, TrialScore};
use server::stats::Estimate;

/// Plays one trial of `agent` through the real loop, pages and overlay (seed 0, raw
/// ticket) and returns it as the trajectory line a run would export.
pub(crate) async fn play_trial(
    world: &World,
    task: &server::corpus::Task,
    level: &str,
    agent: &dyn Agent,
    defense: Option<&dyn Defense>,
    trial_id: String,
) -> Trajectory {
    let overlay = server::manip::overlay_for(task, level, None, 0).expect("overlay");
    let mut sink = MemorySink::default();
    let setting = Setting { overlay: &overlay, defense };
    let (steps, outcome) = run_trial(world, setting, task, "raw", agent, vec![], &mut sink).await.expect("trial");
    let (verdict, rationale) = match outcome {
        Outcome::Verdict { verdict, rationale } => (Some(verdict), Some(rationale)),
        Outcome::BudgetExhausted => (None, None),
    };
    let config = match defense {
        Some(_) => format!("{}+keyword", agent.name()),
        None => agent.name().to_string(),
    };
    let row = TrialRow {
        trial_id: TrialId::from(trial_id),
        run_id: "signal".into(),
        ordinal: 0,
        task_id: task.id.clone(),
        agent: config,
        level: level.into(),
        condition: "raw".into(),
        seed: 0,
        state: TrialState::Done,
        attempts: 1,
        worker: None,
        verdict,
        rationale,
        error: None,
        appeal: None,
    };
    let line = server::runs::export::trajectory_line(&row, &steps).expect("line");
    serde_json::from_value(line).expect("trajectory")
}

/// Plays every `stride`-th task of the corpus at `level`, through `defense` when given.
async fn play(world: &World, stride: usize, level: &str, defense: Option<&dyn Defense>) -> Vec<TrialScore> {
    let scorer = Scorer::new(world);
    let mut scores = Vec::new();
    for (i, task) in world.tasks().step_by(stride).enumerate() {
        let traj = play_trial(world, task, level, &Credulous, defense, format!("{level}-{i}")).await;
        scores.push(scorer.score(&traj).expect("score"));
    }
    scores
}

fn estimate(scores: &[TrialScore], metric: Metric) -> Estimate {
    let options = Options { by: vec!["agent".into()], metrics: vec![metric], ..Options::default() };
    let rows = groups(scores, "signal", &options).expect("groups");
    rows[0].metrics[metric.as_str()].expect("an estimate")
}

#[tokio::test]
async fn credulous_attack_success_rises_with_the_level_and_the_keyword_defense_bites() {
    let world = World::build(server::corpus::generate::corpus()).expect("world");
    let stride = 3;
    let keyword = KeywordFilter::parse(KEYWORDS).expect("keyword list");
    let mut asr = Vec::new();
    for level in ["L0", "L1", "L3"] {
        asr.push(estimate(&play(&world, stride, level, None).await, Metric::GoalRate));
    }
    let [l0, l1, l3] = [asr[0], asr[1], asr[2]];
    eprintln!("credulous ASR: L0 {l0:?}, L1 {l1:?}, L3 {l3:?}");
    assert!(l0.mean < l1.mean && l1.mean < l3.mean, "ASR rises L0 {l0:?} < L1 {l1:?} < L3 {l3:?}");
    assert!(l0.hi < l3.lo, "the L0 and L3 intervals do not overlap: {l0:?} {l3:?}");

    let defended_l1 = estimate(&play(&world, stride, "L1", Some(&keyword)).await, Metric::GoalRate);
    assert!(defended_l1.mean < l1.mean, "the keyword filter lowers L1 ASR: {defended_l1:?} vs {l1:?}");
    let utility = estimate(&play(&world, stride, "L0", None).await, Metric::AccDec);
    let defended_utility = estimate(&play(&world, stride, "L0", Some(&keyword)).await, Metric::AccDec);
    eprintln!("credulous+keyword ASR at L1 {defended_l1:?}; L0 utility {utility:?} vs defended {defended_utility:?}");
    assert!(
        (utility.lo..=utility.hi).contains(&defended_utility.mean),
        "L0 utility stays within the interval: {defended_utility:?} vs {utility:?}"
    );
}
