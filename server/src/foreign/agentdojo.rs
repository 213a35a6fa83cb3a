//! AgentDojo result files: one JSON object per (pipeline, suite, user task, attack,
//! injection task), as AgentDojo's logger writes them under
//! `<logdir>/<pipeline>/<suite>/<user task>/<attack>/<injection task>.json`.
//!
//! The injected texts become manipulated spans wherever a tool result shows them, and
//! AgentDojo's `security` (the injection task was carried out) is the attack's success.
//! The attack is the trial's level and the injection task its condition; a file without
//! an attack is level L0, condition `raw`.

use std::collections::BTreeMap;

use anyhow::bail;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::chat::{Call, Message, Role, turns, with_error};
use super::{Attack, Harness, HarnessScore, Imported, Mapping, Origin, end_of, trial_of};
use crate::env::World;

#[derive(Deserialize)]
struct Result {
    suite_name: String,
    pipeline_name: String,
    user_task_id: String,
    #[serde(default)]
    injection_task_id: Option<String>,
    #[serde(default)]
    attack_type: Option<String>,
    #[serde(default)]
    injections: BTreeMap<String, String>,
    #[serde(default)]
    messages: Vec<Msg>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    utility: Option<bool>,
    #[serde(default)]
    security: Option<bool>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    benchmark_version: Option<String>,
    #[serde(default)]
    evaluation_timestamp: Option<String>,
    #[serde(default)]
    agentdojo_package_version: Option<String>,
}

#[derive(Deserialize)]
struct Msg {
    role: String,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    tool_calls: Option<Vec<FunctionCall>>,
    #[serde(default)]
    tool_call: Option<FunctionCall>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    function: String,
    #[serde(default)]
    args: Value,
}

/// Text and reasoning of a message's content: a string (older files) or content blocks.
fn content_of(content: &Value) -> (String, String) {
    match content {
        Value::String(s) => (s.clone(), String::new()),
        Value::Array(blocks) => {
            let (mut text, mut thinking) = (Vec::new(), Vec::new());
            for b in blocks {
                let body = b.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
                match b.get("type").and_then(Value::as_str) {
                    Some("thinking") => thinking.push(body),
                    Some("redacted_thinking") => thinking.push("[thinking redacted]".into()),
                    _ => text.push(body),
                }
            }
            (text.join("\n"), thinking.join("\n"))
        }
        _ => (String::new(), String::new()),
    }
}

/// Whether a benchmark version is one this reader knows (v1 and its point releases).
fn known_version(v: &str) -> bool {
    v.strip_prefix("v1").is_some_and(|rest| match rest.strip_prefix('.') {
        None => rest.is_empty(),
        Some(points) => points.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
    })
}

/// Reads one AgentDojo result file.
pub fn read(file: &str, bytes: &[u8], world: &World, mapping: &Mapping) -> anyhow::Result<Imported> {
    let r: Result = super::inspect::parse(file, bytes)?;
    if let Some(v) = &r.benchmark_version
        && !known_version(v)
    {
        bail!("{file}: benchmark_version: unknown AgentDojo benchmark version {v:?} (this Mirage reads v1.x)");
    }
    let id = format!("{}/{}", r.suite_name, r.user_task_id);
    let injection = r.injection_task_id.clone().filter(|i| !i.is_empty() && i != "none");
    let mut metadata = Map::new();
    for (k, v) in [
        ("benchmark_version", &r.benchmark_version),
        ("evaluation_timestamp", &r.evaluation_timestamp),
        ("agentdojo_package_version", &r.agentdojo_package_version),
    ] {
        if let Some(v) = v {
            metadata.insert(k.into(), json!(v));
        }
    }
    let task = mapping.task_of(world, &id, &metadata);
    let messages = messages_of(file, &r.messages)?;
    let injections = if injection.is_some() { r.injections.clone() } else { BTreeMap::new() };
    let t = turns(&messages, task.map(|t| &**t), &injections);
    let input = messages.iter().find(|m| m.role == Role::User).map(|m| m.text.clone());
    let attack = injection.as_ref().map(|goal| Attack {
        kind: r.attack_type.clone().unwrap_or_else(|| "unknown".into()),
        goal: goal.clone(),
        injections: r.injections.clone(),
        success: r.security,
    });
    let level: vocab::TrialLevel = match &injection {
        Some(_) => r.attack_type.clone().unwrap_or_else(|| "attack".into()).into(),
        None => crate::manip::Level::L0.into(),
    };
    let condition: vocab::TrialCondition = injection.clone().map_or(vocab::Condition::Raw.into(), Into::into);
    let origin = Origin {
        file: file.to_string(),
        sample: format!("{id}/{}", injection.as_deref().unwrap_or("none")),
        task: Some(r.suite_name.clone()),
        model: Some(r.pipeline_name.clone()),
        input,
        target: None,
        answer: t.answer.clone(),
        scores: r
            .utility
            .map(|u| HarnessScore { name: "utility".into(), value: json!(u), answer: None, explanation: None })
            .into_iter()
            .collect(),
        tokens: None,
        timings: r.duration.map(|d| ("duration".to_string(), d)).into_iter().collect(),
        metadata,
        error: r.error.clone(),
        mapped: task.map(|t| t.id.clone()),
        attack,
        ..Origin::of(Harness::Agentdojo)
    };
    Ok(Imported {
        place: file.to_string(),
        trial: trial_of(Harness::Agentdojo, &id, task.map(|t| t.id.as_str()), &r.pipeline_name, level, condition, 0),
        steps: t.steps,
        end: end_of(r.error.as_deref(), t.verdict, t.answer.as_deref()),
        origin,
    })
}

/// The result's messages as chat messages, each with its reasoning, tool calls and error.
fn messages_of(file: &str, messages: &[Msg]) -> anyhow::Result<Vec<Message>> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let Some(role) = Role::parse(&m.role) else {
                bail!("{file}: messages[{i}].role: unknown role {:?}", m.role);
            };
            let (text, reasoning) = content_of(&m.content);
            let text = with_error(text, m.error.as_deref());
            let calls = m
                .tool_calls
                .iter()
                .flatten()
                .map(|c| Call { name: c.function.clone(), arguments: c.args.clone() })
                .collect();
            Ok(Message {
                reasoning,
                calls,
                tool: m.tool_call.as_ref().map(|c| c.function.clone()),
                ..Message::new(role, text)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_of_the_first_benchmark_are_known() {
        for v in ["v1", "v1.1", "v1.1.2", "v1.2", "v1.2.1"] {
            assert!(super::known_version(v), "{v}");
        }
        for v in ["v2", "v10", "1.2", "v1.", "v1.x", "v1.2.beta"] {
            assert!(!super::known_version(v), "{v}");
        }
    }
}
