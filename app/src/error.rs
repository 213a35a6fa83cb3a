//! `AppError`: the error every server function returns, in the client's vocabulary.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// What the browser may learn about a failure. Internal causes are logged on the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum AppError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("invalid {field}: {message}")]
    Invalid { field: String, message: String },
    /// Several fields of a form at fault at once, as (field, message) in the form's order.
    #[error("invalid {}", fields_text(.0))]
    InvalidFields(Vec<(String, String)>),
    #[error("sign in first")]
    Unauthorized,
    #[error("not allowed: {0}")]
    Forbidden(String),
    /// Someone else holds the item (an annotation lock).
    #[error("{0}")]
    Conflict(String),
    /// The real cause was logged on the server; the client only learns that it failed.
    #[error("internal error")]
    Internal,
    /// Something stored cannot be read; names it (a run whose spec is not a run spec).
    #[error("unreadable: {0}")]
    Corrupt(String),
    #[error("request failed: {0}")]
    Transport(String),
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(e: ServerFnErrorErr) -> Self {
        match e {
            // The request's arguments do not fit the function: the caller's mistake, named.
            ServerFnErrorErr::Args(m) => AppError::Invalid { field: "arguments".into(), message: m },
            ServerFnErrorErr::MissingArg(m) => AppError::Invalid { field: m, message: "missing".into() },
            e => AppError::Transport(e.to_string()),
        }
    }
}

fn fields_text(fields: &[(String, String)]) -> String {
    fields.iter().map(|(f, m)| format!("{f}: {m}")).collect::<Vec<_>>().join("; ")
}

impl AppError {
    /// The error of a form from its faults: none is `Ok`, one is [`AppError::Invalid`],
    /// more are [`AppError::InvalidFields`].
    pub fn from_fields(mut fields: Vec<(String, String)>) -> Result<(), AppError> {
        match fields.len() {
            0 => Ok(()),
            1 => {
                let (field, message) = fields.remove(0);
                Err(AppError::Invalid { field, message })
            }
            _ => Err(AppError::InvalidFields(fields)),
        }
    }

    /// The message this error has for `field`, if it names it.
    pub fn for_field(&self, field: &str) -> Option<String> {
        match self {
            AppError::Invalid { field: f, message } if f == field => Some(message.clone()),
            AppError::InvalidFields(all) => all.iter().find(|(f, _)| f == field).map(|(_, m)| m.clone()),
            _ => None,
        }
    }

    /// The HTTP status this error maps to during server-side rendering.
    pub fn status(&self) -> http::StatusCode {
        match self {
            AppError::NotFound(_) => http::StatusCode::NOT_FOUND,
            AppError::Invalid { .. } | AppError::InvalidFields(_) => http::StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Unauthorized => http::StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => http::StatusCode::FORBIDDEN,
            AppError::Conflict(_) => http::StatusCode::CONFLICT,
            AppError::Internal | AppError::Corrupt(_) | AppError::Transport(_) => {
                http::StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_serialise_as_tagged_json() {
        let json = serde_json::to_string(&AppError::NotFound("task x".into())).expect("serialises");
        assert_eq!(json, r#"{"kind":"not_found","detail":"task x"}"#);
        assert_eq!(AppError::Internal.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
    }
}
