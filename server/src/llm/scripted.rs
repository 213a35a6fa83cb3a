//! A scripted OpenAI-compatible endpoint: the test double for the model client and the
//! agent loop (tests and benchmarks only; the product always talks to real endpoints).
//!
//! It serves `/v1/chat/completions` on a loopback port, answers from a script of replies
//! (texts, tool calls, HTTP errors, malformed bodies, hangs) or from a function of the
//! request, and records every request body it received.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A normal assistant message with this text.
    Text(String),
    /// The same, from an endpoint that does not report its usage.
    Unmetered(String),
    /// A tool call of `act` with these JSON arguments.
    ToolCall(String),
    /// An HTTP error with an optional Retry-After (seconds).
    Status(u16, Option<u64>),
    /// A 200 with this raw, non-JSON body.
    Malformed(String),
    /// A 200 whose message is empty.
    Empty,
    /// A 200 with this content (`None`: null) and this `finish_reason`.
    Finished(Option<String>, &'static str),
    /// Never answers within any sane timeout.
    Hang,
    /// One generated token (the first listed) with these top log-probabilities.
    TopLogprobs(Vec<(String, f64)>),
}

type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

struct Inner {
    script: Mutex<VecDeque<Reply>>,
    responder: Option<Responder>,
    latency: Duration,
    requests: Mutex<Vec<Value>>,
}

/// A running scripted endpoint.
#[derive(Clone)]
pub struct ScriptedServer {
    /// Base URL to configure as the endpoint (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    inner: Arc<Inner>,
}

impl ScriptedServer {
    /// Serves the replies in order; once they run out, every request gets a 500.
    pub async fn start(script: Vec<Reply>) -> ScriptedServer {
        Self::launch(script, None, Duration::ZERO).await
    }

    /// Answers every request with `responder(body)` after `latency`.
    pub async fn responding(
        latency: Duration,
        responder: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> ScriptedServer {
        Self::launch(Vec::new(), Some(Arc::new(responder)), latency).await
    }

    async fn launch(script: Vec<Reply>, responder: Option<Responder>, latency: Duration) -> ScriptedServer {
        let inner =
            Arc::new(Inner { script: Mutex::new(script.into()), responder, latency, requests: Mutex::new(Vec::new()) });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/v1/completions", post(echo_logprobs))
            .route("/v1/rerank", post(rerank))
            .with_state(inner.clone());
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port for the scripted endpoint");
        let addr = listener.local_addr().expect("bound address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ScriptedServer { base_url: format!("http://{addr}/v1"), inner }
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.inner.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// The legacy completions API with `echo`: one token per whitespace-separated word, whose
/// log-probability falls with the share of rare letters in it (so gibberish scores a high
/// perplexity), plus one generated token after the prompt.
async fn echo_logprobs(State(inner): State<Arc<Inner>>, Json(body): Json<Value>) -> Response {
    if let Ok(mut r) = inner.requests.lock() {
        r.push(body.clone());
    }
    let prompt = body["prompt"].as_str().unwrap_or_default();
    let mut offsets = Vec::new();
    let mut logprobs = Vec::new();
    let mut pos = 0;
    for word in prompt.split_inclusive(' ') {
        #[allow(clippy::cast_precision_loss)]
        let rare = word.chars().filter(|c| "zqxjkvwZQXJKVW".contains(*c)).count() as f64;
        offsets.push(pos);
        logprobs.push(if pos == 0 { Value::Null } else { json!(-1.0 - 3.0 * rare) });
        pos += word.len();
    }
    offsets.push(pos);
    logprobs.push(json!(-0.5));
    Json(json!({"choices": [{"text": prompt, "logprobs": {"token_logprobs": logprobs, "text_offset": offsets}}]}))
        .into_response()
}

/// A stand-in cross-encoder: a document's score is how many of the query's words (of four
/// letters or more) it contains, over its length in words.
async fn rerank(State(inner): State<Arc<Inner>>, Json(body): Json<Value>) -> Response {
    if let Ok(mut r) = inner.requests.lock() {
        r.push(body.clone());
    }
    let lower = |s: &str| s.to_lowercase();
    let query: Vec<String> = lower(body["query"].as_str().unwrap_or_default())
        .split_whitespace()
        .filter(|w| w.len() >= 4)
        .map(|w| w.trim_matches('.').to_string())
        .collect();
    let docs = body["documents"].as_array().cloned().unwrap_or_default();
    let results: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let text = lower(d.as_str().unwrap_or_default());
            let words = text.split_whitespace().count().max(1);
            #[allow(clippy::cast_precision_loss)]
            let hits = query.iter().map(|q| text.matches(q.as_str()).count()).sum::<usize>() as f64;
            #[allow(clippy::cast_precision_loss)]
            let score = hits / words as f64;
            json!({"index": i, "relevance_score": score})
        })
        .collect();
    Json(json!({"results": results})).into_response()
}

fn message(content: &Value, tool_calls: Option<Value>) -> Value {
    let mut msg = json!({"role": "assistant", "content": content});
    if let Some(calls) = tool_calls {
        msg["tool_calls"] = calls;
    }
    json!({"choices": [{"index": 0, "message": msg, "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
}

async fn complete(State(inner): State<Arc<Inner>>, Json(body): Json<Value>) -> Response {
    if let Ok(mut r) = inner.requests.lock() {
        r.push(body.clone());
    }
    if !inner.latency.is_zero() {
        tokio::time::sleep(inner.latency).await;
    }
    let reply = match &inner.responder {
        Some(f) => f(&body),
        None => inner.script.lock().ok().and_then(|mut s| s.pop_front()).unwrap_or(Reply::Status(500, None)),
    };
    match reply {
        Reply::Text(t) => Json(message(&json!(t), None)).into_response(),
        Reply::Unmetered(t) => {
            let mut body = message(&json!(t), None);
            body.as_object_mut().map(|o| o.remove("usage"));
            Json(body).into_response()
        }
        Reply::ToolCall(args) => {
            let calls = json!([{"id": "call-1", "type": "function", "function": {"name": "act", "arguments": args}}]);
            Json(message(&Value::Null, Some(calls))).into_response()
        }
        Reply::Status(code, retry_after) => {
            let mut resp =
                (StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), "scripted failure")
                    .into_response();
            if let Some(secs) = retry_after
                && let Ok(v) = HeaderValue::from_str(&secs.to_string())
            {
                resp.headers_mut().insert("retry-after", v);
            }
            resp
        }
        Reply::Malformed(raw) => ([("content-type", "application/json")], raw).into_response(),
        Reply::Empty => Json(message(&json!(""), None)).into_response(),
        Reply::Finished(content, reason) => {
            let mut body = message(&json!(content), None);
            body["choices"][0]["finish_reason"] = json!(reason);
            Json(body).into_response()
        }
        Reply::TopLogprobs(top) => {
            let first = top.first().map(|(t, _)| t.clone()).unwrap_or_default();
            let listed: Vec<Value> = top.iter().map(|(t, l)| json!({"token": t, "logprob": l})).collect();
            let mut body = message(&json!(first), None);
            body["choices"][0]["logprobs"] = json!({"content": [{"token": first, "logprob": top.first().map_or(0.0, |(_, l)| *l), "top_logprobs": listed}]});
            Json(body).into_response()
        }
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
    }
}

/// An agent's endpoint for benchmarks: four clicks on the first link, then a verdict, so
/// each trial makes five calls.
pub fn five_calls(body: &Value) -> Reply {
    let users = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count());
    Reply::Text(if users < 6 {
        r#"{"thought":"read on","action":{"type":"click","link":1}}"#.to_string()
    } else {
        r#"{"thought":"done","action":{"type":"verdict","verdict":"ESCALATE","rationale":"bench"}}"#.to_string()
    })
}
