//! Server functions: one-line adapters from the browser to the ports in `ssr`.

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::{TaskDetail, TaskFilter, TaskList};

/// Tasks matching the filter.
#[server]
pub async fn list_tasks(filter: TaskFilter) -> Result<TaskList, AppError> {
    crate::ssr::services()?.corpus.list(filter).await
}

/// One task in full.
#[server]
pub async fn get_task(id: String) -> Result<TaskDetail, AppError> {
    crate::ssr::services()?.corpus.get(id).await
}
