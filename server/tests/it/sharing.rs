//! Serving Mirage to a team: hosts it answers to, writes that must say where they come
//! from, bounded bodies and notes, budgets on sign-in and episode pages.

use crate::support::TestApp;
use app::model::RunId;

/// A client that sends no Origin of its own (a script, or a page of another site).
fn bare_client() -> reqwest::Client {
    server::llm::client_builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

fn port(app: &TestApp) -> String {
    app.base.rsplit(':').next().expect("port").to_string()
}

/// A web page that rebinds its own name to 127.0.0.1 sends its name in Host and Origin:
/// refused before routing, and nothing happens.
#[tokio::test]
async fn a_rebound_name_reaches_nothing() {
    let app = TestApp::start().await;
    let run = app.launch("CROSS_FORUM_SPAM", "explorer", "L0").await;
    app.wait_for(&run).await;
    let evil = format!("evil.example:{}", port(&app));
    let resp = bare_client()
        .post(app.url("/api/cancel_run"))
        .header("host", &evil)
        .header("origin", format!("http://{evil}"))
        .form(&[("id", run.as_str())])
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 421);
    let body = resp.text().await.expect("body");
    assert!(body.contains("evil.example") && body.contains("[server] hosts"), "{body}");
    // A read by that name is refused as well; the loopback names are served.
    let resp = bare_client().get(app.url("/runs")).header("host", &evil).send().await.expect("request");
    assert_eq!(resp.status(), 421);
    for host in ["localhost", "127.0.0.1", "LOCALHOST"] {
        let resp = bare_client()
            .get(app.url("/healthz"))
            .header("host", format!("{host}:{}", port(&app)))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), 200, "{host}");
    }
}

/// A write names its origin (browsers), or says it is a script; one with neither is
/// refused, and so is one from a host this server does not answer to.
#[tokio::test]
async fn writes_say_where_they_come_from() {
    let app = TestApp::start().await;
    let form = [
        ("form[tasks]", "CROSS_FORUM_SPAM"),
        ("form[agents]", "explorer"),
        ("form[levels]", "L0"),
        ("form[conditions]", "raw"),
        ("form[seeds]", "0"),
        ("form[concurrency]", "2"),
    ];
    let client = bare_client();
    let resp = client.post(app.url("/api/start_run")).form(&form).send().await.expect("request");
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.expect("body").contains("Origin"));
    let resp = client
        .post(app.url("/api/start_run"))
        .header("referer", "http://127.0.0.1.evil.example/page")
        .form(&form)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 403);
    assert!(app.state.store.runs().await.expect("runs").is_empty(), "nothing launched");
    let resp = client
        .post(app.url("/api/start_run"))
        .header("x-mirage-client", "script")
        .form(&form)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200, "a script says what it is");
    // The agents' episode API takes writes with no origin.
    let resp = client
        .post(app.url("/api/episodes"))
        .json(&serde_json::json!({"task_id": "forum-example-01", "level": "L0", "condition": "raw", "seed": 0}))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 201);
}

/// Open mode (no accounts) serves the operator only to loopback: a name added to
/// `[server] hosts` reaches the sites, not the dashboard.
#[tokio::test]
async fn open_mode_serves_the_operator_only_to_this_machine() {
    let mut config = server::config::Config::default();
    config.server.hosts = vec!["mirage.team.example".into()];
    let app = TestApp::start_with(config).await;
    let host = format!("mirage.team.example:{}", port(&app));
    let get = |path: &'static str| {
        let (url, host) = (app.url(path), host.clone());
        async move { bare_client().get(url).header("host", host).send().await.expect("request") }
    };
    let resp = get("/runs").await;
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.expect("body").contains("no accounts"));
    assert_eq!(get("/wiki").await.status(), 200, "the sites stay open");
    assert_eq!(app.get("/runs").await.status(), 200, "loopback is the operator");
}

/// Bodies past the limit get 413 before they are read; notes past their cap get 422
/// naming the note; nothing is stored.
#[tokio::test]
async fn bodies_and_notes_are_bounded() {
    let mut config = server::config::Config::default();
    config.server.page_wait_ms = 60_000;
    config.server.max_body_bytes = 64 * 1024;
    let app = TestApp::start_with(config).await;
    let big = "x".repeat(200 * 1024);
    let resp = app
        .client
        .post(app.url("/api/save_label"))
        .form(&[("label[trial]", "t"), ("label[note]", big.as_str())])
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 413);
    let resp = app
        .client
        .post(app.url("/api/episodes"))
        .header("content-type", "application/json")
        .body(format!("{{\"task_id\": \"{big}\"}}"))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 413, "raw routes share the limit");
    // A streamed body (no declared length) cut off at the limit is 413 too, not a 500.
    let status = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let url = app.url("/api/save_label");
        let host = url.trim_start_matches("http://").split('/').next().expect("host").to_string();
        let mut socket = tokio::net::TcpStream::connect(&host).await.expect("connect");
        let head = format!(
            "POST /api/save_label HTTP/1.1\r\nHost: {host}\r\nx-mirage-client: test\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).await.expect("head");
        let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "a".repeat(16 * 1024));
        for _ in 0..16 {
            // The server may answer and close before the whole body is sent.
            if socket.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let mut answer = vec![0; 64];
        let n = socket.read(&mut answer).await.expect("answer");
        String::from_utf8_lossy(&answer[..n]).to_string()
    };
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");

    let run = app.launch("CROSS_FORUM_SPAM", "explorer", "L0").await;
    app.wait_for(&run).await;
    let trial = app.state.store.trial_page(&RunId::from(&run), &Default::default(), 0, 1).await.expect("trials").0[0]
        .trial_id
        .clone();
    let note = "n".repeat(app::model::MAX_NOTE_CHARS + 1);
    let (status, body) = app
        .call(
            "save_grade",
            &[
                ("grade[trial]", &trial),
                ("grade[acc_rsn]", "0.5"),
                ("grade[decision]", "right"),
                ("grade[note]", &note),
            ],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("note") && body.contains("at most 4000"), "{body}");
    assert!(app.state.store.grades(&RunId::from(&run)).await.expect("grades").is_empty(), "nothing stored");
}

/// Sign-in attempts are budgeted per client and per name; an unknown name is answered like
/// a wrong password.
#[tokio::test]
async fn sign_in_is_throttled() {
    let mut config = server::config::Config::default();
    config.server.logins_per_minute = 3;
    let app = TestApp::start_with(config).await;
    app.add_users(&[("otto", "operator")]).await;
    for attempt in 0..3 {
        let (status, _) = app.sign_in(if attempt == 0 { "nobody" } else { "otto" }, "wrong", "/").await;
        assert_eq!(status, 401, "attempt {attempt}");
    }
    let resp = app
        .client
        .post(app.url("/login"))
        .form(&[("name", "otto"), ("password", "otto-password"), ("next", "/")])
        .send()
        .await
        .expect("login");
    assert_eq!(resp.status(), 429, "even the right password waits once the budget is spent");
    assert_eq!(resp.headers()["retry-after"], "60");
    assert!(resp.text().await.expect("body").contains("Too many sign-in attempts"));
}

/// An unknown name costs the same password check as a wrong password for a real one, so
/// the time of an answer does not tell which accounts exist. (Compared, not timed: each
/// median of three must be within a factor of four of the other; skipping the check makes
/// an unknown name hundreds of times faster.)
#[tokio::test]
async fn an_unknown_name_costs_what_a_wrong_password_does() {
    let app = TestApp::start().await;
    app.add_users(&[("otto", "operator")]).await;
    app.sign_in("warm-up", "wrong", "/").await;
    let median = |name: &'static str| {
        let app = &app;
        async move {
            let mut times = Vec::new();
            for _ in 0..3 {
                let started = std::time::Instant::now();
                let (status, _) = app.sign_in(name, "wrong", "/").await;
                assert_eq!(status, 401);
                times.push(started.elapsed());
            }
            times.sort();
            times[1]
        }
    };
    let known = median("otto").await;
    let unknown = median("nobody-here").await;
    assert!(unknown * 4 > known && known * 4 > unknown, "known {known:?}, unknown {unknown:?}");
}

/// Pages inside episodes are logged, so a client's pages are budgeted.
#[tokio::test]
async fn episode_pages_are_budgeted() {
    let mut config = server::config::Config::default();
    config.server.episode_pages_per_minute = 3;
    let app = TestApp::start_with(config).await;
    let resp = app
        .client
        .post(app.url("/api/episodes"))
        .json(&serde_json::json!({"task_id": "forum-example-01", "level": "L0", "condition": "raw", "seed": 0}))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 201);
    let started: serde_json::Value = resp.json().await.expect("json");
    let start = started["start_url"].as_str().expect("start url").to_string();
    for _ in 0..3 {
        assert_eq!(app.get(&start).await.status(), 200);
    }
    let resp = app.get(&start).await;
    assert_eq!(resp.status(), 429);
    assert!(resp.text().await.expect("body").contains("episode_pages_per_minute"));
    let id = started["episode_id"].as_str().expect("id");
    let log: serde_json::Value = app.get(&format!("/api/episodes/{id}")).await.json().await.expect("json");
    assert_eq!(log["events"].as_array().expect("events").len(), 3, "the refused page was not logged");
}
