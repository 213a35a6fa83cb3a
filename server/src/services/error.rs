//! How a failure becomes a server function's error: by the engine's one rule
//! (`engine::error`: a store error keeps its meaning, found by its type; anything else is
//! logged and internal), variant for variant.

use app::error::AppError;

use crate::db::StoreError;
use crate::engine::EngineError;

impl From<EngineError> for AppError {
    fn from(e: EngineError) -> AppError {
        match e {
            EngineError::NotFound(what) => AppError::NotFound(what),
            EngineError::Invalid { field, message } => AppError::Invalid { field, message },
            EngineError::Conflict(message) => AppError::Conflict(message),
            EngineError::Internal => AppError::Internal,
        }
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        EngineError::from(e).into()
    }
}

/// `e` as the browser may see it.
pub fn fail(e: impl Into<anyhow::Error>) -> AppError {
    crate::engine::fail(e).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_see_the_engines_rule() {
        assert_eq!(AppError::from(StoreError::NotFound("run r".into())), AppError::NotFound("run r".into()));
        let deep = anyhow::Error::from(StoreError::Conflict("held by ann".into())).context("labelling");
        assert_eq!(fail(deep), AppError::Conflict("held by ann".into()));
        assert_eq!(fail(anyhow::anyhow!("run r not found")), AppError::Internal);
    }
}
