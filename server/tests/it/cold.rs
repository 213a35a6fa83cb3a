//! Pages never wait on a cold computation: with the wait set to nothing, every aggregate
//! page answers at once with a progress line (and what it has), and fills in when asked
//! again.

use server::db::{LabelEvent, LabelKind};

use crate::support::TestApp;
use app::model::RunId;

/// The server functions behind the pages that show a run's numbers, with their forms.
fn pages(run: &str) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    vec![
        ("get_leaderboard", vec![("query[run]", run.to_string()), ("query[by]", "level".to_string())]),
        ("get_robustness", vec![("run", run.to_string())]),
        ("get_heatmap", vec![("query[run]", run.to_string())]),
        ("get_report", vec![("run", run.to_string())]),
        ("get_queue", vec![("run", run.to_string())]),
    ]
}

async fn ask(app: &TestApp, name: &str, form: &[(&str, String)]) -> serde_json::Value {
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = app.call(name, &form).await;
    assert_eq!(status, 200, "{name}: {body}");
    serde_json::from_str(&body).expect("json")
}

/// Asks until the answer comes without a pending line (at most 30 s).
async fn settled(app: &TestApp, name: &str, form: &[(&str, String)]) -> serde_json::Value {
    for _ in 0..300 {
        let v = ask(app, name, form).await;
        if v["pending"].is_null() {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{name} stayed pending");
}

#[tokio::test]
async fn cold_pages_answer_at_once_with_progress_and_fill_in() {
    let mut config = server::config::Config::default();
    config.server.page_wait_ms = 0;
    let app = TestApp::start_with(config).await;
    let run = app.launch("shop-example-01,forum-example-02,wiki-example-03", "explorer,surface", "L0,L1").await;
    // A finished run is scored in the background. Its scoring is held until every page has
    // been asked once, so nothing is computed yet when they are (taken at once: the run has
    // its trials to play first).
    let hold = app.state.insights.engine.scoring_gate(&RunId::from(&run)).lock_owned().await;
    app.wait_for(&run).await;

    // Nothing computed yet: each page says what it waits for and shows no numbers.
    for (name, form) in pages(&run) {
        let v = ask(&app, name, &form).await;
        let pending = &v["pending"];
        assert!(pending.is_object(), "{name} answered a cold cache without a pending line: {v}");
        assert_eq!(pending["stale"], false, "{name}: {pending}");
        assert!(!pending["what"].as_str().unwrap_or_default().is_empty(), "{name}: {pending}");
        if name == "get_leaderboard" {
            assert_eq!(v["rows"], serde_json::json!([]), "no numbers before they exist");
            assert_eq!(v["run"], run);
        }
    }
    drop(hold);
    // Asked again, every page fills in.
    let board = settled(&app, "get_leaderboard", &pages(&run)[0].1).await;
    let agents: Vec<&str> =
        board["rows"].as_array().expect("rows").iter().filter_map(|r| r["agent"].as_str()).collect();
    assert_eq!(agents.len(), 2, "{board}");
    assert!(!board["breakdown"].as_array().expect("breakdown").is_empty());
    for (name, form) in pages(&run).iter().skip(1) {
        settled(&app, name, form).await;
    }

    // A person's label makes the numbers stale: the page shows the old ones, marked so,
    // while the new ones are computed, then the new ones.
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    let trial = trials.iter().find(|t| t.level == "L1").expect("an L1 trial").trial_id.clone();
    let label = LabelEvent {
        event_id: 0,
        trial_id: trial,
        kind: LabelKind::Exposure,
        value: true.into(),
        turn: None,
        source: "adjudication".into(),
        confidence: 1.0,
        reason: "checked by hand".into(),
        author: Some("ann".into()),
        judge_version: None,
        created_at: 0,
    };
    app.state.store.add_label(&label).await.expect("label");
    let stale = ask(&app, "get_leaderboard", &pages(&run)[0].1).await;
    assert_eq!(stale["pending"]["stale"], true, "{}", stale["pending"]);
    assert_eq!(stale["rows"], board["rows"], "the numbers from before are shown meanwhile");
    let fresh = settled(&app, "get_leaderboard", &pages(&run)[0].1).await;
    assert_eq!(fresh["human_labels"], 1);

    // The page itself, rendered on the server, carries the line while it waits.
    app.state.store.add_label(&LabelEvent { value: false.into(), ..label.clone() }).await.expect("label");
    let (status, html) = app.text(&format!("/leaderboard?run={run}")).await;
    assert_eq!(status, 200);
    assert!(html.contains("data-testid=\"pending\""), "no progress line on the page");

    // A download never carries a half answer: it waits for the numbers.
    app.state.store.add_label(&LabelEvent { value: true.into(), ..label }).await.expect("label");
    let resp = app.get(&format!("/api/export/leaderboard.json?run={run}")).await;
    assert_eq!(resp.status(), 200);
    let export: serde_json::Value = resp.json().await.expect("json");
    assert!(export["pending"].is_null(), "{}", export["pending"]);
    assert_eq!(export["rows"].as_array().map(Vec::len), Some(2));
}
