//! The audit sample: undisputed labels drawn at random wait for people beside the disputed
//! ones, blind like them, and their settled labels enter grader validity.

use server::judge::labels::{LabelKind, QUEUE_ORDER, audited};

use crate::support::TestApp;
use app::model::RunId;

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[tokio::test]
async fn undisputed_labels_drawn_for_the_audit_wait_for_people_and_count_in_validity() {
    let app = TestApp::start().await;
    app.add_users(&[("ann", "annotator"), ("bob", "annotator"), ("otto", "operator")]).await;
    let mut cookie = std::collections::HashMap::new();
    for name in ["ann", "bob", "otto"] {
        cookie.insert(name, app.sign_in(name, &format!("{name}-password"), "/").await.1.expect("signed in"));
    }
    let call = |name: &'static str, who: &'static str, args: Vec<(&'static str, String)>| {
        let (app, c) = (&app, cookie[who].clone());
        async move { app.call_as(name, &as_refs(&args), Some(&c)).await }
    };
    let json = |(status, body): (u16, String)| {
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).expect("json")
    };
    let launch = [
        ("form[tasks]", "forum"),
        ("form[agents]", "surface,explorer"),
        ("form[levels]", "L0,L1"),
        ("form[conditions]", "raw"),
        ("form[seeds]", "0"),
        ("form[concurrency]", "4"),
    ]
    .map(|(k, v)| (k, v.to_string()))
    .to_vec();
    let run: String = serde_json::from_value(json(call("start_run", "otto", launch).await)).expect("run id");
    app.wait_for(&run).await;
    let q = json(call("get_queue", "ann", vec![("run", run.clone())]).await);
    let items = q["items"].as_array().expect("items").clone();
    assert!(q["total"].as_u64() < Some(200), "one page holds the queue");

    // The audit items are exactly the drawn labels the graders did not dispute.
    let key = |i: &serde_json::Value| {
        (i["trial_id"].as_str().expect("trial").to_string(), i["kind"].as_str().expect("kind").to_string())
    };
    let disputed: std::collections::BTreeSet<_> = items.iter().filter(|i| i["audit"] == false).map(key).collect();
    let listed: std::collections::BTreeSet<_> = items.iter().filter(|i| i["audit"] == true).map(key).collect();
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    let expected: std::collections::BTreeSet<_> = trials
        .iter()
        .flat_map(|t| QUEUE_ORDER.iter().map(move |k| (t.trial_id.to_string(), k.as_str().to_string())))
        .filter(|(t, k)| audited(t, LabelKind::parse(k).expect("kind")) && !disputed.contains(&(t.clone(), k.clone())))
        .collect();
    assert!(listed.len() >= 3, "{} trials × 4 labels draw about one in twenty: {listed:?}", trials.len());
    assert_eq!(listed, expected);
    // Blind, like a disputed label, and filtered on their own.
    assert!(items.iter().filter(|i| i["audit"] == true).all(|i| i["blind"] == true && i["value"].is_null()));
    let only = json(call("get_queue", "ann", vec![("run", run.clone()), ("filter[state]", "audit".into())]).await);
    assert_eq!(only["total"].as_u64(), Some(listed.len() as u64));
    let (trial, kind) = listed.iter().next().cloned().expect("an audit item");
    let (_, body) = call("get_trajectory", "bob", vec![("trial", trial.clone()), ("page", "0".into())]).await;
    let view: serde_json::Value = serde_json::from_str(&body).expect("view");
    let label =
        view["labels"].as_array().expect("labels").iter().find(|l| l["kind"] == kind.as_str()).expect("label").clone();
    assert_eq!((label["hidden"].as_bool(), label["audit"].as_bool()), (Some(true), Some(true)), "{label}");
    assert!(view["outcome"].is_null(), "the outcome is read off the labels: hidden too");
    // A blind exposure item points to no turn (the first exposure would be its own turn).
    assert!(
        items.iter().filter(|i| i["kind"] == "exposure" && i["blind"] == true).all(|i| i["turn"].is_null()),
        "{items:?}"
    );

    // A label neither disputed nor drawn is the operator's alone.
    let (other, other_kind) = trials
        .iter()
        .flat_map(|t| QUEUE_ORDER.iter().map(move |k| (t.trial_id.to_string(), k.as_str().to_string())))
        .find(|p| !expected.contains(p) && !disputed.contains(p))
        .expect("an undrawn, undisputed label");
    let form = |trial: &str, kind: &str, value: &str| {
        vec![
            ("label[trial]", trial.to_string()),
            ("label[kind]", kind.to_string()),
            ("label[value]", value.to_string()),
            ("label[turn]", String::new()),
            ("label[note]", String::new()),
        ]
    };
    let (status, body) = call("save_label", "ann", form(&other, &other_kind, "yes")).await;
    assert!(status == 409 && body.contains("neither disputed nor in the audit sample"), "{status} {body}");

    // Two agreeing annotators settle the audit item; it leaves the queue and its label is
    // counted in the sample behind the validity check of its kind.
    let automatic =
        json(call("open_item", "otto", vec![("trial", trial.clone()), ("kind", kind.clone())]).await)["item"]["value"]
            .as_bool()
            .expect("operators see the automatic value");
    let value = if automatic { "yes" } else { "no" };
    let held = || vec![("trial", trial.clone()), ("kind", kind.clone())];
    json(call("start_labelling", "ann", held()).await);
    json(call("save_label", "ann", form(&trial, &kind, value)).await);
    json(call("start_labelling", "bob", held()).await);
    json(call("save_label", "bob", form(&trial, &kind, value)).await);
    let q = json(call("get_queue", "ann", vec![("run", run.clone())]).await);
    assert!(q["items"].as_array().expect("items").iter().all(|i| key(i) != (trial.clone(), kind.clone())), "settled");
    let board = app
        .client
        .get(app.url(&format!("/api/export/leaderboard.json?run={run}")))
        .header("cookie", &cookie["otto"])
        .send()
        .await
        .expect("board")
        .json::<serde_json::Value>()
        .await
        .expect("json");
    let checks: Vec<&serde_json::Value> =
        board["checks"].as_array().expect("checks").iter().filter(|c| c["metric"] == kind.as_str()).collect();
    let recall = checks.iter().find(|c| c["statistic"] == "recall").expect("a recall check for the kind");
    assert_eq!(recall["n"], 1, "the one settled audit label: {recall}");
    assert!(recall["against"].as_str().is_some_and(|a| a.contains("audit sample")), "{recall}");
}
