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
    /// Indexes the given pages, each as (title, text, url).
    pub fn build<'a>(pages: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> tantivy::Result<WikiIndex> {
        let (schema, title, body, url) = schema();
        let index = Index::create_in_ram(schema);
        let mut writer = index.writer(15_000_000)?;
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
