//! The one rule by which a failure becomes a server function's error: a store error keeps
//! what it says about the request (a record that is not there → `NotFound`, a conflicting
//! one → `Conflict`), found by its type wherever it sits in the chain of causes; anything
//! else is the server's own failure, logged here with its cause and answered as `Internal`.

use app::error::AppError;

use crate::db::StoreError;

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        match e {
            StoreError::NotFound(what) => AppError::NotFound(what),
            StoreError::Conflict(message) => AppError::Conflict(message),
            other => logged(&anyhow::Error::from(other)),
        }
    }
}

/// `e` as the browser may see it, by the rule above.
pub fn fail(e: impl Into<anyhow::Error>) -> AppError {
    let e = e.into();
    match StoreError::within(&e) {
        Some(StoreError::NotFound(what)) => AppError::NotFound(what.clone()),
        Some(StoreError::Conflict(message)) => AppError::Conflict(message.clone()),
        _ => logged(&e),
    }
}

fn logged(e: &anyhow::Error) -> AppError {
    tracing::error!("dashboard request failed: {e:#}");
    AppError::Internal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_keeps_its_meaning_wherever_it_sits() {
        let missing = || StoreError::NotFound("run r".into());
        assert_eq!(AppError::from(missing()), AppError::NotFound("run r".into()));
        assert_eq!(fail(missing()), AppError::NotFound("run r".into()));
        let deep = anyhow::Error::from(missing()).context("reading the run").context("scoring it");
        assert_eq!(fail(deep), AppError::NotFound("run r".into()));
        let held = anyhow::Error::from(StoreError::Conflict("held by ann".into())).context("labelling");
        assert_eq!(fail(held), AppError::Conflict("held by ann".into()));
    }

    #[test]
    fn everything_else_is_internal_whatever_its_text_says() {
        assert_eq!(fail(anyhow::anyhow!("run r not found")), AppError::Internal);
        assert_eq!(AppError::from(StoreError::Db(sqlx::Error::PoolTimedOut)), AppError::Internal);
        assert_eq!(AppError::from(StoreError::Corrupt("spec".into())), AppError::Internal);
    }
}
