//! The agent protocol, as a model and an outside agent meet it: the grammar every page ends
//! with is the one the loop and the episode API understand, on all three sites; and runs of
//! outside agents hand out their trials as episodes that end as scored trials.

use std::sync::Arc;

use serde_json::{Value, json};
use server::agent::episode::{MemorySink, Setting, run_trial};
use server::agent::llm::LlmAgent;
use server::corpus::Domain;
use server::corpus::urls::normalise;
use server::llm::scripted::{Reply, ScriptedServer};
use server::llm::{EndpointSpec, HttpLlm};

use crate::support::TestApp;
use app::model::RunId;

/// The `- {"type": "click", …}` line of a page's action list, with N set to `n`: what a model
/// that copies the page's own grammar sends.
fn footer_click(page: &str, n: usize) -> Value {
    let line = page.lines().find(|l| l.starts_with(r#"- {"type": "click""#)).expect("the page lists click");
    let object = &line[2..=line.find('}').expect("object")];
    serde_json::from_str(&object.replace('N', &n.to_string())).expect("json")
}

/// The text of the page the model is shown last in a chat request.
fn current_page(body: &Value) -> String {
    let messages = body["messages"].as_array().expect("messages");
    messages.iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("").to_string()
}

#[tokio::test]
async fn a_model_that_writes_links_either_way_reaches_the_linked_pages_on_every_site() {
    let tasks = server::corpus::generate::corpus();
    let world = server::env::World::build(tasks.clone()).expect("world");
    for domain in [Domain::Shop, Domain::Forum, Domain::Wiki] {
        let task = tasks.iter().find(|t| t.domain == domain && t.graph.len() >= 2).expect("task");
        let start = world_links(&world, task);
        assert!(start.len() >= 2, "{}: the start page has links", task.id);
        let (first, second) = (start[0].clone(), start[1].clone());
        let verdict = domain.actions()[0];
        // Step 0: link 1 as the old footer wrote it (a number as a goto's url); step 1: back;
        // step 2: link 2's address as a click's link; step 3: back, then link 1 exactly as the
        // page's footer writes a click; step 5: the verdict.
        let second_address = second.clone();
        let model = ScriptedServer::responding(std::time::Duration::ZERO, move |body: &Value| {
            let turn = body["messages"].as_array().map_or(0, |m| m.iter().filter(|x| x["role"] == "assistant").count());
            let action = match turn {
                0 => json!({"type": "goto", "url": "1"}),
                1 | 3 => json!({"type": "back"}),
                2 => json!({"type": "click", "link": second_address.clone()}),
                4 => footer_click(&current_page(body), 1),
                _ => json!({"type": "verdict", "verdict": verdict, "rationale": "read the linked pages"}),
            };
            Reply::Text(json!({"thought": format!("turn {turn}"), "action": action}).to_string())
        })
        .await;
        let client = HttpLlm::new(EndpointSpec::new(&model.base_url, "footer-reader")).expect("client");
        let agent = LlmAgent::new("footer-reader", Arc::new(client));
        let mut sink = MemorySink::default();
        let (steps, _) =
            run_trial(&world, Setting::clean(), task, "raw", &agent, vec![], &mut sink).await.expect("trial");
        let urls: Vec<(&str, Option<u16>)> = steps.iter().map(|s| (s.url.as_str(), s.status)).collect();
        let (start_url, first, second) = (normalise(&task.start_url), normalise(&first), normalise(&second));
        assert_eq!(
            urls,
            [
                (start_url.as_str(), Some(200)),
                (first.as_str(), Some(200)),
                (start_url.as_str(), Some(200)),
                (second.as_str(), Some(200)),
                (start_url.as_str(), Some(200)),
                (first.as_str(), Some(200)),
            ],
            "{}: every link written in either form was followed",
            task.id
        );
        assert!(steps.iter().all(|s| !s.observation.starts_with("Note:")), "no move was refused");
    }
}

/// The addresses of the numbered links of a task's start page, in order.
fn world_links(world: &server::env::World, task: &server::corpus::Task) -> Vec<String> {
    server::env::site::render_path(world, &task.start_url, None, None).links.into_iter().map(|(_, u)| u).collect()
}

async fn post_json(app: &TestApp, path: &str, body: &Value) -> (u16, String) {
    let resp = app.client.post(app.url(path)).json(body).send().await.expect("post");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

#[tokio::test]
async fn an_episode_takes_the_same_actions_and_its_printed_links_stay_inside_it() {
    let app = TestApp::start().await;
    for domain in [Domain::Shop, Domain::Forum, Domain::Wiki] {
        let task = app.state.world.tasks().find(|t| t.domain == domain).expect("task").clone();
        let (status, body) = post_json(&app, "/api/episodes", &json!({"task_id": task.id})).await;
        assert_eq!(status, 201, "{body}");
        let ep: Value = serde_json::from_str(&body).expect("json");
        let id = ep["episode_id"].as_str().expect("id").to_string();
        let act = ep["act_url"].as_str().expect("act").to_string();
        // The text page prints every address under the episode: followed as printed, it stays.
        let (_, page) = app.text(&format!("{}?format=text", ep["start_url"].as_str().expect("start"))).await;
        let printed: Vec<&str> =
            page.lines().filter(|l| l.starts_with('[')).filter_map(|l| l.split(" -> ").nth(1)).collect();
        assert!(!printed.is_empty(), "{page}");
        assert!(printed.iter().all(|u| u.starts_with(&format!("/ep/{id}/"))), "{page}");
        assert!(page.contains(&format!("POST one of these objects to /ep/{id}/act")), "{page}");
        assert_eq!(app.get(printed[0]).await.status(), 200);
        // Link 1 of the start page in the three forms: a number as a goto's url, the footer's
        // click, and an address as a click's link.
        let back = json!({"action": {"type": "back"}});
        let start_links = world_links(&app.state.world, &task);
        for (n, form) in [
            json!({"thought": "as the old footer", "action": {"type": "goto", "url": "1"}}),
            json!({"thought": "as the footer", "action": footer_click(&page, 1)}),
            json!({"thought": "an address", "action": {"type": "click", "link": printed[0]}}),
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(post_json(&app, &act, &back).await.0, 200, "form {n}");
            let (status, text) = post_json(&app, &act, &form).await;
            assert_eq!(status, 200, "{form}: {text}");
            let shown = text.lines().find_map(|l| l.strip_prefix("URL: ")).expect("the page's address");
            let shown = shown.strip_prefix(&format!("/ep/{id}")).expect("under the episode");
            assert_eq!(normalise(shown), normalise(&start_links[0]), "{form}");
        }
        // A move the page cannot make is refused and costs no page.
        let before = app.get(&format!("/api/episodes/{id}")).await.json::<Value>().await.expect("log")["events"]
            .as_array()
            .expect("events")
            .len();
        let (status, text) = post_json(&app, &act, &json!({"action": {"type": "click", "link": 999}})).await;
        assert_eq!(status, 422, "{text}");
        assert!(text.contains("no link number 999"), "{text}");
        let log: Value = app.get(&format!("/api/episodes/{id}")).await.json().await.expect("log");
        assert_eq!(log["events"].as_array().expect("events").len(), before);
        let verdict = json!({"thought": "done", "action": {"type": "verdict", "verdict": domain.actions()[0], "rationale": "read it"}});
        let (status, text) = post_json(&app, &act, &verdict).await;
        assert_eq!(status, 200, "{text}");
        // A finished standalone episode is one trajectory line that `runs import` stores.
        let line = app.text(&format!("/api/episodes/{id}/trajectory?agent=by-hand")).await.1;
        let t: Value = serde_json::from_str(line.trim()).expect("line");
        assert_eq!(t["verdict"]["action"], domain.actions()[0]);
        assert_eq!(t["steps"][1]["action"]["type"], "back");
        assert_eq!(t["steps"][0]["url"], normalise(&task.start_url));
    }
}

#[tokio::test]
async fn an_outside_agents_run_hands_out_its_trials_and_scores_them_like_any_other() {
    let app = TestApp::start().await;
    let tasks: Vec<_> = app.state.world.tasks().filter(|t| t.domain == Domain::Forum).take(2).cloned().collect();
    let ids = tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>().join(",");
    // From the launch form, beside a baseline: the baseline runs here, the outside agent's
    // trials (L1 and their clean twins) wait for episodes.
    let run = app.launch(&ids, "external:mine,explorer", "L1").await;
    let run_id = RunId::from(run.as_str());
    for _ in 0..600 {
        if app.state.store.progress(&run_id).await.expect("progress").executable_left() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let p = app.state.store.progress(&run_id).await.expect("progress");
    assert_eq!((p.outside, p.queued, p.done), (4, 4, 4), "{p:?}");
    let mut handed = Vec::new();
    loop {
        let resp = app.client.post(app.url(&format!("/api/runs/{run}/episodes"))).send().await.expect("post");
        if resp.status() == 204 {
            break;
        }
        assert_eq!(resp.status(), 201);
        let ep: Value = resp.json().await.expect("json");
        assert_eq!(ep["run_id"], run.as_str());
        let id = ep["episode_id"].as_str().expect("id").to_string();
        let (_, page) = app.text(&format!("{}?format=text", ep["start_url"].as_str().expect("start"))).await;
        let link = page.lines().find(|l| l.starts_with("[1] ")).and_then(|l| l.split(" -> ").nth(1)).expect("a link");
        assert_eq!(app.get(link).await.status(), 200);
        let verdict = json!({"action": "REMOVE", "rationale": "the history shows a pattern"});
        let (status, text) = post_json(&app, &format!("/ep/{id}/verdict"), &verdict).await;
        assert_eq!(status, 200, "{text}");
        handed.push(ep["trial_id"].as_str().expect("trial").to_string());
    }
    assert_eq!(handed.len(), 4);
    let p = app.state.store.progress(&run_id).await.expect("progress");
    assert_eq!((p.done, p.queued, p.running), (8, 0, 0));
    assert_eq!(app.state.store.run(&run_id).await.expect("run").status, server::db::RunStatus::Done);
    for trial in &handed {
        let steps = app.state.store.steps(&app::model::TrialId::from(trial.as_str())).await.expect("steps");
        assert_eq!(steps.len(), 2, "the start page and the linked one");
        let last: Value = serde_json::from_str(&steps[1]).expect("step");
        assert_eq!(last["action"]["type"], "verdict");
    }
    // Scored beside the baseline: the leaderboard has both configurations.
    let scores = app.state.insights.scores(&run_id).await.expect("scores");
    let agents: std::collections::BTreeSet<&str> = scores.iter().map(|s| s.agent.as_str()).collect();
    assert!(agents.contains("external:mine") && agents.contains("explorer"), "{agents:?}");
    // Watched over HTTP, page by page: not self-reported.
    assert!(scores.iter().all(|s| !s.self_reported()), "trials Mirage ran or watched are not self-reported");
    assert!(scores.iter().any(|s| s.provenance == "http") && scores.iter().any(|s| s.provenance == "executed"));
}

#[tokio::test]
async fn an_idle_episode_gives_its_trial_back_and_a_trial_that_keeps_losing_it_fails() {
    let app = TestApp::start().await;
    let task = app.state.world.tasks().find(|t| t.domain == Domain::Shop).expect("task").clone();
    let mut spec = server::runs::RunSpec::basic(&task.id, &["external:slow"], &["L0"], &["raw"], vec![0]);
    spec.episode_lease_secs = Some(1);
    let run_id = server::runs::create_run(app.state.store.as_ref(), &app.state.world, &spec, "v").await.expect("run");
    let mut last = String::new();
    for attempt in 1..=3 {
        // A requeued trial waits a backoff of a second per attempt before it is handed out.
        let mut resp = None;
        for _ in 0..80 {
            let r = app.client.post(app.url(&format!("/api/runs/{run_id}/episodes"))).send().await.expect("post");
            if r.status() == 201 {
                resp = Some(r);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let ep: Value = resp.expect("handed out again").json().await.expect("json");
        last = ep["episode_id"].as_str().expect("id").to_string();
        assert_eq!(ep["lease_secs"], 1, "attempt {attempt}");
        tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
        let resp = app.get(&format!("{}?format=text", ep["start_url"].as_str().expect("start"))).await;
        assert_eq!(resp.status(), 410, "attempt {attempt}: the idle episode lost its trial");
    }
    let verdict = json!({"action": "DENY", "rationale": "late"});
    assert_eq!(post_json(&app, &format!("/ep/{last}/verdict"), &verdict).await.0, 410);
    // The sweep that hands out the next episode ends the trial after its third loss.
    let resp = app.client.post(app.url(&format!("/api/runs/{run_id}/episodes"))).send().await.expect("post");
    assert_eq!(resp.status(), 204);
    let trials = app.state.store.trials(&run_id).await.expect("trials");
    assert_eq!(trials[0].state, server::db::TrialState::Error);
    assert!(trials[0].error.as_deref().unwrap_or_default().contains("3 attempts"), "{:?}", trials[0].error);
    assert_eq!(app.state.store.run(&run_id).await.expect("run").status, server::db::RunStatus::Done);
}

#[tokio::test]
async fn a_default_server_names_its_endpoints_on_the_launch_form_and_has_a_geo_page_before_any_geo_run() {
    let mut config = server::config::Config::default();
    config.endpoints.insert("mine".into(), EndpointSpec::new("http://127.0.0.1:9/v1", "my-model"));
    let app = TestApp::start_with(config).await;
    let (status, page) = app.text("/runs").await;
    assert_eq!(status, 200);
    assert!(page.contains("Configured endpoints: mine (model my-model)."), "the launch form lists them");
    assert!(page.contains("external:NAME"), "and says how to name an outside agent");
    let (status, page) = app.text("/geo").await;
    assert_eq!(status, 200, "no GEO run is nothing missing");
    assert!(page.contains("No GEO ranking run has finished trials yet"), "{page}");
    let bare = TestApp::start().await;
    assert!(bare.text("/runs").await.1.contains("No model endpoint is configured on this server"));
}

#[tokio::test]
async fn lines_without_observations_import_as_they_score_and_imported_rows_are_marked_self_reported() {
    let app = TestApp::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let task = app.state.world.task("forum-example-01").expect("task").clone();
    let links = world_links(&app.state.world, &task);
    // Steps with no observation, thought or action, as docs/formats.md allows.
    let line = json!({
        "trial_id": "t1", "task_id": task.id, "agent": "mine", "level": "L0", "condition": "raw", "seed": 0,
        "steps": [{"url": task.start_url}, {"url": links[0]}],
        "verdict": {"action": task.verdict.optimal, "rationale": "Read the linked page."}
    });
    let file = dir.path().join("mine.jsonl");
    std::fs::write(&file, format!("{line}\n")).expect("write");
    let path = file.to_str().expect("utf-8");
    crate::support::mirage_ok(&app.db, &["score", path, "--json"]).await;
    let out = crate::support::mirage_ok(&app.db, &["runs", "import", path]).await;
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let at = said.find("run-").expect("the run's id");
    let run: String = said[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let trials = app.state.store.trials(&RunId::from(run.as_str())).await.expect("trials");
    let steps = app.state.store.steps(&trials[0].trial_id).await.expect("steps");
    let first: Value = serde_json::from_str(&steps[0]).expect("step");
    assert_eq!(first["action"]["type"], "goto", "a step without an action moved to the next page");
    assert!(first.get("observation").is_none(), "no observation was invented");
    let board: Value =
        app.get(&format!("/api/export/leaderboard.json?run={run}")).await.json().await.expect("leaderboard");
    let row = &board["rows"][0];
    assert_eq!((row["trials"].as_u64(), row["self_reported"].as_u64()), (Some(1), Some(1)), "{row}");
    let page = app.text(&format!("/leaderboard?run={run}")).await.1;
    assert!(page.contains("self-reported"), "the row says where its figures come from");
}

#[test]
fn the_dashboard_names_the_judge_less_grade_as_the_scorer_does() {
    assert_eq!(server::judge::rsn::COVERAGE, app::model::FALLBACK_RSN_JUDGE);
}
