//! Full-text search over the wiki's pages (tantivy, in RAM; built on a world's first search): the
//! wiki site's own search box. Search over tasks and trajectories for the dashboard is
//! `crate::search`.

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, TantivyDocument, doc};

/// A search hit: page title, its URL and a short plain-text snippet.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The wiki index: one document per page.
pub struct WikiIndex {
    index: Index,
    reader: IndexReader,
    title: Field,
    body: Field,
    url: Field,
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let title = b.add_text_field("title", TEXT | STORED);
    let body = b.add_text_field("body", TEXT | STORED);
    let url = b.add_text_field("url", STRING | STORED);
    (b.build(), title, body, url)
}

impl WikiIndex {
    /// Indexes the given pages, each as (title, text, url). Pages that score alike for a
    /// query are listed in URL order whatever order they come in: they are indexed in that
    /// order, by one thread into one segment, and tantivy lists equal scores in index order.
    /// (A scorer reads what a search page listed, so the list must not depend on a map's
    /// order.)
    pub fn build<'a>(pages: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> tantivy::Result<WikiIndex> {
        let (schema, title, body, url) = schema();
        let index = Index::create_in_ram(schema);
        let mut writer = index.writer_with_num_threads(1, 15_000_000)?;
        let mut pages: Vec<_> = pages.collect();
        pages.sort_unstable_by(|a, b| (a.2, a.0, a.1).cmp(&(b.2, b.0, b.1)));
        for (t, text, u) in pages {
            writer.add_document(doc!(title => t, body => text, url => u))?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        reader.reload()?;
        Ok(WikiIndex { index, reader, title, body, url })
    }

    /// The best `limit` pages for a free-text query. Query syntax errors fall back to
    /// matching the words literally, so no user input is rejected.
    pub fn search(&self, query: &str, limit: usize) -> tantivy::Result<Vec<Hit>> {
        let parser = QueryParser::for_index(&self.index, vec![self.title, self.body]);
        let (parsed, _errors) = parser.parse_query_lenient(query);
        let searcher = self.reader.searcher();
        let top = searcher.search(&parsed, &TopDocs::with_limit(limit).order_by_score())?;
        let mut hits = Vec::new();
        for (_score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            let get = |f: Field| d.get_first(f).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            let body = get(self.body);
            let snippet: String = body.chars().take(160).collect();
            hits.push(Hit { title: get(self.title), url: get(self.url), snippet });
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_that_score_alike_are_listed_in_url_order_whatever_order_they_came_in() {
        // Thirty pages with the same text tie for every query; a few others score lower.
        let urls: Vec<String> = (0..30).map(|i| format!("/wiki/A/P{:02}", (i * 7) % 30)).collect();
        let mut pages: Vec<(&str, &str, &str)> =
            urls.iter().map(|u| ("Bridge", "the old stone bridge over the river", u.as_str())).collect();
        pages.push(("Other", "a bridge too far from the river and its many other words", "/wiki/A/Z"));
        let mut sorted: Vec<&str> = urls.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        for order in [pages.clone(), pages.iter().rev().copied().collect()] {
            let index = WikiIndex::build(order.into_iter()).expect("index");
            let hits: Vec<String> =
                index.search("bridge river", 20).expect("search").into_iter().map(|h| h.url).collect();
            assert_eq!(hits, sorted[..20], "the first twenty of the tied pages, by URL");
        }
    }
}
