//! Shared application state handed to every handler.

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;

use crate::db::Store;
use crate::env::World;

/// State of the HTTP application: built once in `serve`, cloned per request.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub world: Arc<World>,
    pub store: Arc<dyn Store>,
}
