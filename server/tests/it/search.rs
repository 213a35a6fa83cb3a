//! The search index on disk: reopened where it stopped (no trial indexed twice, old trials
//! found before anything is followed), task documents replaced when the corpus changes,
//! and rebuilt for another database.

use server::search::TrajectoryIndex;

use crate::support::TestApp;

#[tokio::test]
async fn the_search_index_reopens_where_it_stopped() {
    let app = TestApp::start().await;
    let run = app.launch("CROSS_FORUM_SPAM", "explorer", "L0").await;
    app.wait_for(&run).await;
    let (store, world) = (app.state.store.as_ref(), app.state.world.as_ref());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mirage.db.search");
    let thoughts = |idx: &TrajectoryIndex| idx.search("unread page", Some("thought"), 1000).expect("search").len();
    let tasks = |idx: &TrajectoryIndex| idx.search("refund", Some("task"), 10_000).expect("search").len();

    // One trial's finish is committed late, stamped before finishes already indexed (as
    // when trials finish concurrently): held back, then put back one second before the last.
    let url = server::db::database_url(app.db.to_str().expect("utf-8")).expect("url");
    let db = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
    let late: (String, i64) =
        sqlx::query_as("select trial_id, finished_at from trial where run_id = $1 order by finished_at limit 1")
            .bind(&run)
            .fetch_one(&db)
            .await
            .expect("a trial");
    sqlx::query("update trial set state = 'running' where trial_id = $1")
        .bind(&late.0)
        .execute(&db)
        .await
        .expect("hold");
    let (found, task_docs) = {
        let idx =
            std::sync::Arc::new(TrajectoryIndex::open(world, "corpus-1", store, Some(&path)).await.expect("open"));
        assert_eq!(thoughts(&idx), 0, "nothing followed yet");
        assert_eq!(idx.follow(store).await.expect("follow"), 29);
        let last: i64 = sqlx::query_scalar("select max(finished_at) from trial").fetch_one(&db).await.expect("max");
        sqlx::query("update trial set state = 'done', finished_at = $1 where trial_id = $2")
            .bind(last - 1_000)
            .bind(&late.0)
            .execute(&db)
            .await
            .expect("late finish");
        assert_eq!(idx.follow(store).await.expect("follow"), 1, "the late finish is not passed over");
        assert_eq!(idx.follow(store).await.expect("follow"), 0, "nor indexed twice");
        (thoughts(&idx), tasks(&idx))
    };
    assert!(found > 0 && task_docs > 0);
    assert!(path.join("meta.json").exists(), "tantivy's own directory beside the database");

    // Reopened: the old trials are there before any follow, and none is indexed again.
    let idx = std::sync::Arc::new(TrajectoryIndex::open(world, "corpus-1", store, Some(&path)).await.expect("reopen"));
    assert_eq!((idx.trials().await, thoughts(&idx)), (30, found));
    assert_eq!(idx.follow(store).await.expect("follow"), 0, "nothing to index again");
    let run2 = app.launch("CROSS_FORUM_SPAM", "surface", "L0").await;
    app.wait_for(&run2).await;
    assert_eq!(idx.follow(store).await.expect("follow"), 30, "only the new run's trials");
    drop(idx);

    // A new corpus version replaces the task documents (no duplicates), keeping the trials.
    let idx =
        std::sync::Arc::new(TrajectoryIndex::open(world, "corpus-2", store, Some(&path)).await.expect("new corpus"));
    assert_eq!((idx.trials().await, tasks(&idx), thoughts(&idx)), (60, task_docs, found));
    drop(idx);

    // Another database: the folder's index is not its own, so it is rebuilt.
    let other_dir = tempfile::tempdir().expect("tempdir");
    let url =
        server::db::database_url(crate::support::temp_path(&other_dir, "o.db").to_str().expect("utf-8")).expect("url");
    let other = server::db::SqlStore::connect(&url).await.expect("connect");
    let idx =
        std::sync::Arc::new(TrajectoryIndex::open(world, "corpus-2", &other, Some(&path)).await.expect("other db"));
    assert_eq!((idx.trials().await, thoughts(&idx)), (0, 0));
    assert_eq!(tasks(&idx), task_docs, "task documents written afresh");
}
