//! The SQL store on SQLite, and on PostgreSQL when `MIRAGE_TEST_POSTGRES_URL` names a
//! server (CI starts one): the same queries must work on both.

use server::corpus::generate::corpus;
use server::db::{SqlStore, Store, StoreError};

async fn exercise(store: &SqlStore) {
    let tasks: Vec<_> = corpus().into_iter().take(5).collect();
    store.insert_tasks(&tasks[..3], "test").await.expect("insert");
    assert_eq!(store.task_count().await.expect("count"), 3);
    let err = store.insert_tasks(&tasks[2..], "test").await.expect_err("duplicate");
    assert!(matches!(err, StoreError::Conflict(ref m) if m.contains(&tasks[2].id)), "{err}");
    assert_eq!(store.task_count().await.expect("count"), 3, "a failed insert stores nothing");
    store.insert_tasks(&tasks[3..], "test").await.expect("insert rest");
    let back = store.all_tasks().await.expect("all");
    assert_eq!(back, tasks, "tasks come back whole and in order");
    let ids = vec![tasks[0].id.clone(), "nope".to_string()];
    assert_eq!(store.existing_task_ids(&ids).await.expect("ids"), vec![tasks[0].id.clone()]);

    assert_eq!(store.meta("k").await.expect("meta"), None);
    store.set_meta("k", "1").await.expect("set");
    store.set_meta("k", "2").await.expect("set again");
    assert_eq!(store.meta("k").await.expect("meta").as_deref(), Some("2"));

    let ep = store.create_episode(&tasks[0].id, "L0", "raw").await.expect("episode");
    assert_eq!(ep.status, "open");
    assert_eq!(store.append_event(&ep.episode_id, "visit", Some("/a"), None).await.expect("event"), 1);
    assert_eq!(store.append_event(&ep.episode_id, "visit", Some("/b"), Some("200")).await.expect("event"), 2);
    assert!(store.finish_episode(&ep.episode_id, "DENY", "because").await.expect("finish"));
    assert!(!store.finish_episode(&ep.episode_id, "APPROVE", "again").await.expect("finish"));
    let ep = store.episode(&ep.episode_id).await.expect("episode");
    assert_eq!((ep.status.as_str(), ep.verdict.as_deref()), ("done", Some("DENY")));
    let events = store.episode_events(&ep.episode_id).await.expect("events");
    assert_eq!(events.iter().map(|e| e.url.clone().unwrap_or_default()).collect::<Vec<_>>(), ["/a", "/b"]);
    assert!(matches!(store.episode("missing").await, Err(StoreError::NotFound(_))));
}

#[tokio::test]
async fn sqlite_store_round_trips_tasks_meta_and_episodes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(dir.path().join("s.db").to_str().expect("utf-8")).expect("url");
    exercise(&SqlStore::connect(&url).await.expect("connect")).await;
}

#[tokio::test]
async fn in_memory_sqlite_works_for_quick_tries() {
    exercise(&SqlStore::connect("sqlite::memory:").await.expect("connect")).await;
}

#[tokio::test]
async fn postgres_store_round_trips_tasks_meta_and_episodes() {
    let Ok(base) = std::env::var("MIRAGE_TEST_POSTGRES_URL") else {
        eprintln!("MIRAGE_TEST_POSTGRES_URL is not set; the PostgreSQL run happens in CI");
        return;
    };
    // A fresh database per run so that reruns start clean.
    let admin = SqlStore::connect(&base).await.expect("connect to the PostgreSQL test server");
    drop(admin);
    let name = format!("mirage_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&base).await.expect("admin connection");
    sqlx::query(&format!("create database {name}")).execute(&mut conn).await.expect("create database");
    let url = match base.rsplit_once('/') {
        Some((prefix, _)) => format!("{prefix}/{name}"),
        None => panic!("MIRAGE_TEST_POSTGRES_URL must end with a database name"),
    };
    exercise(&SqlStore::connect(&url).await.expect("connect")).await;
}
