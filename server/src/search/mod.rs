//! Full-text search over tasks and what agents did: thoughts, rationales and the
//! observations they received, each linking to its exact turn (tantivy, in RAM).
//!
//! Observations repeat across trials (the same page seen by many agents), so each distinct
//! observation text is indexed once, at the first turn that showed it. The index follows
//! finished trials in the order they finished; [`TrajectoryIndex::follow`] indexes what
//! finished since the last call.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use app::model::{SearchHit, SearchResults};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, QueryParser, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};

use crate::agent::Action;
use crate::db::Store;
use crate::env::World;
use crate::runs::export::parse_steps;

/// The kinds of documents.
pub const KINDS: [&str; 4] = ["task", "thought", "rationale", "observation"];
/// Trials indexed per store read.
const BATCH: i64 = 500;

#[derive(Clone, Copy)]
struct Fields {
    kind: Field,
    task: Field,
    run: Field,
    trial: Field,
    turn: Field,
    text: Field,
}

struct Progress {
    cursor: (i64, String),
    seen_observations: HashSet<u64>,
    trials: usize,
}

/// The index and how far it has followed the store.
pub struct TrajectoryIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
    progress: tokio::sync::Mutex<Progress>,
}

fn hash_of(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl TrajectoryIndex {
    /// An index holding the world's tasks (ticket, category, justification, page texts).
    pub fn new(world: &World) -> anyhow::Result<TrajectoryIndex> {
        let mut b = Schema::builder();
        let fields = Fields {
            kind: b.add_text_field("kind", STRING | STORED),
            task: b.add_text_field("task", STRING | STORED),
            run: b.add_text_field("run", STRING | STORED),
            trial: b.add_text_field("trial", STRING | STORED),
            turn: b.add_u64_field("turn", STORED),
            text: b.add_text_field("text", TEXT | STORED),
        };
        let index = Index::create_in_ram(b.build());
        let mut writer = index.writer(30_000_000)?;
        for t in world.tasks() {
            let pages: Vec<&str> = t.pages.values().map(|p| p.text.as_str()).collect();
            let text = format!("{} {} {} {} {}", t.id, t.category, t.ticket.raw, t.justification, pages.join("\n"));
            writer.add_document(doc!(fields.kind => "task", fields.task => t.id.as_str(), fields.text => text))?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        reader.reload()?;
        Ok(TrajectoryIndex {
            index,
            reader,
            writer: Mutex::new(writer),
            fields,
            progress: tokio::sync::Mutex::new(Progress {
                cursor: (i64::MIN, String::new()),
                seen_observations: HashSet::new(),
                trials: 0,
            }),
        })
    }

    /// Trials indexed so far.
    pub async fn trials(&self) -> usize {
        self.progress.lock().await.trials
    }

    /// Indexes trials that finished since the last call; returns how many.
    pub async fn follow(&self, store: &dyn Store) -> anyhow::Result<usize> {
        let mut progress = self.progress.lock().await;
        let mut added = 0;
        loop {
            let batch = store.finished_after((progress.cursor.0, &progress.cursor.1), BATCH).await?;
            if batch.is_empty() {
                break;
            }
            let mut docs = Vec::new();
            for (trial, finished) in &batch {
                // GEO ranking trials store ranker replies, not agent turns: nothing to index.
                if trial.condition == crate::geo::plan::CONDITION && trial.task_id.starts_with("geo:") {
                    progress.cursor = (*finished, trial.trial_id.clone());
                    continue;
                }
                let steps = parse_steps(&store.steps(&trial.trial_id).await?)?;
                let f = self.fields;
                let base = |kind: &str, turn: usize, text: &str| {
                    doc!(
                        f.kind => kind, f.task => trial.task_id.as_str(), f.run => trial.run_id.as_str(),
                        f.trial => trial.trial_id.as_str(), f.turn => turn as u64, f.text => text
                    )
                };
                for s in &steps {
                    if !s.thought.trim().is_empty() {
                        docs.push(base("thought", s.t, &s.thought));
                    }
                    if progress.seen_observations.insert(hash_of(&s.observation)) {
                        docs.push(base("observation", s.t, &s.observation));
                    }
                    if let Action::Verdict { rationale, .. } = &s.action
                        && !rationale.trim().is_empty()
                    {
                        docs.push(base("rationale", s.t, rationale));
                    }
                }
                progress.cursor = (*finished, trial.trial_id.clone());
                progress.trials += 1;
                added += 1;
            }
            let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for d in docs {
                writer.add_document(d)?;
            }
            writer.commit()?;
        }
        if added > 0 {
            self.reader.reload()?;
        }
        Ok(added)
    }

    /// The best `limit` documents for a query, optionally of one kind. Query syntax errors
    /// fall back to matching words literally, so no input is rejected.
    pub fn search(&self, query: &str, kind: Option<&str>, limit: usize) -> anyhow::Result<Vec<SearchHit>> {
        let f = self.fields;
        let parser = QueryParser::for_index(&self.index, vec![f.text]);
        let (parsed, _errors) = parser.parse_query_lenient(query);
        let searcher = self.reader.searcher();
        let snippets = SnippetGenerator::create(&searcher, &*parsed, f.text)?;
        let full = match kind {
            Some(k) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, parsed),
                (Occur::Must, Box::new(TermQuery::new(Term::from_field_text(f.kind, k), IndexRecordOption::Basic))),
            ])) as Box<dyn tantivy::query::Query>,
            None => parsed,
        };
        let top = searcher.search(&*full, &TopDocs::with_limit(limit).order_by_score())?;
        let mut hits = Vec::new();
        for (_score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            let get = |field: Field| d.get_first(field).and_then(|v| v.as_str()).map(ToString::to_string);
            let text = get(f.text).unwrap_or_default();
            let snippet = snippets.snippet(&text);
            let fragment = snippet.fragment();
            let mut pieces = Vec::new();
            let mut at = 0;
            for r in snippet.highlighted() {
                if r.start > at {
                    pieces.push((fragment[at..r.start].to_string(), false));
                }
                pieces.push((fragment[r.start..r.end].to_string(), true));
                at = r.end;
            }
            if at < fragment.len() || pieces.is_empty() {
                let rest =
                    if fragment.is_empty() { text.chars().take(200).collect() } else { fragment[at..].to_string() };
                pieces.push((rest, false));
            }
            hits.push(SearchHit {
                kind: get(f.kind).unwrap_or_default(),
                task_id: get(f.task).unwrap_or_default(),
                run: get(f.run),
                trial: get(f.trial),
                turn: d.get_first(f.turn).and_then(|v| v.as_u64()).and_then(|t| usize::try_from(t).ok()),
                snippet: pieces,
            });
        }
        Ok(hits)
    }

    /// A search as the dashboard shows it.
    pub async fn results(&self, query: &str, kind: Option<&str>, limit: usize) -> anyhow::Result<SearchResults> {
        // Counted first: `follow` holds the count until its documents are searchable, so the
        // hits below cover at least the trials counted.
        let indexed_trials = self.trials().await;
        Ok(SearchResults {
            query: query.to_string(),
            kind: kind.map(ToString::to_string),
            hits: if query.trim().is_empty() { Vec::new() } else { self.search(query, kind, limit)? },
            indexed_trials,
        })
    }
}
