//! The live adapter browsing Mirage's own sites over real HTTP.

use server::agent::baselines::{Explorer, Oracle};
use server::agent::episode::{MemorySink, Outcome, run_trial_on};
use server::agent::live::LiveSite;
use server::corpus::urls::graph_nodes;

use crate::support::TestApp;

#[tokio::test]
async fn the_oracle_solves_tasks_through_the_live_adapter() {
    let app = TestApp::start().await;
    let tasks: Vec<_> = app.state.world.tasks().step_by(50).cloned().collect();
    assert!(tasks.len() >= 15);
    for task in tasks {
        let start = reqwest::Url::parse(&app.url(&task.start_url)).expect("url");
        let mut site = LiveSite::new(app.client.clone(), task.domain, start);
        let mut sink = MemorySink::default();
        let (steps, outcome) = run_trial_on(&mut site, &task, "raw", &Oracle, vec![], &mut sink).await.expect("trial");
        assert!(steps.iter().all(|s| s.observation.contains("Status: 200")), "{}: every page answered", task.id);
        let shop = task.domain == server::corpus::Domain::Shop;
        for node in graph_nodes(&task.graph) {
            let credited = |url: &str| node.credited_by(url, shop, app.state.world.content().contains(url));
            assert!(steps.iter().any(|s| credited(&s.url)), "{}: {} not visited", task.id, node.norm());
        }
        assert_eq!(
            outcome,
            Outcome::Verdict { verdict: task.verdict.optimal.clone(), rationale: task.justification.clone() }
        );
    }
}

#[tokio::test]
async fn the_explorer_follows_numbered_links_on_live_pages_and_stays_on_the_site() {
    let app = TestApp::start().await;
    let task = app.state.world.tasks().find(|t| t.domain == server::corpus::Domain::Forum).expect("task").clone();
    let start = reqwest::Url::parse(&app.url(&task.start_url)).expect("url");
    let mut site = LiveSite::new(app.client.clone(), task.domain, start);
    let mut sink = MemorySink::default();
    let (steps, outcome) = run_trial_on(&mut site, &task, "raw", &Explorer, vec![], &mut sink).await.expect("trial");
    assert!(steps.len() > 3, "it read several pages");
    assert!(steps[0].observation.contains("Links:\n[1] "), "{}", steps[0].observation);
    assert!(steps.iter().all(|s| s.url.starts_with("/forum")), "navigation stays on the forum");
    assert!(matches!(outcome, Outcome::Verdict { .. }));
}
