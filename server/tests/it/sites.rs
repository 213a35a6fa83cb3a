//! The three sites over real HTTP.

use std::sync::Arc;

use server::corpus::urls::normalise;
use tokio::sync::Semaphore;

use crate::support::TestApp;

#[tokio::test]
async fn every_graph_node_of_every_task_answers_200_over_http() {
    let app = Arc::new(TestApp::start().await);
    let mut urls: Vec<(String, String)> = Vec::new();
    for task in app.state.world.tasks() {
        for node in &task.graph {
            urls.push((task.id.clone(), node.clone()));
        }
        urls.push((task.id.clone(), task.start_url.clone()));
    }
    assert!(urls.len() > 2000, "expected the full corpus, got {} urls", urls.len());
    let gate = Arc::new(Semaphore::new(16));
    let mut handles = Vec::new();
    for (task, url) in urls {
        let app = app.clone();
        let permit = gate.clone().acquire_owned().await.expect("semaphore open");
        handles.push(tokio::spawn(async move {
            let status = app.get(&url).await.status().as_u16();
            drop(permit);
            (task, url, status)
        }));
    }
    let mut failures = Vec::new();
    for h in handles {
        let (task, url, status) = h.await.expect("join");
        if status != 200 {
            failures.push(format!("{task}: {url} -> {status}"));
        }
    }
    assert!(failures.is_empty(), "{} failures, e.g. {:?}", failures.len(), &failures[..failures.len().min(5)]);
}

#[tokio::test]
async fn unknown_site_urls_are_real_404_pages() {
    let app = TestApp::start().await;
    for path in ["/shop/admin/sales/order/view/order_id/1/", "/forum/post/1/nothing", "/wiki/A/No_such_article"] {
        let (status, body) = app.text(path).await;
        assert_eq!(status, 404, "{path}");
        assert!(body.contains("Page not found"), "{path}: {body}");
    }
}

#[tokio::test]
async fn pages_render_as_html_and_as_text_observations_from_the_same_data() {
    let app = TestApp::start().await;
    let task = app.state.world.tasks().find(|t| t.domain == server::corpus::Domain::Shop).expect("a shop task").clone();
    let page = &task.pages[&task.start_url];
    let resp = app.get(&task.start_url).await;
    let csp = resp.headers().get("content-security-policy").expect("CSP header").to_str().expect("ascii").to_string();
    assert!(csp.contains("default-src 'none'"));
    let html = resp.text().await.expect("body");
    assert!(html.contains("<h1>") && html.contains(&page.title));
    let (status, text) = app.text(&format!("{}?format=text", task.start_url)).await;
    assert_eq!(status, 200);
    assert!(text.contains(&format!("URL: {}", normalise(&task.start_url))));
    for (i, link) in page.links.iter().enumerate() {
        assert!(text.contains(&format!("[{}] {} -> {}", i + 1, link.label, link.url)), "{text}");
    }
    assert!(!text.contains("Actions:"), "canonical pages offer no verdict actions");
}

#[tokio::test]
async fn site_homes_queues_and_forum_listings_link_to_task_pages() {
    let app = TestApp::start().await;
    let (_, dashboard) = app.text("/shop/admin/dashboard?format=text").await;
    assert!(dashboard.contains("/shop/admin/sales/order/view/order_id/"));
    let (_, queue) = app.text("/wiki/review/queue?format=text").await;
    assert_eq!(queue.matches("/wiki/review/case/").count(), 300);
    let (status, forum) = app.text("/forum/f/localnews?format=text").await;
    assert_eq!(status, 200);
    assert!(forum.contains("/forum/post/"), "{forum}");
}

#[tokio::test]
async fn wiki_search_finds_articles_by_their_words() {
    let app = TestApp::start().await;
    let task = app.state.world.tasks().find(|t| t.category == "CROSS_REFERENCE_REQUIRED").expect("task").clone();
    let (url, page) = task
        .pages
        .iter()
        .find(|(u, _)| u.starts_with("/wiki/A/") && task.graph.contains(u))
        .expect("an article in the graph");
    let word = page.title.split_whitespace().next().expect("title word");
    let (status, body) = app.text(&format!("/wiki/search?pattern={word}&format=text")).await;
    assert_eq!(status, 200);
    assert!(body.contains(&normalise(url)) || body.contains(url.as_str()), "{body}");
    let (status, _) = app.text("/wiki/search?pattern=%22unbalanced%20(quote").await;
    assert_eq!(status, 200, "malformed queries are searched leniently");
}

#[tokio::test]
async fn every_response_gets_the_security_headers_from_one_layer() {
    let app = TestApp::start().await;
    let task = app.state.world.tasks().next().expect("task").clone();
    // A site page, a JSON error of the episode API, and an episode URL that does not exist.
    for path in [task.start_url.as_str(), "/api/episodes/nope", "/ep/nope/shop/admin/dashboard"] {
        let resp = app.get(path).await;
        let h = resp.headers().clone();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["content-security-policy"], server::http::PAGE_POLICY, "{path}");
        if path != task.start_url {
            assert_eq!(resp.status(), 404, "{path}");
            let body: serde_json::Value = resp.json().await.expect("json");
            assert_eq!(body["error"], "episode nope not found", "{path}");
        }
    }
    // A dashboard page keeps its own policy, with the response's script nonce.
    let resp = app.get("/tasks").await;
    let csp = resp.headers()["content-security-policy"].to_str().expect("ascii").to_string();
    assert!(csp.contains("'nonce-"), "{csp}");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
}
