//! An import killed with SIGKILL half-way leaves an active run that nothing would ever
//! finish; the next worker (or server) finds it once its importer has been silent long
//! enough and cancels it, keeping what was stored, and goes on.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use server::db::{RunStatus, RunStore, SqlStore, database_url};

use crate::support::{mirage, temp_path};

/// A trajectory file of `n` trials of one built-in task, each with a page of text, so that
/// storing it takes long enough to be interrupted.
fn big_file(path: &std::path::Path, n: u32) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("file"));
    let page = "An order page with a long history. ".repeat(60);
    for seed in 0..n {
        let line = serde_json::json!({
            "trial_id": format!("t{seed}"), "task_id": "shop-wardrobing-001", "agent": "slow", "level": "L0", "condition": "raw",
            "seed": seed, "status": "done",
            "steps": [
                {"url": "/shop/admin/dashboard", "observation": page, "thought": "looking",
                 "action": {"type": "goto", "url": "/shop/admin/orders"}, "latency_ms": 1},
                {"url": "/shop/admin/orders", "observation": page, "thought": "deciding",
                 "action": {"type": "verdict", "verdict": "APPROVE", "rationale": "fine"}, "latency_ms": 1}
            ],
            "verdict": {"action": "APPROVE", "rationale": "fine"}
        });
        writeln!(out, "{line}").expect("write");
    }
}

#[test]
fn an_import_killed_half_way_is_cancelled_by_the_next_worker_and_the_workers_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = temp_path(&dir, "i.db");
    assert!(mirage(&db, &["runs", "list"]).status.success(), "the database is created");
    let file = temp_path(&dir, "big.jsonl");
    big_file(&file, 6000);
    let mut import = Command::new(env!("CARGO_BIN_EXE_mirage"))
        .arg("--db")
        .arg(&db)
        .args(["runs", "import", file.to_str().expect("utf-8")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("import");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store = rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("db");
    // Killed as soon as its run exists, before it can have stored every trial.
    let started = Instant::now();
    let run = loop {
        if let Some(run) = rt.block_on(store.runs()).expect("runs").pop() {
            import.kill().expect("kill -9");
            break run;
        }
        assert!(import.try_wait().expect("wait").is_none(), "the import ended before its run was seen");
        assert!(started.elapsed() < Duration::from_secs(120), "the import never created its run");
        std::thread::sleep(Duration::from_millis(5));
    };
    import.wait().expect("reaped");
    let run = rt.block_on(store.run(&run.run_id)).expect("run");
    assert_eq!(run.status, RunStatus::Active, "killed before it finished (make the file larger if not)");
    let id = run.run_id.to_string();

    // A worker soon after leaves the import alone: it might still be storing.
    let o = mirage(&db, &["worker", "--once"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rt.block_on(store.run(&run.run_id)).expect("run").status, RunStatus::Active);

    // Ten minutes of silence later (the row's clock is moved back), it is cancelled.
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await.expect("sqlite");
        sqlx::query("update run set updated_at = updated_at - 660000 where run_id = $1")
            .bind(&id)
            .execute(&pool)
            .await
            .expect("backdate");
    });
    let o = mirage(&db, &["worker", "--once"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&id) && err.contains("interrupted import"), "the worker names the run: {err}");
    assert_eq!(rt.block_on(store.run(&run.run_id)).expect("run").status, RunStatus::Cancelled);
    let p = rt.block_on(store.progress(&run.run_id)).expect("progress");
    assert_eq!((p.queued, p.running), (0, 0), "nothing left waiting: {p:?}");
    assert!(p.cancelled > 0 && p.done < 6000, "{p:?}");
    let o = mirage(&db, &["runs", "check", &id]);
    assert!(o.status.success(), "the run as stored is sound: {}", String::from_utf8_lossy(&o.stdout));
}
