//! Raw axum routes that are not server functions: health, the three sites, episodes.

pub mod auth;
pub mod dashboard;
pub mod episodes;
pub mod sites;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Liveness probe.
pub async fn health() -> &'static str {
    "ok"
}

/// A JSON error body `{"error": "..."}` with a status.
pub fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}
