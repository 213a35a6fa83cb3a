//! A worker shares itself between runs: a small run launched after a large one is not held
//! up until the large one is done.

use server::db::{RunStore, SqlStore, database_url};

use crate::support::{mirage, temp_path};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Plans a run without executing it; returns its id.
fn detached(db: &std::path::Path, agents: &str, tasks: &str) -> String {
    let o = mirage(db, &["run", "--agent", agents, "--tasks", tasks, "--levels", "L0", "--detach"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout).trim().to_string()
}

/// The order in which trials finished, as run ids.
fn finish_order(db: &std::path::Path) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store =
        rt.block_on(SqlStore::connect(&database_url(db.to_str().expect("utf-8")).expect("url"))).expect("connect");
    rt.block_on(store.finished_after((0, ""), 100_000))
        .expect("finished")
        .into_iter()
        .map(|(t, _)| t.run_id.to_string())
        .collect()
}

#[test]
fn a_worker_takes_runs_in_turns_unless_told_to_finish_the_oldest_first() {
    for (order, small_early) in [("round-robin", true), ("oldest-first", false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = temp_path(&dir, "f.db");
        let large = detached(&db, "explorer,oracle", "forum");
        let small = detached(&db, "oracle", "shop-example-01,forum-example-02,wiki-example-03");
        let o = mirage(&db, &["worker", "--once", "--concurrency", "2", "--order", order, "--slice", "4"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let finished = finish_order(&db);
        let large_total = finished.iter().filter(|r| **r == large).count();
        let small_last = finished.iter().rposition(|r| *r == small).expect("the small run finished");
        let large_before = finished[..small_last].iter().filter(|r| **r == large).count();
        assert!(large_total > 20, "{order}: the large run has {large_total} trials");
        if small_early {
            assert!(
                large_before * 2 < large_total,
                "{order}: the small run waited for {large_before} of the large run's {large_total} trials"
            );
        } else {
            assert_eq!(large_before, large_total, "{order}: the oldest run is finished first");
        }
    }
}
