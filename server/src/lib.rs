//! Mirage server library: the engine modules, the HTTP application and the commands.

pub mod agent;
pub mod charts;
pub mod cli;
pub mod config;
pub mod corpus;
pub mod db;
pub mod detect;
pub mod engine;
pub mod env;
pub mod foreign;
pub mod geo;
pub mod http;
pub mod judge;
pub mod llm;
pub mod manip;
pub mod runs;
pub mod search;
pub mod services;
pub mod state;
pub mod stats;

use std::sync::Arc;

use app::ssr::Services;
use app::{App, shell};
use axum::Router;
use axum::routing::{get, post};
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

pub use state::AppState;

/// Every allocation of the binary, its tests and its benchmarks goes through jemalloc.
/// Scoring, the search index, the database driver and the server each allocate on their own
/// threads and free on others; glibc's allocator keeps what one thread's arena freed for that
/// arena, so a large run's first view held far more than it used (669–689 MiB at 108,000
/// trials against 429–451 MiB with jemalloc, and slower). The measurements are in the book's
/// benchmarks chapter.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The whole HTTP application: sites, episode API, health, dashboard and static files.
/// Tests drive it directly or serve it on a loopback listener.
pub fn router(state: AppState) -> Router {
    let services = Services::from(&state);
    let context = move || provide_context(services.clone());
    let (pinned, routes): (Vec<_>, Vec<_>) =
        generate_route_list(App).into_iter().partition(|r| http::dashboard::PINNED_PAGES.contains(&r.path()));
    assert_eq!(pinned.len(), http::dashboard::PINNED_PAGES.len(), "every pinned page is a route of the dashboard");
    let mut router = Router::new();
    for page in &pinned {
        router = router.route(page.path(), get(pinned_page(&state, context.clone())));
    }
    let router = router
        .route("/healthz", get(http::health))
        .route("/shop", get(http::sites::canonical))
        .route("/shop/{*path}", get(http::sites::canonical))
        .route("/forum", get(http::sites::canonical))
        .route("/forum/{*path}", get(http::sites::canonical))
        .route("/wiki", get(http::sites::canonical))
        .route("/wiki/{*path}", get(http::sites::canonical))
        .route("/ep/{id}/verdict", post(http::episodes::verdict))
        .route("/ep/{id}/act", post(http::episodes::act))
        .route("/ep/{id}/{*rest}", get(http::sites::in_episode))
        .route("/api/episodes", post(http::episodes::start))
        .route("/api/episodes/{id}", get(http::episodes::show))
        .route("/api/episodes/{id}/trajectory", get(http::episodes::trajectory))
        .route("/api/runs/{run}/episodes", post(http::episodes::from_run))
        .route("/login", get(http::auth::login_form).post(http::auth::login))
        .route("/logout", post(http::auth::logout))
        .route("/api/runs/events", get(http::dashboard::events))
        .route("/api/export/{name}", get(http::dashboard::export))
        .route("/book", get(http::dashboard::book))
        .leptos_routes_with_context(&state, routes, context.clone(), {
            let options = state.leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(context, shell))
        .layer(axum::middleware::from_fn(http::server_fn_status))
        .layer(axum::middleware::from_fn(http::book_policy))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::auth::layer))
        // Bodies past the limit get 413 before they are read (by a Content-Length that says
        // so, or as soon as a streamed body passes it); extractors share the same limit.
        .layer(RequestBodyLimitLayer::new(state.config.server.max_body_bytes))
        .layer(axum::extract::DefaultBodyLimit::max(state.config.server.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::auth::hosts))
        .layer(axum::middleware::from_fn(http::bounded_errors));
    http::with_security_headers(router).layer(TraceLayer::new_for_http()).with_state(state)
}

/// The handler of a page that always names its run: a request naming none is redirected
/// to the default run's (`http::dashboard::pinned_to`), any other is rendered as the
/// dashboard renders its pages.
fn pinned_page(
    state: &AppState,
    context: impl Fn() + Clone + Send + Sync + 'static,
) -> impl Fn(
    axum::extract::State<AppState>,
    axum::extract::Request,
) -> std::pin::Pin<Box<dyn Future<Output = axum::response::Response> + Send>>
+ Clone
+ Send
+ Sync
+ 'static {
    let with_state = {
        let state = state.clone();
        move || {
            provide_context(state.clone());
            provide_context(leptos_router::Method::Get);
            context();
        }
    };
    let options = state.leptos_options.clone();
    let render = leptos_axum::render_app_to_stream_with_context(with_state, move || shell(options.clone()));
    move |axum::extract::State(state): axum::extract::State<AppState>, req: axum::extract::Request| {
        let render = render.clone();
        Box::pin(async move {
            // A HEAD request (a probe) is answered as the page itself, as before pinning.
            let to = if req.method() == axum::http::Method::GET {
                http::dashboard::pinned_to(&state, req.uri()).await
            } else {
                None
            };
            match to {
                Some(to) => axum::response::IntoResponse::into_response(axum::response::Redirect::to(&to)),
                None => render(req).await,
            }
        })
    }
}

/// Builds the application state: the world from the stored tasks, the judge from the
/// configuration's `roles.judge` (gold-fact coverage without one), and what a server keeps
/// doing in the background (the search index follows finished trials, finished runs are
/// scored, launched runs execute here).
pub async fn app_state(
    store: Arc<dyn db::Store>,
    leptos_options: leptos::prelude::LeptosOptions,
    config: config::Config,
) -> anyhow::Result<AppState> {
    let reading = Reading::build(store.clone(), &config).await?;
    let Reading { world, corpus_version, judge, insights, geo } = reading;
    let search = Arc::new(
        search::TrajectoryIndex::open(&world, &corpus_version, store.as_ref(), config.server.search_dir.as_deref())
            .await?,
    );
    // Runs seen to finish (launched here, from the command line or by workers) are scored in
    // the background, so their first view finds the scores stored.
    let scorer = insights.clone();
    let pulse = services::pulse::Pulse::start(
        store.clone(),
        Arc::new(move |run: app::model::RunId| {
            let insights = scorer.clone();
            tokio::spawn(async move {
                if let Err(e) = insights.scores(&run).await {
                    tracing::warn!(run = %run, "scoring the finished run: {e}");
                }
            });
        }),
    );
    follow_trials(search.clone(), store.clone(), &pulse);
    let guard = Arc::new(state::Guard::default());
    let executor = Arc::new(services::execution::Executor::new(
        store.clone(),
        world.clone(),
        insights.clone(),
        pulse.clone(),
        std::time::Duration::from_secs(config.server.run_lease_secs.max(1)),
    ));
    Ok(AppState {
        leptos_options,
        world,
        store,
        config: Arc::new(config),
        judge,
        corpus_version,
        insights,
        search,
        geo,
        guard,
        pulse,
        executor,
    })
}

/// What reading runs needs, and nothing that runs in the background: the world of the
/// stored tasks, the judge, and the insights and GEO engines over the store. A server's
/// state is built on it; `mirage runs bundle` renders pages from it alone.
pub struct Reading {
    pub world: Arc<env::World>,
    pub corpus_version: String,
    pub judge: Arc<judge::rsn::ModelJudge>,
    pub insights: Arc<services::insights::InsightsService>,
    pub geo: Arc<services::geo::GeoService>,
}

impl Reading {
    /// Reads the stored tasks and builds the engines over `store`.
    pub async fn build(store: Arc<dyn db::Store>, config: &config::Config) -> anyhow::Result<Reading> {
        let tasks = store.all_tasks().await?;
        let corpus_version = corpus::fingerprint(&tasks);
        let world = Arc::new(env::World::build(tasks)?);
        let judge = Arc::new(judge::rsn::ModelJudge::from_config(config, store.clone())?);
        let wait = std::time::Duration::from_millis(config.server.page_wait_ms);
        let insights = Arc::new(services::insights::InsightsService {
            engine: engine::Engine::new(store.clone(), world.clone(), judge.clone(), wait),
        });
        let geo = Arc::new(services::geo::GeoService::new(store));
        Ok(Reading { world, corpus_version, judge, insights, geo })
    }
}

/// Keeps the search index up with finished trials, in the background: once at start, then
/// at each change the progress hub reports (a finish, a run that ended).
fn follow_trials(index: Arc<search::TrajectoryIndex>, store: Arc<dyn db::Store>, pulse: &services::pulse::Pulse) {
    let mut changes = pulse.subscribe();
    tokio::spawn(async move {
        loop {
            if let Err(e) = index.follow(store.as_ref()).await {
                tracing::warn!("search index: {e:#}");
            }
            // Missed batches (lagging) are no loss: the next look reads the store anyway.
            if let Err(tokio::sync::broadcast::error::RecvError::Closed) = changes.recv().await {
                return;
            }
        }
    });
}
