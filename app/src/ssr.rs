//! Ports the server binary implements. Server functions reach the backend only through
//! these traits, so `app` never depends on sqlx, tantivy or the corpus engine.

use std::sync::Arc;

use leptos::prelude::use_context;

use crate::error::AppError;
use crate::model::{TaskDetail, TaskFilter, TaskList};

/// Read access to the task corpus.
#[async_trait::async_trait]
pub trait Corpus: Send + Sync {
    /// Tasks matching the filter, in corpus order, with the facets.
    async fn list(&self, filter: TaskFilter) -> Result<TaskList, AppError>;
    /// One task in full; `NotFound` for an unknown id.
    async fn get(&self, id: String) -> Result<TaskDetail, AppError>;
}

/// Everything a server function may touch. Provided once per request via context.
#[derive(Clone)]
pub struct Services {
    pub corpus: Arc<dyn Corpus>,
}

/// The services of the current request.
pub fn services() -> Result<Services, AppError> {
    use_context::<Services>().ok_or(AppError::Internal)
}
