//! The book's "Evaluate your own agent" paths, run as written: the example endpoint under
//! `examples/` behind `mirage run` (JSON mode and tool calling), and the example HTTP client
//! taking an outside agent's run to its end; both land on the leaderboard beside a baseline
//! and in a paired `mirage compare`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::support::{TestApp, mirage_ok};

/// The repository's `examples/` folder.
fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("examples").join(name)
}

/// A running example endpoint; stopped when dropped.
struct Endpoint(Child, String);

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_endpoint() -> Endpoint {
    let mut child = Command::new("python3")
        .arg(example("openai_endpoint.py"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the example endpoint");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its address");
    let base = line.trim().strip_prefix("listening on ").expect("the address line").to_string();
    Endpoint(child, base)
}

/// Three forum tasks, comma-separated.
fn three_tasks(app: &TestApp) -> String {
    let tasks: Vec<_> = app
        .state
        .world
        .tasks()
        .filter(|t| t.domain == server::corpus::Domain::Forum)
        .take(3)
        .map(|t| t.id.clone())
        .collect();
    tasks.join(",")
}

async fn board(app: &TestApp, run: &str) -> Vec<Value> {
    let resp = app.get(&format!("/api/export/leaderboard.json?run={run}")).await;
    assert_eq!(resp.status(), 200);
    let board: Value = resp.json().await.expect("json");
    board["rows"].as_array().expect("rows").clone()
}

fn row<'a>(rows: &'a [Value], agent: &str) -> &'a Value {
    rows.iter().find(|r| r["agent"] == agent).unwrap_or_else(|| panic!("no row for {agent}: {rows:?}"))
}

fn run_id(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let at = text.find("run run-").expect("the run's id on stderr") + 4;
    text[at..].split(|c: char| c == ':' || c.is_whitespace()).next().expect("id").to_string()
}

#[tokio::test]
async fn the_example_endpoint_runs_in_json_mode_and_with_tool_calling_beside_a_baseline() {
    let app = TestApp::start().await;
    let endpoint = start_endpoint();
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("agents.toml");
    std::fs::write(
        &config,
        format!(
            "[endpoints.mine]\nbase_url = \"{0}\"\nmodel = \"rule\"\njson_mode = true\n\n\
             [endpoints.mine-tools]\nbase_url = \"{0}\"\nmodel = \"rule\"\ntool_calling = true\n",
            endpoint.1
        ),
    )
    .expect("config");
    let tasks = three_tasks(&app);
    let out = mirage_ok(
        &app.db,
        &[
            "run",
            "--config",
            config.to_str().expect("utf-8"),
            "--agent",
            "mine,mine-tools,explorer",
            "--tasks",
            &tasks,
            "--levels",
            "L1",
        ],
    )
    .await;
    let run = run_id(&out);
    let rows = board(&app, &run).await;
    for agent in ["mine", "mine-tools", "explorer"] {
        let r = row(&rows, agent);
        assert_eq!((r["trials"].as_u64(), r["errors"].as_u64()), (Some(6), Some(0)), "{agent}: {r}");
    }
    let out = mirage_ok(&app.db, &["compare", &format!("{run}:explorer"), &format!("{run}:mine"), "--json"]).await;
    let cmp: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (cmp["pairs"].as_u64(), cmp["unpaired_a"].as_u64(), cmp["unpaired_b"].as_u64()),
        (Some(6), Some(0), Some(0)),
        "{cmp}"
    );
}

#[tokio::test]
async fn the_example_http_client_takes_an_outside_agents_run_to_the_leaderboard() {
    let app = TestApp::start().await;
    let tasks = three_tasks(&app);
    let out =
        mirage_ok(&app.db, &["run", "--agent", "external:mine,explorer", "--tasks", &tasks, "--levels", "L1"]).await;
    let run = run_id(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("6 trials of outside agents wait"), "{out:?}");
    let (base, script, run_arg) = (app.base.clone(), example("http_agent.py"), run.clone());
    let client = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .args(["--server", &base, "--run", &run_arg])
            .output()
            .expect("python3 runs the example client")
    })
    .await
    .expect("the client ran");
    let said = String::from_utf8_lossy(&client.stdout);
    assert!(client.status.success(), "{said}\n{}", String::from_utf8_lossy(&client.stderr));
    assert!(said.contains("6 episodes finished"), "{said}");
    let rows = board(&app, &run).await;
    let r = row(&rows, "external:mine");
    assert_eq!((r["trials"].as_u64(), r["errors"].as_u64()), (Some(6), Some(0)), "{r}");
    row(&rows, "explorer");
    let out =
        mirage_ok(&app.db, &["compare", &format!("{run}:explorer"), &format!("{run}:external:mine"), "--json"]).await;
    let cmp: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((cmp["pairs"].as_u64(), cmp["unpaired_b"].as_u64()), (Some(6), Some(0)), "{cmp}");
}
