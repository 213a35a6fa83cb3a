//! ATIF, Harbor's Agent Trajectory Interchange Format (v1.x): read into trials, subagent
//! trajectories included (embedded in `subagent_trajectories`, or files named by a
//! `subagent_trajectory_ref`), and written from any run ([`write_run`]).
//!
//! An ATIF agent step holds the model's message, its tool calls and their results; in
//! Mirage a turn is what the agent saw, then what it did. So a Mirage turn's action is the
//! ATIF step's tool call, and the page the action led to is that step's observation and the
//! next turn's observation. Mirage's own trial identity (task, level, condition, seed,
//! verdict) travels in the root `extra.mirage`, so an exported run imports back as itself.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::chat::{Call, Message, Role, turns};
use super::{Harness, Imported, Mapping, Origin, Tokens, end_of, trial_of};
use crate::agent::{Action, Step};
use crate::db::{TrialRow, TrialState};
use crate::env::World;

/// The version [`write_run`] writes.
pub const VERSION: &str = "ATIF-v1.6";

#[derive(Deserialize)]
struct Trajectory {
    schema_version: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    trajectory_id: Option<String>,
    agent: Agent,
    steps: Vec<AtifStep>,
    #[serde(default)]
    notes: Option<String>,
    #[serde(default)]
    final_metrics: Option<FinalMetrics>,
    #[serde(default)]
    extra: Option<Map<String, Value>>,
    #[serde(default)]
    subagent_trajectories: Option<Vec<Trajectory>>,
}

#[derive(Deserialize)]
struct Agent {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    model_name: Option<String>,
}

#[derive(Deserialize)]
struct FinalMetrics {
    #[serde(default)]
    total_prompt_tokens: Option<u64>,
    #[serde(default)]
    total_completion_tokens: Option<u64>,
    #[serde(default)]
    total_cost_usd: Option<f64>,
}

#[derive(Deserialize)]
struct AtifStep {
    source: String,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    message: Value,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    observation: Option<Observation>,
    #[serde(default)]
    metrics: Option<Metrics>,
    #[serde(default)]
    extra: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ToolCall {
    tool_call_id: String,
    function_name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Deserialize)]
struct ObservationResult {
    #[serde(default)]
    source_call_id: Option<String>,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    subagent_trajectory_ref: Option<Vec<SubagentRef>>,
}

#[derive(Deserialize)]
struct SubagentRef {
    #[serde(default)]
    trajectory_id: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    trajectory_path: Option<String>,
}

#[derive(Deserialize)]
struct Metrics {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Mirage's identity of an exported trial (root `extra.mirage`).
#[derive(Serialize, Deserialize)]
struct MirageTrial {
    trial_id: String,
    task_id: String,
    level: vocab::TrialLevel,
    condition: vocab::TrialCondition,
    seed: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl MirageTrial {
    /// The trial's cell: a trajectory Mirage exported says it; any other is a raw, clean
    /// first seed.
    fn cell(m: Option<&MirageTrial>) -> (vocab::TrialLevel, vocab::TrialCondition, i64) {
        m.map_or_else(
            || (crate::manip::Level::L0.into(), vocab::Condition::Raw.into(), 0),
            |m| (m.level.clone(), m.condition.clone(), m.seed),
        )
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => p.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Reads an ATIF file: the trajectory (or one per line), then its subagents' (embedded
/// ones, and files a reference names relative to this file), each handed to `visit`.
pub fn read(
    file: &str,
    path: &Path,
    bytes: &[u8],
    world: &World,
    mapping: &Mapping,
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trajectory");
    let mut files = Vec::new();
    let lines: Vec<(usize, &[u8])> =
        bytes.split(|b| *b == b'\n').enumerate().filter(|(_, l)| !l.trim_ascii().is_empty()).collect();
    let one_per_line = lines.len() > 1 && serde_json::from_slice::<serde::de::IgnoredAny>(lines[0].1).is_ok();
    if one_per_line {
        for (n, line) in lines {
            let place = format!("{file}:{}", n + 1);
            let t: Trajectory = super::inspect::parse(&place, line)?;
            one(&place, path, t, None, &format!("{stem}-{}", n + 1), world, mapping, visit, &mut files)?;
        }
    } else {
        let t: Trajectory = super::inspect::parse(file, bytes)?;
        one(file, path, t, None, stem, world, mapping, visit, &mut files)?;
    }
    Ok(())
}

/// The subagent files an ATIF file names (that exist beside it); nothing for a file that
/// does not parse (reading it proper says why).
pub fn subagent_files(path: &Path) -> Vec<std::path::PathBuf> {
    #[derive(Deserialize)]
    struct Refs {
        #[serde(default)]
        steps: Vec<StepRefs>,
    }
    #[derive(Deserialize)]
    struct StepRefs {
        #[serde(default)]
        observation: Option<Observation>,
    }
    let Ok(bytes) = std::fs::read(path) else { return Vec::new() };
    let Ok(refs) = serde_json::from_slice::<Refs>(&bytes) else { return Vec::new() };
    refs.steps
        .iter()
        .flat_map(|s| s.observation.iter().flat_map(|o| &o.results))
        .flat_map(|r| r.subagent_trajectory_ref.iter().flatten())
        .filter_map(|r| r.trajectory_path.as_deref().filter(|p| !p.contains("://")))
        .map(|p| path.parent().unwrap_or(Path::new(".")).join(p))
        .filter(|p| p.is_file())
        .collect()
}

fn check_version(place: &str, v: &str) -> anyhow::Result<()> {
    let minor = v.strip_prefix("ATIF-v1.").or_else(|| (v == "ATIF-v1").then_some("0"));
    if !minor.is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())) {
        bail!("{place}: schema_version: unknown ATIF version {v:?} (this Mirage reads ATIF-v1.x)");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn one(
    file: &str,
    path: &Path,
    mut t: Trajectory,
    parent: Option<&str>,
    fallback_id: &str,
    world: &World,
    mapping: &Mapping,
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
    files: &mut Vec<std::path::PathBuf>,
) -> anyhow::Result<()> {
    // A subagent's sample id is its parent's, a slash, and its own.
    let own = t.trajectory_id.clone().or_else(|| t.session_id.clone()).unwrap_or_else(|| fallback_id.to_string());
    let (place, sample) = parent.map_or_else(
        || (file.to_string(), own.clone()),
        |p| (format!("{file}: subagent of {p}"), format!("{p}/{own}")),
    );
    check_version(&place, &t.schema_version)?;
    let extra = t.extra.clone().unwrap_or_default();
    let mirage: Option<MirageTrial> = extra.get("mirage").and_then(|m| serde_json::from_value(m.clone()).ok());
    let mut metadata = extra.clone();
    if let Some(m) = &mirage {
        metadata.insert("mirage_task".into(), json!(m.task_id));
    }
    let task = mapping.task_of(world, &sample, &metadata);
    let (messages, subagents, stamps) = read_steps(&place, &t.steps)?;
    let mut turned = turns(&messages, task.map(|t| &**t), &BTreeMap::new());
    restore_extras(&t.steps, &messages, &mut turned.steps);
    let (tokens, timings) = usage_of(&t, &stamps);
    keep_facts(&t, &mut metadata);
    let (embedded, sub_ids) = subagents_of(&sample, t.subagent_trajectories.take(), &subagents);
    let error = mirage.as_ref().and_then(|m| m.error.clone());
    let answer = turned.answer.clone();
    let verdict =
        turned.verdict.take().or_else(|| mirage.as_ref().and_then(|m| m.verdict.clone()).filter(|_| task.is_some()));
    let model = t.agent.model_name.clone();
    let agent = model.as_ref().map_or_else(|| t.agent.name.clone(), |m| format!("{}/{m}", t.agent.name));
    let (level, condition, seed) = MirageTrial::cell(mirage.as_ref());
    let origin = Origin {
        file: file.to_string(),
        sample: sample.clone(),
        task: Some(t.agent.name.clone()),
        model,
        input: messages.iter().find(|m| m.role == Role::User).map(|m| m.text.clone()),
        answer: answer.clone(),
        tokens,
        timings,
        metadata,
        error: error.clone(),
        mapped: task.map(|t| t.id.clone()),
        parent: parent.map(ToString::to_string),
        subagents: sub_ids,
        ..Origin::of(Harness::Atif)
    };
    visit(Imported {
        place: place.clone(),
        trial: trial_of(Harness::Atif, &sample, task.map(|t| t.id.as_str()), &agent, level, condition, seed),
        steps: turned.steps,
        end: end_of(error.as_deref(), verdict, answer.as_deref()),
        origin,
    })?;
    for (key, sub) in embedded {
        one(file, path, sub, Some(&sample), &key, world, mapping, visit, files)?;
    }
    for (key, r) in subagents {
        let Some((sub_file, sub_path, sub)) = subagent_file(&place, path, r.trajectory_path)? else { continue };
        files.push(sub_path.clone());
        one(&sub_file, &sub_path, sub, Some(&sample), &key, world, mapping, visit, files)?;
    }
    Ok(())
}

/// A subagent's trajectory in a file of its own beside `path`, read: (its name, its path,
/// the trajectory). A URL is not followed, and a file that is not there is skipped.
fn subagent_file(
    place: &str,
    path: &Path,
    rel: Option<String>,
) -> anyhow::Result<Option<(String, std::path::PathBuf, Trajectory)>> {
    let Some(rel) = rel.filter(|p| !p.contains("://")) else { return Ok(None) };
    let sub_path = path.parent().unwrap_or(Path::new(".")).join(&rel);
    if !sub_path.is_file() {
        return Ok(None);
    }
    let sub_file = sub_path.display().to_string();
    let bytes = std::fs::read(&sub_path).map_err(|e| anyhow::anyhow!("{place}: subagent file {sub_file}: {e}"))?;
    let sub: Trajectory = super::inspect::parse(&sub_file, &bytes)?;
    Ok(Some((sub_file, sub_path, sub)))
}

/// The subagent trajectories embedded in a trajectory, by key, and the sample ids of every
/// subagent it refers to, embedded or in a file of its own.
fn subagents_of(
    sample: &str,
    embedded: Option<Vec<Trajectory>>,
    referred: &[(String, SubagentRef)],
) -> (BTreeMap<String, Trajectory>, Vec<String>) {
    let mut by_key: BTreeMap<String, Trajectory> = BTreeMap::new();
    for (i, sub) in embedded.into_iter().flatten().enumerate() {
        let key = sub.trajectory_id.clone().unwrap_or_else(|| format!("subagent-{i}"));
        by_key.insert(key, sub);
    }
    let ids = referred
        .iter()
        .map(|(k, _)| format!("{sample}/{k}"))
        .chain(by_key.keys().filter(|k| !referred.iter().any(|(s, _)| s == *k)).map(|k| format!("{sample}/{k}")))
        .collect();
    (by_key, ids)
}

/// The token counts of the trajectory's final metrics and the time from its first stamp to
/// its last, in seconds.
fn usage_of(
    t: &Trajectory,
    stamps: &[chrono::DateTime<chrono::FixedOffset>],
) -> (Option<Tokens>, BTreeMap<String, f64>) {
    let tokens = t.final_metrics.as_ref().and_then(|m| {
        let (i, o) = (m.total_prompt_tokens?, m.total_completion_tokens.unwrap_or(0));
        Some(Tokens { input: i, output: o, total: i + o })
    });
    let mut timings = BTreeMap::new();
    if let (Some(first), Some(last)) = (stamps.iter().min(), stamps.iter().max()) {
        timings.insert("elapsed".to_string(), (*last - *first).num_milliseconds() as f64 / 1000.0);
    }
    (tokens, timings)
}

/// Keeps the trajectory's cost, notes and agent version in the imported trial's metadata.
fn keep_facts(t: &Trajectory, metadata: &mut Map<String, Value>) {
    if let Some(cost) = t.final_metrics.as_ref().and_then(|m| m.total_cost_usd) {
        metadata.insert("total_cost_usd".into(), json!(cost));
    }
    if let Some(notes) = &t.notes {
        metadata.insert("notes".into(), json!(notes));
    }
    if let Some(v) = &t.agent.version {
        metadata.insert("agent_version".into(), json!(v));
    }
}

/// A trajectory's steps as chat messages (each observation result a tool message), the
/// subagent trajectories they refer to, and their timestamps.
fn read_steps(place: &str, steps: &[AtifStep]) -> anyhow::Result<ReadSteps> {
    let mut messages = Vec::new();
    let mut subagents: Vec<(String, SubagentRef)> = Vec::new();
    let mut stamps = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let role = match s.source.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "agent" => Role::Assistant,
            other => bail!("{place}: steps[{i}].source: {other:?} is not system, user or agent"),
        };
        if let Some(ts) = s.timestamp.as_deref().and_then(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok()) {
            stamps.push(ts);
        }
        let names: BTreeMap<&str, &str> =
            s.tool_calls.iter().flatten().map(|c| (c.tool_call_id.as_str(), c.function_name.as_str())).collect();
        messages.push(Message {
            reasoning: s.reasoning_content.clone().unwrap_or_default(),
            calls: s
                .tool_calls
                .iter()
                .flatten()
                .map(|c| Call { name: c.function_name.clone(), arguments: c.arguments.clone() })
                .collect(),
            usage: s.metrics.as_ref().map(|m| crate::llm::Usage {
                prompt_tokens: m.prompt_tokens.unwrap_or(0),
                completion_tokens: m.completion_tokens.unwrap_or(0),
            }),
            ..Message::new(role, text_of(&s.message))
        });
        for r in s.observation.iter().flat_map(|o| &o.results) {
            let tool = r.source_call_id.as_deref().and_then(|id| names.get(id)).map(|n| (*n).to_string());
            let text = text_of(&r.content);
            for sub in r.subagent_trajectory_ref.iter().flatten() {
                let key = sub.trajectory_id.clone().or_else(|| sub.session_id.clone()).unwrap_or_default();
                subagents.push((
                    key.clone(),
                    SubagentRef {
                        trajectory_id: sub.trajectory_id.clone(),
                        session_id: sub.session_id.clone(),
                        trajectory_path: sub.trajectory_path.clone(),
                    },
                ));
            }
            if !text.is_empty() || tool.is_some() {
                messages.push(Message { tool, ..Message::new(Role::Tool, text) });
            }
        }
    }
    Ok((messages, subagents, stamps))
}

type ReadSteps = (Vec<Message>, Vec<(String, SubagentRef)>, Vec<chrono::DateTime<chrono::FixedOffset>>);

/// What Mirage wrote beside each of its turns (the page, the marked spans, the time), put
/// back on the first turn each agent step became, where the spans still fit.
fn restore_extras(steps: &[AtifStep], messages: &[Message], turns: &mut [Step]) {
    let mut first_turn = 0;
    for (s, m) in steps.iter().zip(messages.iter().filter(|m| m.role != Role::Tool)) {
        if m.role != Role::Assistant {
            continue;
        }
        if let (Some(extra), Some(step)) = (&s.extra, turns.get_mut(first_turn)) {
            if let Some(url) = extra.get("mirage_url").and_then(Value::as_str) {
                step.url = url.to_string();
            }
            if let Some(ms) = extra.get("mirage_latency_ms").and_then(Value::as_u64) {
                step.latency_ms = ms;
            }
            step.status = extra.get("mirage_status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok());
            let spans: Vec<crate::env::Span> =
                extra.get("mirage_spans").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
            step.spans = spans
                .into_iter()
                .filter(|sp| sp.start.zip(sp.end).is_some_and(|(a, b)| step.observation.get(a..b).is_some()))
                .collect();
        }
        first_turn += m.calls.len().max(1);
    }
}

/// The ATIF trajectory of one finished trial with its steps (and, for an imported trial,
/// what its harness said).
pub fn trajectory_of(trial: &TrialRow, steps: &[Step], origin: Option<&Origin>) -> Value {
    let mut out_steps: Vec<Value> = Vec::new();
    let first = steps.first().map(|s| s.observation.clone()).unwrap_or_default();
    out_steps.push(json!({"step_id": 1, "source": "user", "message": first}));
    for (i, s) in steps.iter().enumerate() {
        let call_id = format!("call-{}", s.t);
        let (message, call) = match &s.action {
            Action::Answer { text } => (text.clone(), None),
            Action::Tool { name, arguments } => {
                let args = if arguments.is_object() { arguments.clone() } else { json!({"value": arguments}) };
                (s.thought.clone(), Some((name.clone(), args)))
            }
            other => {
                let mut v = serde_json::to_value(other).unwrap_or(Value::Null);
                let name = v.get("type").and_then(Value::as_str).unwrap_or("action").to_string();
                if let Some(o) = v.as_object_mut() {
                    o.remove("type");
                }
                (s.thought.clone(), Some((name, v)))
            }
        };
        let mut step = json!({"step_id": out_steps.len() + 1, "source": "agent", "message": message});
        if matches!(s.action, Action::Answer { .. }) && !s.thought.is_empty() {
            step["reasoning_content"] = json!(s.thought);
        }
        if let Some((name, args)) = call {
            step["tool_calls"] = json!([{"tool_call_id": call_id, "function_name": name, "arguments": args}]);
            if let Some(next) = steps.get(i + 1) {
                step["observation"] = json!({"results": [{"source_call_id": call_id, "content": next.observation}]});
            }
        }
        step["extra"] = step_extra(s);
        if let Some(u) = s.usage {
            step["metrics"] = json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens});
        }
        out_steps.push(step);
    }
    let (prompt, completion) =
        steps.iter().filter_map(|s| s.usage).fold((0, 0), |(p, c), u| (p + u.prompt_tokens, c + u.completion_tokens));
    let mirage = MirageTrial {
        trial_id: trial.trial_id.to_string(),
        task_id: origin.and_then(|o| o.mapped.clone()).unwrap_or_else(|| trial.task_id.clone()),
        level: trial.level.clone(),
        condition: trial.condition.clone(),
        seed: trial.seed,
        verdict: trial.verdict.clone(),
        error: trial.error.clone().filter(|_| trial.state == TrialState::Error),
    };
    let mut extra = json!({"mirage": mirage});
    if let Some(o) = origin {
        extra["mirage_origin"] = serde_json::to_value(o).unwrap_or(Value::Null);
    }
    let agent = agent_of(trial, origin);
    let mut root = json!({
        "schema_version": VERSION,
        "session_id": trial.run_id,
        "trajectory_id": trial.trial_id,
        "agent": agent,
        "steps": out_steps,
        "extra": extra,
    });
    if prompt + completion > 0 {
        root["final_metrics"] = json!({"total_prompt_tokens": prompt, "total_completion_tokens": completion, "total_steps": steps.len() + 1});
    }
    root
}

/// What Mirage keeps of a step that ATIF has no field for: its URL, manipulated spans,
/// latency and HTTP status.
fn step_extra(s: &Step) -> Value {
    let mut extra = json!({"mirage_url": s.url});
    if !s.spans.is_empty() {
        extra["mirage_spans"] = json!(s.spans);
    }
    if s.latency_ms > 0 {
        extra["mirage_latency_ms"] = json!(s.latency_ms);
    }
    if let Some(status) = s.status {
        extra["mirage_status"] = json!(status);
    }
    extra
}

/// The ATIF agent of a trial: a trajectory that came from ATIF gets back its name and model
/// (joined as `NAME/MODEL` when it was imported); any other is named by its configuration.
fn agent_of(trial: &TrialRow, origin: Option<&Origin>) -> Value {
    let (name, model) = match trial.agent.split_once('/') {
        Some((a, m)) if origin.is_some_and(|o| o.harness == Harness::Atif) => (a.to_string(), Some(m.to_string())),
        _ => (trial.agent.clone(), None),
    };
    let mut agent = json!({"name": name, "version": env!("CARGO_PKG_VERSION")});
    if let Some(m) = model {
        agent["model_name"] = json!(m);
    }
    agent
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_of_the_first_format_are_known() {
        for v in ["ATIF-v1.0", "ATIF-v1.4", "ATIF-v1.8", "ATIF-v1.12"] {
            assert!(super::check_version("f", v).is_ok(), "{v}");
        }
        for v in ["ATIF-v2.0", "v1.4", "ATIF-v1.", "ATIF-v1.x"] {
            let e = super::check_version("f.json", v).unwrap_err().to_string();
            assert!(e.contains("f.json: schema_version: unknown ATIF version"), "{e}");
        }
    }
}
