//! The server-rendered dashboard pages (the browser half is covered by the e2e suite).

use crate::support::TestApp;

#[tokio::test]
async fn tasks_page_filters_by_the_query() {
    let app = TestApp::start().await;
    let (status, body) = app.text("/tasks?domain=wiki&category=FALSE_ALARM").await;
    assert_eq!(status, 200);
    assert!(body.contains("60 of 750 tasks"), "count line missing");
    assert!(body.contains("wiki-false-alarm-"));
    assert!(!body.contains("shop-wardrobing-"));
    let (_, body) = app.text("/tasks?contradiction=false&domain=shop").await;
    assert!(!body.contains(">misleading<"));
}

#[tokio::test]
async fn a_task_page_shows_layers_and_links_graph_nodes_to_live_pages() {
    let app = TestApp::start().await;
    let task = app.state.world.task("shop-wardrobing-001").expect("task").clone();
    let (status, body) = app.text("/tasks/shop-wardrobing-001").await;
    assert_eq!(status, 200);
    for section in
        ["Tickets", "Surface layer", "Hidden layer", "Investigation graph", "Injection points", "Distractors"]
    {
        assert!(body.contains(section), "{section}");
    }
    for node in &task.graph {
        assert!(body.contains(&format!("href=\"{node}\"")), "{node}");
    }
    for fact in &task.gold_facts {
        assert!(body.contains(&fact.text));
    }
}

#[tokio::test]
async fn unknown_tasks_and_pages_are_404() {
    let app = TestApp::start().await;
    let (status, body) = app.text("/tasks/no-such-task").await;
    assert_eq!(status, 404);
    assert!(body.contains("task no-such-task not found"));
    assert_eq!(app.get("/definitely/not/here").await.status(), 404);
    assert_eq!(app.get("/healthz").await.status(), 200);
}
