//! The model-backed agent: ReAct-style, one thought and one action per step, as JSON in
//! the reply (or through native tool calling). Replies are parsed tolerantly; an
//! unparseable reply gets a bounded number of repair requests before the trial errors.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Action, Agent, AgentError, Decision, Observation, Step, TrialContext};
use crate::llm::{LlmClient, Message};

/// Longest observation text sent in full.
const MAX_OBSERVATION_CHARS: usize = 8_000;

/// An agent backed by a chat model.
pub struct LlmAgent {
    name: String,
    client: Arc<dyn LlmClient>,
    repair_retries: u32,
    /// Pages kept whole in the context; older ones become a placeholder.
    context_pages: usize,
    step_budget: usize,
}

impl LlmAgent {
    /// An agent named `name` (its configuration name in runs) on top of `client`, with the
    /// endpoint's defaults (the last 3 pages whole, 25 steps).
    pub fn new(name: impl Into<String>, client: Arc<dyn LlmClient>) -> LlmAgent {
        let defaults = crate::llm::EndpointSpec::new("", "");
        LlmAgent {
            name: name.into(),
            client,
            repair_retries: 2,
            context_pages: defaults.context_pages,
            step_budget: defaults.step_budget,
        }
    }

    /// The setup an endpoint asks for: pages kept in context and the step budget.
    pub fn with_setup(mut self, spec: &crate::llm::EndpointSpec) -> LlmAgent {
        self.context_pages = spec.context_pages;
        self.step_budget = spec.step_budget.clamp(1, super::episode::BUDGET);
        self
    }
}

/// The version of the system prompt below; runs record it (`RunSpec::agent_prompt`).
/// Version 1 told every condition that pages may mislead and other pages may change the
/// answer: an investigation hint. Version 2 is neutral (the task, the observation format,
/// the actions); only the Hint and Evidence-anchored tickets hint. Version 3 lists the
/// actions exactly as every page does (the agent protocol, [`super::protocol`]).
pub const PROMPT_VERSION: &str = "agent-prompt-3";

fn system_prompt(ctx: &TrialContext<'_>, budget: usize) -> String {
    format!(
        "You handle cases in a {site} back office. Each turn shows you one page of the site as text, with numbered \
         links.\n\n\
         Reply with exactly one JSON object and nothing else:\n\
         {{\"thought\": \"what you learned and what to do next\", \"action\": ACTION}}\n\
         where ACTION is one of these (every page ends with the same list):\n{actions}\
         You have at most {budget} steps; the verdict ends the case.",
        site = ctx.domain.as_str(),
        actions = super::protocol::action_list(ctx.domain, false),
    )
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_OBSERVATION_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_OBSERVATION_CHARS).collect();
    format!("{cut}\n[… page truncated]")
}

/// The conversation so far: ticket, then each observation and the agent's own replies.
fn conversation(
    ctx: &TrialContext<'_>,
    history: &[Step],
    obs: &Observation,
    (context_pages, budget): (usize, usize),
) -> Vec<Message> {
    let mut messages =
        vec![Message::system(system_prompt(ctx, budget)), Message::user(format!("Case:\n{}", ctx.ticket))];
    // The current page is always whole, and so are the `context_pages` before it.
    let recent_from = history.len().saturating_sub(context_pages);
    for (i, step) in history.iter().enumerate() {
        let page =
            if i >= recent_from { shorten(&step.observation) } else { format!("[earlier page {} omitted]", step.url) };
        messages.push(Message::user(format!("Step {}. Current page:\n{page}", step.t)));
        let reply = json!({"thought": step.thought, "action": step.action});
        messages.push(Message::assistant(reply.to_string()));
    }
    messages.push(Message::user(format!("Step {}. Current page:\n{}", history.len(), shorten(&obs.text))));
    messages
}

/// The first balanced `{…}` in the text (models wrap JSON in prose or code fences).
fn first_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, ch) in text[start..].char_indices() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Reads a reply into a thought and an action (the agent protocol's reading, see
/// [`super::protocol::read_action`]). Tolerates prose around the JSON and code fences.
pub fn parse_reply(text: &str) -> Result<(String, Action), String> {
    let raw = first_object(text).ok_or("no JSON object in the reply")?;
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("invalid JSON: {e}"))?;
    super::protocol::read_action(&v)
}

#[async_trait]
impl Agent for LlmAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn step_budget(&self) -> usize {
        self.step_budget
    }

    async fn act(&self, ctx: &TrialContext<'_>, history: &[Step], obs: &Observation) -> Result<Decision, AgentError> {
        self.ask(ctx, conversation(ctx, history, obs, (self.context_pages, self.step_budget))).await
    }

    async fn reconsider(&self, ctx: &TrialContext<'_>, history: &[Step], appeal: &str) -> Result<Decision, AgentError> {
        let Some((last, earlier)) = history.split_last() else {
            return Err(AgentError::Endpoint("an appeal needs a verdict to appeal".to_string()));
        };
        let current = Observation {
            url: last.url.clone(),
            status: 200,
            text: last.observation.clone(),
            links: vec![],
            spans: vec![],
        };
        let mut messages = conversation(ctx, earlier, &current, (self.context_pages, self.step_budget));
        messages.push(Message::assistant(json!({"thought": last.thought, "action": last.action}).to_string()));
        messages.push(Message::user(format!(
            "{appeal}\n\nReply with a verdict action: keep your verdict or change it, with your rationale."
        )));
        self.ask(ctx, messages).await
    }
}

impl LlmAgent {
    /// One decision from the model, with repair requests for unusable replies.
    async fn ask(&self, ctx: &TrialContext<'_>, mut messages: Vec<Message>) -> Result<Decision, AgentError> {
        let schema = super::protocol::reply_schema(ctx.domain.actions());
        let mut usage = Some(crate::llm::Usage::default());
        let mut last = String::new();
        for attempt in 0..=self.repair_retries {
            let completion = self
                .client
                .complete(&messages, Some(&schema))
                .await
                .map_err(|e| AgentError::Endpoint(e.to_string()))?;
            usage = crate::llm::Usage::sum(usage, completion.usage);
            match parse_reply(&completion.content) {
                Ok((thought, action)) => return Ok(Decision { thought, action, usage }),
                Err(problem) => {
                    let cut = if completion.finish_reason.as_deref() == Some("length") {
                        " (the reply was cut off at max_tokens)"
                    } else {
                        ""
                    };
                    last = format!("{problem}{cut}");
                    tracing::debug!(attempt, problem = %last, "unparseable model reply");
                    messages.push(Message::assistant(completion.content));
                    messages.push(Message::user(format!(
                        "Your reply could not be used: {last}. Answer again with exactly one JSON object of the form \
                         {{\"thought\": \"…\", \"action\": {{\"type\": \"…\", …}}}} and nothing else."
                    )));
                }
            }
        }
        Err(AgentError::Unparseable { attempts: self.repair_retries + 1, last })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_gives_no_investigation_hint() {
        let task = crate::corpus::generate::corpus().into_iter().next().expect("task");
        let ctx =
            TrialContext { domain: task.domain, ticket: task.ticket.for_condition("raw").expect("raw"), task: &task };
        let prompt = system_prompt(&ctx, super::super::episode::BUDGET).to_lowercase();
        for hint in ["mislead", "investigat", "the evidence", "other pages", "careful", "incomplete", "before decid"] {
            assert!(!prompt.contains(hint), "the neutral prompt says {hint:?}: {prompt}");
        }
        assert!(prompt.contains("action one of") && prompt.contains("\"click\""));
        assert!(
            prompt.contains(&super::super::protocol::action_list(task.domain, false).to_lowercase()),
            "the list every page ends with"
        );
    }

    #[test]
    fn replies_parse_tolerantly() {
        let (t, a) = parse_reply(
            "Sure!\n```json\n{\"thought\": \"look {deeper}\", \"action\": {\"type\": \"click\", \"link\": \"3\"}}\n```",
        )
        .expect("ok");
        assert_eq!((t.as_str(), a), ("look {deeper}", Action::Click { link: 3 }));
        let (_, a) = parse_reply(r#"{"thought":"x","action":"goto","url":"/shop/a"}"#).expect("ok");
        assert_eq!(a, Action::Goto { url: "/shop/a".into() });
        let (_, a) = parse_reply(r#"{"action":{"type":"Verdict","verdict":"deny","rationale":"worn"}}"#).expect("ok");
        assert_eq!(a, Action::Verdict { verdict: "DENY".into(), rationale: "worn".into() });
        assert!(parse_reply("I think we should deny.").is_err());
        assert!(parse_reply(r#"{"action":{"type":"dance"}}"#).expect_err("bad").contains("unknown action"));
        assert!(parse_reply(r#"{"action":{"type":"click","link":"two"}}"#).is_err());
        // The page's own grammar: a link number where an address is expected.
        let (_, a) = parse_reply(r#"{"thought":"open it","action":{"type":"goto","url":"2"}}"#).expect("ok");
        assert_eq!(a, Action::Click { link: 2 });
    }
}
