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
    /// The has-accounts answer and the per-client episode budget.
    pub guard: Arc<Guard>,
    /// Run progress, read once for every stream and the search follower.
    pub pulse: Arc<crate::services::pulse::Pulse>,
    /// Runs executing in this process (launched here or resumed), drained on shutdown.
    pub executor: Arc<crate::services::execution::Executor>,
}

/// How long the answer to "are there accounts?" is reused before the store is asked again
/// (accounts are added by `mirage user add`, possibly in another process).
pub const ACCOUNTS_TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// What a budget is spent on: episodes created, pages fetched inside episodes, sign-in
/// attempts from one client, sign-in attempts on one account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Budget {
    Episodes,
    EpisodePages,
    LoginClient,
    LoginAccount,
}

/// Shared checks of the access layer: a short-lived cache of whether accounts exist,
/// sliding one-minute windows of what each client (or account) spent, and the password
/// checks under way.
#[derive(Default)]
pub struct Guard {
    accounts: std::sync::Mutex<Option<(std::time::Instant, bool)>>,
    budgets:
        std::sync::Mutex<std::collections::HashMap<(Budget, String), std::collections::VecDeque<tokio::time::Instant>>>,
    /// Per client, the turn to check a password: one check at a time per client.
    checking: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Password checks at once, server-wide (see [`PASSWORD_CHECKS_AT_ONCE`]).
    checks: PasswordChecks,
}

/// Password checks (argon2, up to seconds of CPU each in a debug build) run at once.
pub const PASSWORD_CHECKS_AT_ONCE: usize = 2;

struct PasswordChecks(tokio::sync::Semaphore);

impl Default for PasswordChecks {
    fn default() -> PasswordChecks {
        PasswordChecks(tokio::sync::Semaphore::new(PASSWORD_CHECKS_AT_ONCE))
    }
}

/// The key a client's budgets are kept under: a whole network where one party holds many
/// addresses (all of 127.0.0.0/8 is this machine; an IPv6 client is given a /64), else its
/// address. So rotating source addresses does not buy a fresh budget.
pub fn client_key(peer: Option<std::net::SocketAddr>) -> String {
    use std::net::IpAddr;
    match peer.map(|p| p.ip()) {
        None => "unknown".to_string(),
        Some(IpAddr::V4(v4)) if v4.is_loopback() => "127.0.0.0/8".to_string(),
        Some(IpAddr::V4(v4)) => v4.to_string(),
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => client_key(Some(std::net::SocketAddr::new(IpAddr::V4(v4), 0))),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

impl Guard {
    /// Waits for `client`'s turn to check a password, and for a free check server-wide:
    /// whatever it sends, one client's sign-ins cost at most one check at a time.
    pub async fn password_turn(
        &self,
        client: &str,
    ) -> Option<(tokio::sync::OwnedMutexGuard<()>, tokio::sync::SemaphorePermit<'_>)> {
        let mine = {
            let mut checking = self.checking.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Clients with no check under way or waiting are forgotten (the map holds the only
            // reference), so the map does not grow with every address that ever signed in.
            checking.retain(|_, turn| Arc::strong_count(turn) > 1);
            checking.entry(client.to_string()).or_default().clone()
        };
        let turn = mine.lock_owned().await;
        // `None` only were the semaphore closed, which nothing does.
        let slot = self.checks.0.acquire().await.ok()?;
        Some((turn, slot))
    }

    /// Whether accounts exist. A "yes" is reused for [`ACCOUNTS_TTL`]; a "no" is never
    /// reused, so the first account added closes the open dashboard at once (a stale "yes"
    /// only asks someone to sign in).
    pub async fn has_users(&self, store: &dyn Store) -> crate::db::StoreResult<bool> {
        if let Ok(cached) = self.accounts.lock()
            && let Some((at, true)) = *cached
            && at.elapsed() < ACCOUNTS_TTL
        {
            return Ok(true);
        }
        let value = store.has_users().await?;
        if let Ok(mut cached) = self.accounts.lock() {
            *cached = Some((std::time::Instant::now(), value));
        }
        Ok(value)
    }

    /// Takes one episode from `client`'s budget of `per_minute`; `false` when it is spent.
    pub fn allow_episode(&self, client: &str, per_minute: u32) -> bool {
        self.allow(Budget::Episodes, client, per_minute)
    }

    /// Takes one from `key`'s budget of `per_minute` for `what`; `false` when it is spent.
    pub fn allow(&self, what: Budget, key: &str, per_minute: u32) -> bool {
        let Ok(mut all) = self.budgets.lock() else { return false };
        // The runtime's clock, so tests can move it instead of waiting a minute.
        let now = tokio::time::Instant::now();
        let window = std::time::Duration::from_secs(60);
        // Forget keys idle for a minute, so the map stays small.
        all.retain(|_, times| times.back().is_some_and(|t| now.duration_since(*t) < window));
        let times = all.entry((what, key.to_string())).or_default();
        while times.front().is_some_and(|t| now.duration_since(*t) >= window) {
            times.pop_front();
        }
        if times.len() >= per_minute as usize {
            return false;
        }
        times.push_back(now);
        true
    }
}

impl From<&AppState> for Services {
    fn from(state: &AppState) -> Services {
        crate::services::services(crate::services::Parts {
            world: state.world.clone(),
            store: state.store.clone(),
            config: state.config.clone(),
            corpus_version: state.corpus_version.clone(),
            insights: state.insights.clone(),
            search: Some(state.search.clone()),
            geo: state.geo.clone(),
            executor: Some(state.executor.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_its_network_where_addresses_are_cheap() {
        let key = |a: &str| client_key(Some(a.parse().expect("address")));
        assert_eq!(key("127.0.0.1:1"), key("127.0.10.7:2"), "every loopback address is this machine");
        assert_eq!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:2:ffff::9]:2"), "one /64");
        assert_ne!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"));
        assert_ne!(key("10.0.0.1:1"), key("10.0.0.2:1"));
        assert_eq!(key("[::ffff:10.0.0.1]:1"), key("10.0.0.1:5"));
        assert_eq!(client_key(None), "unknown");
    }

    #[tokio::test(start_paused = true)]
    async fn each_client_gets_its_own_budget_which_refills_after_a_minute() {
        let guard = Guard::default();
        let wait = |secs| tokio::time::advance(std::time::Duration::from_secs(secs));
        // One at 0 s, one at 20 s, one at 40 s: a sliding window of a minute.
        for at in 0..3 {
            if at > 0 {
                wait(20).await;
            }
            assert!(guard.allow_episode("10.0.0.1", 3));
        }
        assert!(!guard.allow_episode("10.0.0.1", 3), "the fourth within a minute is refused");
        assert!(guard.allow_episode("10.0.0.2", 3), "another client has its own budget");
        wait(19).await;
        assert!(!guard.allow_episode("10.0.0.1", 3), "59 s after the first: still full");
        wait(1).await;
        assert!(guard.allow_episode("10.0.0.1", 3), "a minute after the first, its place is free");
        assert!(!guard.allow(Budget::Episodes, "10.0.0.1", 3), "and only its place");
    }

    #[tokio::test]
    async fn a_yes_is_cached_and_a_no_is_asked_again() {
        let store = crate::db::SqlStore::connect("sqlite::memory:").await.expect("store");
        let guard = Guard::default();
        assert!(!guard.has_users(&store).await.expect("asked"));
        crate::db::AccountStore::put_user(&store, "ann", "hash", "operator").await.expect("user");
        assert!(guard.has_users(&store).await.expect("asked"), "a no is not reused");
        crate::db::AccountStore::remove_user(&store, "ann").await.expect("removed");
        assert!(guard.has_users(&store).await.expect("cached"), "a yes is reused for a while");
    }

    #[tokio::test(start_paused = true)]
    async fn password_checks_take_turns_per_client_and_share_a_few_slots() {
        use std::time::Duration;
        let guard = Guard::default();
        let first = guard.password_turn("10.0.0.1").await.expect("turn");
        let wait = |client: &'static str| {
            let guard = &guard;
            async move { tokio::time::timeout(Duration::from_secs(5), guard.password_turn(client)).await.ok().flatten() }
        };
        assert!(wait("10.0.0.1").await.is_none(), "a client's second check waits for its first");
        let other = wait("10.0.0.2").await.expect("another client checks meanwhile");
        assert!(wait("10.0.0.3").await.is_none(), "two checks at once, server-wide");
        drop(first);
        assert!(wait("10.0.0.3").await.is_some(), "a slot freed is taken");
        drop(other);
        assert!(wait("10.0.0.1").await.is_some(), "the client's turn came back");
    }
}
