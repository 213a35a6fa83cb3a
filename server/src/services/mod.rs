//! Implements the ports of `app::ssr` on top of the world and the store.

pub mod annotate;
mod board;
pub mod compare;
pub mod effects;
pub mod error;
pub mod execution;
pub mod geo;
pub mod insights;
pub mod origin;
pub mod pulse;
mod queue_view;
pub mod replays;
pub mod runs;
pub mod siblings;

use std::sync::Arc;

use app::error::AppError;
use app::model::{InjectionView, PageView, RunId, TaskDetail, TaskFilter, TaskList, TaskSummary};
use app::ssr::{Corpus, Services};

use crate::config::Config;
use crate::corpus::Task;
use crate::corpus::urls::normalise;
use crate::db::Store;
use crate::env::World;

/// The corpus port, reading the in-memory world.
pub struct CorpusService {
    world: Arc<World>,
}

/// Everything the ports are built from (the application state's shared parts).
pub struct Parts {
    pub world: Arc<World>,
    pub store: Arc<dyn Store>,
    pub config: Arc<Config>,
    pub corpus_version: String,
    pub insights: Arc<insights::InsightsService>,
    pub geo: Arc<geo::GeoService>,
    /// A server's search index and executor; `None` where pages are only rendered (a
    /// bundle), whose search and launch then say so.
    pub search: Option<Arc<crate::search::TrajectoryIndex>>,
    pub executor: Option<Arc<execution::Executor>>,
}

/// The ports of `app::ssr`, for one request's context.
pub fn services(parts: Parts) -> Services {
    let Parts { world, store, config, corpus_version, insights, search, geo, executor } = parts;
    Services {
        corpus: Arc::new(CorpusService { world: world.clone() }),
        runs: Arc::new(runs::RunsService {
            store: store.clone(),
            world: world.clone(),
            config,
            corpus_version,
            executor,
        }),
        insights: insights.clone(),
        compare: insights.clone(),
        search: Arc::new(SearchService { index: search }),
        annotate: Arc::new(annotate::AnnotateService { store, world, insights }),
        geo,
    }
}

/// The search port over the trajectory index.
pub struct SearchService {
    index: Option<Arc<crate::search::TrajectoryIndex>>,
}

/// Most results one search returns.
pub const SEARCH_LIMIT: usize = 50;

#[async_trait::async_trait]
impl app::ssr::Search for SearchService {
    async fn search(&self, query: String, kind: Option<String>) -> Result<app::model::SearchResults, AppError> {
        let kind = kind.filter(|k| !k.is_empty());
        if let Some(k) = &kind
            && !crate::search::KINDS.contains(&k.as_str())
        {
            return Err(AppError::Invalid {
                field: "kind".into(),
                message: format!("{k:?} is not one of {}", crate::search::KINDS.join(", ")),
            });
        }
        let Some(index) = &self.index else {
            return Err(AppError::Conflict(
                "search needs a server (`mirage serve`); these pages were only rendered".into(),
            ));
        };
        index.results(&query, kind.as_deref(), SEARCH_LIMIT).await.map_err(fail)
    }
}

pub use error::fail;

fn summary(t: &Task) -> TaskSummary {
    TaskSummary {
        id: t.id.clone(),
        domain: t.domain.as_str().to_string(),
        category: t.category.clone(),
        difficulty: t.difficulty.as_str().to_string(),
        surface_contradiction: t.surface_contradiction,
        variant: t.variant.map(|v| v.as_str().to_string()),
        optimal: t.verdict.optimal.clone(),
        graph_size: crate::corpus::urls::graph_nodes(&t.graph).len(),
        ticket: t.ticket.raw.clone(),
    }
}

fn matches(t: &Task, f: &TaskFilter) -> bool {
    f.domain.as_deref().is_none_or(|d| t.domain.as_str() == d)
        && f.category.as_deref().is_none_or(|c| t.category == c)
        && f.difficulty.as_deref().is_none_or(|d| t.difficulty.as_str() == d)
        && f.contradiction.is_none_or(|c| t.surface_contradiction == c)
}

fn page_view(t: &Task, url: &str) -> PageView {
    let key = normalise(url);
    let page = t.pages.iter().find(|(u, _)| normalise(u) == key).map(|(_, p)| p);
    PageView {
        url: url.to_string(),
        title: page.map_or_else(|| "(page not defined by the task)".to_string(), |p| p.title.clone()),
        text: page.map(|p| p.text.clone()).unwrap_or_default(),
        facts: t.gold_facts.iter().filter(|f| normalise(&f.url) == key).map(|f| f.text.clone()).collect(),
    }
}

fn detail(t: &Task) -> TaskDetail {
    let start = normalise(&t.start_url);
    TaskDetail {
        summary: summary(t),
        tickets: vocab::Condition::ALL.iter().map(|&c| (c.to_string(), t.ticket.get(c).to_string())).collect(),
        surface: page_view(t, &t.start_url),
        hidden: t.graph.iter().filter(|u| normalise(u) != start).map(|u| page_view(t, u)).collect(),
        graph: t.graph.clone(),
        gold_facts: t.gold_facts.iter().map(|f| (f.text.clone(), f.url.clone())).collect(),
        acceptable: t.verdict.acceptable.iter().map(|(a, c)| (a.clone(), *c)).collect(),
        harmful: t.verdict.harmful.clone(),
        justification: t.justification.clone(),
        injection_points: t
            .injection_points
            .iter()
            .map(|p| InjectionView {
                id: p.id.clone(),
                url: p.url.clone(),
                party: p.party.clone(),
                goal: p.goal.clone(),
                text: p.text.clone(),
            })
            .collect(),
        distractors: t.distractors.iter().map(|u| page_view(t, u)).collect(),
    }
}

#[async_trait::async_trait]
impl Corpus for CorpusService {
    async fn list(&self, filter: TaskFilter) -> Result<TaskList, AppError> {
        let mut categories: Vec<(String, String, usize)> = Vec::new();
        for t in self.world.tasks() {
            let (d, c) = (t.domain.as_str(), t.category.as_str());
            match categories.iter_mut().find(|(dd, cc, _)| dd == d && cc == c) {
                Some(entry) => entry.2 += 1,
                None => categories.push((d.to_string(), c.to_string(), 1)),
            }
        }
        let tasks = self.world.tasks().filter(|t| matches(t, &filter)).map(|t| summary(t)).collect();
        Ok(TaskList { tasks, corpus_size: self.world.task_count(), categories })
    }

    async fn get(&self, id: String) -> Result<TaskDetail, AppError> {
        let task = self.world.task(&id).ok_or_else(|| AppError::NotFound(format!("task {id}")))?;
        Ok(detail(task))
    }
}

/// How many annotators must agree on a disputed label of a run.
pub async fn annotators(store: &dyn crate::db::Store, run_id: &RunId) -> Result<usize, app::error::AppError> {
    let run = store.run(run_id).await.map_err(|e| fail(e.dangling()))?;
    Ok(crate::runs::RunKind::of(&run).map_err(fail)?.annotators())
}
