//! The OpenAI-compatible chat-completions client (vLLM, Ollama, llama.cpp, OpenAI, …).
//!
//! Every call retries transient faults (timeouts, refused connections, 429 with
//! Retry-After, 5xx, malformed or empty bodies) with exponential backoff and jitter, then
//! fails with an [`LlmError`] naming the reason. Nothing here scores or guesses.

pub mod cache;
pub mod scripted;

use std::time::Duration;

use async_trait::async_trait;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How to reach one model. Keys are never stored: only the name of the variable holding one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// Base URL up to `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    /// Environment variable that holds the API key, if the server wants one.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub temperature: f64,
    /// Nucleus sampling, sent only when set (the GEO writers sample at 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Seconds one request may take before it counts as a timeout.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Retries after the first attempt for transient faults.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// Ask for the action through native tool calling instead of JSON in the text.
    #[serde(default)]
    pub tool_calling: bool,
    /// Ask the server to constrain output to JSON (`response_format: json_object`); servers
    /// such as llama.cpp enforce it with a grammar, which lets small models comply.
    #[serde(default)]
    pub json_mode: bool,
    /// Most requests in flight to this endpoint at once (all trials of the process).
    #[serde(default)]
    pub max_concurrency: Option<usize>,
    /// Most requests started per minute (evenly spaced).
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// As an agent: how many earlier pages stay whole in the model's context besides the
    /// current one (older ones are replaced by a one-line placeholder naming their URL).
    #[serde(default = "default_context_pages")]
    pub context_pages: usize,
    /// As an agent: the most steps of a trial (pages seen, the verdict included), at most
    /// the scorer's 25.
    #[serde(default = "default_step_budget")]
    pub step_budget: usize,
    /// What the endpoint charges, for the cost columns (none: costs are not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// An endpoint's price in US dollars per million tokens, as its provider lists it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt (input) tokens.
    pub prompt: f64,
    /// Per million completion (output) tokens.
    pub completion: f64,
}

impl Price {
    /// The dollars `usage` costs.
    #[allow(clippy::cast_precision_loss)]
    pub fn of(self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt + usage.completion_tokens as f64 * self.completion) / 1e6
    }
}

fn default_context_pages() -> usize {
    3
}
fn default_step_budget() -> usize {
    crate::corpus::model::STEP_BUDGET
}

fn default_max_tokens() -> u32 {
    512
}
fn default_timeout() -> u64 {
    120
}
fn default_retries() -> u32 {
    4
}

impl EndpointSpec {
    /// What decides an answer besides the question: where it is asked and how it is
    /// sampled. Answer-cache keys carry it, so another server, length limit or seed behind
    /// the same model name is asked afresh.
    pub fn answer_identity(&self) -> String {
        json!([
            self.base_url.trim_end_matches('/'),
            self.model,
            self.temperature,
            self.top_p,
            self.seed,
            self.max_tokens
        ])
        .to_string()
    }

    /// An endpoint with the defaults for everything but URL and model.
    pub fn new(base_url: &str, model: &str) -> EndpointSpec {
        EndpointSpec {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key_env: None,
            temperature: 0.0,
            top_p: None,
            seed: None,
            max_tokens: default_max_tokens(),
            context_pages: default_context_pages(),
            step_budget: default_step_budget(),
            timeout_secs: default_timeout(),
            max_retries: default_retries(),
            tool_calling: false,
            json_mode: false,
            max_concurrency: None,
            requests_per_minute: None,
            price: None,
        }
    }
}

/// The JSON object in a model's reply: from the first `{` to the last `}`, so that prose
/// or code fences around it do not matter.
pub fn json_object(reply: &str) -> Option<Value> {
    serde_json::from_str(reply.get(reply.find('{')?..=reply.rfind('}')?)?).ok()
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// Token accounting of one model call, as the endpoint reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    /// The tokens of two sets of calls together; unknown when either is (a call whose reply
    /// carried no usage makes the whole unknown, never smaller).
    pub fn sum(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
        let (a, b) = (a?, b?);
        Some(Usage {
            prompt_tokens: a.prompt_tokens + b.prompt_tokens,
            completion_tokens: a.completion_tokens + b.completion_tokens,
        })
    }
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The text, or the arguments of the first tool call in tool-calling mode.
    pub content: String,
    /// What the call cost, when the reply said (`None`: the reply carried no usage).
    pub usage: Option<Usage>,
    /// `length` when the output hit `max_tokens`.
    pub finish_reason: Option<String>,
}

/// Why a completion failed for good.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{attempts} attempts failed; last: {last}")]
    Exhausted { attempts: u32, last: String },
    #[error("endpoint refused the request ({status}): {body}")]
    Rejected { status: u16, body: String },
    #[error("API key variable {0} is not set")]
    MissingKey(String),
}

/// Anything that completes chats: the HTTP client, or a test double.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// `schema` is the JSON Schema of the expected reply. The HTTP client sends it as the
    /// single tool in tool-calling mode, as the response format in JSON mode, and not at all
    /// otherwise.
    async fn complete(&self, messages: &[Message], schema: Option<&Value>) -> Result<Completion, LlmError>;

    /// A free-text reply where an empty message is a valid answer (a ranker that lists
    /// nothing leaves every target missing; asking again at temperature 0 changes nothing).
    async fn reply_text(&self, messages: &[Message]) -> Result<String, LlmError> {
        Ok(self.reply_completion(messages).await?.content)
    }

    /// The same free-text reply with its usage and `finish_reason` (a content filter's stop
    /// or a truncation arrives as a 200 that only the finish reason tells apart).
    async fn reply_completion(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        self.complete(messages, None).await
    }
}

/// The real client over HTTP.
pub struct HttpLlm {
    spec: EndpointSpec,
    client: reqwest::Client,
    key: Option<String>,
    in_flight: Option<tokio::sync::Semaphore>,
    /// When the next request may start, under `requests_per_minute`.
    next_start: tokio::sync::Mutex<tokio::time::Instant>,
}

/// A fault worth another try, with how long the server asked us to wait.
struct Transient {
    reason: String,
    retry_after: Option<Duration>,
}

/// The HTTP client builder every outgoing connection starts from. TLS is rustls over ring;
/// the provider is installed process-wide on first use (reqwest has no default of its own
/// here, so a client built any other way panics rather than silently picking a stack).
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // An error means another provider was installed first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

impl HttpLlm {
    /// Builds a client; reads the API key from the named variable now, so a missing key
    /// fails before any trial starts.
    /// The endpoint this client asks.
    pub fn spec(&self) -> &EndpointSpec {
        &self.spec
    }

    pub fn new(spec: EndpointSpec) -> Result<HttpLlm, LlmError> {
        let key = match &spec.api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| LlmError::MissingKey(var.clone()))?),
            None => None,
        };
        let client = client_builder()
            .timeout(Duration::from_secs(spec.timeout_secs.max(1)))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| LlmError::Exhausted { attempts: 0, last: format!("building the HTTP client: {e}") })?;
        let in_flight = spec.max_concurrency.map(|n| tokio::sync::Semaphore::new(n.max(1)));
        let next_start = tokio::sync::Mutex::new(tokio::time::Instant::now());
        Ok(HttpLlm { spec, client, key, in_flight, next_start })
    }

    fn body(&self, messages: &[Message], schema: Option<&Value>) -> Value {
        let mut body = json!({
            "model": self.spec.model,
            "messages": messages,
            "temperature": self.spec.temperature,
            "max_tokens": self.spec.max_tokens,
        });
        if let Some(seed) = self.spec.seed {
            body["seed"] = json!(seed);
        }
        if let Some(top_p) = self.spec.top_p {
            body["top_p"] = json!(top_p);
        }
        match schema {
            Some(parameters) if self.spec.tool_calling => {
                body["tools"] = json!([{"type": "function", "function": {"name": "act", "description": "Take one action.", "parameters": parameters}}]);
                body["tool_choice"] = json!({"type": "function", "function": {"name": "act"}});
            }
            // `schema` inside `json_object` is how llama.cpp servers take a grammar; others
            // ignore it and still return JSON.
            Some(schema) if self.spec.json_mode => {
                body["response_format"] = json!({"type": "json_object", "schema": schema})
            }
            _ => {}
        }
        body
    }

    /// Waits for this request's slot under the rate limit.
    async fn pace(&self) {
        let Some(rpm) = self.spec.requests_per_minute.filter(|r| *r > 0) else { return };
        let gap = Duration::from_secs(60) / rpm;
        let start = {
            let mut next = self.next_start.lock().await;
            let start = (*next).max(tokio::time::Instant::now());
            *next = start + gap;
            start
        };
        tokio::time::sleep_until(start).await;
    }

    async fn attempt<T>(
        &self,
        path: &str,
        body: &Value,
        parse: &(dyn Fn(&str) -> Result<T, String> + Sync),
    ) -> Result<Result<T, Transient>, LlmError> {
        let _permit = match &self.in_flight {
            Some(s) => Some(s.acquire().await.map_err(|e| LlmError::Exhausted { attempts: 0, last: e.to_string() })?),
            None => None,
        };
        self.pace().await;
        let url = format!("{}/{path}", self.spec.base_url);
        let mut req = self.client.post(&url).json(body);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                let kind = if e.is_timeout() {
                    "timeout"
                } else if e.is_connect() {
                    "connection failed"
                } else {
                    "request failed"
                };
                return Ok(Err(Transient { reason: format!("{kind}: {e}"), retry_after: None }));
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) => return Ok(Err(Transient { reason: format!("reading the body: {e}"), retry_after: None })),
        };
        if status.as_u16() == 429 || status.is_server_error() {
            return Ok(Err(Transient { reason: format!("HTTP {status}: {}", snippet(&text)), retry_after }));
        }
        if !status.is_success() {
            return Err(LlmError::Rejected { status: status.as_u16(), body: snippet(&text) });
        }
        Ok(parse(&text).map_err(|reason| Transient { reason, retry_after: None }))
    }

    /// One request with retries: transient faults back off and try again, then fail with
    /// the last reason.
    async fn call<T>(
        &self,
        path: &str,
        body: &Value,
        parse: &(dyn Fn(&str) -> Result<T, String> + Sync),
    ) -> Result<T, LlmError> {
        let attempts = self.spec.max_retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            match self.attempt(path, body, parse).await? {
                Ok(c) => return Ok(c),
                Err(t) => {
                    tracing::warn!(endpoint = %self.spec.base_url, attempt = attempt + 1, reason = %t.reason, "model call failed");
                    last = t.reason;
                    if attempt + 1 < attempts {
                        tokio::time::sleep(backoff(attempt, t.retry_after)).await;
                    }
                }
            }
        }
        Err(LlmError::Exhausted { attempts, last })
    }

    /// The log-probabilities the model gives each token of `text` (the legacy completions
    /// API with `echo`, as vLLM, llama.cpp and OpenAI-compatible servers offer it). The
    /// first token, which has none, is left out, and so is anything generated after `text`.
    pub async fn prompt_logprobs(&self, text: &str) -> Result<Vec<f64>, LlmError> {
        let body = json!({"model": self.spec.model, "prompt": text, "max_tokens": 1, "temperature": 0.0, "echo": true, "logprobs": 0});
        let len = text.len();
        self.call("completions", &body, &move |raw: &str| parse_prompt_logprobs(raw, len)).await
    }

    /// A cross-encoder's relevance score of each document for the query (`/rerank`, as
    /// vLLM, llama.cpp `--reranking`, Jina and Cohere serve it), in document order.
    pub async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f64>, LlmError> {
        let body = json!({"model": self.spec.model, "query": query, "documents": documents});
        let n = documents.len();
        self.call("rerank", &body, &move |raw: &str| parse_rerank(raw, n)).await
    }

    /// The `n` most likely first tokens of the reply and their log-probabilities (chat,
    /// temperature 0, one token): how a logprob judge reads P(Yes).
    pub async fn top_logprobs(&self, messages: &[Message], n: u32) -> Result<Vec<(String, f64)>, LlmError> {
        let body = json!({
            "model": self.spec.model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
            "logprobs": true, "top_logprobs": n,
        });
        self.call("chat/completions", &body, &parse_top_logprobs).await
    }
}

/// Reads a rerank response (`results: [{index, relevance_score}]`) into scores in document
/// order; every document must be scored.
pub fn parse_rerank(raw: &str, n: usize) -> Result<Vec<f64>, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("malformed JSON from the endpoint: {e}"))?;
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no results in the response: {}", snippet(raw)))?;
    let mut scores = vec![None; n];
    for r in results {
        let (Some(i), Some(s)) =
            (r.get("index").and_then(Value::as_u64), r.get("relevance_score").and_then(Value::as_f64))
        else {
            return Err(format!("a result without index or relevance_score: {r}"));
        };
        *scores
            .get_mut(usize::try_from(i).unwrap_or(usize::MAX))
            .ok_or(format!("index {i} is outside the {n} documents"))? = Some(s);
    }
    scores.into_iter().enumerate().map(|(i, s)| s.ok_or(format!("document {i} was not scored"))).collect()
}

/// Reads the first generated token's `top_logprobs` of a chat completion as (token,
/// log-probability) pairs.
pub fn parse_top_logprobs(raw: &str) -> Result<Vec<(String, f64)>, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("malformed JSON from the endpoint: {e}"))?;
    let top = v.pointer("/choices/0/logprobs/content/0/top_logprobs").and_then(Value::as_array).ok_or_else(|| {
        format!("no top_logprobs in the response (does the server return log-probabilities?): {}", snippet(raw))
    })?;
    let out: Vec<(String, f64)> =
        top.iter().filter_map(|e| Some((e.get("token")?.as_str()?.to_string(), e.get("logprob")?.as_f64()?))).collect();
    if out.is_empty() {
        return Err("the endpoint listed no token log-probabilities".to_string());
    }
    Ok(out)
}

/// Reads `choices[0].logprobs` of an echoed completion: the log-probabilities of tokens
/// whose offset lies inside the prompt (`prompt_len` bytes), nulls left out.
pub fn parse_prompt_logprobs(raw: &str, prompt_len: usize) -> Result<Vec<f64>, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("malformed JSON from the endpoint: {e}"))?;
    let lp = v
        .pointer("/choices/0/logprobs")
        .ok_or_else(|| format!("no logprobs in the response (does the server support echo?): {}", snippet(raw)))?;
    let values = lp.get("token_logprobs").and_then(Value::as_array).ok_or("logprobs without token_logprobs")?;
    let offsets = lp.get("text_offset").and_then(Value::as_array);
    let out: Vec<f64> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            offsets.and_then(|o| o.get(*i)).and_then(Value::as_u64).is_none_or(|off| (off as usize) < prompt_len)
        })
        .filter_map(|(_, v)| v.as_f64())
        .collect();
    if out.is_empty() {
        return Err("the endpoint gave no token log-probabilities for the text".to_string());
    }
    Ok(out)
}

fn snippet(text: &str) -> String {
    let s: String = text.chars().take(300).collect();
    if s.len() < text.len() { format!("{s}…") } else { s }
}

/// Reads a chat-completions response body. Malformed or empty answers are errors.
pub fn parse_completion(text: &str) -> Result<Completion, String> {
    let c = read_completion(text)?;
    if c.content.trim().is_empty() {
        return Err("the model returned an empty message".to_string());
    }
    Ok(c)
}

/// Reads a chat-completions response body; an empty message is an answer too.
fn read_completion(text: &str) -> Result<Completion, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("malformed JSON from the endpoint: {e}"))?;
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| format!("no choices in the response: {}", snippet(text)))?;
    let message = choice.get("message").ok_or("the choice has no message")?;
    let tool_args = message
        .get("tool_calls")
        .and_then(|t| t.get(0))
        .and_then(|c| c.get("function"))
        .and_then(|f| f.get("arguments"))
        .and_then(Value::as_str);
    let content = tool_args.or_else(|| message.get("content").and_then(Value::as_str)).unwrap_or_default().to_string();
    // A reply without usage (or with no count given as a number) leaves the call's cost
    // unknown, not 0.
    let counted =
        |u: &&Value| [u.get("prompt_tokens"), u.get("completion_tokens")].into_iter().flatten().any(Value::is_u64);
    let usage = v.get("usage").filter(counted).map(|u| Usage {
        prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        completion_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    });
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
    Ok(Completion { content, usage, finish_reason })
}

/// Exponential backoff with full jitter, capped at 30 s; a server's Retry-After wins.
fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(Duration::from_secs(120));
    }
    let cap_ms = (250u64 << attempt.min(7)).min(30_000);
    Duration::from_millis(rand::rng().random_range(cap_ms / 2..=cap_ms))
}

#[async_trait]
impl LlmClient for HttpLlm {
    async fn complete(&self, messages: &[Message], schema: Option<&Value>) -> Result<Completion, LlmError> {
        let body = self.body(messages, schema);
        self.call("chat/completions", &body, &parse_completion).await
    }

    async fn reply_completion(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        let body = self.body(messages, None);
        self.call("chat/completions", &body, &read_completion).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_parse_text_tool_calls_and_usage() {
        let c = parse_completion(r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#).expect("ok");
        assert_eq!(
            (c.content.as_str(), c.usage.map(|u| u.prompt_tokens), c.finish_reason.as_deref()),
            ("hi", Some(3), Some("stop"))
        );
        let bare =
            parse_completion(r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#).expect("ok");
        assert_eq!(bare.usage, None, "no usage is unknown, not 0");
        let nulls =
            r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":null,"completion_tokens":"7"}}"#;
        assert_eq!(parse_completion(nulls).expect("ok").usage, None, "counts that are not numbers are unknown");
        let c = parse_completion(r#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"act","arguments":"{\"a\":1}"}}]}}]}"#).expect("ok");
        assert_eq!(c.content, "{\"a\":1}");
        assert!(parse_completion("not json").expect_err("bad").contains("malformed JSON"));
        assert!(parse_completion(r#"{"choices":[]}"#).expect_err("bad").contains("no choices"));
        assert!(parse_completion(r#"{"choices":[{"message":{"content":"  "}}]}"#).expect_err("bad").contains("empty"));
    }

    #[test]
    fn backoff_grows_is_jittered_and_obeys_retry_after() {
        for attempt in 0..10 {
            let d = backoff(attempt, None);
            assert!(d <= Duration::from_secs(30));
        }
        assert!(backoff(5, None) >= Duration::from_millis(4000));
        assert_eq!(backoff(0, Some(Duration::from_secs(3))), Duration::from_secs(3));
    }
}
