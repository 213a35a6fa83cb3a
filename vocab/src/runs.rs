//! Wire types of the runs pages and the trajectory viewer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{RunId, TrialId};
use super::{RunStatus, TaskRef, TrialState};

/// Trials of a run by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub queued: i64,
    pub running: i64,
    pub done: i64,
    pub error: i64,
    pub cancelled: i64,
}

impl Counts {
    /// Trials that will not run again.
    pub fn finished(&self) -> i64 {
        self.done + self.error + self.cancelled
    }
}

/// Live progress of a run: what the runs list shows and the event stream sends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub run_id: RunId,
    pub status: RunStatus,
    pub total: i64,
    pub counts: Counts,
    /// Trials finished per minute over the last minute.
    pub per_minute: f64,
    pub eta_secs: Option<f64>,
}

impl Progress {
    /// Share of trials finished, 0–100.
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            return 100.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let share = self.counts.finished() as f64 / self.total as f64;
        share * 100.0
    }
}

/// One row of the runs list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: RunId,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    pub tasks: String,
    pub agents: Vec<String>,
    pub levels: Vec<crate::TrialLevel>,
    pub progress: Progress,
    /// Why the run's stored spec cannot be read, when it cannot (its tasks, agents and
    /// levels are then unknown and empty).
    #[serde(default)]
    pub unreadable: Option<String>,
}

/// Trials of one agent configuration × level × condition cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoverageCell {
    pub agent: String,
    pub level: crate::TrialLevel,
    pub condition: crate::TrialCondition,
    pub counts: Counts,
}

/// Everything the run page shows above its trial table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    pub summary: RunSummary,
    pub conditions: Vec<crate::TrialCondition>,
    pub seeds: Vec<i64>,
    pub appeal: bool,
    pub strategy: Option<String>,
    pub corpus_version: String,
    /// The model agents' system prompt version the run used.
    pub agent_prompt: String,
    /// The agent protocol's version (the action grammar of pages, prompt and episode API).
    #[serde(default)]
    pub agent_protocol: String,
    /// Judge versions of the stored scores (empty until the run is scored).
    pub judges: Vec<String>,
    pub coverage: Vec<CoverageCell>,
    /// Each agent configuration's setup: (name, context kept, reply tokens, steps, temperature).
    #[serde(default)]
    pub agent_setup: Vec<(String, String)>,
    /// L0 trials the planner added so that every manipulated trial has its clean twin.
    #[serde(default)]
    pub clean_twins: usize,
    /// What each configuration's agent calls used and cost so far.
    #[serde(default)]
    pub costs: Vec<CostRow>,
}

/// One configuration's tokens and cost in a run (its trials' steps so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// Whose calls: the agent's, its defense filter's, the attacker's while the trials ran,
    /// or the model judge's that scored them.
    pub role: CostRole,
    pub agent: String,
    /// Trials with at least one step (the agent), or scored by a model judge (the judge).
    pub trials: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// US dollars: 0 for a baseline, `None` without a configured price.
    pub cost_usd: Option<f64>,
    /// How it is priced, in words (a baseline, the price, or no price configured).
    pub pricing: String,
}

/// Whose model calls a cost row counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostRole {
    Agent,
    /// The judge filter of a defended configuration (`+judge`), while the trials ran.
    Defense,
    /// The attacker writing the interested parties' texts, while the trials ran.
    Attacker,
    /// The model judge that scored the trials.
    Judge,
    /// The agent again, in counterfactual replays of the run's trials.
    Replay,
}

impl CostRole {
    pub fn as_str(self) -> &'static str {
        match self {
            CostRole::Agent => "agent",
            CostRole::Defense => "defense",
            CostRole::Attacker => "attacker",
            CostRole::Judge => "judge",
            CostRole::Replay => "replay",
        }
    }
}

/// What the sum of a run's cost rows is, and is not.
pub const CHARGED_TO_TRIALS: &str = "each trial's own calls, an answer taken from the cache counted for every trial that used it; \
     work shared by all trials (a judge filter's calibration) is in no row";

/// US dollars as every page and the command line show them: four decimals, or two
/// significant digits below a cent, so that a cheap model does not read as free.
pub fn dollars(c: f64) -> String {
    if c == 0.0 || !c.is_finite() || c.abs() >= 0.01 {
        format!("${c:.4}")
    } else {
        // -log10 of a value under 0.01 is above 2, and finite here.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let decimals = (-c.abs().log10()).floor() as usize + 2;
        format!("${c:.decimals$}")
    }
}

impl CostRow {
    /// The dollars per trial, when the cost is known.
    #[allow(clippy::cast_precision_loss)]
    pub fn per_trial(&self) -> Option<f64> {
        self.cost_usd.map(|c| if self.trials == 0 { 0.0 } else { c / self.trials as f64 })
    }
}

/// Which trials of a run to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialQuery {
    pub run: String,
    pub agent: Option<String>,
    pub level: Option<String>,
    pub state: Option<String>,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub condition: Option<String>,
    /// `right`, `acceptable`, `harmful` or `wrong` (the class of the decision).
    #[serde(default)]
    pub outcome: Option<String>,
    /// Zero-based page.
    pub page: usize,
}

/// The names of a trial list's filters, in the order the pages write them.
pub const TRIAL_FILTERS: [&str; 6] = ["agent", "level", "state", "task", "condition", "outcome"];

/// The classes of a finished trial's decision a list can be filtered by.
pub const OUTCOMES: [&str; 4] = ["right", "acceptable", "harmful", "wrong"];

impl TrialQuery {
    /// The filters as (name, value) pairs for a query string, in [`TRIAL_FILTERS`] order.
    pub fn filters(&self) -> Vec<(&'static str, Option<String>)> {
        let values = [&self.agent, &self.level, &self.state, &self.task, &self.condition, &self.outcome];
        TRIAL_FILTERS.into_iter().zip(values.into_iter().cloned()).collect()
    }

    /// The query with each filter named in [`TRIAL_FILTERS`] read by `get`.
    pub fn with_filters(run: String, page: usize, get: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            run,
            agent: get("agent"),
            level: get("level"),
            state: get("state"),
            task: get("task"),
            condition: get("condition"),
            outcome: get("outcome"),
            page,
        }
    }
}

/// One row of a run's trial table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialSummary {
    pub id: TrialId,
    /// The run the trial belongs to.
    #[serde(default)]
    pub run: RunId,
    /// What the trial's task id refers to: a Mirage task, another harness's sample (an
    /// imported trial) or a GEO target.
    pub task: TaskRef,
    pub agent: String,
    pub level: crate::TrialLevel,
    pub condition: crate::TrialCondition,
    pub seed: i64,
    pub state: TrialState,
    pub verdict: Option<String>,
    pub error: Option<String>,
    /// `right`, `acceptable`, `harmful` or `wrong` once finished (Mirage tasks only).
    #[serde(default)]
    pub decision: Option<String>,
}

/// A trial's neighbourhood: the same task in the same run under every configuration, level
/// and condition (itself included), and the trials before and after it in the run's order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Around {
    pub siblings: Vec<TrialSummary>,
    pub prev: Option<TrialId>,
    pub next: Option<TrialId>,
}

/// A page of trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialPage {
    pub rows: Vec<TrialSummary>,
    /// Trials matching the query.
    pub total: usize,
    pub page: usize,
    pub page_size: usize,
}

/// A task's trials over every run (the newest runs' first, up to a limit).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskTrials {
    pub rows: Vec<TrialSummary>,
    /// Trials of the task in all runs (more than `rows` holds when past the limit).
    pub total: usize,
}

/// The items of a launch-form field: separated by commas, spaces or line breaks. The form's
/// own notes and the server read a field alike.
pub fn form_list(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n']).map(str::trim).filter(|s| !s.is_empty()).map(ToString::to_string).collect()
}

/// The launch form as submitted: every field is text so that a mistake can be explained
/// next to the field it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRun {
    pub tasks: String,
    /// Comma-separated agent configurations (`explorer`, `explorer+keyword`, …).
    pub agents: String,
    pub levels: String,
    pub conditions: String,
    pub seeds: String,
    pub concurrency: String,
    /// Present when the appeal box is ticked.
    #[serde(default)]
    pub appeal: Option<String>,
    /// Replays of every exposed trial after the run (`strip-spans:3`); empty for none.
    #[serde(default)]
    pub replay: String,
    /// People who must agree on a disputed label before it replaces the automatic one
    /// (empty: the default, 2).
    #[serde(default)]
    pub annotators: String,
}

impl NewRun {
    /// The home page's quick baseline run: the three baseline agents on one shop category
    /// (20 tasks), clean and at L1 — 120 trials that finish in seconds.
    pub fn quick() -> NewRun {
        NewRun {
            tasks: "WARDROBING".into(),
            agents: "surface, explorer, oracle".into(),
            levels: "L0, L1".into(),
            conditions: "raw".into(),
            seeds: "0".into(),
            concurrency: "4".into(),
            ..NewRun::default()
        }
    }
}

/// A piece of an observation: plain text, or text an interested party controls (named
/// by its injection point).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub text: String,
    pub injection: Option<String>,
}

/// Turns per page of the trajectory viewer: turn `t` is on page `t / TURN_PAGE`.
pub const TURN_PAGE: usize = 20;

/// One turn of a trajectory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnView {
    pub t: usize,
    pub thought: String,
    /// The action as the agent wrote it (`open /url`, `verdict REFUND …`).
    pub action: String,
    pub url: Option<String>,
    pub status: Option<u16>,
    /// The page text the agent received, cut at the manipulated spans.
    pub observation: Vec<Segment>,
    pub tokens: Option<u64>,
    pub latency_ms: Option<u64>,
}

/// A label on the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelView {
    pub kind: crate::LabelKind,
    pub value: bool,
    pub turn: Option<usize>,
    pub source: String,
    pub confidence: f64,
    pub reason: String,
    pub disputed: bool,
    /// The automatic label a person's label replaced.
    pub automatic: Option<Box<LabelView>>,
    /// Drawn into the audit sample and not settled yet: people label it blind, like a
    /// disputed one.
    #[serde(default)]
    pub audit: bool,
    /// Withheld while people label it (see [`TrajectoryView::blind_waiting`]).
    #[serde(default)]
    pub hidden: bool,
}

/// A claim of the rationale or of a thought, and whether what the agent received supports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimView {
    pub text: String,
    /// `url`, `money`, `date`, `number`, …
    pub kind: String,
    pub verified: bool,
    /// `rationale` or `thought`.
    #[serde(default)]
    pub from: String,
    /// The turn of the thought.
    #[serde(default)]
    pub turn: Option<usize>,
    /// `injected` when only manipulated text the agent was shown holds it (then it is not
    /// verified); `received` when verified; empty otherwise.
    #[serde(default)]
    pub source: String,
}

/// A graph node and whether the agent opened it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub url: String,
    pub visited: bool,
    /// The first turn that opened it.
    pub turn: Option<usize>,
}

/// One scored candidate of an L4 search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TapNodeView {
    pub id: usize,
    pub parent: Option<usize>,
    pub depth: usize,
    /// 1 when the agent took the party's goal, 0.5 another wrong verdict, 0.25 an
    /// acceptable one, 0 the optimal verdict (or none).
    pub score: f64,
    pub verdict: Option<String>,
    pub calls: usize,
    pub text: String,
}

/// The trajectory viewer's data: the trial, its score and one page of turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryView {
    pub trial: TrialSummary,
    /// Siblings and neighbours in the run.
    #[serde(default)]
    pub around: Around,
    pub run: RunId,
    pub ticket: String,
    pub rationale: Option<String>,
    pub optimal: String,
    /// (tier, score) for Default, Strict and Loose; empty until the trial is finished.
    pub tiers: Vec<(String, f64)>,
    pub acc_inv: Option<f64>,
    /// Acc_rsn and Q_ev (1–5), with the judge that gave them.
    pub acc_rsn: Option<f64>,
    pub q_ev: Option<f64>,
    pub rsn_judge: Option<String>,
    pub outcome: Option<String>,
    pub labels: Vec<LabelView>,
    pub claims: Vec<ClaimView>,
    pub graph: Vec<NodeView>,
    /// The appeal turn, when the run had appeals: (kind, outcome, text, final verdict).
    pub appeal: Option<BTreeMap<String, String>>,
    pub turns: Vec<TurnView>,
    /// All turns of the trial (the page holds `turns`).
    pub turn_count: usize,
    pub page: usize,
    pub page_size: usize,
    /// The L4 search behind the trial's passage, in the order nodes were scored (empty
    /// below L4).
    #[serde(default)]
    pub tap: Vec<TapNodeView>,
    /// For a trial imported from another harness: what the harness said about the sample.
    #[serde(default)]
    pub origin: Option<OriginView>,
}

impl TrajectoryView {
    /// Withholds the labels still waiting for people (disputed or audited ones): annotators
    /// label them blind, so the value, turn, reasons and anyone's labels stay hidden from
    /// everyone but operators until they are settled.
    pub fn blind_waiting(&mut self) {
        // The trial's outcome is read off its labels (whether it was exposed, verified,
        // adopted, recovered): it stays hidden while any of them is.
        if self.labels.iter().any(|l| l.disputed || l.audit) {
            self.outcome = None;
        }
        for l in self.labels.iter_mut().filter(|l| l.disputed || l.audit) {
            *l = LabelView {
                kind: l.kind,
                value: false,
                turn: None,
                source: "hidden".into(),
                confidence: 0.0,
                reason: "hidden while people label it (labels are blind until settled)".into(),
                disputed: l.disputed,
                audit: l.audit,
                automatic: None,
                hidden: true,
            };
        }
    }
}

/// What another harness (Inspect AI, ATIF, AgentDojo) said about an imported sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OriginView {
    /// The harness's name as people know it.
    pub harness: String,
    pub file: String,
    pub sample: String,
    pub task: Option<String>,
    pub model: Option<String>,
    pub input: Option<String>,
    pub target: Option<String>,
    pub answer: Option<String>,
    /// (name, value, answer, explanation) of each of the harness's scores.
    pub scores: Vec<(String, String, Option<String>, Option<String>)>,
    /// "206 in, 59 out (265 total)".
    pub tokens: Option<String>,
    /// (name, "1.23 s").
    pub timings: Vec<(String, String)>,
    /// (key, value as text).
    pub metadata: Vec<(String, String)>,
    pub error: Option<String>,
    /// The sample is one of Mirage's tasks: Mirage's judges scored it.
    pub metrics_apply: bool,
    /// The attack it ran under: (attack, injected goal, attack success).
    pub attack: Option<(String, String, Option<bool>)>,
    /// The trajectory that delegated to this one (a subagent's), as (sample, trial id if
    /// imported in the same run).
    pub parent: Option<(String, Option<TrialId>)>,
    /// Subagent trajectories, as (sample, trial id if imported in the same run).
    pub subagents: Vec<(String, Option<TrialId>)>,
}

/// One search result: where it is, and a snippet cut into plain and matching pieces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// `task`, `thought`, `rationale` or `observation`.
    pub kind: String,
    pub task_id: String,
    pub run: Option<RunId>,
    pub trial: Option<TrialId>,
    pub turn: Option<usize>,
    /// (text, matches the query).
    pub snippet: Vec<(String, bool)>,
}

/// Results of a search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub query: String,
    pub kind: Option<String>,
    pub hits: Vec<SearchHit>,
    /// Trials indexed so far.
    pub indexed_trials: usize,
}

/// A request to replay a trial from a turn (operators only); fields as typed, checked on
/// the server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewReplay {
    pub trial: TrialId,
    pub from_turn: String,
    /// `strip-spans`, `clean-level`, `reveal-evidence` or `condition:NAME`.
    pub intervention: String,
    pub samples: String,
}

/// One turn of a trial beside the same turn of a replay (`None` where one has no such turn).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlignedTurn {
    pub t: usize,
    pub original: Option<String>,
    pub replay: Option<String>,
}

/// One replay of a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayView {
    pub id: String,
    pub from_turn: usize,
    pub intervention: String,
    pub sample: i64,
    /// Running, done or error.
    pub state: TrialState,
    pub verdict: Option<String>,
    /// Its verdict is the interested party's goal.
    pub goal: bool,
    /// The original ended on the goal and this replay did not.
    pub left_goal: bool,
    pub error: Option<String>,
    /// Both trajectories turn by turn (actions).
    pub turns: Vec<AlignedTurn>,
    /// The first turn whose actions differ.
    pub first_divergent: Option<usize>,
}

/// A trial's replays and the causal label they give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplaysView {
    pub trial: TrialId,
    pub verdict: Option<String>,
    pub goal: bool,
    pub replays: Vec<ReplayView>,
    /// (caused, clean-level replays from the first exposure counted, of which left the goal).
    pub caused: Option<(bool, usize, usize)>,
}
