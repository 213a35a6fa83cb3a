//! Episodes over HTTP: isolated logs, verdicts as site actions, bad input.

use serde_json::{Value, json};

use crate::support::TestApp;

async fn start(app: &TestApp, body: Value) -> (u16, Value) {
    let resp = app.client.post(app.url("/api/episodes")).json(&body).send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("json"))
}

fn first_task(app: &TestApp, domain: server::corpus::Domain) -> std::sync::Arc<server::corpus::Task> {
    app.state.world.tasks().find(|t| t.domain == domain).expect("task").clone()
}

#[tokio::test]
async fn an_episode_logs_each_page_and_ends_with_a_recorded_verdict() {
    let app = TestApp::start().await;
    let task = first_task(&app, server::corpus::Domain::Wiki);
    let (status, ep) = start(&app, json!({"task_id": task.id, "condition": "hint"})).await;
    assert_eq!(status, 201, "{ep}");
    assert_eq!(ep["ticket"], task.ticket.hint);
    let id = ep["episode_id"].as_str().expect("id").to_string();
    let start_url = ep["start_url"].as_str().expect("start").to_string();
    assert_eq!(start_url, format!("/ep/{id}{}", task.start_url));

    let (status, obs) = app.text(&format!("{start_url}?format=text")).await;
    assert_eq!(status, 200);
    assert!(obs.contains("Actions:") && obs.contains("APPROVE, FLAG, REVERT, ESCALATE"), "{obs}");
    let html = app.text(&start_url).await.1;
    assert!(html.contains(&format!("action=\"/ep/{id}/verdict\"")));
    assert!(html.contains(&format!("href=\"/ep/{id}/wiki/")), "links stay inside the episode");
    let second = &task.graph[1];
    assert_eq!(app.get(&format!("/ep/{id}{second}")).await.status(), 200);
    assert_eq!(app.get(&format!("/ep/{id}/wiki/search?pattern=bridge")).await.status(), 200);

    let resp = app
        .client
        .post(app.url(&format!("/ep/{id}/verdict")))
        .form(&[("action", "flag"), ("rationale", "The diff removes a sourced fine.")])
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.expect("body").contains("Verdict FLAG recorded"));

    let log: Value = app.get(&format!("/api/episodes/{id}")).await.json().await.expect("json");
    assert_eq!(log["status"], "done");
    assert_eq!(log["verdict"], "FLAG");
    let kinds: Vec<&str> =
        log["events"].as_array().expect("events").iter().map(|e| e["kind"].as_str().expect("kind")).collect();
    assert_eq!(kinds, ["visit", "visit", "visit", "search", "verdict"]);
    assert_eq!(log["events"][0]["url"], task.start_url.trim_end_matches('/'));
    assert_eq!(log["events"][3]["detail"], "200 bridge");
}

#[tokio::test]
async fn a_verdict_is_final_and_a_second_one_changes_nothing() {
    let app = TestApp::start().await;
    let task = first_task(&app, server::corpus::Domain::Shop);
    let (_, ep) = start(&app, json!({"task_id": task.id})).await;
    let id = ep["episode_id"].as_str().expect("id");
    let url = app.url(&format!("/ep/{id}/verdict"));
    let first =
        app.client.post(&url).json(&json!({"action": "DENY", "rationale": "worn items"})).send().await.expect("post");
    assert_eq!(first.status(), 200);
    let second = app
        .client
        .post(&url)
        .json(&json!({"action": "APPROVE", "rationale": "changed my mind"}))
        .send()
        .await
        .expect("post");
    assert_eq!(second.status(), 409);
    let log: Value = app.get(&format!("/api/episodes/{id}")).await.json().await.expect("json");
    assert_eq!(log["verdict"], "DENY");
    assert_eq!(log["events"].as_array().expect("events").len(), 1);
    let obs = app.text(&format!("/ep/{id}{}?format=text", task.start_url)).await.1;
    assert!(obs.contains("verdict already recorded"));
}

#[tokio::test]
async fn bad_episode_input_is_explained_and_nothing_is_stored() {
    let app = TestApp::start().await;
    let task = first_task(&app, server::corpus::Domain::Forum);
    let (status, body) = start(&app, json!({"task_id": "no-such-task"})).await;
    assert_eq!((status, body["error"].as_str().expect("error")), (404, "task no-such-task not found"));
    let (status, body) = start(&app, json!({"task_id": task.id, "level": "L4"})).await;
    assert_eq!(status, 422);
    assert!(body["error"].as_str().expect("error").starts_with("level: L4"));
    let (status, body) = start(&app, json!({"task_id": task.id, "level": "L1", "strategy": "shouting"})).await;
    assert_eq!(status, 422);
    assert!(body["error"].as_str().expect("error").contains("\"shouting\""), "{body}");
    let (status, body) = start(&app, json!({"task_id": task.id, "condition": "psychic"})).await;
    assert_eq!(status, 422);
    assert!(body["error"].as_str().expect("error").starts_with("condition:"));

    let (_, ep) = start(&app, json!({"task_id": task.id})).await;
    let id = ep["episode_id"].as_str().expect("id");
    let url = app.url(&format!("/ep/{id}/verdict"));
    let resp = app.client.post(&url).json(&json!({"action": "REFUND", "rationale": "x"})).send().await.expect("post");
    assert_eq!(resp.status(), 422);
    assert!(resp.text().await.expect("body").contains("not a forum action"));
    let resp = app.client.post(&url).json(&json!({"action": "REMOVE", "rationale": "  "})).send().await.expect("post");
    assert_eq!(resp.status(), 422);
    let log: Value = app.get(&format!("/api/episodes/{id}")).await.json().await.expect("json");
    assert_eq!(log["status"], "open");
    assert_eq!(log["events"].as_array().expect("events").len(), 0);
}

#[tokio::test]
async fn episodes_are_isolated_and_stay_on_their_own_site() {
    let app = TestApp::start().await;
    let task = first_task(&app, server::corpus::Domain::Forum);
    let (_, a) = start(&app, json!({"task_id": task.id})).await;
    let (_, b) = start(&app, json!({"task_id": task.id})).await;
    let (a, b) = (a["episode_id"].as_str().expect("id"), b["episode_id"].as_str().expect("id"));
    assert_ne!(a, b);
    assert_eq!(app.get(&format!("/ep/{a}{}", task.start_url)).await.status(), 200);
    assert_eq!(app.get(&format!("/ep/{a}/shop/admin/dashboard")).await.status(), 404);
    assert_eq!(app.get("/ep/nope/forum").await.status(), 404);
    let log_a: Value = app.get(&format!("/api/episodes/{a}")).await.json().await.expect("json");
    let log_b: Value = app.get(&format!("/api/episodes/{b}")).await.json().await.expect("json");
    assert_eq!(log_a["events"].as_array().expect("events").len(), 2);
    assert_eq!(log_b["events"].as_array().expect("events").len(), 0);
}

#[tokio::test]
async fn a_manipulated_episode_shows_the_partys_rewritten_text_escaped() {
    let app = TestApp::start().await;
    let task = first_task(&app, server::corpus::Domain::Shop);
    let (status, ep) =
        start(&app, json!({"task_id": task.id, "level": "L3", "strategy": "tool_output", "seed": 4})).await;
    assert_eq!(status, 201, "{ep}");
    assert_eq!((ep["strategy"].as_str(), ep["seed"].as_i64()), (Some("tool_output"), Some(4)));
    let start_url = ep["start_url"].as_str().expect("start url");
    let expected =
        server::manip::overlay_for(&task, "L3", Some("tool_output"), 4).expect("overlay").edits[0].text.clone();
    let (status, text) = app.text(&format!("{start_url}?format=text")).await;
    assert_eq!(status, 200);
    assert!(text.contains(&expected), "the text observation carries the manipulated text");
    let (_, html) = app.text(start_url).await;
    assert!(html.contains("&lt;tool_result"), "markup in the manipulation is escaped");
    assert!(!html.contains("<tool_result"));
    let (_, clean) = app.text(&task.start_url).await;
    assert!(!clean.contains("tool_result"), "outside the episode the page is clean");
}

/// The open agent API limits how many episodes one client creates per minute, with a 429
/// that names the setting; the dashboard's session cookie is `Secure` when configured.
#[tokio::test]
async fn episodes_are_budgeted_per_client_and_cookies_can_be_secure() {
    let mut config = server::config::Config::default();
    config.server.episodes_per_minute = 2;
    config.server.secure_cookies = true;
    let app = TestApp::start_with(config).await;
    let task = first_task(&app, server::corpus::Domain::Shop);
    let body = json!({"task_id": task.id, "level": "L0", "condition": "raw", "seed": 0});
    for _ in 0..2 {
        assert_eq!(start(&app, body.clone()).await.0, 201);
    }
    let (status, refused) = start(&app, body.clone()).await;
    assert_eq!(status, 429);
    assert!(refused["error"].as_str().expect("error").contains("episodes_per_minute"), "{refused}");
    assert!(refused.get("episode_id").is_none(), "no episode for the refused request");

    app.add_users(&[("otto", "operator")]).await;
    let resp = app
        .client
        .post(app.url("/login"))
        .form(&[("name", "otto"), ("password", "otto-password"), ("next", "/")])
        .send()
        .await
        .expect("login");
    let cookie = resp.headers()["set-cookie"].to_str().expect("cookie");
    assert!(cookie.contains("Secure") && cookie.contains("HttpOnly"), "{cookie}");
}
