//! The pages of one site indexed by what the lenient matcher compares, so that the
//! validator meets each graph node only with the pages one of the rules could match.

use std::collections::{HashMap, HashSet};

use super::urls::Node;

/// The pages of one site, indexed by what the lenient matcher compares.
#[derive(Default)]
pub(super) struct SiteIndex<'a> {
    all: Vec<&'a str>,
    exact: HashSet<&'a str>,
    by_last: HashMap<&'a str, Vec<&'a str>>,
    by_last_two: HashMap<(&'a str, &'a str), Vec<&'a str>>,
    by_ancestor: HashMap<&'a str, Vec<&'a str>>,
}

fn segments(url: &str) -> Vec<&str> {
    url.split('/').filter(|s| !s.is_empty()).collect()
}

impl<'a> SiteIndex<'a> {
    pub(super) fn add(&mut self, url: &'a str) {
        self.all.push(url);
        self.exact.insert(url);
        let segs = segments(url);
        if let Some(last) = segs.last() {
            self.by_last.entry(last).or_default().push(url);
        }
        if segs.len() >= 2 {
            self.by_last_two.entry((segs[segs.len() - 2], segs[segs.len() - 1])).or_default().push(url);
        }
        for (i, _) in url.match_indices('/').skip(1) {
            self.by_ancestor.entry(&url[..i]).or_default().push(url);
        }
    }

    /// Every page that some rule could credit to `node` (a superset; callers re-check).
    pub(super) fn candidates(&self, node: &Node, shop: bool) -> Vec<&'a str> {
        let u = node.norm();
        if u.contains("<id>") {
            return self.all.clone();
        }
        let mut out: Vec<&'a str> = Vec::new();
        if let Some(&hit) = self.exact.get(u) {
            out.push(hit);
        }
        out.extend(self.by_ancestor.get(u).into_iter().flatten());
        for (i, _) in u.match_indices('/').skip(1) {
            if let Some(&hit) = self.exact.get(&u[..i]) {
                out.push(hit);
            }
        }
        let segs = segments(u);
        if segs.len() >= 2 {
            out.extend(self.by_last_two.get(&(segs[segs.len() - 2], segs[segs.len() - 1])).into_iter().flatten());
        }
        if shop && let Some(last) = segs.last() {
            out.extend(self.by_last.get(last).into_iter().flatten());
        }
        out
    }
}
