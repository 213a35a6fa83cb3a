//! `mirage compare` and `/compare`: two configurations of one run, trial by trial.

use crate::support::{TestApp, mirage_beside, quick_run};

/// The CLI's JSON: pairs, each difference b − a of the sides' own means on the paired
/// trials (checked against the per-trial scores `mirage score` prints), the verdicts that
/// changed with their direction; the page shows the same and the side-by-side view aligns
/// the two trials turn by turn; a bad side is named.
#[tokio::test]
async fn two_configurations_compared_trial_by_trial() {
    let app = TestApp::start().await;
    let run = quick_run(&app).await;
    let (a, b) = (format!("{run}:surface"), format!("{run}:explorer"));
    let out = mirage_beside(&app.db, &["compare", &a, &b, "--json"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((c["a"].as_str(), c["b"].as_str(), c["pairs"].as_u64()), (Some(a.as_str()), Some(b.as_str()), Some(40)));
    // Each side's Acc_dec mean from the per-trial scores (one domain: the plain mean).
    let out = mirage_beside(&app.db, &["score", "--run", &run, "--json"]).await;
    let scores: serde_json::Value = serde_json::from_slice(&out.stdout).expect("score json");
    let mean = |agent: &str| {
        let xs: Vec<f64> = scores["trials"]
            .as_array()
            .expect("trials")
            .iter()
            .filter(|t| t["agent"] == agent)
            .map(|t| t["acc_dec"]["default"].as_f64().expect("acc_dec"))
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let acc = c["metrics"].as_array().expect("metrics").iter().find(|m| m["metric"] == "acc_dec").expect("acc_dec");
    let (ma, mb) = (mean("surface"), mean("explorer"));
    assert!((acc["a"].as_f64().expect("a") - ma).abs() < 1e-12 && (acc["b"].as_f64().expect("b") - mb).abs() < 1e-12);
    let diff = &acc["diff"];
    assert!((diff["mean"].as_f64().expect("diff") - (mb - ma)).abs() < 1e-12, "{acc}");
    assert!(diff["lo"].as_f64() <= diff["mean"].as_f64() && diff["mean"].as_f64() <= diff["hi"].as_f64());
    assert!(mb > ma && acc["p"].as_f64().expect("p") < 0.05, "the explorer investigates: {acc}");
    // A difference that never varies is not tested against the others: p is exactly 1.
    for m in c["metrics"].as_array().expect("metrics") {
        if m["p"].is_number() && m["diff"]["lo"] == m["diff"]["hi"] {
            assert_eq!(m["p"].as_f64(), Some(1.0), "{m}");
        }
    }
    // Robustness, by hand: the manipulated trials both of whose clean twins kept away from
    // the party's goal; each side's share of them that kept away too.
    let trials = scores["trials"].as_array().expect("trials");
    let key =
        |t: &serde_json::Value| (t["task_id"].clone(), t["condition"].clone(), t["seed"].clone(), t["level"].clone());
    let counted = |t: &serde_json::Value| {
        t["level"] != "L0"
            && t["status"] == "done"
            && t["twin"].is_object()
            && t["twin"]["goal"] == false
            && t["twin"]["failed"] == false
            && t["twin"]["ambiguous"] != true
    };
    let (mut kept_a, mut kept_b, mut n) = (0.0, 0.0, 0.0);
    for ta in trials.iter().filter(|t| t["agent"] == "surface" && counted(t)) {
        if let Some(tb) = trials.iter().find(|t| t["agent"] == "explorer" && key(t) == key(ta) && counted(t)) {
            n += 1.0;
            kept_a += if ta["attack_success"] == true { 0.0 } else { 1.0 };
            kept_b += if tb["attack_success"] == true { 0.0 } else { 1.0 };
        }
    }
    let rob =
        c["metrics"].as_array().expect("metrics").iter().find(|m| m["metric"] == "robustness").expect("robustness");
    assert!(n > 0.0, "the quick run has manipulated pairs");
    assert_eq!(rob["n"].as_f64(), Some(n), "{rob}");
    assert!((rob["a"].as_f64().expect("a") - kept_a / n).abs() < 1e-12, "{rob}");
    assert!((rob["diff"]["mean"].as_f64().expect("diff") - (kept_b - kept_a) / n).abs() < 1e-12, "{rob}");
    let changed = c["changed"].as_array().expect("changed");
    assert!(!changed.is_empty() && changed.iter().all(|x| x["a_verdict"] != x["b_verdict"]));
    assert!(changed.iter().any(|x| x["direction"] == "improvement"));
    let first = &changed[0];
    let (ta, tb) = (first["a_trial"].as_str().expect("a"), first["b_trial"].as_str().expect("b"));

    // The page: the same pairs, the metrics and a side-by-side link per changed verdict.
    let (status, body) = app.text(&format!("/compare?a={a}&b={b}")).await;
    assert_eq!(status, 200);
    assert!(body.contains("40 paired trials") && body.contains("compare-metrics"), "{body}");
    assert!(body.contains(&format!("/compare/trials?a={ta}&amp;b={tb}")), "side by side");
    let (status, body) = app.text(&format!("/compare/trials?a={ta}&b={tb}")).await;
    assert_eq!(status, 200);
    assert!(body.contains(&format!("a: {ta}")) && body.contains(&format!("b: {tb}")), "{body}");
    assert!(body.contains("diverges"), "the first turn whose actions differ is marked");

    // Whole runs pair by configuration; a run compared with itself changes nothing.
    let out = mirage_beside(&app.db, &["compare", &run, &run, "--json"]).await;
    let same: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((same["pairs"].as_u64(), same["changed"].as_array().map(Vec::len)), (Some(120), Some(0)));
    // Mistakes are named.
    let out = mirage_beside(&app.db, &["compare", &format!("{run}:nobody"), &b]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("has no configuration \"nobody\""), "{err}");
    let (_, body) = app.text(&format!("/compare?a={run}:nobody&b={b}")).await;
    assert!(body.contains("has no configuration"), "the page names the mistake");
    // An unknown run: the server function answers 404 naming it, and the page shows it (the
    // page's own status depends on whether the error resolves before the first flush).
    let (status, body) = app.call("get_compare", &[("a", "run-nothere"), ("b", &b)]).await;
    assert!(status == 404 && body.contains("run-nothere"), "{status} {body}");
    let (_, body) = app.text(&format!("/compare?a=run-nothere&b={b}")).await;
    assert!(body.contains("run-nothere"), "the page names the run");

    // One task: one scenario family, no spread to resample — no test, not p = 0.
    let one = mirage_beside(
        &app.db,
        &[
            "run",
            "--agent",
            "surface,explorer",
            "--tasks",
            first["task_id"].as_str().expect("task"),
            "--seeds",
            "0,1,2",
        ],
    )
    .await;
    assert!(one.status.success(), "{}", String::from_utf8_lossy(&one.stderr));
    let text = format!("{}{}", String::from_utf8_lossy(&one.stdout), String::from_utf8_lossy(&one.stderr));
    let small =
        text.split_whitespace().find(|w| w.starts_with("run-")).expect("run id").trim_end_matches(':').to_string();
    let out =
        mirage_beside(&app.db, &["compare", &format!("{small}:surface"), &format!("{small}:explorer"), "--json"]).await;
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let acc = c["metrics"].as_array().expect("metrics").iter().find(|m| m["metric"] == "acc_dec").expect("acc_dec");
    assert!(acc["p"].is_null() && acc["clusters"] == 1, "{acc}");
}
