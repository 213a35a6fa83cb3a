//! Wire types of the annotation queue.

use serde::{Deserialize, Serialize};

/// One person's label of an item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    pub author: String,
    pub value: bool,
    pub note: String,
    /// `human` or `adjudication`.
    pub source: String,
}

/// A disputed label waiting for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueItem {
    pub trial_id: String,
    pub run: String,
    pub task_id: String,
    pub agent: String,
    pub level: String,
    /// `recovery`, `adoption`, `exposure` or `verification`.
    pub kind: String,
    /// The automatic label (rule, or the model judge where it disagreed).
    pub value: bool,
    pub turn: Option<usize>,
    pub source: String,
    pub confidence: f64,
    pub reason: String,
    /// The model judge's opinion, when it gave one: (value, reason).
    pub second_opinion: Option<(bool, String)>,
    /// Annotators disagree: an operator must adjudicate.
    pub conflict: bool,
    pub votes: Vec<Vote>,
    /// Who has the item open, and until when (ms since the epoch).
    pub locked_by: Option<(String, i64)>,
}

/// Most queue items one page lists.
pub const QUEUE_PAGE: usize = 200;

/// The queue of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub run: String,
    pub runs: Vec<String>,
    /// Conflicts first, then recovery, adoption, exposure, verification: one page of at
    /// most [`QUEUE_PAGE`].
    pub items: Vec<QueueItem>,
    /// Items waiting in all.
    pub total: usize,
    /// The page shown (0-based) and how many there are.
    pub page: usize,
    pub pages: usize,
    /// Labels people have settled in this run.
    pub settled: usize,
    /// Cohen's κ between automatic and settled labels: (kind, n, κ).
    pub agreement: Vec<(String, usize, Option<f64>)>,
    /// How people's labels moved the numbers: per configuration and label metric whose mean
    /// changed, (agent, metric, mean with automatic labels only, mean with people's labels).
    pub effects: Vec<(String, String, f64, f64)>,
    /// Set while the run's scores are being computed.
    #[serde(default)]
    pub pending: Option<super::Pending>,
}

/// An item opened for labelling: the lock is held by the caller until `locked_until`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenItem {
    pub item: QueueItem,
    pub locked_until: i64,
    /// A person's label already replaced the automatic one.
    pub settled: bool,
}

/// A person's label as submitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewLabel {
    pub trial: String,
    pub kind: String,
    /// `yes` or `no`.
    pub value: String,
    /// The turn where it happened (optional).
    pub turn: String,
    pub note: String,
}

/// A trial's reasoning as a person grades it: what the reasoning judge sees (the rationale,
/// the gold facts, the reference explanation and the correct decision), and the caller's
/// own latest grade. The judge's score is not shown, so that the grade is blind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradeView {
    pub trial_id: String,
    pub run: String,
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
    pub trial: String,
    /// Acc_rsn in tenths, `0.0` to `1.0`.
    pub acc_rsn: String,
    /// `right`, `acceptable` or `wrong`.
    pub decision: String,
    pub note: String,
}
