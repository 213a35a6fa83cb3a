//! What runs cost: the agents' reported tokens times each endpoint's configured price, per
//! trial, configuration and run, on the command line, the run page, the leaderboard and its
//! download; a baseline costs 0 and an endpoint without a price is unknown, not free.

use app::model::TrialId;
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

/// An endpoint that never says what a reply cost, and one that answers every task but the
/// second (a 500, not retried): a model without usage has an unknown cost, never 0, and a
/// trial that failed at its first call costs 0 and stays in every count.
#[tokio::test]
async fn unreported_usage_is_unknown_and_a_trial_failed_at_once_still_counts() {
    let unmetered = ScriptedServer::responding(std::time::Duration::ZERO, |b| match investigator(b) {
        Reply::Text(t) => Reply::Unmetered(t),
        other => other,
    })
    .await;
    let tasks: Vec<server::corpus::Task> = server::corpus::generate::corpus()
        .into_iter()
        .filter(|t| t.domain == server::corpus::Domain::Shop)
        .take(2)
        .collect();
    // The ticket's opening as it sits in a request's JSON.
    let refused: String = serde_json::to_string(&tasks[1].ticket.raw).expect("json").chars().skip(1).take(40).collect();
    let flaky = ScriptedServer::responding(std::time::Duration::ZERO, move |b: &serde_json::Value| {
        if b.to_string().contains(&refused) { Reply::Status(500, None) } else { investigator(b) }
    })
    .await;
    // Replies no agent can read: answered and paid for, so the trials' cost is unknown.
    let garbled = ScriptedServer::responding(std::time::Duration::ZERO, |_| Reply::Text("no JSON here".into())).await;
    let app = crate::support::TestApp::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mirage.toml");
    std::fs::write(
        &config,
        format!(
            "[endpoints.silent]\nbase_url = \"{}\"\nmodel = \"tiny\"\nprice = {{ prompt = 1, completion = 1 }}\n\n\
             [endpoints.flaky]\nbase_url = \"{}\"\nmodel = \"tiny\"\nmax_retries = 0\nprice = {{ prompt = 1, completion = 1 }}\n\n\
             [endpoints.garbled]\nbase_url = \"{}\"\nmodel = \"tiny\"\nprice = {{ prompt = 1, completion = 1 }}\n",
            unmetered.base_url, flaky.base_url, garbled.base_url
        ),
    )
    .expect("config");
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    let cfg = config.to_str().expect("utf-8");
    let args = ["run", "--agent", "silent,flaky,garbled", "--tasks", &ids.join(","), "--config", cfg];
    // One trial fails, so the command says so; the run is stored all the same.
    crate::support::mirage_beside(&app.db, &args).await;
    let run = app.state.store.runs().await.expect("runs")[0].run_id.to_string();

    let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
    let text = String::from_utf8_lossy(&show.stdout);
    let line = |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start} in {text}"));
    let silent = line("cost silent (agent): 2 trials, 0 prompt + 0 completion tokens, cost unknown");
    assert!(silent.contains("calls is unknown"), "{silent}");
    // Both flaky trials count (the refused one had nothing to pay for); the line's tokens
    // are checked against the answered trial's below.
    let flaky_line = line("cost flaky (agent): 2 trials, ").to_string();
    let garbled_line = line("cost garbled (agent): 2 trials, ");
    assert!(garbled_line.contains("cost unknown") && garbled_line.contains("could not be read"), "{garbled_line}");

    let o = crate::support::mirage_ok(&app.db, &["score", "--run", &run, "--json"]).await;
    let scored: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let mut answered = None;
    for t in scored["trials"].as_array().expect("trials") {
        match (t["agent"].as_str(), t["task_id"] == tasks[1].id.as_str()) {
            (Some("silent" | "garbled"), _) => assert!(t["agent_tokens"].is_null() && t["cost_usd"].is_null(), "{t}"),
            (Some("flaky"), true) => {
                assert_eq!(
                    (&t["agent_tokens"]["prompt_tokens"], &t["cost_usd"]),
                    (&serde_json::json!(0), &serde_json::json!(0.0)),
                    "{t}"
                );
            }
            _ => {
                answered =
                    Some((t["agent_tokens"]["prompt_tokens"].as_u64(), t["agent_tokens"]["completion_tokens"].as_u64()))
            }
        }
    }
    let Some((Some(p), Some(c))) = answered else { panic!("the answered flaky trial's tokens: {scored}") };
    assert!(flaky_line.contains(&format!("{p} prompt + {c} completion tokens")), "{flaky_line}");
    #[allow(clippy::cast_precision_loss)]
    let one = (p + c) as f64 / 1e6;
    let groups = scored["aggregate"]["groups"].as_array().expect("groups");
    let cost_of = |agent: &str| {
        groups.iter().find(|g| g["key"]["agent"] == agent).map(|g| g["metrics"]["cost"].clone()).expect("group")
    };
    assert!(cost_of("silent").is_null(), "a model that hides its usage is not free: {groups:?}");
    let flaky_cost = cost_of("flaky");
    assert_eq!(flaky_cost["n"], 2, "the failed trial is in the mean: {flaky_cost}");
    assert!((flaky_cost["mean"].as_f64().expect("mean") - one / 2.0).abs() < 1e-12, "{flaky_cost}");
}

/// The agent's appeal turn is one of its calls, and a counterfactual replay's own turns are
/// calls of the run: every request the endpoint answered is in the run's cost rows.
#[tokio::test]
async fn appeals_and_replays_are_counted_as_agent_calls() {
    let model = ScriptedServer::responding(std::time::Duration::ZERO, investigator).await;
    let app = crate::support::TestApp::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mirage.toml");
    let endpoint = format!(
        "[endpoints.priced]\nbase_url = \"{}\"\nmodel = \"tiny\"\nprice = {{ prompt = 1, completion = 1 }}\n",
        model.base_url
    );
    std::fs::write(&config, endpoint).expect("config");
    let out = dir.path().join("t.jsonl");
    let args = [
        "run",
        "--agent",
        "priced",
        "--tasks",
        "shop-example-01",
        "--levels",
        "L3",
        "--appeal",
        "--replay",
        "clean-level:1",
        "--config",
        config.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ];
    crate::support::mirage_ok(&app.db, &args).await;
    let lines = crate::support::trajectories(&out);
    let steps: usize = lines.iter().map(|l| l["steps"].as_array().map_or(0, Vec::len)).sum();
    let appeals = lines.iter().filter(|l| l["appeal"]["usage"]["prompt_tokens"].is_u64()).count();
    assert!(appeals > 0, "the appeal turn reports its usage: {lines:?}");
    let run = app.state.store.runs().await.expect("runs")[0].run_id.to_string();
    let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
    let text = String::from_utf8_lossy(&show.stdout);
    let prompt_of = |start: &str| -> usize {
        let line = text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start} in {text}"));
        line[start.len()..]
            .split(" prompt")
            .next()
            .and_then(|n| n.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("tokens")
    };
    // Each scripted reply reports 100 prompt tokens.
    assert_eq!(prompt_of("cost priced (agent): "), 100 * (steps + appeals), "{text}");
    let replayed = prompt_of("cost priced (replay): ");
    assert!(replayed > 0, "{text}");
    assert_eq!(
        100 * model.requests().len(),
        100 * (steps + appeals) + replayed,
        "every answered call is in a row: {text}"
    );
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
    crate::support::mirage_ok(&app.db, &args).await;
    let run = crate::support::trajectories(&out)[0]["trial_id"].as_str().expect("id").to_string();
    let run = app.state.store.trial(&TrialId::from(&run)).await.expect("trial").run_id;

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
        format!(
            "cost priced (agent): 2 trials, {prompt} prompt + {completion} completion tokens, {}",
            app::model::dollars(dollars)
        ),
        "cost free (agent): 2 trials".to_string(),
        "cost unknown (no price configured)".to_string(),
        "cost surface (agent): 2 trials, 0 prompt + 0 completion tokens, $0.0000 (baseline: no model calls)"
            .to_string(),
    ] {
        assert!(text.contains(&needle), "{needle:?} in {text}");
    }

    // The run page's cost table.
    let (status, page) = app.text(&format!("/runs/{run}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("Priced as") && page.contains(&app::model::dollars(dollars)), "{page}");
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

/// A model judge that answers every kind of question it is asked (the filter's suspicion,
/// the labels' second opinion, the reasoning grade); the scripted endpoint reports 100
/// prompt and 20 completion tokens per call.
fn judging(body: &serde_json::Value) -> Reply {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    Reply::Text(if system.starts_with("You screen text") {
        r#"{"score": 0.05}"#.into()
    } else if system.contains("interested party") {
        r#"{"adoption": {"value": false, "turn": null, "confidence": 0.9}, "recovery": {"value": false, "turn": null, "confidence": 0.9}, "reason": "no"}"#.into()
    } else {
        r#"{"score": 0.5, "evidence": 3, "reason": "half"}"#.into()
    })
}

#[tokio::test]
async fn the_judges_tokens_are_counted_per_trial_even_from_the_cache() {
    let judge = ScriptedServer::responding(std::time::Duration::ZERO, judging).await;
    let app = crate::support::TestApp::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mirage.toml");
    std::fs::write(
        &config,
        format!(
            "[endpoints.j]\nbase_url = \"{}\"\nmodel = \"j\"\nprice = {{ prompt = 2, completion = 8 }}\n[roles]\njudge = \"j\"\n",
            judge.base_url
        ),
    )
    .expect("config");
    let cfg = config.to_str().expect("utf-8");
    let o = crate::support::mirage_beside(
        &app.db,
        &["run", "--agent", "surface", "--tasks", "shop-example-01,forum-example-01", "--levels", "L3"],
    )
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = app.state.store.runs().await.expect("runs")[0].run_id.clone();

    let score = |what: [&str; 2]| {
        let (db, cfg) = (app.db.clone(), cfg.to_string());
        let what = what.map(ToString::to_string);
        async move {
            let args = [what[0].as_str(), what[1].as_str(), "--json", "--config", &cfg];
            let o = crate::support::mirage_ok(&db, &[&["score"][..], &args[..]].concat()).await;
            serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("json")
        }
    };
    let first = score(["--run", &run]).await;
    let calls = judge.requests().len();
    let trials = first["trials"].as_array().expect("trials");
    let n = trials.len();
    assert!(n >= 2, "{first}");
    let (mut prompt, mut completion) = (0, 0);
    for t in trials {
        // Each trial: its own questions (labels, grade, the filter on its texts), 100 + 20
        // tokens each; the filter's calibration on the clean corpus is nobody's trial.
        let p = t["judge_tokens"]["prompt_tokens"].as_u64().unwrap_or_else(|| panic!("judge tokens: {t}"));
        let c = t["judge_tokens"]["completion_tokens"].as_u64().expect("completion");
        assert!(p > 0 && p.is_multiple_of(100) && c == p / 5, "{p} {c}");
        assert!(p / 100 <= 5, "a trial is charged for its own few questions, not the calibration: {p}");
        #[allow(clippy::cast_precision_loss)]
        let dollars = (p as f64 * 2.0 + c as f64 * 8.0) / 1e6;
        let cost = t["judge_cost_usd"].as_f64().expect("judge cost");
        assert!((cost - dollars).abs() < 1e-12, "{cost} against {dollars}");
        prompt += p;
        completion += c;
    }

    // The same trials scored again from their export, every answer cached: no new calls,
    // the same tokens per trial.
    let file = dir.path().join("t.jsonl");
    let o =
        crate::support::mirage_beside(&app.db, &["runs", "export", &run, "--out", file.to_str().expect("utf-8")]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again = score(["--trajectories", file.to_str().expect("utf-8")]).await;
    assert_eq!(judge.requests().len(), calls, "the answers come from the cache");
    for (a, b) in trials.iter().zip(again["trials"].as_array().expect("trials")) {
        assert_eq!(a["judge_tokens"], b["judge_tokens"]);
        assert_eq!(a["judge_cost_usd"], b["judge_cost_usd"]);
    }

    // The run's cost lines: the agent (a baseline) and the judge that scored it.
    let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
    let text = String::from_utf8_lossy(&show.stdout);
    #[allow(clippy::cast_precision_loss)]
    let dollars = (prompt as f64 * 2.0 + completion as f64 * 8.0) / 1e6;
    for needle in [
        format!("cost surface (agent): {n} trials, 0 prompt + 0 completion tokens, $0.0000"),
        format!(
            "cost surface (judge): {n} trials, {prompt} prompt + {completion} completion tokens, {}",
            app::model::dollars(dollars)
        ),
    ] {
        assert!(text.contains(&needle), "{needle:?} in {text}");
    }

    // Read again with no judge configured (as a page or a static copy without --config
    // would): the model judge's stored scores stand; nothing is rescored by coverage.
    let o = crate::support::mirage_ok(&app.db, &["score", "--run", &run, "--json"]).await;
    let unjudged: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    for (a, b) in trials.iter().zip(unjudged["trials"].as_array().expect("trials")) {
        assert_eq!((&a["judge_version"], &a["acc_rsn"]), (&b["judge_version"], &b["acc_rsn"]), "{b}");
        assert!(b["judge_version"].as_str().is_some_and(|v| v.contains("+llm:")), "{b}");
    }
    let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
    assert!(String::from_utf8_lossy(&show.stdout).contains("cost surface (judge)"), "the judge's cost row stays");
}

/// One endpoint playing the attacker (a rewrite per injection point) and the judge filter of
/// a defended configuration (nothing suspicious).
fn attacking_and_screening(body: &serde_json::Value) -> Reply {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    Reply::Text(if system.starts_with("You screen text") {
        r#"{"score": 0.05}"#.into()
    } else {
        r#"{"text": "Rewritten by the attacker: I am entirely trustworthy."}"#.into()
    })
}

#[tokio::test]
async fn the_attackers_and_the_defenses_tokens_are_counted_per_trial() {
    let endpoint = ScriptedServer::responding(std::time::Duration::ZERO, attacking_and_screening).await;
    let app = crate::support::TestApp::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mirage.toml");
    std::fs::write(
        &config,
        format!(
            "[endpoints.w]\nbase_url = \"{url}\"\nmodel = \"w\"\nprice = {{ prompt = 3, completion = 15 }}\n\
             [endpoints.j]\nbase_url = \"{url}\"\nmodel = \"j\"\n[roles]\nattacker = \"w\"\njudge = \"j\"\n",
            url = endpoint.base_url
        ),
    )
    .expect("config");
    let cfg = config.to_str().expect("utf-8");
    let run_once = || async {
        let args = [
            "run",
            "--agent",
            "surface,surface+judge",
            "--tasks",
            "shop-example-01",
            "--levels",
            "L1",
            "--config",
            cfg,
        ];
        crate::support::mirage_ok(&app.db, &args).await;
        let run = app.state.store.runs().await.expect("runs")[0].run_id.clone();
        let show = crate::support::mirage_beside(&app.db, &["runs", "show", &run]).await;
        String::from_utf8_lossy(&show.stdout).to_string()
    };
    let first = run_once().await;
    let calls = endpoint.requests().len();
    let line = |text: &str, head: &str| -> String {
        text.lines().find(|l| l.starts_with(head)).unwrap_or_else(|| panic!("no {head:?} in {text}")).to_string()
    };
    // Each trial's attacker rewrites (100 + 20 tokens a call), priced $3 / $15 per million.
    let attacker = line(&first, "cost surface (attacker): 1 trials, ");
    let prompt: u64 =
        attacker.split(", ").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).expect("tokens");
    assert!(prompt > 0 && prompt.is_multiple_of(100), "{attacker}");
    #[allow(clippy::cast_precision_loss)]
    let dollars = (prompt as f64 * 3.0 + (prompt / 5) as f64 * 15.0) / 1e6;
    assert!(
        attacker.contains(&format!(
            "{prompt} prompt + {} completion tokens, {}",
            prompt / 5,
            app::model::dollars(dollars)
        )),
        "{attacker}"
    );
    assert!(line(&first, "cost surface+judge (attacker): 1 trials, ").contains(&app::model::dollars(dollars)));
    // The defended configuration's filter screened what it saw; its endpoint has no price.
    let defense = line(&first, "cost surface+judge (defense): 2 trials, ");
    assert!(defense.contains("cost unknown (no price configured)"), "{defense}");
    assert!(!first.contains("cost surface (defense)"), "an undefended configuration has no filter: {first}");

    // The same trials again: every answer from the cache, the same cost per trial.
    let second = run_once().await;
    assert_eq!(endpoint.requests().len(), calls, "the attacker's texts and the filter's answers are cached");
    assert_eq!(line(&second, "cost surface (attacker)"), attacker);
    assert_eq!(line(&second, "cost surface+judge (defense)"), defense);
}
