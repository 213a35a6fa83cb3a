//! The engine's errors, and the one rule by which any failure becomes one: a store error
//! keeps what it says about the request (a record that is not there, a conflicting one),
//! found by its type wherever it sits in the chain of causes; anything else is the server's
//! own failure, logged here with its cause. The services turn these into the pages' errors
//! variant for variant.

use crate::db::StoreError;

/// Why the engine could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("{0} not found")]
    NotFound(String),
    /// A request's value that cannot be used: the field and why.
    #[error("invalid {field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0}")]
    Conflict(String),
    /// The cause was logged where it happened.
    #[error("internal error")]
    Internal,
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> EngineError {
        fail(e)
    }
}

/// The rule itself: what a failure says about the request, if anything (a store error's
/// not found or conflict, found by its type among the causes). The raw routes' errors
/// follow it too (`HttpError::failed`).
pub fn of_request(e: &anyhow::Error) -> Option<EngineError> {
    match StoreError::within(e) {
        Some(StoreError::NotFound(what)) => Some(EngineError::NotFound(what.clone())),
        Some(StoreError::Conflict(message)) => Some(EngineError::Conflict(message.clone())),
        _ => None,
    }
}

/// `e` by the rule above; a failure of the server's own is logged here.
pub fn fail(e: impl Into<anyhow::Error>) -> EngineError {
    let e = e.into();
    of_request(&e).unwrap_or_else(|| {
        tracing::error!("failed: {e:#}");
        EngineError::Internal
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_keeps_its_meaning_wherever_it_sits() {
        let missing = || StoreError::NotFound("run r".into());
        assert_eq!(EngineError::from(missing()), EngineError::NotFound("run r".into()));
        let deep = anyhow::Error::from(missing()).context("reading the run").context("scoring it");
        assert_eq!(fail(deep), EngineError::NotFound("run r".into()));
        let held = anyhow::Error::from(StoreError::Conflict("held by ann".into())).context("labelling");
        assert_eq!(fail(held), EngineError::Conflict("held by ann".into()));
    }

    #[test]
    fn everything_else_is_internal_whatever_its_text_says() {
        assert_eq!(fail(anyhow::anyhow!("run r not found")), EngineError::Internal);
        assert_eq!(EngineError::from(StoreError::Db(sqlx::Error::PoolTimedOut)), EngineError::Internal);
        assert_eq!(EngineError::from(StoreError::Corrupt("spec".into())), EngineError::Internal);
    }
}
