//! Mirage's vocabulary: the words both halves of the house use, as types. The ids of runs
//! and trials, the typed names (enums that travel as text), and the values the engine
//! computes and the pages show (estimates, report rows, power, comparisons, validation,
//! GEO figures), with the wire types of the dashboard's server functions. Plain data with
//! serde only: no UI framework and no database (the ids' database encoding is behind the
//! `sqlx` feature, which the server turns on), so the storage and the statistics below
//! the services can use it without depending on the pages.

#[macro_use]
pub mod names;

mod annotate;
mod compare;
mod geo;
mod ids;
mod insights;
mod labels;
pub mod level;
mod metric;
mod power;
pub mod recorded;
mod report;
pub mod routes;
mod runs;
mod states;
mod tasks;

pub use annotate::*;
pub use compare::*;
pub use geo::*;
pub use ids::{RunId, TrialId};
pub use insights::*;
pub use labels::{DecisionClass, LabelKind};
pub use level::Level;
pub use metric::Metric;
pub use names::UnknownName;
pub use power::*;
pub use recorded::{Recorded, TrialCondition, TrialLevel};
pub use report::*;
pub use runs::*;
pub use states::{RunStatus, TrialState};
pub use tasks::{Condition, GeoTarget, Harness, NotATarget, TaskRef};

use serde::{Deserialize, Serialize};

/// Filters of the tasks page; every field is optional and comes from the URL query.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFilter {
    pub domain: Option<String>,
    pub category: Option<String>,
    pub difficulty: Option<String>,
    /// `Some(true)`: only tasks whose surface points to a wrong verdict.
    pub contradiction: Option<bool>,
}

/// One row of the tasks table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub id: String,
    pub domain: String,
    pub category: String,
    pub difficulty: String,
    pub surface_contradiction: bool,
    pub variant: Option<String>,
    pub optimal: String,
    pub graph_size: usize,
    pub ticket: String,
}

/// The tasks page's data: the matching tasks and the facets to filter by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskList {
    pub tasks: Vec<TaskSummary>,
    /// Number of tasks in the corpus before filtering.
    pub corpus_size: usize,
    /// (domain, category, number of tasks) for every category in the corpus.
    pub categories: Vec<(String, String, usize)>,
}

/// A page of a task as the detail view shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageView {
    pub url: String,
    pub title: String,
    pub text: String,
    /// Gold facts that sit on this page.
    pub facts: Vec<String>,
}

/// A manipulable text and who controls it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InjectionView {
    pub id: String,
    pub url: String,
    pub party: String,
    pub goal: String,
    pub text: String,
}

/// Everything the task detail page shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskDetail {
    pub summary: TaskSummary,
    /// (condition, ticket text) for raw, hint and evidence_anchored.
    pub tickets: Vec<(String, String)>,
    pub surface: PageView,
    /// Graph nodes other than the start page: the hidden layer.
    pub hidden: Vec<PageView>,
    pub graph: Vec<String>,
    pub gold_facts: Vec<(String, String)>,
    pub acceptable: Vec<(String, f64)>,
    pub harmful: Vec<String>,
    pub justification: String,
    pub injection_points: Vec<InjectionView>,
    pub distractors: Vec<PageView>,
}

/// A time in ms since the epoch, in UTC to the second (the raw number if out of range).
pub fn utc_second(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

/// Who may do what on the dashboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads every page.
    Viewer,
    /// Also settles disputed labels.
    Annotator,
    /// Also launches and cancels runs and adjudicates conflicts.
    Operator,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Annotator => "annotator",
            Role::Operator => "operator",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "annotator" => Some(Role::Annotator),
            "operator" => Some(Role::Operator),
            _ => None,
        }
    }
}

/// The person behind a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub name: String,
    pub role: Role,
    /// No accounts exist: the dashboard serves loopback only and everyone is the operator.
    pub open: bool,
}
