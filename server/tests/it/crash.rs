//! A run launched from the dashboard survives its server: killed (SIGKILL) or stopped
//! (SIGTERM) mid-run, the next `mirage serve` on the same database finishes it, every trial
//! exactly once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use server::db::{RunStatus, RunStore, SqlStore, database_url};

use crate::support::temp_path;
use app::model::RunId;

/// `mirage serve` on a free loopback port; returns the child and its base URL.
fn serve(db: &Path, config: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mirage"))
        .arg("--db")
        .arg(db)
        .args(["serve", "--addr", "127.0.0.1:0", "--config"])
        .arg(config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mirage serve");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("listening on http://") {
        line.clear();
        assert!(out.read_line(&mut line).expect("a line") > 0, "mirage serve ended before listening");
    }
    let base = line.split("listening on ").nth(1).expect("address").split_whitespace().next().expect("url").to_string();
    // Keep reading its output so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    (child, base)
}

fn launch(rt: &tokio::runtime::Runtime, base: &str) -> String {
    rt.block_on(async {
        let resp = server::llm::client_builder()
            .build()
            .expect("client")
            .post(format!("{base}/api/start_run"))
            .header("x-mirage-client", "test")
            .form(&[
                ("form[tasks]", "all"),
                ("form[agents]", "oracle,explorer"),
                ("form[levels]", "L0"),
                ("form[conditions]", "raw"),
                ("form[seeds]", "0"),
                ("form[concurrency]", "3"),
            ])
            .send()
            .await
            .expect("launch");
        assert_eq!(resp.status(), 200);
        resp.json().await.expect("run id")
    })
}

fn wait_until(rt: &tokio::runtime::Runtime, store: &SqlStore, run: &str, what: &str, ok: impl Fn(i64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let p = rt.block_on(store.progress(&RunId::from(run))).expect("progress");
        if ok(p.done) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {p:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write_config(dir: &tempfile::TempDir, lease_secs: u64) -> std::path::PathBuf {
    let path = temp_path(dir, "mirage.toml");
    std::fs::write(&path, format!("[server]\nrun_lease_secs = {lease_secs}\n")).expect("config");
    path
}

/// Every trial of the run finished once: done, contiguous steps ending in one verdict,
/// claimed at most twice.
fn finished_exactly_once(rt: &tokio::runtime::Runtime, store: &SqlStore, run: &str) {
    let p = rt.block_on(store.progress(&RunId::from(run))).expect("progress");
    assert_eq!((p.done, p.error, p.queued, p.running), (1500, 0, 0, 0), "{p:?}");
    assert_eq!(rt.block_on(store.run(&RunId::from(run))).expect("run").status, RunStatus::Done);
    for trial in rt.block_on(store.trials(&RunId::from(run))).expect("trials") {
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
    }
}

#[test]
fn a_dashboard_run_killed_with_its_server_is_finished_by_the_next_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, config) = (temp_path(&dir, "crash.db"), write_config(&dir, 2));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (mut child, base) = serve(&db, &config);
    let run = launch(&rt, &base);
    let store =
        rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("connect");
    wait_until(&rt, &store, &run, "the run made no progress", |done| done >= 100);
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let at_kill = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
    assert!(at_kill.queued > 0, "killed before the end: {at_kill:?}");

    // The next server requeues the dead leases once they expire and finishes the run.
    let (mut child, _) = serve(&db, &config);
    wait_until(&rt, &store, &run, "the restarted server did not finish the run", |done| done == 1500);
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(store.run(&RunId::from(&run))).expect("run").status != RunStatus::Done {
        assert!(Instant::now() < deadline, "the run stayed active");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("stop");
    child.wait().expect("reaped");
    finished_exactly_once(&rt, &store, &run);
}

#[test]
fn a_server_stopped_with_sigterm_gives_its_trials_back_and_the_next_resumes_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Leases of half a minute: a restart that waited for them would be seen waiting.
    let (db, config) = (temp_path(&dir, "term.db"), write_config(&dir, 30));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (mut child, base) = serve(&db, &config);
    let run = launch(&rt, &base);
    let store =
        rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("connect");
    wait_until(&rt, &store, &run, "the run made no progress", |done| done >= 100);
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill -TERM");
    assert!(term.success());
    let stopped = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(stopped.elapsed() < Duration::from_secs(20), "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "a clean stop: {status:?}");
    let at_stop = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
    assert_eq!(at_stop.running, 0, "every running trial was given back: {at_stop:?}");
    assert!(at_stop.queued > 0, "stopped before the end: {at_stop:?}");
    assert_eq!(rt.block_on(store.run(&RunId::from(&run))).expect("run").status, RunStatus::Active);

    // Resumed at once: trials finish within seconds, well inside the 30 s leases.
    let (mut child, _) = serve(&db, &config);
    let resumed = Instant::now();
    wait_until(&rt, &store, &run, "the restarted server did not resume", |done| done > at_stop.done);
    assert!(resumed.elapsed() < Duration::from_secs(15), "resumed after {:?}", resumed.elapsed());
    wait_until(&rt, &store, &run, "the restarted server did not finish the run", |done| done == 1500);
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(store.run(&RunId::from(&run))).expect("run").status != RunStatus::Done {
        assert!(Instant::now() < deadline, "the run stayed active");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("stop");
    child.wait().expect("reaped");
    finished_exactly_once(&rt, &store, &run);
}

/// A run whose trials all finished but which stayed active (its last trial's process died
/// between the finish and the close, or an expired lease gave the trial up) is a problem
/// `runs check` names, and the next worker pass closes it.
#[tokio::test]
async fn a_finished_run_left_active_is_named_and_closed_by_the_next_worker() {
    use crate::support::{mirage, mirage_beside};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("m.db");
    let o = mirage_beside(&db, &["run", "--tasks", "forum-example-01", "--agent", "oracle", "--levels", "L0"]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout).to_string();
    let run = said.split_whitespace().find(|w| w.starts_with("run-")).expect("a run id").trim_end_matches(':');
    let run = RunId::from(run);
    {
        let store = SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url")).await.expect("store");
        store.set_run_status(&run, RunStatus::Active).await.expect("left active");
    }
    let o = mirage_beside(&db, &["runs", "check", run.as_str()]).await;
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("every trial finished but the run is still active"));
    let o = tokio::task::spawn_blocking(move || mirage(&db, &["worker", "--once"])).await.expect("ran");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let store = SqlStore::connect(&database_url(dir.path().join("m.db").to_str().expect("utf-8")).expect("url"))
        .await
        .expect("store");
    assert_eq!(store.run(&run).await.expect("run").status, RunStatus::Done);
}
