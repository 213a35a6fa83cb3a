//! Figures a link can freeze: every figure page read with `as_of=` (a label generation or a
//! time) shows people's labels as they stood then, however many are added later, says how
//! many came since, and the pages' URLs name their run.

use server::db::{LabelEvent, LabelKind};

use crate::support::TestApp;
use app::model::RunId;

/// The server functions behind the figure pages, with their forms, at `as_of`.
fn pages(run: &str, as_of: &str) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let r = || run.to_string();
    let a = || as_of.to_string();
    vec![
        ("get_leaderboard", vec![("query[run]", r()), ("query[as_of]", a())]),
        ("get_robustness", vec![("run", r()), ("as_of", a())]),
        ("get_heatmap", vec![("query[run]", r()), ("query[metric]", "exposure".into()), ("query[as_of]", a())]),
        ("get_report", vec![("run", r()), ("as_of", a())]),
        ("get_compare", vec![("a", format!("{run}:explorer")), ("b", format!("{run}:surface")), ("as_of", a())]),
    ]
}

async fn ask(app: &TestApp, name: &str, form: &[(&str, String)]) -> (u16, serde_json::Value) {
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = app.call(name, &form).await;
    (status, serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body)))
}

/// The figures of a page's answer, without what says when they were computed.
fn figures(mut v: serde_json::Value) -> serde_json::Value {
    for key in ["frozen", "as_of", "pending", "runs"] {
        v.as_object_mut().map(|o| o.remove(key));
    }
    v
}

/// A person's exposure label on `trial` (`value`), as an adjudication.
fn label(trial: &app::model::TrialId, value: bool, author: &str) -> LabelEvent {
    LabelEvent {
        event_id: 0,
        trial_id: trial.clone(),
        kind: LabelKind::Exposure,
        value: value.into(),
        turn: None,
        source: "adjudication".into(),
        confidence: 1.0,
        reason: "checked by hand".into(),
        author: Some(author.into()),
        judge_version: None,
        created_at: 0,
    }
}

#[tokio::test]
async fn an_as_of_link_keeps_its_figures_while_labels_are_added() {
    let app = TestApp::start().await;
    let run = app.launch("shop-example-01,forum-example-02,wiki-example-03", "explorer,surface", "L0,L1").await;
    app.wait_for(&run).await;
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    let manipulated: Vec<_> = trials.iter().filter(|t| t.level == "L1").map(|t| t.trial_id.clone()).collect();
    app.state.store.add_label(&label(&manipulated[0], true, "otto")).await.expect("label");

    // The current figures say the generation they read; that is the link's value.
    let (status, now) = ask(&app, "get_leaderboard", &pages(&run, "")[0].1).await;
    assert_eq!(status, 200, "{now}");
    let generation = now["frozen"]["generation"].as_i64().expect("generation");
    assert!(generation > 0 && now["frozen"]["pinned"] == false, "{}", now["frozen"]);
    let g = generation.to_string();
    let mut frozen = Vec::new();
    for (name, form) in pages(&run, &g) {
        let (status, v) = ask(&app, name, &form).await;
        assert_eq!(status, 200, "{name}: {v}");
        assert_eq!(v["frozen"]["pinned"], true, "{name}: {}", v["frozen"]);
        assert_eq!(v["frozen"]["newer"], 0, "{name}");
        frozen.push(figures(v));
    }

    // Labels are added, every one of them flipping the automatic value.
    for t in &manipulated {
        for (value, who) in [(false, "otto"), (true, "ann"), (false, "bob")] {
            app.state.store.add_label(&label(t, value, who)).await.expect("label");
        }
    }
    let (_, moved) = ask(&app, "get_leaderboard", &pages(&run, "")[0].1).await;
    assert_ne!(figures(moved.clone()), figures(now.clone()), "the current figures moved");
    for ((name, form), before) in pages(&run, &g).into_iter().zip(&frozen) {
        let (status, v) = ask(&app, name, &form).await;
        assert_eq!(status, 200, "{name}: {v}");
        let newer = v["frozen"]["newer"].as_u64().expect("newer");
        assert_eq!(newer as usize, 3 * manipulated.len(), "{name}: the labels since are counted");
        assert_eq!(&figures(v), before, "{name}: the figures of the link did not move");
    }

    // A time names the generation recorded by then: now, that is the newest.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let time = chrono::DateTime::from_timestamp_millis(server::db::now_ms())
        .expect("now")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let (status, v) = ask(&app, "get_leaderboard", &pages(&run, &time)[0].1).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["frozen"]["generation"], moved["frozen"]["generation"], "{}", v["frozen"]);
    assert_eq!(figures(v), figures(moved));

    // Bad values are named; a generation not yet recorded is refused.
    for bad in ["yesterday", "-3", "99999999"] {
        let (status, v) = ask(&app, "get_leaderboard", &pages(&run, bad)[0].1).await;
        assert_eq!(status, 422, "{bad}: {v}");
        assert!(v.to_string().contains("as_of"), "{bad}: {v}");
    }

    // Downloads take the same value: the CSV of the link is the CSV it showed.
    let pinned = app.text(&format!("/api/export/leaderboard.csv?run={run}&as_of={g}")).await.1;
    let current = app.text(&format!("/api/export/leaderboard.csv?run={run}")).await.1;
    assert_ne!(pinned, current, "the labels moved the current table");
    assert!(pinned.starts_with("agent") || pinned.contains(','), "{pinned}");

    // The pages themselves name their run, and the line says what the link pins.
    for path in ["/leaderboard", "/robustness", "/heatmaps", "/report", "/team"] {
        let resp = app.client.get(app.url(path)).send().await.expect("page");
        assert!(resp.status().is_redirection(), "{path}: {}", resp.status());
        let to = resp.headers()["location"].to_str().expect("location").to_string();
        assert!(to.contains(&format!("run={run}")), "{path} went to {to}");
        let (status, html) = app.text(&format!("{to}&as_of={g}")).await;
        assert_eq!(status, 200, "{to}");
        assert!(html.contains(&format!("as of label generation {g}")) && html.contains("newer labels since"), "{path}");
    }
}
