//! Full-text search over tasks and what agents did: thoughts, rationales and the
//! observations they received, each linking to its exact turn (tantivy).
//!
//! Observations repeat across trials (the same page seen by many agents), so each distinct
//! observation text is indexed once, at the first turn that showed it. The index follows
//! finished trials in the order they finished; [`TrajectoryIndex::follow`] indexes what
//! finished since the last call.
//!
//! The index lives in tantivy's own directory next to the database (`<db>.search`) and is
//! reopened at start: each commit carries how far it has followed the store (the commit
//! payload), so a restart indexes only what finished since. An index written by another
//! schema version, for another database, or that cannot be opened is rebuilt; task
//! documents are replaced when the corpus changes.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, QueryParser, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};
use vocab::{SearchHit, SearchResults};

use crate::agent::{Action, Step};
use crate::db::{Store, TrialRow};
use crate::env::World;
use crate::runs::export::parse_steps;

/// The kinds of documents.
pub const KINDS: [&str; 4] = ["task", "thought", "rationale", "observation"];
/// Trials indexed per store read.
const BATCH: i64 = 500;
/// What the index holds and how; an index of another version is rebuilt.
const INDEX_VERSION: u32 = 3;
/// The database's identity, so an index never serves another database's trials.
const STORE_ID_KEY: &str = "search_store_id";

#[derive(Clone, Copy)]
struct Fields {
    kind: Field,
    task: Field,
    run: Field,
    trial: Field,
    turn: Field,
    text: Field,
    /// The hash of an observation's text (observation documents only).
    obs: Field,
}

struct Progress {
    /// The latest finish indexed (finished_at ms, trial id).
    cursor: (i64, String),
    seen_observations: HashSet<u64>,
    trials: usize,
    /// Trials indexed that finished within [`LATE_MS`] of the cursor.
    recent: std::collections::HashMap<String, i64>,
}

/// A finish can be committed a little after a later one (trials finish concurrently, in
/// several processes): each look starts this far before the cursor and skips the trials
/// it already has, so none is passed over.
const LATE_MS: i64 = 5_000;

/// What each commit records, so a reopened index goes on from there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Payload {
    version: u32,
    store: String,
    corpus: String,
    cursor_ms: i64,
    cursor_trial: String,
    trials: usize,
    /// Trials indexed within [`LATE_MS`] of the cursor, with their finish.
    #[serde(default)]
    recent: Vec<(String, i64)>,
}

fn build_schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let fields = Fields {
        kind: b.add_text_field("kind", STRING | STORED),
        task: b.add_text_field("task", STRING | STORED),
        run: b.add_text_field("run", STRING | STORED),
        trial: b.add_text_field("trial", STRING | STORED),
        turn: b.add_u64_field("turn", STORED),
        text: b.add_text_field("text", TEXT | STORED),
        obs: b.add_u64_field("obs", FAST),
    };
    (b.build(), fields)
}

/// The stored index in `dir` when it is this version's, for this database; `None` (with
/// the reason logged) when it must be rebuilt.
fn reopen(dir: &Path, schema: &Schema, store_id: &str) -> Option<(Index, Payload)> {
    if !dir.join("meta.json").exists() {
        return None;
    }
    let index = match Index::open_in_dir(dir) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "search index unreadable, rebuilding: {e}");
            return None;
        }
    };
    let payload: Payload =
        index.load_metas().ok()?.payload.and_then(|p| serde_json::from_str(&p).ok()).unwrap_or_default();
    let same_schema = serde_json::to_string(&index.schema()).ok() == serde_json::to_string(schema).ok();
    if !same_schema || payload.version != INDEX_VERSION || payload.store != store_id {
        tracing::info!(dir = %dir.display(), "search index of another version or database, rebuilding");
        return None;
    }
    Some((index, payload))
}

/// The index and how far it has followed the store.
pub struct TrajectoryIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
    progress: tokio::sync::Mutex<Progress>,
    /// The last commit's record (store, corpus, version), updated with the cursor.
    payload: Mutex<Payload>,
}

/// Commits what the writer holds with the payload.
fn commit(writer: &mut IndexWriter, payload: &Payload) -> anyhow::Result<()> {
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload(&serde_json::to_string(payload)?);
    prepared.commit()?;
    Ok(())
}

/// The key an observation is deduplicated by. Stored in the index, so it must not change
/// between Rust releases (as `DefaultHasher`'s output may): the first 8 bytes of SHA-256.
fn hash_of(text: &str) -> u64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

impl TrajectoryIndex {
    /// The index in `dir` (created, reopened or rebuilt; in RAM without a folder, or when
    /// another process holds the folder's index) with the world's tasks (ticket, category,
    /// justification, page texts) of corpus version `corpus`.
    pub async fn open(
        world: &World,
        corpus: &str,
        store: &dyn Store,
        dir: Option<&Path>,
    ) -> anyhow::Result<TrajectoryIndex> {
        let store_id = store_id(store).await?;
        let (schema, fields) = build_schema();
        let (index, payload) = match dir {
            None => (Index::create_in_ram(schema), Payload::default()),
            Some(dir) => match reopen(dir, &schema, &store_id) {
                Some(found) => found,
                None => {
                    if dir.exists() {
                        clear(dir).await?;
                    }
                    std::fs::create_dir_all(dir)
                        .map_err(|e| anyhow::anyhow!("creating the search index {}: {e}", dir.display()))?;
                    (Index::create_in_dir(dir, schema)?, Payload::default())
                }
            },
        };
        let (index, payload, mut writer) = match index.writer(30_000_000) {
            Ok(w) => (index, payload, w),
            Err(tantivy::TantivyError::LockFailure(..)) => {
                // Another server holds this folder's index: this one keeps its own in RAM.
                tracing::warn!("search index folder in use by another process; indexing in RAM instead");
                let index = Index::create_in_ram(build_schema().0);
                let w = index.writer(30_000_000)?;
                (index, Payload::default(), w)
            }
            Err(e) => return Err(e.into()),
        };
        // A new index, or a corpus that changed since: the task documents are (re)written.
        let tasks_stale = payload.version != INDEX_VERSION || payload.corpus != corpus;
        let payload = Payload { version: INDEX_VERSION, store: store_id, ..payload };
        if tasks_stale {
            writer.delete_term(Term::from_field_text(fields.kind, "task"));
            for t in world.tasks() {
                let pages: Vec<&str> = t.pages.values().map(|p| p.text.as_str()).collect();
                let text = format!("{} {} {} {} {}", t.id, t.category, t.ticket.raw, t.justification, pages.join("\n"));
                writer.add_document(doc!(fields.kind => "task", fields.task => t.id.as_str(), fields.text => text))?;
            }
        }
        let payload = Payload { corpus: corpus.to_string(), ..payload };
        commit(&mut writer, &payload)?;
        let reader = index.reader()?;
        reader.reload()?;
        let seen_observations = seen_observations(&reader)?;
        Ok(TrajectoryIndex {
            index,
            reader,
            writer: Mutex::new(writer),
            fields,
            progress: tokio::sync::Mutex::new(Progress {
                cursor: if payload.cursor_trial.is_empty() && payload.cursor_ms == 0 {
                    (i64::MIN, String::new())
                } else {
                    (payload.cursor_ms, payload.cursor_trial.clone())
                },
                seen_observations,
                trials: payload.trials,
                recent: payload.recent.iter().cloned().collect(),
            }),
            payload: Mutex::new(payload),
        })
    }

    /// Trials indexed so far.
    pub async fn trials(&self) -> usize {
        self.progress.lock().await.trials
    }

    /// Indexes trials that finished since the last call; returns how many.
    pub async fn follow(self: &Arc<Self>, store: &dyn Store) -> anyhow::Result<usize> {
        let mut progress = self.progress.lock().await;
        let mut added = 0;
        let mut scan = (progress.cursor.0.saturating_sub(LATE_MS), String::new());
        loop {
            let batch = store.finished_after((scan.0, &scan.1), BATCH).await?;
            if batch.is_empty() {
                break;
            }
            let mut docs = Vec::new();
            let mut new = false;
            for (trial, finished) in &batch {
                scan = (*finished, trial.trial_id.to_string());
                if progress.recent.contains_key(trial.trial_id.as_str()) {
                    continue;
                }
                new = true;
                progress.recent.insert(trial.trial_id.to_string(), *finished);
                if (*finished, trial.trial_id.as_str()) > (progress.cursor.0, progress.cursor.1.as_str()) {
                    progress.cursor = (*finished, trial.trial_id.to_string());
                }
                // GEO ranking trials store ranker replies, not agent turns: nothing to index.
                if crate::geo::plan::geo_target(trial).is_some() {
                    continue;
                }
                let steps = parse_steps(&store.steps(&trial.trial_id).await?)?;
                docs.extend(self.documents_of(trial, &steps, &mut progress.seen_observations));
                progress.trials += 1;
                added += 1;
            }
            if !new {
                continue;
            }
            let oldest = progress.cursor.0.saturating_sub(LATE_MS);
            progress.recent.retain(|_, f| *f >= oldest);
            // The cursor is committed with the documents, so a restart goes on from here.
            let payload = {
                let mut payload = self.payload.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                payload.cursor_ms = progress.cursor.0;
                payload.cursor_trial.clone_from(&progress.cursor.1);
                payload.trials = progress.trials;
                payload.recent = progress.recent.iter().map(|(k, v)| (k.clone(), *v)).collect();
                payload.clone()
            };
            // Indexing and the commit are CPU and disk work: on a blocking thread.
            let me = self.clone();
            tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
                let mut writer = me.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for d in docs {
                    writer.add_document(d)?;
                }
                commit(&mut writer, &payload)
            })
            .await??;
        }
        if added > 0 {
            let me = self.clone();
            tokio::task::spawn_blocking(move || me.reader.reload()).await??;
        }
        Ok(added)
    }

    /// A trial's documents: each turn's thought and rationale, and each observation not
    /// indexed before (by its hash, added to `seen`).
    fn documents_of(&self, trial: &TrialRow, steps: &[Step], seen: &mut HashSet<u64>) -> Vec<TantivyDocument> {
        let f = self.fields;
        let base = |kind: &str, turn: usize, text: &str| {
            doc!(
                f.kind => kind, f.task => trial.task_id.as_str(), f.run => trial.run_id.as_str(),
                f.trial => trial.trial_id.as_str(), f.turn => turn as u64, f.text => text
            )
        };
        let mut docs = Vec::new();
        for s in steps {
            if !s.thought.trim().is_empty() {
                docs.push(base("thought", s.t, &s.thought));
            }
            let h = hash_of(&s.observation);
            if seen.insert(h) {
                let mut d = base("observation", s.t, &s.observation);
                d.add_u64(f.obs, h);
                docs.push(d);
            }
            if let Action::Verdict { rationale, .. } | Action::Answer { text: rationale } = &s.action
                && !rationale.trim().is_empty()
            {
                docs.push(base("rationale", s.t, rationale.as_str()));
            }
        }
        docs
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
                run: get(f.run).map(Into::into),
                trial: get(f.trial).map(Into::into),
                turn: d.get_first(f.turn).and_then(|v| v.as_u64()).and_then(|t| usize::try_from(t).ok()),
                snippet: pieces,
            });
        }
        Ok(hits)
    }

    /// A search as the dashboard shows it; the search itself runs on a blocking thread.
    pub async fn results(
        self: &Arc<Self>,
        query: &str,
        kind: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<SearchResults> {
        // Counted first: `follow` holds the count until its documents are searchable, so the
        // hits below cover at least the trials counted.
        let indexed_trials = self.trials().await;
        let hits = if query.trim().is_empty() {
            Vec::new()
        } else {
            let (me, q, k) = (self.clone(), query.to_string(), kind.map(ToString::to_string));
            tokio::task::spawn_blocking(move || me.search(&q, k.as_deref(), limit)).await??
        };
        Ok(SearchResults { query: query.to_string(), kind: kind.map(ToString::to_string), hits, indexed_trials })
    }
}

/// Removes an index folder. A writer dropped a moment ago may still be finishing a merge in
/// its background threads, writing into the folder while it is removed ("directory not
/// empty"): the removal is tried again a few times before it fails.
async fn clear(dir: &Path) -> anyhow::Result<()> {
    let mut last = None;
    for attempt in 0..5u64 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100 * (attempt + 1))).await;
    }
    let e = last.map_or_else(String::new, |e| e.to_string());
    Err(anyhow::anyhow!("clearing the search index {}: {e}", dir.display()))
}

/// The store's own id, made once and kept in the store: an index folder names the store it
/// was built from, so that another database's index is not reused.
async fn store_id(store: &dyn Store) -> anyhow::Result<String> {
    if let Some(id) = store.meta(STORE_ID_KEY).await? {
        return Ok(id);
    }
    let id = format!("{:016x}", rand::random::<u64>());
    store.set_meta(STORE_ID_KEY, &id).await?;
    Ok(id)
}

/// The observations already indexed, from their hash column.
fn seen_observations(reader: &tantivy::IndexReader) -> anyhow::Result<HashSet<u64>> {
    let mut seen = HashSet::new();
    for segment in reader.searcher().segment_readers() {
        let column = segment.fast_fields().u64("obs")?;
        seen.extend(segment.doc_ids_alive().filter_map(|d| column.first(d)));
    }
    Ok(seen)
}
