//! One world per site, built from every stored task: a URL → page index, backlinks for
//! index pages (a forum's listing, the review queue), and the wiki's full-text index (built
//! on the first search: most worlds, a scorer's among them, are never searched or only
//! rarely). What other layers derive from the world alone (the perplexity filter trained
//! on its tasks) is kept with it, made once for every scorer and defense that reads it.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

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
    /// What other layers derive from the world, one value of each type, made on first need.
    derived: Mutex<FxHashMap<TypeId, Arc<OnceLock<Derived>>>>,
}

/// A value derived from a world (see [`World::derived`]).
type Derived = Arc<dyn Any + Send + Sync>;

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
        let (wiki, derived) = (OnceLock::new(), Mutex::default());
        Ok(World { pages, backlinks, tasks: by_id, task_order, content, wiki, derived })
    }

    /// The value of type `T` derived from this world: made by `make` on the first call (a
    /// second caller meanwhile waits for it), kept as long as the world, and shared after.
    /// A value another layer derives from the world alone (a filter trained on its tasks)
    /// is so made once for every reader of the world.
    pub fn derived<T: Any + Send + Sync>(&self, make: impl FnOnce(&World) -> T) -> Arc<T> {
        let cell = {
            let mut slots = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.entry(TypeId::of::<T>()).or_default())
        };
        let value = Arc::clone(cell.get_or_init(|| Arc::new(make(self))));
        value.downcast::<T>().unwrap_or_else(|_| unreachable!("a slot holds the type it is keyed by"))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A derived value is made once for its type and shared; another type gets its own.
    #[test]
    fn a_derived_value_is_made_once_for_each_type() {
        let world = World::build(crate::corpus::generate::corpus()).expect("world");
        let made = std::sync::atomic::AtomicUsize::new(0);
        let count = |w: &World| {
            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            w.task_count()
        };
        let (first, again) = std::thread::scope(|s| {
            let other = s.spawn(|| world.derived(count));
            (world.derived(count), other.join().expect("thread"))
        });
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!((*first, made.into_inner()), (world.task_count(), 1));
        assert_eq!(*world.derived(|_| String::from("another type")), "another type");
        assert_eq!(*world.derived(|_| 0_usize), world.task_count(), "kept: not made again");
    }
}
