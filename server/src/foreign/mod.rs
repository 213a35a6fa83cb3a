//! Trajectories from other harnesses: Inspect AI logs (`.eval` and `.json`), ATIF
//! trajectories (Harbor's Agent Trajectory Interchange Format) and AgentDojo result files.
//! Each sample becomes a trial whose turns Mirage replays, searches and lets people label;
//! a sample that is one of Mirage's tasks is scored by Mirage's judges, any other keeps only
//! its harness's own scores. What the harness said about the sample (input, target, final
//! answer, scores, token usage, timings, metadata, error) is kept beside the trial as its
//! [`Origin`]. `mirage runs import` stores them as a run (`runs::harness`); any run goes
//! back out as ATIF through [`atif::trajectory_of`] (`runs::export::write_atif`).

pub mod agentdojo;
pub mod atif;
pub mod chat;
pub mod inspect;
pub mod labels;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::Step;
use crate::db::{NewTrial, TrialEnd};
pub use vocab::Harness;
use vocab::TaskRef;

/// The formats `mirage runs import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Mirage's own trajectory lines (schemas/trajectory.schema.json).
    Mirage,
    /// Inspect AI logs: `.eval` (zip) or `.json`.
    Inspect,
    /// ATIF trajectories (v1.x), subagent trajectories included.
    Atif,
    /// AgentDojo result files (or a directory of them).
    Agentdojo,
}

/// Recognises a file's format from its first bytes (at least a few kilobytes when there
/// are that many).
pub fn detect(head: &[u8]) -> Option<Format> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some(Format::Inspect);
    }
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    // One JSON object per line that is a trajectory line: Mirage's own format.
    if let Some(first) = trimmed.lines().next()
        && let Ok(Value::Object(o)) = serde_json::from_str::<Value>(first)
    {
        if o.contains_key("task_id") && o.contains_key("steps") {
            return Some(Format::Mirage);
        }
        return keys_say(&o.keys().map(String::as_str).collect::<Vec<_>>(), trimmed);
    }
    let keys: Vec<&str> = TOP_KEY.captures_iter(trimmed).filter_map(|c| c.get(1)).map(|m| m.as_str()).collect();
    keys_say(&keys, trimmed).or_else(|| {
        // Compact JSON on one long line: the keys as they appear in the text.
        let has = |k: &str| trimmed.contains(&format!("\"{k}\":"));
        let compact: Vec<&str> = ["schema_version", "suite_name", "user_task_id", "eval", "version", "status"]
            .into_iter()
            .filter(|k| has(k))
            .collect();
        // A trajectory line longer than the head: Mirage's own format (whose observations may
        // quote anything, so its first key decides).
        let first_key = trimmed[1..].trim_start().split(':').next().unwrap_or_default().trim();
        if matches!(first_key, "\"trial_id\"" | "\"task_id\"") && has("steps") {
            return Some(Format::Mirage);
        }
        keys_say(&compact, trimmed).or_else(|| (has("task_id") && has("steps")).then_some(Format::Mirage))
    })
}

static TOP_KEY: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r#"(?m)^\s{0,4}"([a-z_]+)"\s*:"#).expect("a valid pattern"));

fn keys_say(keys: &[&str], text: &str) -> Option<Format> {
    let has = |k: &str| keys.contains(&k);
    if has("schema_version") && text.contains("\"ATIF-") {
        Some(Format::Atif)
    } else if has("suite_name") && has("user_task_id") {
        Some(Format::Agentdojo)
    } else if has("eval") || (has("version") && has("status")) {
        Some(Format::Inspect)
    } else {
        None
    }
}

/// What a harness said about one sample, kept beside its trial (table `trial_origin`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    pub harness: Harness,
    /// The file it came from (and the entry, for a zip).
    pub file: String,
    /// The harness's id of the sample (with its epoch where the harness has epochs).
    pub sample: String,
    /// The harness's task (Inspect's task, AgentDojo's suite, ATIF's agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The harness's own scores, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<HarnessScore>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// Durations in seconds by name (`total_time`, `working_time`, `duration`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub timings: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The Mirage task the sample maps to: its judges score the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped: Option<String>,
    /// A prompt-injection attack the sample ran under (AgentDojo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<Attack>,
    /// For a subagent's trajectory: the sample id of the trajectory that delegated to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Sample ids of the subagent trajectories this one delegated to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<String>,
}

impl Origin {
    /// A record of `harness`'s with nothing read into it yet.
    pub fn of(harness: Harness) -> Origin {
        Origin {
            harness,
            file: String::new(),
            sample: String::new(),
            task: None,
            model: None,
            input: None,
            target: None,
            answer: None,
            scores: Vec::new(),
            tokens: None,
            timings: BTreeMap::new(),
            metadata: Map::new(),
            error: None,
            mapped: None,
            attack: None,
            parent: None,
            subagents: Vec::new(),
        }
    }
}

/// One score a harness gave a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HarnessScore {
    pub name: String,
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// Token usage of the whole sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub total: u64,
}

/// A prompt-injection attack on the sample: the injected texts are marked as manipulated
/// spans in the turns that showed them, and `success` is the harness's own verdict on
/// whether the injected goal was carried out (AgentDojo's `security`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attack {
    /// The attack (AgentDojo's `attack_type`).
    pub kind: String,
    /// The injected goal (AgentDojo's injection task).
    pub goal: String,
    /// Injection point → injected text.
    pub injections: BTreeMap<String, String>,
    pub success: Option<bool>,
}

/// One sample read from a harness's file, ready to store as a finished trial.
#[derive(Clone, Debug)]
pub struct Imported {
    /// Where it was read: `file` or `file: entry`, for error messages.
    pub place: String,
    pub trial: NewTrial,
    pub steps: Vec<Step>,
    pub end: TrialEnd,
    pub origin: Origin,
}

/// Which Mirage task each harness sample is: from a mapping file (`--map`), or a sample's
/// metadata (`mirage_task`), or a sample id that is a Mirage task id.
#[derive(Clone, Debug, Default)]
pub struct Mapping {
    /// Harness sample id → Mirage task id.
    pub explicit: HashMap<String, String>,
}

impl Mapping {
    /// Reads a mapping file: a JSON object `{"sample id": "mirage task id", …}`.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Mapping> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        let explicit: HashMap<String, String> = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}:{}: a mapping file is one JSON object of sample id → Mirage task id: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        Ok(Mapping { explicit })
    }

    /// The Mirage task a sample maps to, if any of `world`'s tasks.
    pub fn task_of<'w>(
        &self,
        world: &'w crate::env::World,
        sample: &str,
        metadata: &Map<String, Value>,
    ) -> Option<&'w std::sync::Arc<crate::corpus::Task>> {
        let named = self
            .explicit
            .get(sample)
            .map(String::as_str)
            .or_else(|| ["mirage_task", "mirage_task_id"].iter().find_map(|k| metadata.get(*k)?.as_str()))
            .unwrap_or(sample);
        world.task(named)
    }
}

/// The trial identity of a sample: its Mirage task when it maps to one, else
/// `<harness>:<id>`.
pub fn trial_of(
    harness: Harness,
    id: &str,
    mapped: Option<&str>,
    agent: &str,
    level: impl Into<vocab::TrialLevel>,
    condition: impl Into<vocab::TrialCondition>,
    seed: i64,
) -> NewTrial {
    NewTrial {
        task_id: mapped
            .map_or_else(|| TaskRef::Foreign { harness, sample: id.to_string() }.to_string(), ToString::to_string),
        agent: if agent.is_empty() { harness.to_string() } else { agent.to_string() },
        level: level.into(),
        condition: condition.into(),
        seed,
    }
}

/// How a sample ended: its error, or done with the verdict found (or none) and the answer.
pub fn end_of(error: Option<&str>, verdict: Option<String>, answer: Option<&str>) -> TrialEnd {
    match error {
        Some(e) => TrialEnd::Error(if e.trim().is_empty() { "error (no reason given)".into() } else { e.to_string() }),
        None => TrialEnd::Done { verdict, rationale: answer.map(ToString::to_string), appeal: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vocab::TaskRef;

    fn is_foreign_task(id: &str) -> bool {
        TaskRef::is_foreign(id)
    }

    #[test]
    fn formats_are_told_apart_by_content() {
        assert_eq!(detect(b"PK\x03\x04rest"), Some(Format::Inspect));
        assert_eq!(detect(b"{\n  \"version\": 2,\n  \"status\": \"success\",\n  \"eval\": {"), Some(Format::Inspect));
        assert_eq!(
            detect(b"{\"schema_version\": \"ATIF-v1.6\", \"session_id\": \"s\", \"steps\": []}"),
            Some(Format::Atif)
        );
        assert_eq!(
            detect(b"{\n    \"suite_name\": \"banking\",\n    \"pipeline_name\": \"p\",\n    \"user_task_id\": \"user_task_0\","),
            Some(Format::Agentdojo)
        );
        assert_eq!(detect(b"{\"trial_id\":\"a\",\"task_id\":\"t\",\"steps\":[]}\n{\"trial_id\""), Some(Format::Mirage));
        let compact = format!("{{\"version\":2,\"status\":\"success\",\"eval\":{{\"task\":\"{}\"", "x".repeat(20_000));
        assert_eq!(detect(&compact.as_bytes()[..16_384]), Some(Format::Inspect), "a compact log cut short");
        let long = format!(
            "{{\"trial_id\":\"a\",\"task_id\":\"t\",\"steps\":[{{\"observation\":\"a page quoting \\\"eval\\\": {}\"}}]}}\n",
            "x".repeat(20_000)
        );
        assert_eq!(detect(&long.as_bytes()[..16_384]), Some(Format::Mirage), "a trajectory line cut short");
        assert_eq!(detect(b"name,value\n"), None);
        assert_eq!(detect(b"{\"something\": 1}"), None);
    }

    #[test]
    fn foreign_task_ids_are_recognised() {
        assert!(is_foreign_task("inspect:refunds/t2"));
        assert!(is_foreign_task("agentdojo:banking/user_task_0"));
        assert!(!is_foreign_task("shop-example-01"));
        assert!(!is_foreign_task("geo:q1"));
    }
}

/// How much an import may hold: a compressed `.eval` entry is read no further than
/// `entry_bytes`, and all entries of one file together no further than `file_bytes`; one
/// stored step (as JSON) may not pass `step_bytes`, nor one trajectory's steps together
/// `trajectory_bytes`. An import past any is refused, naming the place, before anything is
/// stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub entry_bytes: u64,
    pub file_bytes: u64,
    pub step_bytes: u64,
    pub trajectory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { entry_bytes: 64 << 20, file_bytes: 256 << 20, step_bytes: 4 << 20, trajectory_bytes: 64 << 20 }
    }
}

impl Limits {
    /// Refuses a trajectory with a step, or steps in all, past the limits (sizes as stored,
    /// JSON), naming `place` and the step.
    pub fn check_steps(&self, place: &str, steps: &[Step]) -> anyhow::Result<()> {
        let mut total = 0u64;
        for s in steps {
            let size = serde_json::to_vec(s).map(|v| v.len() as u64)?;
            if size > self.step_bytes {
                anyhow::bail!(
                    "{place}: step {} is {:.1} MiB as stored, past {} MiB, the limit per step (--max-step-mib); \
                     nothing was imported",
                    s.t,
                    size as f64 / f64::from(1u32 << 20),
                    self.step_bytes >> 20
                );
            }
            total += size;
        }
        if total > self.trajectory_bytes {
            anyhow::bail!(
                "{place}: its steps are {} MiB as stored, past {} MiB, the limit per trajectory \
                 (--max-trajectory-mib); nothing was imported",
                total >> 20,
                self.trajectory_bytes >> 20
            );
        }
        Ok(())
    }
}
