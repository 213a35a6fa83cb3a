//! The configuration file: named model endpoints and the roles they play.
//!
//! ```toml
//! [endpoints.qwen]
//! base_url = "http://127.0.0.1:8000/v1"
//! model = "Qwen2.5-7B-Instruct"
//!
//! [endpoints.grader]
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-4o-mini"
//! api_key_env = "OPENAI_API_KEY"
//!
//! [roles]
//! judge = "grader"      # scores reasoning (Acc_rsn) and labels
//! attacker = "qwen"     # writes L1/L2 manipulations and proposes L4 passages
//! ```
//!
//! Any endpoint can be an agent (`--agent qwen`). The roles may also come from the
//! environment (`MIRAGE_JUDGE`, `MIRAGE_ATTACKER`, naming an endpoint) or from flags; a
//! role that names no endpoint is an error naming the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::llm::EndpointSpec;

/// The highest price per million tokens a config may give (US dollars).
pub const MAX_PRICE: f64 = 100_000.0;

/// Which endpoint plays each non-agent role.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roles {
    /// The LLM judge (Acc_rsn and judged labels). Without one, rules score alone.
    pub judge: Option<String>,
    /// The attacker/rewriter for manipulation levels. Without one, built-in generators write.
    pub attacker: Option<String>,
    /// The scoring model for the perplexity filter (token log-probabilities through the
    /// completions API). Without one, a character n-gram model of the corpus scores.
    pub scorer: Option<String>,
}

/// The parsed configuration file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointSpec>,
    #[serde(default)]
    pub roles: Roles,
    #[serde(default)]
    pub server: ServerSettings,
}

/// `[server]`: how `mirage serve` treats its clients.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Mark the session cookie `Secure` (set it when the dashboard is served behind TLS).
    #[serde(default)]
    pub secure_cookies: bool,
    /// Episodes one client (peer address) may create per minute through the open agent API.
    #[serde(default = "default_episodes_per_minute")]
    pub episodes_per_minute: u32,
    /// The search index's folder. `mirage serve` defaults it to `<db>.search` beside a
    /// SQLite file and to `mirage-search/<host>-<database>` for PostgreSQL; without one the
    /// index is kept in RAM and rebuilt at every start.
    #[serde(default)]
    pub search_dir: Option<std::path::PathBuf>,
    /// How long (ms) a page waits for a cold computation (scoring new trials, an aggregate)
    /// before it answers with what is ready and a progress line, then fills in.
    #[serde(default = "default_page_wait_ms")]
    pub page_wait_ms: u64,
    /// Host names (without port) the server answers to besides its listen address,
    /// `localhost`, `127.0.0.1` and `[::1]`: the names it is reached by behind a proxy or on
    /// a network. A request naming any other host is refused (421) before it is routed, so
    /// a web page cannot rebind its own name to this server.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The largest request body accepted, in bytes (larger ones get 413 before they are read).
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Pages one client may fetch per minute inside episodes (`/ep/…`, each one logged).
    #[serde(default = "default_episode_pages_per_minute")]
    pub episode_pages_per_minute: u32,
    /// Sign-in attempts per minute from one client, and on one account.
    #[serde(default = "default_logins_per_minute")]
    pub logins_per_minute: u32,
    /// How long (seconds) a worker's claim on a trial lasts without a heartbeat: after a
    /// crash, the trials it held return to the queue once this has passed.
    #[serde(default = "default_run_lease_secs")]
    pub run_lease_secs: u64,
    /// How long (ms) a connection may take to send a whole request head; also how long an
    /// idle keep-alive connection waits for its next request.
    #[serde(default = "default_header_timeout_ms")]
    pub header_timeout_ms: u64,
    /// How long (ms) a connection may move no byte either way (a stalled body or reader)
    /// before it is closed.
    #[serde(default = "default_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// How long (ms) a request may take until its answer's head is ready, its body's
    /// arrival included (408 past it).
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Connections open at once; past it a new one replaces the oldest with no request in
    /// flight, or is closed when every open one has one.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Pages one episode's log keeps; past it the episode's pages are refused (409) until
    /// it records its verdict.
    #[serde(default = "default_episode_max_events")]
    pub episode_max_events: u32,
    /// Days a standalone episode (one that carries no trial of a run) is kept after it was
    /// opened or finished; `serve` deletes older ones with their logs at start and hourly.
    #[serde(default = "default_episode_retention_days")]
    pub episode_retention_days: u32,
}

fn default_episode_max_events() -> u32 {
    5_000
}

fn default_episode_retention_days() -> u32 {
    30
}

fn default_header_timeout_ms() -> u64 {
    10_000
}

fn default_idle_timeout_ms() -> u64 {
    60_000
}

fn default_request_timeout_ms() -> u64 {
    120_000
}

fn default_max_connections() -> usize {
    512
}

fn default_run_lease_secs() -> u64 {
    30
}

fn default_episodes_per_minute() -> u32 {
    120
}

fn default_max_body_bytes() -> usize {
    1 << 20
}

fn default_episode_pages_per_minute() -> u32 {
    3_000
}

fn default_logins_per_minute() -> u32 {
    10
}

fn default_page_wait_ms() -> u64 {
    1_000
}

impl Default for ServerSettings {
    fn default() -> ServerSettings {
        ServerSettings {
            secure_cookies: false,
            episodes_per_minute: default_episodes_per_minute(),
            search_dir: None,
            page_wait_ms: default_page_wait_ms(),
            hosts: Vec::new(),
            max_body_bytes: default_max_body_bytes(),
            episode_pages_per_minute: default_episode_pages_per_minute(),
            logins_per_minute: default_logins_per_minute(),
            run_lease_secs: default_run_lease_secs(),
            header_timeout_ms: default_header_timeout_ms(),
            idle_timeout_ms: default_idle_timeout_ms(),
            max_connections: default_max_connections(),
            request_timeout_ms: default_request_timeout_ms(),
            episode_max_events: default_episode_max_events(),
            episode_retention_days: default_episode_retention_days(),
        }
    }
}

impl Config {
    /// Reads `path` (when given), then lets `MIRAGE_JUDGE` / `MIRAGE_ATTACKER` override the
    /// roles, and checks that every role names an endpoint.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Config> {
        let mut config = match path {
            Some(path) => Config::parse(path)?,
            None => Config::default(),
        };
        if let Ok(name) = std::env::var("MIRAGE_JUDGE")
            && !name.is_empty()
        {
            config.roles.judge = Some(name);
        }
        if let Ok(name) = std::env::var("MIRAGE_ATTACKER")
            && !name.is_empty()
        {
            config.roles.attacker = Some(name);
        }
        config.check(path)?;
        Ok(config)
    }

    fn parse(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("config {}", path.display()))
    }

    fn check(&self, path: Option<&Path>) -> anyhow::Result<()> {
        let place = path.map_or_else(|| PathBuf::from("(environment)"), Path::to_path_buf);
        for (field, name) in [
            ("roles.judge", &self.roles.judge),
            ("roles.attacker", &self.roles.attacker),
            ("roles.scorer", &self.roles.scorer),
        ] {
            if let Some(name) = name
                && !self.endpoints.contains_key(name)
            {
                bail!(
                    "config {}: {field} = {name:?} names no endpoint (known: {})",
                    place.display(),
                    self.endpoint_names()
                );
            }
        }
        for (name, spec) in &self.endpoints {
            let budget = crate::corpus::model::STEP_BUDGET;
            if spec.step_budget == 0 || spec.step_budget > budget {
                bail!(
                    "config {}: endpoints.{name}.step_budget = {} must be between 1 and {budget} (the steps the scorer counts)",
                    place.display(),
                    spec.step_budget
                );
            }
            if spec.max_tokens == 0 {
                bail!("config {}: endpoints.{name}.max_tokens must be at least 1", place.display());
            }
            if let Some(price) = spec.price {
                for (field, v) in [("prompt", price.prompt), ("completion", price.completion)] {
                    // No listed price comes near the ceiling; a value past it is a typo (and
                    // would overflow a run's cost to infinity).
                    if !v.is_finite() || !(0.0..=MAX_PRICE).contains(&v) {
                        bail!(
                            "config {}: endpoints.{name}.price.{field} = {v} must be a number of US dollars per \
                             million tokens from 0 to {MAX_PRICE}",
                            place.display()
                        );
                    }
                }
            }
        }
        Ok(())
    }

    fn endpoint_names(&self) -> String {
        if self.endpoints.is_empty() {
            "none".to_string()
        } else {
            self.endpoints.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    /// The endpoint playing the judge role, if one is configured.
    pub fn judge(&self) -> Option<(&str, &EndpointSpec)> {
        self.role(self.roles.judge.as_deref())
    }

    /// The endpoint playing the scorer role, if one is configured.
    pub fn scorer(&self) -> Option<(&str, &EndpointSpec)> {
        self.role(self.roles.scorer.as_deref())
    }

    /// The endpoint playing the attacker role, if one is configured.
    pub fn attacker(&self) -> Option<(&str, &EndpointSpec)> {
        self.role(self.roles.attacker.as_deref())
    }

    fn role(&self, name: Option<&str>) -> Option<(&str, &EndpointSpec)> {
        let name = name?;
        self.endpoints.get_key_value(name).map(|(k, v)| (k.as_str(), v))
    }

    /// The endpoint a flag names (`flag` is the option, for the message): an unknown name
    /// is an error listing the configured ones.
    pub fn endpoint(&self, flag: &str, name: &str) -> anyhow::Result<&EndpointSpec> {
        self.endpoints.get(name).ok_or_else(|| {
            anyhow::anyhow!("{flag}: {name:?} is not an endpoint of the config file (known: {})", self.endpoint_names())
        })
    }

    /// Sets the judge role from a flag: an endpoint name.
    pub fn set_judge(&mut self, name: &str) -> anyhow::Result<()> {
        if !self.endpoints.contains_key(name) {
            bail!("--judge {name:?} names no configured endpoint (known: {})", self.endpoint_names());
        }
        self.roles.judge = Some(name.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        std::io::Write::write_all(&mut f, text.as_bytes()).expect("write config");
        f
    }

    #[test]
    fn a_flag_names_a_configured_endpoint_or_is_told_which_exist() {
        let mut config = Config::default();
        config.endpoints.insert("grader".into(), EndpointSpec::new("http://127.0.0.1:1/v1", "m"));
        assert_eq!(config.endpoint("--judge", "grader").expect("known").model, "m");
        let err = config.endpoint("--scorer", "nope").unwrap_err().to_string();
        assert!(err.starts_with("--scorer: \"nope\" is not an endpoint") && err.contains("grader"), "{err}");
    }

    #[test]
    fn roles_name_endpoints() {
        let f = write(
            "[endpoints.a]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n[roles]\njudge = \"a\"\nattacker = \"a\"\n",
        );
        let c = Config::parse(f.path()).expect("parses");
        c.check(Some(f.path())).expect("valid");
        assert_eq!(c.judge().map(|(n, s)| (n, s.model.as_str())), Some(("a", "m")));
        assert_eq!(c.attacker().map(|(n, _)| n), Some("a"));
    }

    #[test]
    fn a_role_without_endpoint_names_the_field() {
        let f = write("[roles]\njudge = \"ghost\"\n");
        let c = Config::parse(f.path()).expect("parses");
        let e = c.check(Some(f.path())).expect_err("must fail").to_string();
        assert!(e.contains("roles.judge") && e.contains("ghost"), "{e}");
    }

    #[test]
    fn an_agents_setup_is_read_and_a_budget_past_the_scorers_is_refused() {
        let f =
            write("[endpoints.a]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\ncontext_pages = 6\nmax_tokens = 2048\n");
        let c = Config::parse(f.path()).expect("parses");
        c.check(Some(f.path())).expect("valid");
        let a = &c.endpoints["a"];
        assert_eq!((a.context_pages, a.max_tokens, a.step_budget), (6, 2048, 25));
        let f = write("[endpoints.a]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\nstep_budget = 40\n");
        let e = Config::parse(f.path()).expect("parses").check(Some(f.path())).expect_err("too many").to_string();
        assert!(e.contains("endpoints.a.step_budget") && e.contains("40"), "{e}");
    }

    #[test]
    fn a_price_is_read_and_a_negative_one_is_refused() {
        let head = "[endpoints.a]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n";
        let f = write(&format!("{head}price = {{ prompt = 0.15, completion = 0.6 }}\n"));
        let c = Config::parse(f.path()).expect("parses");
        c.check(Some(f.path())).expect("valid");
        let price = c.endpoints["a"].price.expect("price");
        let usage = crate::llm::Usage { prompt_tokens: 2_000_000, completion_tokens: 500_000 };
        assert!((price.of(usage) - 0.6).abs() < 1e-12, "2 M × 0.15 + 0.5 M × 0.6 = {}", price.of(usage));
        let f = write(&format!("{head}price = {{ prompt = -1, completion = 0.6 }}\n"));
        let e = Config::parse(f.path()).expect("parses").check(Some(f.path())).expect_err("negative").to_string();
        assert!(e.contains("endpoints.a.price.prompt = -1"), "{e}");
        let f = write(&format!("{head}price = {{ prompt = 1, completion = 1e308 }}\n"));
        let e = Config::parse(f.path()).expect("parses").check(Some(f.path())).expect_err("absurd").to_string();
        assert!(e.contains("endpoints.a.price.completion") && e.contains("from 0 to"), "{e}");
        let f = write(&format!("{head}price = {{ input = 1, completion = 0.6 }}\n"));
        assert!(Config::parse(f.path()).is_err(), "an unknown price field is refused");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let f = write("[roles]\njudges = \"a\"\n");
        let e = format!("{:#}", Config::parse(f.path()).expect_err("must fail"));
        assert!(e.contains("judges"), "{e}");
    }
}
