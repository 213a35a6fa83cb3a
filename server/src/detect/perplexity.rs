//! Perplexity filters: a character n-gram model of the clean corpus, or a scoring
//! endpoint's token log-probabilities; both scored relative to typical clean text.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{Calibration, CleanCorpus, DEFENSE_FPR, Filter, calibrate};
use crate::corpus::Task;
use crate::env::World;

/// A character n-gram language model with add-one smoothing over the characters seen
/// (n from 2 to 4: a context of up to three characters is packed into one integer, and
/// each context's total is kept, so scoring a character is two hash lookups).
pub struct NgramModel {
    n: usize,
    counts: FxHashMap<(u64, char), u32>,
    totals: FxHashMap<u64, u32>,
    vocab: usize,
}

/// Start-of-text padding.
const PAD: char = '\u{2}';

/// A context of up to three characters as one key (21 bits per character).
fn context(chars: &[char]) -> u64 {
    chars.iter().fold(0u64, |k, c| (k << 21) | u64::from(u32::from(*c)))
}

impl NgramModel {
    /// Trains on `texts` (lowercased). `n` must be 2, 3 or 4.
    pub fn train<'a>(texts: impl IntoIterator<Item = &'a str>, n: usize) -> NgramModel {
        assert!((2..=4).contains(&n), "character n-grams of 2 to 4 characters, not {n}");
        let mut vocab = rustc_hash::FxHashSet::default();
        let HeldOut { counts, totals } = HeldOut::count(texts, n, |c| {
            vocab.insert(c);
        });
        NgramModel { n, counts, totals, vocab: vocab.len() + 1 }
    }

    /// The counts of `texts`, to score as if the model had not been trained on them (the
    /// texts must be among those it was trained on).
    pub fn held_out<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> HeldOut {
        HeldOut::count(texts, self.n, |_| {})
    }

    /// Per-character perplexity of `text` under the model.
    pub fn perplexity(&self, text: &str) -> f64 {
        self.perplexity_without(text, &HeldOut::default())
    }

    /// Per-character perplexity of `text` under the model trained without `held` (the
    /// counts are subtracted; the character set stays the whole model's).
    pub fn perplexity_without(&self, text: &str, held: &HeldOut) -> f64 {
        let chars: Vec<char> = std::iter::repeat_n(PAD, self.n - 1).chain(text.to_lowercase().chars()).collect();
        let (mut nll, mut k) = (0.0, 0usize);
        #[allow(clippy::cast_precision_loss)]
        let vocab = self.vocab as f64;
        for w in chars.windows(self.n) {
            let ctx = context(&w[..self.n - 1]);
            let less = |all: Option<&u32>, held: Option<&u32>| all.copied().unwrap_or(0) - held.copied().unwrap_or(0);
            let total = less(self.totals.get(&ctx), held.totals.get(&ctx));
            let key = (ctx, w[self.n - 1]);
            let hit = if total == 0 { 0 } else { less(self.counts.get(&key), held.counts.get(&key)) };
            let p = (f64::from(hit) + 1.0) / (f64::from(total) + vocab);
            nll -= p.ln();
            k += 1;
        }
        #[allow(clippy::cast_precision_loss)]
        if k == 0 { 1.0 } else { (nll / k as f64).exp() }
    }
}

/// The n-gram counts of some texts, for scoring under a model without them
/// ([`NgramModel::perplexity_without`]).
#[derive(Default)]
pub struct HeldOut {
    counts: FxHashMap<(u64, char), u32>,
    totals: FxHashMap<u64, u32>,
}

impl HeldOut {
    fn count<'a>(texts: impl IntoIterator<Item = &'a str>, n: usize, mut seen: impl FnMut(char)) -> HeldOut {
        let mut held = HeldOut::default();
        for t in texts {
            let chars: Vec<char> = std::iter::repeat_n(PAD, n - 1).chain(t.to_lowercase().chars()).collect();
            for w in chars.windows(n) {
                seen(w[n - 1]);
                let ctx = context(&w[..n - 1]);
                *held.counts.entry((ctx, w[n - 1])).or_default() += 1;
                *held.totals.entry(ctx).or_default() += 1;
            }
        }
        held
    }
}

/// The perplexity filter: a 4-gram character model of the clean corpus; a text's score is
/// its perplexity divided by the median perplexity of the clean originals (so 1 is typical
/// clean text, and the ratio of an edit to its original is reported separately).
pub struct PerplexityFilter {
    model: NgramModel,
    reference: f64,
}

impl PerplexityFilter {
    pub fn train(clean: &CleanCorpus) -> PerplexityFilter {
        let model = NgramModel::train(clean.pages.iter().map(String::as_str), 4);
        let mut ppl: Vec<f64> = clean.originals.iter().map(|(_, t)| model.perplexity(t)).collect();
        ppl.sort_by(f64::total_cmp);
        let reference = ppl.get(ppl.len() / 2).copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
        PerplexityFilter { model, reference }
    }

    /// The score of a text (perplexity relative to typical clean text).
    pub fn score(&self, text: &str) -> f64 {
        self.model.perplexity(text) / self.reference
    }

    /// PPL-R: the edit's perplexity over its original's.
    pub fn ratio(&self, edited: &str, original: &str) -> f64 {
        self.model.perplexity(edited) / self.model.perplexity(original).max(f64::MIN_POSITIVE)
    }
}

/// The perplexity filter at a calibrated threshold.
pub struct CalibratedPerplexity {
    pub filter: PerplexityFilter,
    pub threshold: f64,
}

impl CalibratedPerplexity {
    /// Trains on the tasks' clean text and calibrates to `fpr` on their clean originals.
    pub fn build<'t>(tasks: impl IntoIterator<Item = &'t crate::corpus::Task>, fpr: f64) -> CalibratedPerplexity {
        let clean = CleanCorpus::of(tasks);
        let filter = PerplexityFilter::train(&clean);
        let scores: Vec<(String, f64)> = clean.originals.iter().map(|(d, t)| (d.clone(), filter.score(t))).collect();
        let threshold = calibrate("perplexity", &scores, fpr).threshold.unwrap_or(f64::INFINITY);
        CalibratedPerplexity { filter, threshold }
    }

    /// The world's filter at the defenses' calibration: trained on its tasks (in the world's
    /// order) at the first call, then kept with the world for every scorer and defense.
    pub fn of(world: &World) -> Arc<CalibratedPerplexity> {
        world.derived(|w| CalibratedPerplexity::build(w.tasks().map(|t| &**t), DEFENSE_FPR))
    }
}

/// The world of `tasks` with its filter ([`CalibratedPerplexity::of`]) trained meanwhile on
/// a second thread, for a caller sure to need it (a whole file to score).
pub fn world_trained(tasks: Vec<Arc<Task>>) -> anyhow::Result<World> {
    let trainee = tasks.clone();
    let (world, filter) = std::thread::scope(|scope| {
        let filter = scope.spawn(move || {
            super::KeywordFilter::shipped();
            // The tasks as `World::tasks` will list them: a repeated id, each time, as its
            // last definition (the corpus's validator refuses repeated ids).
            let last: FxHashMap<&str, &Task> = trainee.iter().map(|t| (t.id.as_str(), &**t)).collect();
            CalibratedPerplexity::build(trainee.iter().map(|t| last[t.id.as_str()]), DEFENSE_FPR)
        });
        (World::build_shared(tasks), filter.join())
    });
    let world = world?;
    let filter = filter.map_err(|_| anyhow::anyhow!("training the perplexity filter panicked"))?;
    world.derived(move |_| filter);
    Ok(world)
}

impl Filter for CalibratedPerplexity {
    fn name(&self) -> &str {
        "perplexity"
    }
    fn flags(&self, text: &str) -> bool {
        self.filter.score(text) > self.threshold
    }
}

/// Perplexity from a scoring model's token log-probabilities (`roles.scorer`), cached per
/// text like every model answer.
pub struct EndpointPerplexity {
    pub model: String,
    pub client: crate::llm::HttpLlm,
    pub cache: std::sync::Arc<dyn crate::db::Store>,
}

impl EndpointPerplexity {
    /// exp(−mean log-probability) of the text's tokens under the scoring model.
    pub async fn perplexity(&self, text: &str) -> anyhow::Result<f64> {
        use sha2::Digest;
        // Keyed by the endpoint's identity (server, model, sampling), not its model name alone.
        let server = self.client.spec().answer_identity();
        let key = hex::encode(sha2::Sha256::digest(format!("{server}\0logprobs-1\0{text}").as_bytes()));
        if let Some(hit) = self.cache.cache_get(&key).await?.and_then(|b| b.parse::<f64>().ok()) {
            return Ok(hit);
        }
        let lp = self.client.prompt_logprobs(text).await?;
        #[allow(clippy::cast_precision_loss)]
        let ppl = (-lp.iter().sum::<f64>() / lp.len() as f64).exp();
        self.cache.cache_put(&key, &format!("logprobs:{}", self.model), &ppl.to_string(), None).await?;
        Ok(ppl)
    }
}

/// The perplexity scorer `mirage detect` uses: the scoring endpoint when one is
/// configured, else the built-in character model. Scores are relative to the median
/// clean original, so 1 is typical clean text either way.
pub enum Perplexity {
    Ngram(PerplexityFilter),
    Endpoint { scorer: Box<EndpointPerplexity>, reference: f64 },
}

impl Perplexity {
    /// The endpoint scorer, with its reference from the clean originals.
    pub async fn endpoint(scorer: EndpointPerplexity, clean: &CleanCorpus) -> anyhow::Result<Perplexity> {
        let mut ppl = Vec::with_capacity(clean.originals.len());
        for (_, t) in &clean.originals {
            ppl.push(scorer.perplexity(t).await?);
        }
        ppl.sort_by(f64::total_cmp);
        let reference = ppl.get(ppl.len() / 2).copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
        Ok(Perplexity::Endpoint { scorer: Box::new(scorer), reference })
    }

    /// The text's perplexity relative to typical clean text.
    pub async fn score(&self, text: &str) -> anyhow::Result<f64> {
        Ok(match self {
            Perplexity::Ngram(f) => f.score(text),
            Perplexity::Endpoint { scorer, reference } => scorer.perplexity(text).await? / reference,
        })
    }

    /// The threshold for a false-positive rate on the clean originals, with realised rates.
    pub async fn calibration(&self, clean: &CleanCorpus, fpr: f64) -> anyhow::Result<Calibration> {
        let mut scores = Vec::with_capacity(clean.originals.len());
        for (d, t) in &clean.originals {
            scores.push((d.clone(), self.score(t).await?));
        }
        Ok(calibrate("perplexity", &scores, fpr))
    }

    /// PPL-R: an edit's perplexity over its original's.
    pub async fn ratio(&self, edited: &str, original: &str) -> anyhow::Result<f64> {
        Ok(match self {
            Perplexity::Ngram(f) => f.ratio(edited, original),
            Perplexity::Endpoint { scorer, .. } => {
                scorer.perplexity(edited).await? / scorer.perplexity(original).await?.max(f64::MIN_POSITIVE)
            }
        })
    }

    /// Which model scores.
    pub fn source(&self) -> String {
        match self {
            Perplexity::Ngram(_) => "built-in character 4-gram model".to_string(),
            Perplexity::Endpoint { scorer, .. } => format!("log-probabilities of {}", scorer.model),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perplexity_prefers_text_like_the_training_text() {
        let m = NgramModel::train(["the order arrived late and the box was damaged"; 20], 3);
        assert!(m.perplexity("the order arrived damaged") < m.perplexity("zqxj vvkp wwqz"));
    }

    /// The world's filter is trained once and shared; trained beside the build or at first
    /// need, it is the same filter, and the perplexity defense is the world's own.
    #[test]
    fn a_world_trains_its_filter_once_and_alike_either_way() {
        let tasks: Vec<Arc<Task>> = crate::corpus::generate::corpus().into_iter().map(Arc::new).collect();
        let lazy = World::build_shared(tasks.clone()).expect("world");
        let eager = world_trained(tasks).expect("world");
        let (first, eager) = (CalibratedPerplexity::of(&lazy), CalibratedPerplexity::of(&eager));
        assert!(Arc::ptr_eq(&first, &CalibratedPerplexity::of(&lazy)));
        assert!(first.threshold.is_finite());
        assert_eq!(first.threshold.to_bits(), eager.threshold.to_bits());
        for text in lazy.tasks().flat_map(|t| t.pages.values().map(|p| p.text.as_str())).take(200) {
            assert_eq!(first.filter.score(text).to_bits(), eager.filter.score(text).to_bits());
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let store = rt.block_on(crate::db::SqlStore::connect("sqlite::memory:")).expect("store");
        let defense = rt.block_on(super::super::defense_for("perplexity", &lazy, None, Arc::new(store)));
        assert!(std::ptr::addr_eq(Arc::as_ptr(&defense.expect("defense")), Arc::as_ptr(&first)));
    }
}
