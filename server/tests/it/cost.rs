//! What runs cost: the agents' reported tokens times each endpoint's configured price, per
//! trial, configuration and run, on the command line, the run page, the leaderboard and its
//! download; a baseline costs 0 and an endpoint without a price is unknown, not free.

use server::llm::scripted::{Reply, ScriptedServer};

/// Three calls a trial (the scripted endpoint reports 100 prompt and 20 completion tokens
/// each): open a page, go back, decide.
fn investigator(body: &serde_json::Value) -> Reply {
    let users = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count());
    let text = match users {
        0..=2 => r#"{"thought": "open", "action": {"type": "click", "link": 1}}"#,
        3 => r#"{"thought": "back", "action": {"type": "back"}}"#,
        _ => r#"{"thought": "decided", "action": {"type": "verdict", "verdict": "ESCALATE", "rationale": "a human"}}"#,
    };
    Reply::Text(text.into())
}

#[tokio::test]
async fn cost_is_reported_tokens_times_the_configured_price() {
    let model = ScriptedServer::responding(std::time::Duration::ZERO, investigator).await;
    let app = crate::support::TestApp::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mirage.toml");
    std::fs::write(
        &config,
        format!(
            "[endpoints.priced]\nbase_url = \"{url}\"\nmodel = \"tiny\"\nprice = {{ prompt = 1.5, completion = 10 }}\n\n\
             [endpoints.free]\nbase_url = \"{url}\"\nmodel = \"tiny\"\n",
            url = model.base_url
        ),
    )
    .expect("config");
    let tasks: Vec<String> = server::corpus::generate::corpus()
        .into_iter()
        .filter(|t| t.domain == server::corpus::Domain::Shop)
        .take(2)
        .map(|t| t.id)
        .collect();
    let out = dir.path().join("t.jsonl");
    let args = [
        "run",
        "--agent",
        "priced,free,surface",
        "--tasks",
        &tasks.join(","),
        "--config",
        config.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ];
    let o = crate::support::mirage_beside(&app.db, &args).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = crate::support::trajectories(&out)[0]["trial_id"].as_str().expect("id").to_string();
    let run = app.state.store.trial(&run).await.expect("trial").run_id;

    // By hand, from the trajectories' own usage: tokens × $1.5 and $10 per million.
    let (mut prompt, mut completion) = (0_u64, 0_u64);
    for line in crate::support::trajectories(&out).iter().filter(|l| l["agent"] == "priced") {
        for step in line["steps"].as_array().expect("steps") {
            prompt += step["usage"]["prompt_tokens"].as_u64().expect("usage");
            completion += step["usage"]["completion_tokens"].as_u64().expect("usage");
        }
    }
    assert!(prompt > 0 && completion > 0);
    #[allow(clippy::cast_precision_loss)]
    let dollars = (prompt as f64 * 1.5 + completion as f64 * 10.0) / 1e6;

    let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
    let text = String::from_utf8_lossy(&show.stdout);
    for needle in [
        format!("cost priced: 2 trials, {prompt} prompt + {completion} completion tokens, ${dollars:.4}"),
        "cost free: 2 trials".to_string(),
        "cost unknown (no price configured)".to_string(),
        "cost surface: 2 trials, 0 prompt + 0 completion tokens, $0.0000 (baseline: no model calls)".to_string(),
    ] {
        assert!(text.contains(&needle), "{needle:?} in {text}");
    }

    // The run page's cost table.
    let (status, page) = app.text(&format!("/runs/{run}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("Priced as") && page.contains(&format!("${dollars:.4}")), "{page}");
    assert!(page.contains("no price configured") && page.contains("baseline: no model calls"), "{page}");

    // The leaderboard's mean cost per trial, and its download.
    let csv = app.get(&format!("/api/export/leaderboard.csv?run={run}")).await.text().await.expect("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().expect("headers").clone();
    let at = headers.iter().position(|h| h == "cost").unwrap_or_else(|| panic!("a cost column: {headers:?}"));
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("row")).collect();
    let cost_of = |agent: &str| -> String {
        rows.iter().find(|r| r.get(0) == Some(agent)).and_then(|r| r.get(at)).expect("row").to_string()
    };
    let per_trial: f64 = cost_of("priced").parse().unwrap_or_else(|_| panic!("{:?}", cost_of("priced")));
    assert!((per_trial - dollars / 2.0).abs() < 1e-9, "{per_trial} against {}", dollars / 2.0);
    assert_eq!(cost_of("surface").parse::<f64>().ok(), Some(0.0), "a baseline costs nothing");
    assert_eq!(cost_of("free"), "", "no price: unknown, not 0");

    // Utility against cost: the priced model and the baseline, not the unpriced one.
    let (status, page) = app.text(&format!("/robustness?run={run}")).await;
    assert_eq!(status, 200);
    let section = page.split("Utility against cost").nth(1).expect("the cost plot's section");
    assert!(section.contains("<svg") && section.contains("utility–cost frontier"), "{section}");
    let table = section.split("cost-points").nth(1).expect("its table");
    assert!(table.contains("data-agent=\"priced\"") && table.contains("data-agent=\"surface\""), "{table}");
    assert!(!table.contains("data-agent=\"free\""), "an unknown cost is not plotted: {table}");
}
