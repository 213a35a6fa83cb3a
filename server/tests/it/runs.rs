//! Runs through the real binary: planning, execution, export, cancel, and resume after
//! the process is killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use server::db::{CorpusStore, RunStore, SqlStore, database_url};

use crate::support::{mirage, temp_path};
use app::model::RunId;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_id_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|l| l.split(':').next())
        .expect("run id line")
        .to_string()
}

fn trajectory_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schemas/trajectory.schema.json")).expect("schema json");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

#[test]
fn a_baseline_run_finishes_every_trial_and_exports_valid_trajectories() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "r.db");
    let out = temp_path(&dir, "t.jsonl");
    let o = mirage(
        &db,
        &[
            "run",
            "--agent",
            "oracle,surface",
            "--tasks",
            "wiki",
            "--conditions",
            "raw,hint",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("1200 done, 0 errors"), "{}", text(&o.stdout));
    let lines = std::fs::read_to_string(&out).expect("trajectories");
    assert_eq!(lines.lines().count(), 1200);
    let validator = trajectory_validator();
    let corpus = server::corpus::generate::corpus();
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line).expect("json line");
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{errors:?}");
        if v["agent"] == "oracle" {
            let task = corpus.iter().find(|t| t.id == v["task_id"]).expect("task");
            assert_eq!(v["verdict"]["action"], task.verdict.optimal.as_str());
        }
    }
    let run = run_id_of(&text(&o.stderr));
    let export = mirage(&db, &["runs", "export", &run]);
    assert_eq!(text(&export.stdout), lines, "runs export writes the same lines");
    let list = mirage(&db, &["runs", "list"]);
    assert!(text(&list.stdout).contains(&format!("{run}  done")), "{}", text(&list.stdout));
}

#[test]
fn bad_run_input_is_refused_with_the_field_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "b.db");
    for (args, message) in [
        (vec!["run", "--agent", "gpt-17"], "agent: \"gpt-17\" is neither a baseline"),
        (vec!["run", "--agent", "oracle", "--levels", "L7"], "levels: level \"L7\""),
        (vec!["run", "--agent", "oracle", "--levels", "L1", "--strategy", "shouting"], "strategy \"shouting\""),
        (vec!["run", "--agent", "oracle", "--conditions", "psychic"], "conditions: \"psychic\""),
        (vec!["run", "--agent", "oracle", "--tasks", "nope-1"], "tasks: \"nope-1\""),
    ] {
        let o = mirage(&db, &args);
        assert!(!o.status.success());
        assert!(text(&o.stderr).contains(message), "{args:?}: {}", text(&o.stderr));
    }
    assert!(text(&mirage(&db, &["runs", "list"]).stdout).trim().is_empty(), "nothing was stored");
}

/// `--plan-only` stores nothing and says what the plan can detect: without a past run a
/// range over the unknown within-family correlation; with `--power-from` a past run's spread
/// (one number); with `--target-diff` what that difference needs.
#[test]
fn a_plan_only_run_reports_its_power_and_stores_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "p.db");
    let plan =
        ["run", "--agent", "surface,explorer", "--tasks", "wiki", "--levels", "L1", "--seeds", "0,1", "--plan-only"];
    let o = mirage(&db, &plan);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // 300 wiki tasks × 2 configurations × (L1 and its L0 twin) × 2 seeds.
    assert!(out.contains("plan: 2400 trials"), "{out}");
    assert!(
        out.contains("acc_dec: 600 paired trials per comparison") && out.contains("robustness: at most 600 paired"),
        "{out}"
    );
    // A target beyond what the corpus holds says so.
    let mut wide = plan.to_vec();
    wide.extend(["--target-diff", "0.05"]);
    let o = mirage(&db, &wide);
    assert!(
        text(&o.stdout).contains("needs 785 to 9419 tasks (the corpus holds 300 tasks in these domains"),
        "{}",
        text(&o.stdout)
    );
    assert!(out.contains("(ρ = 0.00) to") && out.contains("(ρ = 1.00)") && out.contains("no past run"), "{out}");
    assert!(out.contains(" families, as ") && out.contains(" of equal size"), "{out}");
    assert!(text(&mirage(&db, &["runs", "list"]).stdout).trim().is_empty(), "nothing was stored");
    // A past run gives σ² and ρ: one number per figure, and what 0.05 needs.
    let past =
        mirage(&db, &["run", "--agent", "surface,explorer", "--tasks", "wiki", "--levels", "L1", "--seeds", "0,1"]);
    assert!(past.status.success(), "{}", text(&past.stderr));
    let run = run_id_of(&text(&past.stderr));
    let mut args = plan.to_vec();
    args.extend(["--power-from", &run, "--target-diff", "0.05"]);
    let o = mirage(&db, &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let acc_dec = out.lines().find(|l| l.trim_start().starts_with("acc_dec:")).expect("acc_dec line");
    assert!(out.contains(&format!("from run {run}")) && !acc_dec.contains("(ρ = "), "{out}");
    assert!(acc_dec.contains(", ρ "), "the estimated ρ is printed: {acc_dec}");
    assert!(out.contains("a difference of 0.050 needs"), "{out}");
    // Robustness counts only the pairs that entered the past run's comparisons.
    let robustness = out.lines().find(|l| l.trim_start().starts_with("robustness:")).expect("robustness line");
    assert!(robustness.contains("of the 600 planned paired trials") || robustness.contains("σ² 0.500"), "{out}");
    let bad = mirage(&db, &["run", "--agent", "oracle", "--plan-only", "--target-diff", "1.5"]);
    assert!(!bad.status.success() && text(&bad.stderr).contains("not between 0 and 1"), "{}", text(&bad.stderr));
    assert_eq!(text(&mirage(&db, &["runs", "list"]).stdout).lines().count(), 1, "only the past run is stored");
}

#[test]
fn cancel_stops_the_queued_trials() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "c.db");
    let store = rt.block_on(async {
        let store = SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url")).await.expect("connect");
        server::db::seed_if_empty(&store).await.expect("seed");
        store
    });
    let world = server::env::World::build(rt.block_on(store.all_tasks()).expect("tasks")).expect("world");
    let spec = server::runs::RunSpec::basic("forum", &["oracle"], &["L0"], &["raw"], vec![0, 1]);
    let run = rt.block_on(server::runs::create_run(&store, &world, &spec, "v")).expect("run");
    let o = mirage(&db, &["runs", "cancel", &run]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let p = rt.block_on(store.progress(&run)).expect("progress");
    assert_eq!((p.cancelled, p.queued), (300, 0));
    let resumed = mirage(&db, &["run", "--resume", &run]);
    assert!(!resumed.status.success());
    assert!(text(&resumed.stderr).contains("was cancelled"));
}

#[test]
fn a_run_killed_mid_way_resumes_with_no_trial_lost_or_finalised_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "k.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mirage"))
        .arg("--db")
        .arg(&db)
        .args(["run", "--agent", "oracle,explorer", "--tasks", "all", "--concurrency", "3", "--lease-secs", "1"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mirage run");
    // The run's id line; a log line (a slow-statement warning on a busy machine) may come first.
    let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    while !first.starts_with("run ") {
        first.clear();
        assert!(reader.read_line(&mut first).expect("a line") > 0, "mirage run ended before naming its run");
    }
    drop(reader);
    let run = run_id_of(&first);

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store =
        rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("connect");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
        if p.done >= 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the run made no progress: {p:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let at_kill = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
    assert!(at_kill.queued > 0, "killed before the end: {at_kill:?}");

    let o = mirage(&db, &["run", "--resume", &run, "--lease-secs", "1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let p = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
    assert_eq!((p.done, p.error, p.queued, p.running), (1500, 0, 0, 0));

    let corpus = server::corpus::generate::corpus();
    for trial in rt.block_on(store.trials(&RunId::from(&run))).expect("trials") {
        let steps: Vec<server::agent::Step> = rt
            .block_on(store.steps(&trial.trial_id))
            .expect("steps")
            .iter()
            .map(|b| serde_json::from_str(b).expect("step"))
            .collect();
        assert!(steps.iter().enumerate().all(|(i, s)| s.t == i), "{}: steps are contiguous", trial.trial_id);
        let verdicts = steps.iter().filter(|s| matches!(s.action, server::agent::Action::Verdict { .. })).count();
        assert_eq!(verdicts, 1, "{}: exactly one verdict", trial.trial_id);
        assert!(trial.attempts <= 2, "{}: claimed {} times", trial.trial_id, trial.attempts);
        if trial.agent == "oracle" {
            let task = corpus.iter().find(|t| t.id == trial.task_id).expect("task");
            assert_eq!(trial.verdict.as_deref(), Some(task.verdict.optimal.as_str()), "{}", trial.trial_id);
        }
    }
}

/// Plans a run without executing it, then lets three `mirage worker --once` processes share
/// the queue: every trial ends exactly once.
fn workers_share_one_queue(db: &std::path::Path) {
    let o = mirage(db, &["run", "--agent", "oracle,explorer", "--tasks", "forum", "--detach"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run = text(&o.stdout).trim().to_string();
    assert!(run.starts_with("run-"), "{run}");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_mirage"))
            .arg("--db")
            .arg(db)
            .args(["worker", "--once", "--concurrency", "3"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mirage worker")
    };
    let workers = [spawn(), spawn(), spawn()];
    for child in workers {
        let out = child.wait_with_output().expect("worker ends");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let show = mirage(db, &["runs", "show", &run]);
    let shown = text(&show.stdout);
    assert!(shown.contains("trials 300: 0 queued, 0 running, 300 done, 0 errors"), "{shown}");
    assert!(shown.contains("trials/min over the last minute"), "{shown}");
    let list = mirage(db, &["runs", "list"]);
    assert!(text(&list.stdout).contains(&format!("{run}  done")), "{}", text(&list.stdout));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store =
        rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("connect");
    for trial in rt.block_on(store.trials(&RunId::from(&run))).expect("trials") {
        assert_eq!(trial.attempts, 1, "{}: claimed once", trial.trial_id);
    }
}

#[test]
fn workers_execute_a_detached_run_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    workers_share_one_queue(&temp_path(&dir, "w.db"));
}

#[test]
fn workers_execute_a_detached_run_on_postgres() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(url) = rt.block_on(crate::support::fresh_postgres_url()) {
        workers_share_one_queue(std::path::Path::new(&url));
    }
}

/// Baselines across L0-L3: every manipulated trial records where its spans appeared, the
/// offsets point at the manipulated text, and the judges label exposure at that turn.
#[test]
fn manipulated_runs_record_spans_and_exposure_at_the_right_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "m.db");
    let out = temp_path(&dir, "m.jsonl");
    let o = mirage(
        &db,
        &[
            "run",
            "--agent",
            "explorer,oracle",
            "--tasks",
            "VIP_CUSTOMER",
            "--levels",
            "L0,L1,L2,L3,L4",
            "--tap-budget",
            "40",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = crate::support::trajectories(&out);
    let mut first_turns = std::collections::BTreeMap::new();
    for l in &lines {
        let steps = l["steps"].as_array().expect("steps");
        let first = steps.iter().position(|s| s.get("spans").is_some());
        for s in steps.iter().filter(|s| s.get("spans").is_some()) {
            let obs = s["observation"].as_str().expect("observation");
            for span in s["spans"].as_array().expect("spans") {
                let (a, b) =
                    (span["start"].as_u64().expect("start") as usize, span["end"].as_u64().expect("end") as usize);
                assert_eq!(&obs[a..b], span["text"].as_str().expect("text"), "offsets point at the span");
                assert!(
                    span["id"].as_str().expect("id").contains(&format!("@{}", l["level"].as_str().expect("level")))
                );
            }
        }
        if l["level"] == "L0" {
            assert_eq!(first, None, "clean trials show no span");
        } else {
            assert_eq!(first, Some(0), "the party's text is on the start page");
        }
        first_turns.insert(
            (l["agent"].as_str().expect("agent").to_string(), l["level"].as_str().expect("level").to_string()),
            first,
        );
    }
    assert_eq!(first_turns.len(), 10, "two agents x five levels");
    let scored = mirage(&db, &["score", out.to_str().expect("utf-8"), "--json", "--by", "agent,level"]);
    assert!(scored.status.success(), "{}", text(&scored.stderr));
    let v: Value = serde_json::from_slice(&scored.stdout).expect("json");
    for t in v["trials"].as_array().expect("trials") {
        let exposure = &t["labels"]["exposure"];
        if t["level"] == "L0" {
            assert_eq!(exposure["value"], false);
        } else {
            assert_eq!((exposure["value"].as_bool(), exposure["turn"].as_u64()), (Some(true), Some(0)), "{t}");
            assert_eq!(t["labels"]["verification"]["value"], true, "both baselines open hidden evidence: {t}");
        }
    }
    for g in v["aggregate"]["groups"].as_array().expect("groups") {
        // Exposure is a rate over manipulated trials: at L0 there is none.
        if g["key"]["level"] == "L0" {
            assert!(g["metrics"]["exposure"].is_null(), "{g}");
        } else {
            assert_eq!(g["metrics"]["exposure"]["mean"].as_f64(), Some(1.0), "{g}");
        }
    }
    let detection = v["aggregate"]["detection"].as_array().expect("detection rows");
    assert_eq!(detection.len(), 8, "two agents x L1-L4");
    for d in detection {
        for f in ["keyword", "perplexity", "either"] {
            let rate = d["flag_rate"][f].as_f64().expect("rate");
            assert!((0.0..=1.0).contains(&rate), "{d}");
        }
        let goal = d["goal_rate"]["mean"].as_f64().expect("goal rate");
        let residual = d["residual_goal_rate"]["either"]["mean"].as_f64().expect("residual");
        assert!(residual <= goal + 1e-12, "a filter never adds to the goal rate: {d}");
    }
}

/// A defended configuration reads pages through a filter: the flagged manipulation is
/// withheld (so the agent is never exposed) and the configuration is scored on its own.
#[test]
fn defended_configurations_withhold_flagged_text_and_score_separately() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "d.db");
    let out = temp_path(&dir, "d.jsonl");
    let o = mirage(
        &db,
        &[
            "run",
            "--agent",
            "explorer,explorer+keyword",
            "--tasks",
            "ACCOUNT_TAKEOVER",
            "--levels",
            "L3",
            "--strategy",
            "system_notice",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = crate::support::trajectories(&out);
    // The L0 twins the planner adds show no notice to withhold.
    for l in lines.iter().filter(|l| l["level"] == "L3") {
        let start = l["steps"][0]["observation"].as_str().expect("observation");
        if l["agent"] == "explorer+keyword" {
            assert!(start.contains("[withheld: the keyword filter flagged this passage]"), "{start}");
            assert!(!start.contains("SYSTEM NOTICE"));
            assert!(l["steps"][0].get("spans").is_none());
        } else {
            assert!(start.contains("SYSTEM NOTICE"));
        }
    }
    let bad = mirage(&db, &["run", "--agent", "explorer+magic", "--tasks", "ACCOUNT_TAKEOVER"]);
    assert!(text(&bad.stderr).contains("defense \"magic\""), "{}", text(&bad.stderr));
    let v: Value =
        serde_json::from_slice(&mirage(&db, &["score", out.to_str().expect("utf-8"), "--json"]).stdout).expect("json");
    let board: Vec<&str> = v["aggregate"]["leaderboard"]
        .as_array()
        .expect("board")
        .iter()
        .map(|s| s["agent"].as_str().expect("agent"))
        .collect();
    assert!(board.contains(&"explorer") && board.contains(&"explorer+keyword"), "{board:?}");
    let exposure = |agent: &str| {
        v["aggregate"]["groups"].as_array().expect("groups").iter().find(|g| g["key"]["agent"] == agent).expect("group")
            ["metrics"]["exposure"]["mean"]
            .as_f64()
    };
    assert_eq!((exposure("explorer"), exposure("explorer+keyword")), (Some(1.0), Some(0.0)));
}

/// A fresh in-memory store holding the first `n` built-in tasks and a planned L0 run of the
/// configuration `config` over them: (store, world, run id, tasks).
async fn planned_run(
    n: usize,
    config: &str,
) -> (
    std::sync::Arc<dyn server::db::Store>,
    std::sync::Arc<server::env::World>,
    app::model::RunId,
    Vec<server::corpus::Task>,
) {
    use std::sync::Arc;
    let store: Arc<dyn server::db::Store> = Arc::new(SqlStore::connect("sqlite::memory:").await.expect("store"));
    let tasks: Vec<_> = server::corpus::generate::corpus().into_iter().take(n).collect();
    let world = Arc::new(server::env::World::build(tasks.clone()).expect("world"));
    store.insert_tasks(&tasks, "test").await.expect("tasks");
    let spec = server::runs::RunSpec::basic("all", &[config], &["L0"], &["raw"], vec![0]);
    let run = server::runs::create_run(store.as_ref(), &world, &spec, "v").await.expect("run");
    (store, world, run, tasks)
}

/// Executes `run` with one agent standing for `config`, one trial at a time.
async fn execute_as(
    store: &std::sync::Arc<dyn server::db::Store>,
    world: std::sync::Arc<server::env::World>,
    run: &str,
    config: &str,
    agent: std::sync::Arc<dyn server::agent::Agent>,
) {
    let agents = std::collections::HashMap::from([(config.to_string(), agent)]);
    let options = server::runs::PoolOptions { concurrency: 1, lease: Duration::from_secs(30), ..Default::default() };
    server::runs::execute_with(
        store.clone(),
        world,
        &RunId::from(run),
        options,
        std::sync::Arc::new(|_, _| {}),
        agents,
    )
    .await
    .expect("the pool finishes");
}

/// Behaves like the oracle, but panics on one task.
struct Panicky {
    on: String,
}

#[async_trait::async_trait]
impl server::agent::Agent for Panicky {
    fn name(&self) -> &str {
        "oracle"
    }
    async fn act(
        &self,
        ctx: &server::agent::TrialContext<'_>,
        history: &[server::agent::Step],
        obs: &server::agent::Observation,
    ) -> Result<server::agent::Decision, server::agent::AgentError> {
        assert!(ctx.task.id != self.on, "this agent breaks on {}", self.on);
        server::agent::baselines::Oracle.act(ctx, history, obs).await
    }
}

#[tokio::test]
async fn a_panic_in_one_trial_ends_that_trial_and_the_worker_goes_on() {
    use server::db::TrialState;

    let (store, world, run, tasks) = planned_run(6, "oracle").await;
    let broken = tasks[2].id.clone();
    execute_as(&store, world, &run, "oracle", std::sync::Arc::new(Panicky { on: broken.clone() })).await;
    let trials = store.trials(&run).await.expect("trials");
    for t in &trials {
        if t.task_id == broken {
            assert_eq!(t.state, TrialState::Error);
            assert!(t.error.as_deref().is_some_and(|e| e.contains("panicked") && e.contains("breaks on")), "{t:?}");
        } else {
            assert_eq!(t.state, TrialState::Done, "{t:?}");
        }
    }
    assert_eq!(store.progress(&run).await.expect("progress").done, 5);
}

/// Reads pages like the explorer; on its second step it cancels its own run.
struct Canceller {
    store: std::sync::Arc<dyn server::db::Store>,
    run: std::sync::Mutex<Option<app::model::RunId>>,
}

#[async_trait::async_trait]
impl server::agent::Agent for Canceller {
    fn name(&self) -> &str {
        "explorer"
    }
    async fn act(
        &self,
        ctx: &server::agent::TrialContext<'_>,
        history: &[server::agent::Step],
        obs: &server::agent::Observation,
    ) -> Result<server::agent::Decision, server::agent::AgentError> {
        let run = self.run.lock().expect("lock").clone();
        if history.len() == 1
            && let Some(run) = run
        {
            self.store.cancel_run(&run).await.expect("cancel");
        }
        server::agent::baselines::Explorer.act(ctx, history, obs).await
    }
}

#[tokio::test]
async fn cancelling_a_run_stops_its_running_trials_at_their_next_step() {
    use server::db::TrialState;

    let (store, world, run, _) = planned_run(3, "explorer").await;
    let agent = std::sync::Arc::new(Canceller { store: store.clone(), run: std::sync::Mutex::new(Some(run.clone())) });
    execute_as(&store, world, &run, "explorer", agent).await;
    let trials = store.trials(&run).await.expect("trials");
    assert!(trials.iter().all(|t| t.state == TrialState::Cancelled), "{trials:?}");
    let steps = store.steps(&trials[0].trial_id).await.expect("steps");
    assert!(steps.len() <= 3, "the running trial stopped at its next step, not at the end: {} steps", steps.len());
}

/// An import interrupted half-way leaves an active run with a trial running under an agent
/// nothing can execute; a run whose agent this worker cannot build is in the same place.
/// Neither ends a worker: the import is never executed, the other run is named and left
/// to workers that can, and the runnable run beside them finishes.
#[test]
fn a_run_no_worker_can_execute_does_not_end_the_workers() {
    use server::db::{LeaseStore, NewTrial};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "w.db");
    let o = mirage(&db, &["run", "--agent", "oracle", "--tasks", "WARDROBING", "--detach"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let good = text(&o.stdout).trim().to_string();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let url = server::db::database_url(db.to_str().expect("utf-8")).expect("url");
        let store = server::db::SqlStore::connect(&url).await.expect("connect");
        let trial = |agent: &str| NewTrial {
            task_id: "shop-wardrobing-001".into(),
            agent: agent.into(),
            level: "L0".into(),
            condition: "raw".into(),
            seed: 0,
        };
        let import = r#"{"agents":["giant"],"levels":["L0"],"conditions":["raw"],"seeds":[0],"tasks":"imported from giant.jsonl","origin":"imported:mirage"}"#;
        store.create_run(&RunId::from("run-halfimported"), import, "v", &[trial("giant")]).await.expect("run");
        // The import was killed while it held its trial: the lease has long expired.
        let now = server::db::now_ms();
        store.claim_trial(&RunId::from("run-halfimported"), "import", now - 1).await.expect("claim").expect("trial");
        let other = r#"{"agents":["elsewhere"],"levels":["L0"],"conditions":["raw"],"seeds":[0],"tasks":"all"}"#;
        store.create_run(&RunId::from("run-elsewhere"), other, "v", &[trial("elsewhere")]).await.expect("run");
    });
    let o = mirage(&db, &["worker", "--once"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("run run-elsewhere skipped") && err.contains("\"elsewhere\""), "{err}");
    assert!(!err.contains("run-halfimported"), "an import is never executed: {err}");
    let shown = text(&mirage(&db, &["runs", "show", &good]).stdout);
    assert!(shown.contains("trials 20: 0 queued, 0 running, 20 done"), "{shown}");
    // Asked for by name, a run this worker cannot execute is an error.
    let o = mirage(&db, &["worker", "--once", "--run", "run-elsewhere"]);
    assert!(!o.status.success());
}

/// The run is done the moment its last trial is: a process told to stop right after (here,
/// from the last trial's own finish) leaves no finished run active for the next start.
#[tokio::test]
async fn a_run_is_done_when_its_last_trial_is_even_if_the_process_stops_then() {
    let (store, world, run, _) = planned_run(3, "oracle").await;
    let stop = tokio_util::sync::CancellationToken::new();
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let on_finish: server::runs::OnFinish = {
        let (stop, finished) = (stop.clone(), finished.clone());
        std::sync::Arc::new(move |_, _| {
            if finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == 3 {
                stop.cancel();
            }
        })
    };
    let options = server::runs::PoolOptions { concurrency: 1, stop, ..Default::default() };
    server::runs::execute(store.clone(), world, &run, options, on_finish).await.expect("the pool stops");
    assert_eq!(finished.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(store.run(&run).await.expect("run").status, server::db::RunStatus::Done);
}
