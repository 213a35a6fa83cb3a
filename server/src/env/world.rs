//! One world per site, built from every stored task: a URL → page index, backlinks for
//! index pages (a forum's listing, the review queue), and the wiki's full-text index (built
//! on the first search: most worlds, a scorer's among them, are never searched or only
//! rarely).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

use super::wiki_index::{Hit, WikiIndex};
use crate::corpus::model::{Domain, PageSpec, Task};
use crate::corpus::urls::{ContentPages, normalise};

/// A page of the world and the task that defined it first.
#[derive(Clone, Debug)]
pub struct WorldPage {
    pub domain: Domain,
    pub url: String,
    pub owner: String,
    pub page: PageSpec,
}

/// What a path resolves to.
pub enum Resolved<'a> {
    /// A page some task defines.
    Page(&'a WorldPage),
    /// No page, but other pages link here: an index listing those pages.
    Index { domain: Domain, title: String, links: Vec<(String, String)> },
}

/// The immutable world served to people and agents. Rebuilt whole after an import.
pub struct World {
    // Looked up for every step a scorer reads: hashed the fast way (the keys are the tasks'
    // URLs, which the operator's corpus decides, not a trajectory file).
    pages: FxHashMap<String, WorldPage>,
    backlinks: FxHashMap<String, BTreeMap<String, String>>,
    tasks: BTreeMap<String, Arc<Task>>,
    task_order: Vec<String>,
    content: ContentPages,
    /// The wiki's search index, or why it could not be built.
    wiki: OnceLock<Result<WikiIndex, String>>,
}

impl World {
    /// Indexes the tasks; the first task to define a URL owns it (the validator ensures that
    /// later definitions are identical).
    pub fn build(tasks: Vec<Task>) -> anyhow::Result<World> {
        World::build_shared(tasks.into_iter().map(Arc::new).collect())
    }

    /// [`World::build`] of tasks already shared, which other work may read meanwhile.
    pub fn build_shared(tasks: Vec<Arc<Task>>) -> anyhow::Result<World> {
        let mut pages = FxHashMap::default();
        let mut backlinks: FxHashMap<String, BTreeMap<String, String>> = FxHashMap::default();
        let mut by_id = BTreeMap::new();
        let mut task_order = Vec::new();
        for task in tasks {
            for (url, page) in &task.pages {
                let key = normalise(url);
                for link in &page.links {
                    let target = normalise(&link.url);
                    backlinks.entry(target).or_default().insert(key.clone(), page.title.clone());
                }
                pages.entry(key).or_insert_with(|| WorldPage {
                    domain: task.domain,
                    url: url.clone(),
                    owner: task.id.clone(),
                    page: page.clone(),
                });
            }
            task_order.push(task.id.clone());
            by_id.insert(task.id.clone(), task);
        }
        let content = ContentPages::of(pages.keys().map(String::as_str));
        Ok(World { pages, backlinks, tasks: by_id, task_order, content, wiki: OnceLock::new() })
    }

    /// The best `limit` wiki pages for a free-text query (see [`WikiIndex::search`]); the
    /// index is built on the first search.
    pub fn wiki_search(&self, query: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let index = self.wiki.get_or_init(|| {
            let pages = self.pages.values().filter(|p| p.domain == Domain::Wiki);
            WikiIndex::build(pages.map(|p| (p.page.title.as_str(), p.page.text.as_str(), p.url.as_str())))
                .map_err(|e| e.to_string())
        });
        match index {
            Ok(index) => Ok(index.search(query, limit)?),
            Err(e) => anyhow::bail!("the wiki's search index could not be built: {e}"),
        }
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&Arc<Task>> {
        self.tasks.get(id)
    }

    /// Every task, in stored order.
    pub fn tasks(&self) -> impl Iterator<Item = &Arc<Task>> {
        self.task_order.iter().filter_map(|id| self.tasks.get(id))
    }

    /// The world's content pages, for the matcher's reverse-prefix rule.
    pub fn content(&self) -> &ContentPages {
        &self.content
    }

    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Looks a path up (any URL form; it is normalised first).
    pub fn resolve(&self, url: &str) -> Option<Resolved<'_>> {
        let key = normalise(url);
        if let Some(page) = self.pages.get(&key) {
            return Some(Resolved::Page(page));
        }
        let domain = Domain::ALL.into_iter().find(|d| key.starts_with(d.url_prefix()))?;
        let sources = self.backlinks.get(&key)?;
        let title = key.rsplit('/').next().map(|last| match domain {
            Domain::Forum => format!("f/{last}"),
            _ => last.to_string(),
        })?;
        let links = sources.iter().map(|(url, title)| (title.clone(), url.clone())).collect();
        Some(Resolved::Index { domain, title, links })
    }

    /// Whether the sites answer this URL with a page (status 200): a page some task defines,
    /// an index of pages that link to it, or a site's home, listing, search or queue page.
    /// The same routing as [`super::site::render_path`] without rendering; a URL outside the
    /// three sites, or one they answer 404, is no page. `norm` is a normalised path: the
    /// scorer asks this for every step, so nothing is normalised or built again here.
    pub fn serves(&self, norm: &str) -> bool {
        let Some(domain) = super::site::domain_of_normalised(norm) else {
            return false;
        };
        if crate::corpus::urls::SITE_LISTINGS.contains(&norm) {
            return true;
        }
        match self.pages.get(norm) {
            Some(p) => p.domain == domain,
            // An index: other pages of the same site link here.
            None => self.backlinks.contains_key(norm) && norm.starts_with(domain.url_prefix()),
        }
    }

    /// Start pages of every task on a site, with their titles (the shop's order queue, the
    /// forum's report queue, the wiki's review queue).
    pub fn queue(&self, domain: Domain) -> Vec<(String, String)> {
        self.tasks()
            .filter(|t| t.domain == domain)
            .filter_map(|t| {
                let page = self.pages.get(&normalise(&t.start_url))?;
                Some((page.page.title.clone(), page.url.clone()))
            })
            .collect()
    }
}
