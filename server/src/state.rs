//! Shared application state handed to every handler.

use std::sync::Arc;

use app::ssr::Services;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;

use crate::config::Config;
use crate::db::Store;
use crate::env::World;
use crate::judge::rsn::ModelJudge;

/// State of the HTTP application: built once in `serve`, cloned per request.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub world: Arc<World>,
    pub store: Arc<dyn Store>,
    /// Model endpoints and roles for runs launched from the dashboard.
    pub config: Arc<Config>,
    /// The reasoning judge that scores runs for the dashboard.
    pub judge: Arc<ModelJudge>,
    /// Fingerprint of the stored corpus, recorded with every launched run.
    pub corpus_version: String,
    /// Full-text index of tasks and finished trajectories.
    pub search: Arc<crate::search::TrajectoryIndex>,
    /// Aggregates of runs, cached across requests.
    pub insights: Arc<crate::services::insights::InsightsService>,
    /// GEO ranking reports, cached across requests.
    pub geo: Arc<crate::services::geo::GeoService>,
}

impl From<&AppState> for Services {
    fn from(state: &AppState) -> Services {
        crate::services::services(crate::services::Parts {
            world: state.world.clone(),
            store: state.store.clone(),
            config: state.config.clone(),
            corpus_version: state.corpus_version.clone(),
            insights: state.insights.clone(),
            search: state.search.clone(),
            geo: state.geo.clone(),
        })
    }
}
