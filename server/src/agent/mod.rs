//! Agents and the investigation loop.
//!
//! An [`Agent`] sees one observation at a time (plus its own history) and answers with a
//! thought and one action. The loop in [`episode`] owns the budget, the browser state and
//! persistence; agents never touch the database or the network of the sites directly.

pub mod appeal;
pub mod baselines;
pub mod credulous;
pub mod episode;
pub mod live;
pub mod llm;
pub mod protocol;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::corpus::{Domain, Task};
use crate::llm::Usage;

/// One action, as in the trajectory format (schemas/trajectory.schema.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Open a site path (or an absolute URL on the site).
    Goto { url: String },
    /// Follow link number `link` (1-based) of the current observation.
    Click { link: usize },
    /// Full-text search (the wiki's search box).
    Search { query: String },
    /// Return to the previous page.
    Back,
    /// The final decision, with the agent's rationale.
    Verdict { verdict: String, rationale: String },
    /// A tool call made in another harness (an imported trajectory); Mirage's sites have no
    /// such tool, so it is shown and searched, never replayed.
    Tool {
        name: String,
        #[serde(default)]
        arguments: serde_json::Value,
    },
    /// An imported trajectory's answer that is not one of Mirage's verdicts; empty when the
    /// trajectory ended without one.
    Answer { text: String },
}

impl Action {
    /// The action in a few words, as the trajectory viewer heads a turn with it.
    pub fn describe(&self) -> String {
        match self {
            Action::Goto { url } => format!("goto {url}"),
            Action::Click { link } => format!("click [{link}]"),
            Action::Search { query } => format!("search {query:?}"),
            Action::Back => "back".to_string(),
            Action::Verdict { verdict, .. } => format!("verdict {verdict}"),
            Action::Tool { name, arguments } => format!("{name}({arguments})"),
            Action::Answer { text } if text.is_empty() => "ended without an answer".to_string(),
            Action::Answer { text } => format!("answer: {text}"),
        }
    }
}

/// What the agent sees at one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Normalised path of the page.
    pub url: String,
    pub status: u16,
    /// The text observation (readable text, numbered links, available actions).
    pub text: String,
    /// (label, url) of the numbered links, in order.
    pub links: Vec<(String, String)>,
    /// Manipulated spans in `text` (never shown to the agent as such).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<crate::env::Span>,
}

/// An agent's answer to one observation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub thought: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One completed step of a trial: the page the agent was on and what it did there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub t: usize,
    pub url: String,
    /// The HTTP status the site answered for `url` (absent from steps stored before it was
    /// recorded). Only a page that answered 2xx earns investigation credit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The page as the agent read it. Empty (and left out of the JSON) for a step imported
    /// without one: the scorer then renders the page from the task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observation: String,
    #[serde(default)]
    pub thought: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub latency_ms: u64,
    /// Manipulated spans in `observation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<crate::env::Span>,
}

/// What an agent may know about the trial it is in.
pub struct TrialContext<'a> {
    pub domain: Domain,
    /// The ticket for the trial's condition.
    pub ticket: &'a str,
    /// The full task. Only the `oracle` baseline reads its gold fields; every other agent
    /// must decide from the ticket and the observations.
    pub task: &'a Task,
}

/// Why an agent could not produce a decision. The trial ends in the error state.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("model endpoint failed: {0}")]
    Endpoint(String),
    #[error("model output could not be parsed after {attempts} attempts: {last}")]
    Unparseable { attempts: u32, last: String },
}

/// Decides one step at a time.
#[async_trait]
pub trait Agent: Send + Sync {
    /// A stable name recorded with every trial (`surface`, `explorer`, `oracle`, …).
    fn name(&self) -> &str;

    /// The most steps of a trial (the verdict included), at most [`episode::BUDGET`].
    fn step_budget(&self) -> usize {
        episode::BUDGET
    }
    /// The next thought and action, given the trial, the steps so far and the current page.
    async fn act(
        &self,
        ctx: &TrialContext<'_>,
        history: &[Step],
        observation: &Observation,
    ) -> Result<Decision, AgentError>;

    /// Answers an appeal against the verdict that ends `history`. A verdict action is the
    /// answer; anything else counts as keeping the verdict. Baselines keep their verdict.
    async fn reconsider(
        &self,
        _ctx: &TrialContext<'_>,
        history: &[Step],
        _appeal: &str,
    ) -> Result<Decision, AgentError> {
        let action = match history.last().map(|s| s.action.clone()) {
            Some(a @ Action::Verdict { .. }) => a,
            _ => Action::Verdict { verdict: String::new(), rationale: String::new() },
        };
        Ok(Decision { thought: "The appeal brings nothing new.".to_string(), action, usage: None })
    }
}
