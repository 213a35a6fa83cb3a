//! Inspect AI logs: `.eval` (a zip of JSON entries, Deflate- or Zstandard-compressed:
//! `header.json`, or only `_journal/start.json` for an interrupted evaluation, and one
//! `samples/<id>_epoch_<n>.json` per sample) and `.json` (one object with every sample).
//! Log versions 1 and 2 are read.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::chat::{Call, Message, Role, turns, with_error};
use super::{Harness, HarnessScore, Imported, Mapping, Origin, Tokens, end_of, trial_of};
use crate::env::World;

/// The log versions this reader knows.
const VERSIONS: [i64; 2] = [1, 2];

#[derive(Deserialize)]
struct Header {
    version: i64,
    eval: Spec,
}

#[derive(Deserialize)]
struct Spec {
    task: String,
    #[serde(default)]
    model: String,
}

#[derive(Deserialize)]
struct Sample {
    id: Value,
    #[serde(default = "one")]
    epoch: i64,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    target: Value,
    #[serde(default)]
    messages: Vec<Msg>,
    #[serde(default)]
    output: Option<Output>,
    #[serde(default)]
    scores: Option<BTreeMap<String, Score>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    model_usage: Option<BTreeMap<String, ModelUsage>>,
    #[serde(default)]
    total_time: Option<f64>,
    #[serde(default)]
    working_time: Option<f64>,
    #[serde(default)]
    error: Option<SampleError>,
    #[serde(default)]
    attachments: Option<HashMap<String, String>>,
}

fn one() -> i64 {
    1
}

#[derive(Deserialize)]
struct Msg {
    role: String,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ToolCall {
    function: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    completion: Option<String>,
}

#[derive(Deserialize)]
struct Score {
    value: Value,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    explanation: Option<String>,
}

#[derive(Deserialize)]
struct ModelUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Deserialize)]
struct SampleError {
    message: String,
}

/// Reads an Inspect log (`.eval` zip or `.json`), handing each sample to `visit` in the
/// log's order. Problems name the file and the entry (or line and column).
pub fn read(
    file: &str,
    path: &std::path::Path,
    (world, mapping, limits): (&World, &Mapping, super::Limits),
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {file}"))?;
    let mut magic = [0_u8; 2];
    let zipped = f.read_exact(&mut magic).is_ok() && &magic == b"PK";
    if zipped {
        read_zip(file, std::io::BufReader::new(f), (world, mapping, limits), visit)
    } else {
        read_json(file, path, world, mapping, visit)
    }
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(place: &str, bytes: &[u8]) -> anyhow::Result<T> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.into_inner();
        anyhow::anyhow!("{place}:{}:{}: {at}: {inner}", inner.line(), inner.column())
    })
}

fn check_version(place: &str, version: i64) -> anyhow::Result<()> {
    if !VERSIONS.contains(&version) {
        bail!("{place}: unknown Inspect log version {version} (this Mirage reads versions 1 and 2)");
    }
    Ok(())
}

/// Reads one zip entry, at most `limits.entry_bytes` of it and no more than what is left of
/// the file's `limits.file_bytes` (`read` counts what the file's entries inflated to).
fn read_entry(f: &mut impl Read, place: &str, limits: super::Limits, read: &mut u64) -> anyhow::Result<Vec<u8>> {
    let mib = |b: u64| b >> 20;
    let cap = limits.entry_bytes.min(limits.file_bytes.saturating_sub(*read));
    let mut out = Vec::new();
    f.take(cap + 1).read_to_end(&mut out).map_err(|e| anyhow::anyhow!("{place}: {e}"))?;
    let n = out.len() as u64;
    if n > limits.entry_bytes {
        bail!("{place}: inflates past {} MiB, the limit per entry (--max-entry-mib)", mib(limits.entry_bytes));
    }
    *read += n;
    if *read > limits.file_bytes {
        bail!(
            "{place}: the file's entries inflate past {} MiB in all, the limit per file (--max-file-mib)",
            mib(limits.file_bytes)
        );
    }
    Ok(out)
}

fn read_zip(
    file: &str,
    reader: impl std::io::Read + std::io::Seek,
    (world, mapping, limits): (&World, &Mapping, super::Limits),
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut zip = zip::ZipArchive::new(reader)
        .map_err(|e| anyhow::anyhow!("{file}: not a readable .eval log (a zip archive): {e}"))?;
    let mut read = 0_u64;
    let mut entry = |name: &str, read: &mut u64| -> anyhow::Result<Option<Vec<u8>>> {
        let mut f = match zip.by_name(name) {
            Ok(f) => f,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => bail!("{file}: {name}: {e}"),
        };
        read_entry(&mut f, &format!("{file}: {name}"), limits, read).map(Some)
    };
    let (name, head) = match entry("header.json", &mut read)? {
        Some(h) => ("header.json", h),
        None => match entry("_journal/start.json", &mut read)? {
            Some(h) => ("_journal/start.json", h),
            None => bail!("{file}: neither header.json nor _journal/start.json: not an Inspect .eval log"),
        },
    };
    let header: Header = parse(&format!("{file}: {name}"), &head)?;
    check_version(&format!("{file}: {name}"), header.version)?;
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(|e| anyhow::anyhow!("{file}: entry {i}: {e}"))?;
        let name = f.name().map_err(|e| anyhow::anyhow!("{file}: entry {i}: {e}"))?.to_string();
        if !(name.starts_with("samples/") && name.ends_with(".json")) {
            continue;
        }
        let place = format!("{file}: {name}");
        let body = read_entry(&mut f, &place, limits, &mut read)?;
        drop(f);
        let sample: Sample = parse(&place, &body)?;
        visit(convert(place, file, &header.eval, sample, world, mapping)?)?;
    }
    Ok(())
}

/// A `.json` log, streamed: the samples are read one at a time as the file is read, so
/// memory follows the largest sample, not the log (`version` and `eval` come first, as
/// Inspect writes them).
fn read_json(
    file: &str,
    path: &std::path::Path,
    world: &World,
    mapping: &Mapping,
    visit: &mut dyn FnMut(Imported) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let reader = std::io::BufReader::with_capacity(
        1 << 20,
        std::fs::File::open(path).with_context(|| format!("reading {file}"))?,
    );
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut failure = None;
    let seed = LogSeed { file, world, mapping, visit, failure: &mut failure };
    let result = serde::de::DeserializeSeed::deserialize(seed, &mut de).and_then(|()| de.end());
    match (result, failure) {
        (_, Some(f)) => Err(f),
        (Err(e), None) => Err(anyhow::anyhow!("{file}:{}:{}: {e}", e.line(), e.column())),
        (Ok(()), None) => Ok(()),
    }
}

/// The top-level object of a `.json` log; a sample's problem (or `visit`'s) is kept in
/// `failure`, which names it better than the parser's error could.
struct LogSeed<'a> {
    file: &'a str,
    world: &'a World,
    mapping: &'a Mapping,
    visit: &'a mut dyn FnMut(Imported) -> anyhow::Result<()>,
    failure: &'a mut Option<anyhow::Error>,
}

impl<'de> serde::de::DeserializeSeed<'de> for LogSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for LogSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an Inspect log object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut version = None;
        let mut spec: Option<Spec> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => {
                    let v: i64 = map.next_value()?;
                    if let Err(e) = check_version(self.file, v) {
                        *self.failure = Some(e);
                        return Err(A::Error::custom("unknown version"));
                    }
                    version = Some(v);
                }
                "eval" => spec = Some(map.next_value()?),
                "samples" => {
                    let Some(spec) = spec.as_ref().filter(|_| version.is_some()) else {
                        return Err(A::Error::custom("`samples` before `version` and `eval`"));
                    };
                    map.next_value_seed(SamplesSeed {
                        file: self.file,
                        spec,
                        world: self.world,
                        mapping: self.mapping,
                        visit: &mut *self.visit,
                        failure: &mut *self.failure,
                    })?;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        if version.is_none() {
            return Err(A::Error::missing_field("version"));
        }
        if spec.is_none() {
            return Err(A::Error::missing_field("eval"));
        }
        Ok(())
    }
}

/// The `samples` array of a `.json` log, one sample at a time.
struct SamplesSeed<'a> {
    file: &'a str,
    spec: &'a Spec,
    world: &'a World,
    mapping: &'a Mapping,
    visit: &'a mut dyn FnMut(Imported) -> anyhow::Result<()>,
    failure: &'a mut Option<anyhow::Error>,
}

impl<'de> serde::de::DeserializeSeed<'de> for SamplesSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for SamplesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of samples")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut i = 0;
        // Each sample is kept as its raw text, then read with the path of any bad field.
        while let Some(raw) = seq.next_element::<Box<serde_json::value::RawValue>>()? {
            let place = format!("{}: samples[{i}]", self.file);
            let done = parse::<Sample>(&place, raw.get().as_bytes())
                .and_then(|sample| convert(place, self.file, self.spec, sample, self.world, self.mapping))
                .and_then(|imported| (self.visit)(imported));
            if let Err(e) = done {
                *self.failure = Some(e);
                return Err(A::Error::custom("a sample could not be read"));
            }
            i += 1;
        }
        Ok(())
    }
}

/// Text and reasoning of a message's content (a string, or a list of content parts);
/// attachments (`attachment://…`) are resolved.
fn content_of(content: &Value, attachments: &HashMap<String, String>) -> (String, String) {
    let resolve = |s: &str| -> String {
        s.strip_prefix("attachment://").and_then(|id| attachments.get(id)).cloned().unwrap_or_else(|| s.to_string())
    };
    match content {
        Value::String(s) => (resolve(s), String::new()),
        Value::Array(parts) => {
            let (mut text, mut reasoning) = (Vec::new(), Vec::new());
            for p in parts {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
                let field = |k: &str| p.get(k).and_then(Value::as_str).map(resolve);
                match kind {
                    "text" => text.extend(field("text")),
                    "reasoning" => reasoning.push(field("reasoning").unwrap_or_else(|| "[reasoning redacted]".into())),
                    "" => {}
                    other => text.push(format!("[{other}]")),
                }
            }
            (text.join("\n"), reasoning.join("\n"))
        }
        _ => (String::new(), String::new()),
    }
}

fn plain(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(plain).collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        }
        other => Some(other.to_string()),
    }
}

fn convert(
    place: String,
    file: &str,
    spec: &Spec,
    s: Sample,
    world: &World,
    mapping: &Mapping,
) -> anyhow::Result<Imported> {
    let id = match &s.id {
        Value::String(id) => id.clone(),
        Value::Number(n) => n.to_string(),
        other => bail!("{place}: id: a sample id is a string or a number, not {other}"),
    };
    let attachments = s.attachments.unwrap_or_default();
    let metadata = s.metadata.unwrap_or_default();
    let task = mapping.task_of(world, &id, &metadata);
    let messages = messages_of(&place, &s.messages, &attachments)?;
    let t = turns(&messages, task.map(|t| &**t), &BTreeMap::new());
    let answer = t.answer.or_else(|| s.output.and_then(|o| o.completion).filter(|c| !c.is_empty()));
    let tokens = s.model_usage.map(|u| {
        u.values().fold(Tokens::default(), |acc, m| Tokens {
            input: acc.input + m.input_tokens,
            output: acc.output + m.output_tokens,
            total: acc.total + m.total_tokens,
        })
    });
    let error = s.error.map(|e| e.message);
    let origin = Origin {
        file: file.to_string(),
        sample: format!("{id} (epoch {})", s.epoch),
        task: Some(spec.task.clone()),
        model: (!spec.model.is_empty()).then(|| spec.model.clone()),
        input: input_of(&s.input, &attachments),
        target: plain(&s.target),
        answer: answer.clone(),
        scores: s
            .scores
            .unwrap_or_default()
            .into_iter()
            .map(|(name, sc)| HarnessScore { name, value: sc.value, answer: sc.answer, explanation: sc.explanation })
            .collect(),
        tokens,
        timings: [("total_time", s.total_time), ("working_time", s.working_time)]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?)))
            .collect(),
        metadata,
        error: error.clone(),
        mapped: task.map(|t| t.id.clone()),
        ..Origin::of(Harness::Inspect)
    };
    Ok(Imported {
        place,
        trial: trial_of(
            Harness::Inspect,
            &format!("{}/{id}", spec.task),
            task.map(|t| t.id.as_str()),
            &spec.model,
            crate::manip::Level::L0,
            vocab::Condition::Raw,
            s.epoch,
        ),
        steps: t.steps,
        end: end_of(error.as_deref(), t.verdict, answer.as_deref()),
        origin,
    })
}

/// A sample's messages as chat messages, each with its reasoning, tool calls and any error
/// the harness recorded on it.
fn messages_of(place: &str, messages: &[Msg], attachments: &HashMap<String, String>) -> anyhow::Result<Vec<Message>> {
    messages
        .iter()
        .map(|m| {
            let Some(role) = Role::parse(&m.role) else {
                bail!("{place}: messages: unknown role {:?}", m.role);
            };
            let (text, reasoning) = content_of(&m.content, attachments);
            let reason = m
                .error
                .as_ref()
                .map(|e| e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_string));
            let text = with_error(text, reason.as_deref());
            let calls = m
                .tool_calls
                .iter()
                .flatten()
                .map(|c| Call { name: c.function.clone(), arguments: c.arguments.clone() })
                .collect();
            Ok(Message { reasoning, calls, tool: m.function.clone(), ..Message::new(role, text) })
        })
        .collect()
}

/// The sample's input as text: its messages' contents one after another, or the plain input.
fn input_of(input: &Value, attachments: &HashMap<String, String>) -> Option<String> {
    match input {
        Value::Array(msgs) => {
            let texts: Vec<String> =
                msgs.iter().map(|m| content_of(m.get("content").unwrap_or(&Value::Null), attachments).0).collect();
            Some(texts.join("\n\n"))
        }
        other => plain(other).map(|i| content_of(&Value::String(i), attachments).0),
    }
}
