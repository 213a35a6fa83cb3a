//! The one error type of the raw HTTP routes (episode API, sites, sign-in, event stream,
//! downloads). Each variant answers with its status and a JSON body `{"error": "…"}`;
//! an internal failure is logged with its cause where it is answered, and the client
//! learns only that it failed.

use app::error::AppError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::db::StoreError;
use crate::engine::EngineError;

/// A failed raw HTTP request.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// 404, with what was not found.
    #[error("{0}")]
    NotFound(String),
    /// 422: the request names the field and what is wrong with it.
    #[error("{0}")]
    Invalid(String),
    /// 409.
    #[error("{0}")]
    Conflict(String),
    /// 410: an episode that no longer holds its trial.
    #[error("{0}")]
    Gone(String),
    /// 401.
    #[error("{0}")]
    Unauthorized(String),
    /// 403.
    #[error("{0}")]
    Forbidden(String),
    /// 429: a client spent its budget.
    #[error("{0}")]
    TooMany(String),
    /// 500: `what` the server was doing; the cause is logged, never sent.
    #[error("{what}: {cause:#}")]
    Internal { what: &'static str, cause: anyhow::Error },
}

impl HttpError {
    /// A failure while doing `what`, by the one rule: a store error anywhere in its causes
    /// keeps its meaning (found by type: not found → 404, conflict → 409); anything else
    /// is internal (500, the cause logged where it is answered).
    pub fn failed(what: &'static str, cause: impl Into<anyhow::Error>) -> HttpError {
        let cause = cause.into();
        match crate::engine::error::of_request(&cause) {
            Some(EngineError::NotFound(thing)) => HttpError::NotFound(format!("{thing} not found")),
            Some(EngineError::Conflict(message)) => HttpError::Conflict(message),
            _ => HttpError::Internal { what, cause },
        }
    }

    /// The status it answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            HttpError::NotFound(_) => StatusCode::NOT_FOUND,
            HttpError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            HttpError::Conflict(_) => StatusCode::CONFLICT,
            HttpError::Gone(_) => StatusCode::GONE,
            HttpError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            HttpError::Forbidden(_) => StatusCode::FORBIDDEN,
            HttpError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            HttpError::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<StoreError> for HttpError {
    fn from(e: StoreError) -> HttpError {
        HttpError::failed("storage", e)
    }
}

impl From<AppError> for HttpError {
    fn from(e: AppError) -> HttpError {
        let message = e.to_string();
        match e {
            AppError::NotFound(_) => HttpError::NotFound(message),
            AppError::Invalid { .. } | AppError::InvalidFields(_) => HttpError::Invalid(message),
            AppError::Conflict(_) => HttpError::Conflict(message),
            AppError::Unauthorized => HttpError::Unauthorized(message),
            AppError::Forbidden(_) => HttpError::Forbidden(message),
            // Already logged where it became an `AppError`.
            AppError::Internal | AppError::Corrupt(_) | AppError::Transport(_) => {
                HttpError::Internal { what: "a dashboard request", cause: anyhow::anyhow!("{message}") }
            }
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match self {
            HttpError::Internal { what, cause } => {
                tracing::error!(error = %format!("{cause:#}"), "failed while {what}");
                "internal error".to_string()
            }
            HttpError::NotFound(m)
            | HttpError::Invalid(m)
            | HttpError::Conflict(m)
            | HttpError::Gone(m)
            | HttpError::Unauthorized(m)
            | HttpError::Forbidden(m)
            | HttpError::TooMany(m) => m,
        };
        (status, Json(serde_json::json!({ "error": message }))).into_response()
    }
}

/// Gives a server function's error its own status when the framework answered 500 for it:
/// arguments that do not decode are the caller's mistake (422), not the server's. A streamed
/// (chunked) body cut off at the body limit reaches the server function as a failed read; the
/// body's own error type (`LengthLimitError`, seen as it passes) makes that answer a 413, as
/// a declared length past the limit gets.
pub async fn server_fn_status(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    if !api {
        return next.run(req).await;
    }
    let over_limit = Arc::new(AtomicBool::new(false));
    let req = {
        let seen = over_limit.clone();
        req.map(move |body| {
            // The cause is passed on unwrapped, so extractors still see the limit's own error.
            axum::body::Body::new(http_body_util::BodyExt::map_err(body, move |e: axum::Error| {
                let cause = e.into_inner();
                if is_length_limit(&*cause) {
                    seen.store(true, Ordering::Relaxed);
                }
                cause
            }))
        })
    };
    let resp = next.run(req).await;
    if resp.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return resp;
    }
    if over_limit.load(Ordering::Relaxed) {
        return too_large();
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 16).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
    };
    if let Ok(e) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status = e.status();
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// Whether a body's read failed because the body limit cut it off (by the error's type).
fn is_length_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| e.is::<http_body_util::LengthLimitError>())
}

/// The longest error message answered: past it, what was echoed (an id, a host) is cut.
pub const MAX_ERROR_CHARS: usize = 1_000;

/// `message`, cut to [`MAX_ERROR_CHARS`] characters with a note of how much was left out.
pub fn clip(message: &str) -> String {
    match message.char_indices().nth(MAX_ERROR_CHARS) {
        None => message.to_string(),
        Some((at, _)) => format!("{}… ({} more characters)", &message[..at], message[at..].chars().count()),
    }
}

/// Whether a path is one of the raw JSON routes (the episode API, downloads, the progress
/// stream, sign-in), whose errors are `{"error": "…"}`. The sites' pages (`/shop`, `/forum`,
/// `/wiki`, and inside episodes `/ep/…`) are pages with their own status, text or HTML, and
/// are not among them.
fn is_raw_route(path: &str) -> bool {
    match path.strip_prefix("/api/") {
        Some(rest) => {
            rest.starts_with("episodes")
                || rest.starts_with("export/")
                || rest == "runs/events"
                || (rest.starts_with("runs/") && rest.ends_with("/episodes"))
        }
        None => path == "/healthz" || path == "/login" || path == "/logout",
    }
}

/// Whether a path is one of the sites' pages (left as they are, whatever their status).
fn is_site_page(path: &str) -> bool {
    path.starts_with("/ep/")
        || ["/shop", "/forum", "/wiki"].iter().any(|s| path == *s || path.starts_with(&format!("{s}/")))
}

/// Error answers in their documented shape and of bounded size: every 413 is the JSON
/// error (the body limit and the extractors answer plain text); a raw JSON route's error is
/// `{"error": "…"}` whatever produced it (other fields of a JSON error, such as
/// `retry_after`, are kept); an error message echoes at most [`MAX_ERROR_CHARS`] characters
/// of its input, on raw routes and in the dashboard's plain-text errors. The sites' pages,
/// the dashboard's HTML and server functions' own encodings pass as they are.
pub async fn bounded_errors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    if is_site_page(&path) {
        return resp;
    }
    let raw = is_raw_route(&path);
    let kind = resp.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let json = kind.starts_with("application/json");
    let text = kind.starts_with("text/plain") || kind.is_empty();
    // Raw routes: JSON or plain text becomes the JSON error. Pages: plain text is cut.
    // Server functions (the other /api/ paths) keep their own encoding.
    let page_text = text && !path.starts_with("/api/");
    if !(raw && (json || text)) && !page_text {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 8 << 20).await else {
        return (status, axum::Json(serde_json::json!({"error": "the error answer was too large to send"})))
            .into_response();
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    parts.headers.remove(axum::http::header::CONTENT_TYPE);
    let mut resp = if raw {
        let mut value = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .filter(|v| json && v.get("error").is_some_and(serde_json::Value::is_string))
            .unwrap_or_else(|| serde_json::json!({ "error": String::from_utf8_lossy(&bytes).trim() }));
        if let Some(e) = value.get_mut("error")
            && let Some(m) = e.as_str()
        {
            *e = serde_json::Value::String(clip(m));
        }
        axum::Json(value).into_response()
    } else {
        clip(String::from_utf8_lossy(&bytes).trim()).into_response()
    };
    *resp.status_mut() = status;
    resp.headers_mut().extend(parts.headers);
    resp
}

/// 413, as the body limit answers a declared length past it.
fn too_large() -> Response {
    let why = "the request body is larger than this server accepts ([server] max_body_bytes)";
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(serde_json::json!({"error": why}))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_answer_without_their_cause() {
        let resp = HttpError::failed("reading accounts", anyhow::anyhow!("disk /secret/path is full")).into_response();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = futures::executor::block_on(axum::body::to_bytes(resp.into_body(), 1 << 16)).expect("body");
        let text = String::from_utf8_lossy(&body);
        assert_eq!(text, r#"{"error":"internal error"}"#);
    }

    #[test]
    fn echoed_input_is_cut_and_raw_routes_are_told_apart() {
        let long = "é".repeat(5_000);
        let cut = clip(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_ERROR_CHARS)) && cut.ends_with("… (4000 more characters)"), "{cut}");
        assert_eq!(clip("short"), "short");
        for raw in ["/api/episodes", "/api/episodes/e1", "/api/runs/r/episodes", "/api/export/x.csv", "/login"] {
            assert!(is_raw_route(raw) && !is_site_page(raw), "{raw}");
        }
        for page in ["/ep/1/act", "/ep/1/shop/admin", "/wiki", "/wiki/a", "/forum/t/1"] {
            assert!(is_site_page(page) && !is_raw_route(page), "{page}");
        }
        for not in ["/api/save_label", "/api/runs_list", "/runs", "/wikipedia", "/annotate/t/recovery"] {
            assert!(!is_raw_route(not) && !is_site_page(not), "{not}");
        }
    }

    #[test]
    fn store_errors_keep_their_status() {
        assert_eq!(HttpError::from(StoreError::NotFound("run r".into())).status(), StatusCode::NOT_FOUND);
        assert_eq!(HttpError::from(StoreError::Conflict("taken".into())).status(), StatusCode::CONFLICT);
        assert_eq!(HttpError::from(StoreError::Corrupt("x".into())).status(), StatusCode::INTERNAL_SERVER_ERROR);
        // Found by type under any context, never by text.
        let deep = anyhow::Error::from(StoreError::NotFound("run r".into())).context("handing out an episode");
        let e = HttpError::failed("handing out an episode", deep);
        assert_eq!((e.status(), e.to_string()), (StatusCode::NOT_FOUND, "run r not found".to_string()));
        let lookalike = HttpError::failed("reading", anyhow::anyhow!("run r not found"));
        assert_eq!(lookalike.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn a_body_cut_off_by_the_limit_is_known_by_its_type() {
        use http_body_util::BodyExt;
        let limited = http_body_util::Limited::new(http_body_util::Full::new(axum::body::Bytes::from("abcdef")), 2);
        let cut = limited.collect().await.expect_err("past the limit");
        assert!(is_length_limit(&axum::Error::new(cut)));
        assert!(!is_length_limit(&axum::Error::new(std::io::Error::other("length limit exceeded"))));
    }
}
