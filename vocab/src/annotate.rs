//! Wire types of the annotation queue.

use serde::{Deserialize, Serialize};

use super::{LabelKind, RunId, TrialId};

/// One person's label of an item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    pub author: String,
    pub value: bool,
    pub note: String,
    /// `human` or `adjudication`.
    pub source: String,
    /// The turn the person pointed to, if any.
    #[serde(default)]
    pub turn: Option<usize>,
    /// When it was given (ms since the epoch).
    #[serde(default)]
    pub at: i64,
}

/// A label waiting for people: disputed, in conflict, or drawn into the audit sample. Annotators label blind: until they have labelled
/// an item themselves, the automatic value, its reasons and other people's labels are
/// withheld (`blind`); operators, who adjudicate, see everything.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueItem {
    pub trial_id: TrialId,
    pub run: RunId,
    /// What the trial worked on: a Mirage task, or another harness's sample (no task page).
    pub task: crate::TaskRef,
    pub agent: String,
    pub level: crate::TrialLevel,
    pub kind: LabelKind,
    /// The automatic label (rule, or the model judge where it disagreed); `None` while blind.
    pub value: Option<bool>,
    /// The turn the automatic label points to (while blind, the trial's first exposure, so
    /// that whether there is one does not tell the value).
    pub turn: Option<usize>,
    pub source: String,
    pub confidence: f64,
    /// Why the automatic label says what it says; `None` while blind.
    pub reason: Option<String>,
    /// The model judge's opinion, when it gave one: (value, reason); `None` while blind.
    pub second_opinion: Option<(bool, String)>,
    /// Annotators disagree: an operator must adjudicate.
    pub conflict: bool,
    /// Drawn at random into the audit sample (the graders did not dispute it): people's
    /// labels of such items measure the graders over the whole run.
    #[serde(default)]
    pub audit: bool,
    /// People who have labelled it, and how many must agree to settle it.
    pub labels: usize,
    pub needed: usize,
    /// The caller's own latest label.
    pub mine: Option<bool>,
    /// Every person's latest label with its note and turn (empty while blind).
    pub votes: Vec<Vote>,
    pub blind: bool,
    /// Who is labelling it, and until when (ms since the epoch).
    pub locked_by: Option<(String, i64)>,
}

/// Most queue items one page lists.
pub const QUEUE_PAGE: usize = 200;

/// Which queue items to list: by label kind, configuration, level, task (exact id) and
/// state (`todo`: waiting for the caller's label; `mine`: labelled by the caller;
/// `conflict`; `waiting`: labelled, not yet by enough people). Empty: any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueFilter {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub state: String,
}

impl QueueFilter {
    /// The filter as query pairs (for links that keep it).
    pub fn pairs(&self) -> Vec<(&'static str, Option<String>)> {
        vec![
            ("kind", Some(self.kind.clone())),
            ("agent", Some(self.agent.clone())),
            ("level", Some(self.level.clone())),
            ("task", Some(self.task.clone())),
            ("state", Some(self.state.clone())),
        ]
    }
}

/// The states a queue item can be in for the caller, as the filter names them.
pub const QUEUE_STATES: [(&str, &str); 5] = [
    ("todo", "waiting for your label"),
    ("mine", "labelled by you"),
    ("waiting", "labelled, too few people yet"),
    ("conflict", "annotators disagree"),
    ("audit", "audit sample (not disputed, drawn at random)"),
];

/// Agreement on one label kind: Cohen's κ with its 95 % t interval over items, raw
/// agreement and n; `note` says why κ is missing (every label one value) when it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementRow {
    pub kind: LabelKind,
    pub n: usize,
    pub kappa: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub raw: Option<f64>,
    pub note: Option<String>,
}

/// The queue of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub run: RunId,
    pub runs: Vec<RunId>,
    pub filter: QueueFilter,
    /// Conflicts first, then recovery, adoption, exposure, verification: one page of at
    /// most [`QUEUE_PAGE`] of the items the filter keeps.
    pub items: Vec<QueueItem>,
    /// Items the filter keeps, in all.
    pub total: usize,
    /// Items in the run's queue before filtering.
    pub unfiltered: usize,
    /// Values the filter can take, each with its number of items: kinds, configurations,
    /// levels, states.
    pub kinds: Vec<(String, usize)>,
    pub agents: Vec<(String, usize)>,
    pub levels: Vec<(String, usize)>,
    pub states: Vec<(String, usize)>,
    /// The page shown (0-based) and how many there are.
    pub page: usize,
    pub pages: usize,
    /// Labels people have settled in this run, and how many annotators must agree.
    pub settled: usize,
    pub needed: usize,
    /// Labels people have given in this run (every event, adjudications included).
    pub people_labels: usize,
    /// Automatic against settled labels, per kind.
    pub agreement: Vec<AgreementRow>,
    /// Annotator against annotator, per kind, over items two or more people labelled.
    pub annotators: Vec<AgreementRow>,
    /// How people's labels moved the numbers: per configuration and label metric whose mean
    /// changed, (agent, metric, mean with automatic labels only, mean with people's labels).
    pub effects: Vec<(String, String, f64, f64)>,
    /// Set while the run's scores are being computed.
    #[serde(default)]
    pub pending: Option<super::Pending>,
}

/// An item as its page shows it: the whole context for anyone, and whether the caller may
/// label it now (and if not, why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenItem {
    pub item: QueueItem,
    /// Enough people's labels (or an adjudication) replaced the automatic one.
    pub settled: bool,
    /// The caller may label it (role, and nobody else holds it).
    pub can_label: bool,
    /// Why the form is disabled, when it is.
    pub why_not: Option<String>,
    /// The caller holds the lock, until this time (ms since the epoch).
    pub mine_until: Option<i64>,
    pub can_adjudicate: bool,
    /// The items before and after this one in the filtered queue (item paths with the filter).
    pub prev: Option<String>,
    pub next: Option<String>,
    /// How long "Start labelling" holds the item, in minutes.
    pub lock_minutes: i64,
}

/// A person's label as submitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewLabel {
    pub trial: TrialId,
    pub kind: String,
    /// `yes` or `no`.
    pub value: String,
    /// The turn where it happened (optional).
    pub turn: String,
    /// Optional for annotators; an adjudication that overrules the automatic label needs one.
    pub note: String,
}

/// The path of an item's page, keeping the queue's filter.
pub fn item_href(trial: &str, kind: LabelKind, filter: &QueueFilter) -> String {
    format!("{}{}", crate::routes::label(trial, kind), crate::routes::query(&filter.pairs()))
}

/// A trial's reasoning as a person grades it: what the reasoning judge sees (the rationale,
/// the gold facts, the reference explanation and the correct decision), and the caller's
/// own latest grade. The judge's score is not shown, so that the grade is blind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradeView {
    pub trial_id: TrialId,
    pub run: RunId,
    pub task_id: String,
    pub agent: String,
    pub verdict: Option<String>,
    pub rationale: String,
    pub gold_facts: Vec<String>,
    pub justification: String,
    pub optimal: String,
    /// The caller's latest grade: (Acc_rsn, decision, note).
    pub mine: Option<(f64, String, String)>,
    /// People who graded this trial.
    pub graded_by: usize,
}

/// A person's grade as submitted from the form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewGrade {
    pub trial: TrialId,
    /// Acc_rsn in tenths, `0.0` to `1.0`.
    pub acc_rsn: String,
    /// `right`, `acceptable` or `wrong`.
    pub decision: String,
    pub note: String,
}

/// The longest note a label, an adjudication or a grade may carry, in characters.
pub const MAX_NOTE_CHARS: usize = 4_000;
