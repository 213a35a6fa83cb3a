//! Rankers: given a list in one order (and the messages a chat model would read), a reply
//! that names the items from best to worst. Replies of every ranker go through the same
//! parser. Offline rankers (docs/geo.md):
//!
//! * `bm25`: Okapi BM25 of each item's `Name: description` against the query noun, over
//!   the presented list as the collection (k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + ½)/(df
//!   + ½))); ties keep the presented order, so the orders matter;
//! * `position`: the list as presented, blind to content: a target's rank is its position,
//!   the same before and after any edit, so every method's gain is exactly 0.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;

use super::data::Item;
use super::prompt::one_line;
use crate::llm::Message;

/// What a ranker is asked: the list in presented order and the messages of the prompt.
pub struct RankRequest<'a> {
    pub noun: &'a str,
    /// The items in presented order.
    pub shown: Vec<&'a Item>,
    pub messages: &'a [Message],
    /// The prompt's version, for cache keys.
    pub prompt_version: &'a str,
}

/// A ranker.
#[async_trait]
pub trait Ranker: Send + Sync {
    /// The configuration name (`bm25`, `position`, an endpoint's name).
    fn name(&self) -> &str;
    /// The model behind it, for cache keys (the name for offline rankers).
    fn model(&self) -> &str {
        self.name()
    }
    /// Whether it reads the prompt's messages (offline rankers read the list itself, so
    /// the prompt is not rendered for them).
    fn reads_prompt(&self) -> bool {
        true
    }
    /// The reply to one request.
    async fn reply(&self, request: &RankRequest<'_>) -> anyhow::Result<String>;
}

/// A reply that lists names in the given order, as `1. Name` lines.
fn numbered<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.enumerate().map(|(i, n)| format!("{}. {n}\n", i + 1)).collect()
}

/// The content-blind null ranker.
pub struct Position;

#[async_trait]
impl Ranker for Position {
    fn name(&self) -> &str {
        "position"
    }
    fn reads_prompt(&self) -> bool {
        false
    }
    async fn reply(&self, request: &RankRequest<'_>) -> anyhow::Result<String> {
        Ok(numbered(request.shown.iter().map(|i| i.name.as_str())))
    }
}

const BM25_STOPWORDS: [&str; 28] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "i", "in", "is", "it", "its", "of",
    "on", "or", "that", "the", "this", "to", "was", "were", "will", "with",
];

static TOKEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\p{L}\p{N}]+").expect("token pattern"));

/// Harman's S-stemmer, for words longer than three characters.
pub fn s_stem(word: &str) -> String {
    if word.chars().count() <= 3 {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies")
        && !word.ends_with("eies")
        && !word.ends_with("aies")
    {
        return format!("{stem}y");
    }
    if let Some(stem) = word.strip_suffix("es")
        && !["aes", "ees", "oes"].iter().any(|s| word.ends_with(s))
    {
        return format!("{stem}e");
    }
    if let Some(stem) = word.strip_suffix('s')
        && !word.ends_with("us")
        && !word.ends_with("ss")
    {
        return stem.to_string();
    }
    word.to_string()
}

/// Lowercase word tokens, stopwords dropped, S-stemmed.
pub fn tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    TOKEN.find_iter(&lower).map(|m| m.as_str()).filter(|w| !BM25_STOPWORDS.contains(w)).map(s_stem).collect()
}

/// BM25 scores of documents for the query terms, the documents being the collection.
pub fn bm25(query: &str, docs: &[String]) -> Vec<f64> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let terms: Vec<String> = {
        let mut seen = HashSet::new();
        tokens(query).into_iter().filter(|t| seen.insert(t.clone())).collect()
    };
    let docs: Vec<Vec<String>> = docs.iter().map(|d| tokens(d)).collect();
    let n = docs.len() as f64;
    let avgdl = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let counts: Vec<HashMap<&str, usize>> = docs
        .iter()
        .map(|d| {
            let mut c = HashMap::new();
            for t in d {
                *c.entry(t.as_str()).or_insert(0) += 1;
            }
            c
        })
        .collect();
    let idf: Vec<f64> = terms
        .iter()
        .map(|t| {
            let df = counts.iter().filter(|c| c.contains_key(t.as_str())).count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    docs.iter()
        .zip(&counts)
        .map(|(d, c)| {
            let norm = K1 * (1.0 - B + B * d.len() as f64 / avgdl);
            terms
                .iter()
                .zip(&idf)
                .map(|(t, idf)| {
                    let tf = c.get(t.as_str()).copied().unwrap_or(0) as f64;
                    idf * tf * (K1 + 1.0) / (tf + norm)
                })
                .sum()
        })
        .collect()
}

/// The offline lexical ranker.
pub struct Bm25;

#[async_trait]
impl Ranker for Bm25 {
    fn name(&self) -> &str {
        "bm25"
    }
    fn reads_prompt(&self) -> bool {
        false
    }
    async fn reply(&self, request: &RankRequest<'_>) -> anyhow::Result<String> {
        let docs: Vec<String> = request.shown.iter().map(|i| format!("{}: {}", i.name, one_line(&i.text))).collect();
        // Scoring is CPU work that grows with the texts: on a blocking thread, so that the
        // trial's lease keeps being renewed while it runs (a worker that stalled past its
        // lease would see another take the trial over and rank the same order twice).
        let noun = request.noun.to_string();
        let (scores, docs) = tokio::task::spawn_blocking(move || (bm25(&noun, &docs), docs)).await?;
        let mut order: Vec<usize> = (0..docs.len()).collect();
        // A stable sort keeps presented order among ties.
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        Ok(numbered(order.into_iter().map(|i| request.shown[i].name.as_str())))
    }
}

/// A chat model behind an OpenAI-compatible endpoint, asked at temperature 0. Replies are
/// kept in the answer cache by (endpoint, sampling, prompt version, messages), so the clean
/// list's replies are shared by every method and a rerun calls nothing.
pub struct ChatRanker {
    pub name: String,
    pub model: String,
    /// The endpoint's [`crate::llm::EndpointSpec::answer_identity`].
    pub identity: String,
    pub client: std::sync::Arc<dyn crate::llm::LlmClient>,
    pub cache: std::sync::Arc<dyn crate::db::Store>,
    /// The run whose calls share their failures: a request that failed in this run fails
    /// again without a second call, so every method reads the same clean reply (or the same
    /// failure) of a (target, order). A later run asks again.
    pub scope: Option<String>,
}

impl ChatRanker {
    /// The cache key of a request.
    pub fn key(identity: &str, request: &RankRequest<'_>) -> String {
        use sha2::{Digest, Sha256};
        let messages = serde_json::to_string(request.messages).unwrap_or_default();
        let digest =
            Sha256::digest(format!("geo-rank-2\0{identity}\0{}\0{messages}", request.prompt_version).as_bytes());
        format!("geo:{}", hex::encode(digest))
    }
}

#[async_trait]
impl Ranker for ChatRanker {
    fn name(&self) -> &str {
        &self.name
    }
    fn model(&self) -> &str {
        &self.model
    }
    async fn reply(&self, request: &RankRequest<'_>) -> anyhow::Result<String> {
        let key = Self::key(&self.identity, request);
        let source = format!("geo:{}/{}", self.model, request.prompt_version);
        let failed_key = self.scope.as_ref().map(|run| format!("{key}:failed:{run}"));
        // Asked under the cache's one-at-a-time turn: a method waiting on the same request
        // reads the failure the first one recorded instead of drawing another reply.
        let ask = async {
            if let Some(k) = &failed_key
                && let Some(reason) = self.cache.cache_get(k).await?
            {
                return Err(anyhow::Error::new(super::Refusal(reason)));
            }
            let asked = async {
                let c = self.client.reply_completion(request.messages).await?;
                crate::llm::cache::charge(crate::llm::cache::Asker::Ranker, c.usage);
                usable(c.content, c.finish_reason.as_deref())
            };
            match asked.await {
                Ok(text) => Ok(text),
                Err(e) => {
                    if let (Some(k), Some(reason)) = (&failed_key, super::endpoint_failure(&e)) {
                        self.cache.cache_put(k, &source, &reason, None).await?;
                    }
                    Err(e)
                }
            }
        };
        crate::llm::cache::remembered(self.cache.as_ref(), &key, &source, ask).await
    }
}

/// A reply's text when it can name anything: a reply stopped by the endpoint's content
/// filter, cut at its token limit, or with no text is a failed call with its reason.
fn usable(content: String, finish_reason: Option<&str>) -> anyhow::Result<String> {
    let refused = match finish_reason {
        Some("content_filter") => {
            Some("the endpoint's content filter stopped the reply (finish_reason content_filter)")
        }
        Some("length") => Some("the reply was cut at its token limit (finish_reason length)"),
        _ if content.trim().is_empty() => Some("the reply was empty"),
        _ => None,
    };
    match refused {
        Some(why) => Err(anyhow::Error::new(super::Refusal(why.to_string()))),
        None => Ok(content),
    }
}

/// A cross-encoder's ranks (docs/geo.md): one pass, no orders. The target's rank before is
/// 1 + the others scoring above it; after, its edited score against the others' clean
/// scores. Ties go to the target.
pub fn cross_encoder_ranks(clean: &[f64], edited: f64, target: usize) -> (usize, usize) {
    let above = |s: f64| clean.iter().enumerate().filter(|(j, x)| *j != target && **x > s).count();
    (1 + above(clean[target]), 1 + above(edited))
}

/// An offline ranker by name.
pub fn offline(name: &str) -> Option<Box<dyn Ranker>> {
    match name {
        "bm25" => Some(Box::new(Bm25)),
        "position" => Some(Box::new(Position)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cross_encoder_rank_rule() {
        let clean = [0.9, 0.5, 0.7, 0.5];
        assert_eq!(cross_encoder_ranks(&clean, 0.5, 1), (3, 3), "ties go to the target");
        assert_eq!(cross_encoder_ranks(&clean, 0.95, 1), (3, 1));
        assert_eq!(cross_encoder_ranks(&clean, 0.7, 1), (3, 2), "the others keep their clean scores");
        assert_eq!(cross_encoder_ranks(&clean, 0.1, 0), (1, 4));
    }

    #[test]
    fn the_s_stemmer_and_tokens() {
        for (w, s) in [
            ("batteries", "battery"),
            ("eies", "eie"),
            ("caches", "cache"),
            ("toes", "toe"),
            ("shoes", "shoe"),
            ("cameras", "camera"),
            ("status", "status"),
            ("glass", "glass"),
            ("bus", "bus"),
            ("gas", "gas"),
        ] {
            assert_eq!(s_stem(w), s, "{w}");
        }
        assert_eq!(tokens("The Coffee-Machines of 2024, é_x"), ["coffee", "machine", "2024", "é", "x"]);
        assert_eq!(tokens("It will work with it"), ["work"], "the whole stopword list");
    }

    /// Scoring a long text leaves the runtime free: a task beside it (the lease's renewal)
    /// keeps running while BM25 works.
    #[tokio::test]
    async fn bm25_scores_off_the_runtime() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let ticks = Arc::new(AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        tokio::task::yield_now().await;
        let long = "laptop bag sleeve charger ".repeat(80_000);
        let items = [Item { name: "A".into(), text: long }, Item { name: "B".into(), text: "a laptop".into() }];
        let started = std::time::Instant::now();
        let before = ticks.load(Ordering::SeqCst);
        Bm25.reply(&RankRequest { noun: "laptop", shown: items.iter().collect(), messages: &[], prompt_version: "t" })
            .await
            .expect("reply");
        let (ticked, took) = (ticks.load(Ordering::SeqCst) - before, started.elapsed());
        ticker.abort();
        assert!(ticked > 0 || took < std::time::Duration::from_millis(20), "{ticked} ticks in {took:?}");
    }

    #[tokio::test]
    async fn bm25_prefers_the_query_term_and_keeps_presented_order_among_ties() {
        let items = [
            Item { name: "A".into(), text: "A sturdy tool.".into() },
            Item { name: "B".into(), text: "The best laptop, a laptop for work.".into() },
            Item { name: "C".into(), text: "Another tool.".into() },
        ];
        let shown: Vec<&Item> = [2, 0, 1].iter().map(|&i| &items[i]).collect();
        let reply = Bm25
            .reply(&RankRequest { noun: "laptop", shown, messages: &[], prompt_version: "t" })
            .await
            .expect("reply");
        assert_eq!(reply, "1. B\n2. C\n3. A\n");
        let shown: Vec<&Item> = items.iter().collect();
        let reply = Position
            .reply(&RankRequest { noun: "laptop", shown, messages: &[], prompt_version: "t" })
            .await
            .expect("reply");
        assert_eq!(reply, "1. A\n2. B\n3. C\n");
        let s = bm25("laptop", &["laptop".into(), "tool".into()]);
        assert!(s[0] > 0.0 && s[1] == 0.0);
    }
}
