//! `mirage serve`: the dashboard and the three investigation sites.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use leptos::prelude::LeptosOptions;

use crate::db::{Store, seed_if_empty};

/// `mirage serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Keep it on loopback unless accounts are configured.
    #[arg(long, env = "MIRAGE_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// Folder with the built browser bundle (`pkg/`) and public files.
    #[arg(long, env = "MIRAGE_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Config file with model endpoints and roles (`[endpoints.NAME]`, `[roles]`): agents
    /// the launch form may name, and the judge that scores runs.
    #[arg(long, env = "MIRAGE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// Where the search index lives when the config names no folder: beside a SQLite file
/// (`<file>.search`), under `mirage-search/` for PostgreSQL (host and database in the name),
/// nowhere (RAM) for an in-memory database.
pub fn default_search_dir(db: &str) -> Option<PathBuf> {
    if let Some(rest) = db.strip_prefix("postgres://").or_else(|| db.strip_prefix("postgresql://")) {
        // user:password@host:port/db?params → host:port/db, made a file name.
        let at = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        let place = at.split('?').next().unwrap_or(at);
        let name: String =
            place.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
        return Some(PathBuf::from("mirage-search").join(name));
    }
    let path = db.strip_prefix("sqlite://").or_else(|| db.strip_prefix("sqlite:")).unwrap_or(db);
    let path = path.split('?').next().unwrap_or(path);
    if path.is_empty() || path.contains(":memory:") {
        return None;
    }
    Some(PathBuf::from(format!("{path}.search")))
}

pub(super) async fn serve(store: Arc<dyn Store>, db: &str, args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs { addr, site_root, config } = args;
    let mut config = crate::config::Config::load(config.as_deref())?;
    if config.server.search_dir.is_none() {
        config.server.search_dir = default_search_dir(db);
    }
    if !addr.ip().is_loopback() && !store.has_users().await? {
        bail!(
            "refusing to listen on {addr} without accounts: anyone who can reach it would be the operator. \
             Add one with `mirage user add NAME --role operator`, or listen on 127.0.0.1"
        );
    }
    seed_if_empty(store.as_ref()).await?;
    prune_episodes_hourly(store.clone(), config.server.episode_retention_days);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
    let addr = listener.local_addr()?;
    let options = LeptosOptions::builder()
        .output_name("mirage")
        .site_root(site_root.to_string_lossy().to_string())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    if !site_root.join("pkg/mirage_bg.wasm").exists() {
        tracing::warn!(site_root = %site_root.display(), "No browser bundle under {}/pkg: pages render but do not hydrate (run scripts/build-site.sh)", site_root.display());
    }
    let limits = crate::http::listen::Limits::of(&config.server);
    let state = crate::app_state(store, options, config).await?;
    // Runs an earlier process left active continue here (expired leases requeued first).
    let executor = state.executor.clone();
    executor.resume(crate::runs::PoolOptions::default().concurrency).await?;
    let tasks = state.world.task_count();
    let app = crate::router(state);
    println!("Mirage is listening on http://{addr} ({tasks} tasks)");
    // Peer addresses reach the handlers (the episode budget is per client).
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(crate::http::listen::serve(listener, app, limits, async {
        let _ = stopped.await;
    }));
    tokio::select! {
        joined = &mut server => return joined.context("the HTTP server stopped")?.context("serving HTTP"),
        () = shutdown() => {}
    }
    println!("Stopping: giving running trials back to the queue");
    let _ = stop.send(());
    // Running trials go back to the queue at once, so that the next start resumes them
    // without waiting for their leases to expire.
    if !executor.drain(DRAIN_WITHIN).await {
        tracing::warn!("some trials were still running after {DRAIN_WITHIN:?}; their leases will expire");
    }
    // Open connections (a progress stream) get a moment to close; then the process ends.
    match tokio::time::timeout(std::time::Duration::from_secs(2), server).await {
        Ok(joined) => joined.context("the HTTP server stopped")?.context("serving HTTP"),
        Err(_) => Ok(()),
    }
}

/// Deletes standalone episodes older than the retention now and every hour after.
fn prune_episodes_hourly(store: Arc<dyn Store>, days: u32) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            let before = crate::db::now_ms() - i64::from(days) * 24 * 3600 * 1000;
            match store.prune_episodes(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(episodes = n, days, "deleted standalone episodes past their retention"),
                Err(e) => tracing::warn!("deleting old episodes: {e}"),
            }
        }
    });
}

/// How long a stopping server waits for its runs to give their trials back.
const DRAIN_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// A token cancelled on Ctrl-C or SIGTERM: worker pools stop claiming and give their
/// running trials back to the queue.
pub(super) fn stop_on_signal() -> tokio_util::sync::CancellationToken {
    let token = tokio_util::sync::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        shutdown().await;
        cancel.cancel();
    });
    token
}

/// Resolves on Ctrl-C or SIGTERM (what `kill`, systemd and container runtimes send).
pub(super) async fn shutdown() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_index_sits_beside_the_database() {
        assert_eq!(default_search_dir("data/mirage.db"), Some(PathBuf::from("data/mirage.db.search")));
        assert_eq!(default_search_dir("sqlite:///tmp/m.db?mode=rwc"), Some(PathBuf::from("/tmp/m.db.search")));
        assert_eq!(default_search_dir("sqlite::memory:"), None);
        assert_eq!(
            default_search_dir("postgres://me:secret@db.example:5432/mirage?sslmode=require"),
            Some(PathBuf::from("mirage-search/db.example_5432_mirage"))
        );
    }
}
