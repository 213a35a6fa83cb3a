//! Test harness: a seeded database in a temp folder and the app served on 127.0.0.1:0.

use std::path::PathBuf;
use std::sync::Arc;

use app::model::RunId;
use leptos::prelude::LeptosOptions;
use server::db::{SqlStore, Store, database_url};

/// A running server and its database.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: server::AppState,
    /// The SQLite file behind the app (for the command line).
    pub db: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestApp {
    /// Seeds the built-in corpus into a fresh SQLite file and serves the app.
    pub async fn start() -> TestApp {
        let mut config = server::config::Config::default();
        // Tests read numbers from the first answer: let pages wait for their computation
        // (the `cold` tests set no wait and follow the progress line instead).
        config.server.page_wait_ms = 60_000;
        Self::start_with(config).await
    }

    /// [`TestApp::start`] with a configuration, served as `mirage serve` serves (peer
    /// addresses reach the handlers).
    pub async fn start_with(mut config: server::config::Config) -> TestApp {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("mirage.db");
        // The search index on disk beside the database, as `mirage serve` keeps it.
        config.server.search_dir.get_or_insert_with(|| dir.path().join("mirage.db.search"));
        let url = database_url(db.to_str().expect("utf-8 path")).expect("url");
        let store = Arc::new(SqlStore::connect(&url).await.expect("connect"));
        server::db::seed_if_empty(store.as_ref()).await.expect("seed");
        // Bind first, then serve: the socket accepts before any request is sent.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let options = LeptosOptions::builder()
            .output_name("mirage")
            .site_root("target/site")
            .site_pkg_dir("pkg")
            .site_addr(addr)
            .build();
        let limits = server::http::listen::Limits::of(&config.server);
        let state = server::app_state(store as Arc<dyn Store>, options, config).await.expect("state");
        let app = server::router(state.clone());
        tokio::spawn(async move {
            server::http::listen::serve(listener, app, limits, std::future::pending()).await.expect("serve")
        });
        // A request that hangs fails the test instead of holding CI until its limit. Writes
        // carry this server's Origin, as the browser's do.
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::ORIGIN, format!("http://{addr}").parse().expect("origin"));
        let client = server::llm::client_builder()
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(90))
            .build()
            .expect("client");
        TestApp { base: format!("http://{addr}"), client, state, db, _dir: dir }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    /// Calls a server function (`/api/NAME`) with a form body, as the browser does.
    pub async fn call(&self, name: &str, form: &[(&str, &str)]) -> (u16, String) {
        self.call_as(name, form, None).await
    }

    /// [`TestApp::call`] with a session cookie.
    pub async fn call_as(&self, name: &str, form: &[(&str, &str)], cookie: Option<&str>) -> (u16, String) {
        let mut req = self.client.post(self.url(&format!("/api/{name}"))).form(form);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    }

    /// Adds accounts (name, role); each one's password is `NAME-password`.
    pub async fn add_users(&self, users: &[(&str, &str)]) {
        for (name, role) in users {
            let hash = server::http::auth::hash_password(&format!("{name}-password")).expect("hash");
            self.state.store.put_user(name, &hash, role).await.expect("user");
        }
    }

    /// Signs in through the form; returns the status and, on success, the session cookie
    /// (`name=value`), after checking that it is HttpOnly and SameSite=Strict and that the
    /// answer sends the browser to `next`.
    pub async fn sign_in(&self, name: &str, password: &str, next: &str) -> (u16, Option<String>) {
        let resp = self
            .client
            .post(self.url("/login"))
            .form(&[("name", name), ("password", password), ("next", next)])
            .send()
            .await
            .expect("login");
        let status = resp.status().as_u16();
        let Some(set) = resp.headers().get("set-cookie").and_then(|c| c.to_str().ok()) else { return (status, None) };
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
        assert_eq!(resp.headers()["location"], next);
        (status, set.split(';').next().map(ToString::to_string))
    }

    /// Launches a run through the launch form's server function; returns its id.
    pub async fn launch(&self, tasks: &str, agents: &str, levels: &str) -> String {
        self.launch_in(tasks, agents, levels, "raw").await
    }

    /// [`TestApp::launch`] under the given ticket conditions (comma-separated).
    pub async fn launch_in(&self, tasks: &str, agents: &str, levels: &str, conditions: &str) -> String {
        let (status, body) = self
            .call(
                "start_run",
                &[
                    ("form[tasks]", tasks),
                    ("form[agents]", agents),
                    ("form[levels]", levels),
                    ("form[conditions]", conditions),
                    ("form[seeds]", "0"),
                    ("form[concurrency]", "4"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).expect("run id")
    }

    /// Waits (at most a minute) until a run has no queued or running trials.
    pub async fn wait_for(&self, run: &str) {
        for _ in 0..600 {
            let p = self.state.store.progress(&RunId::from(run)).await.expect("progress");
            if p.queued + p.running == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("run {run} did not finish within a minute");
    }

    pub async fn text(&self, path: &str) -> (u16, String) {
        let resp = self.get(path).await;
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    }
}

/// A temp folder holding files for the CLI tests.
pub fn temp_path(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// Runs the real `mirage` binary on the database `db` and waits for it.
pub fn mirage(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mirage"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run mirage")
}

/// [`mirage`] on the database of a served [`TestApp`], run off the test's runtime thread:
/// the app is served on that thread, and a server holding a write transaction must be able
/// to finish it while the command waits for the database (else both wait until the busy
/// timeout).
pub async fn mirage_beside(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    let (db, args): (PathBuf, Vec<String>) = (db.to_path_buf(), args.iter().map(ToString::to_string).collect());
    tokio::task::spawn_blocking(move || mirage(&db, &args.iter().map(String::as_str).collect::<Vec<_>>()))
        .await
        .expect("the command ran")
}

/// [`mirage_beside`] for a command that must succeed (its stderr is shown when it fails).
pub async fn mirage_ok(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    let o = mirage_beside(db, args).await;
    assert!(o.status.success(), "mirage {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    o
}

/// A new, empty PostgreSQL database on the test server named by `MIRAGE_TEST_POSTGRES_URL`
/// (scripts/test.sh starts one); `None` when the variable is not set.
pub async fn fresh_postgres_url() -> Option<String> {
    let Ok(base) = std::env::var("MIRAGE_TEST_POSTGRES_URL") else {
        // On CI a missing server must fail the PostgreSQL tests, not let them pass unrun.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but MIRAGE_TEST_POSTGRES_URL is not: the PostgreSQL tests cannot run (scripts/test.sh starts a server)"
        );
        eprintln!("MIRAGE_TEST_POSTGRES_URL is not set; the PostgreSQL run happens in scripts/test.sh");
        return None;
    };
    let name = format!("mirage_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn =
        <sqlx::PgConnection as sqlx::Connection>::connect(&base).await.expect("connect to the PostgreSQL test server");
    sqlx::query(&format!("create database {name}")).execute(&mut conn).await.expect("create database");
    let (prefix, _) = base.rsplit_once('/').expect("MIRAGE_TEST_POSTGRES_URL ends with a database name");
    Some(format!("{prefix}/{name}"))
}

/// Writes `m.toml` in `dir`: one endpoint named `name` (model `model`) at `base_url`, playing
/// `role` (judge, attacker or scorer). Returns its path.
pub fn role_config(dir: &tempfile::TempDir, base_url: &str, name: &str, model: &str, role: &str) -> PathBuf {
    let path = dir.path().join("m.toml");
    let text =
        format!("[endpoints.{name}]\nbase_url = \"{base_url}\"\nmodel = \"{model}\"\n[roles]\n{role} = \"{name}\"\n");
    std::fs::write(&path, text).expect("write the config");
    path
}

/// The JSON lines of a trajectory file.
pub fn trajectories(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("trajectories")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// The quick baseline run through the server, finished.
pub async fn quick_run(app: &TestApp) -> String {
    let quick = app::model::NewRun::quick();
    let form = [
        ("form[tasks]", quick.tasks.as_str()),
        ("form[agents]", quick.agents.as_str()),
        ("form[levels]", quick.levels.as_str()),
        ("form[conditions]", quick.conditions.as_str()),
        ("form[seeds]", quick.seeds.as_str()),
        ("form[concurrency]", quick.concurrency.as_str()),
        ("form[replay]", ""),
        ("form[annotators]", ""),
    ];
    let (status, id) = app.call("start_run", &form).await;
    assert_eq!(status, 200, "{id}");
    let run = id.trim_matches('"').to_string();
    let started = std::time::Instant::now();
    while app.state.store.progress(&RunId::from(&run)).await.expect("progress").done < 120 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the quick run takes seconds");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    run
}
