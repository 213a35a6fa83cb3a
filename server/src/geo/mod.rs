//! The GEO ranking track: GEO-Bench's benchmark of
//! listwise rankers under manipulation. A target is one item of a list whose description
//! the party who gains may edit; a ranker sees the list in K seeded orders before and after
//! the edit, and the target's median rank moves (NRG, S@α, P@α).
//!
//! * [`data`]: the four datasets compiled in, loading rules, query nouns and keys;
//! * [`order`]: the K orders, bit-identical to GEO-Bench's (Python's MT19937, CRC-32 seeds);
//! * [`prompt`]: the versioned ranking prompt, or a user's template;
//! * [`parse`]: a reply into ranks (GEO-Bench's parser with two fixes, or as published);
//! * [`rank`]: rankers (offline `bm25` and `position`);
//! * [`writers`]: offline edits (`clean`, `stuff`, `strip`);
//! * [`import`]: GEO-Bench's published texts as `import:<name>`, and adopted originals;
//! * [`methods`]: method variants, the C-SEO rewrites and Zero-Shot (built-in or by an
//!   attacker endpoint), and the stored text of each (variant, target);
//! * [`plan`]: a GEO run's spec and its trials on the durable queue;
//! * [`report`]: a stored run's per-target results, summaries and comparisons.
//! * [`metrics`]: per-target ranks, medians, NRG, S@α and P@α.

pub mod calibrate;
pub mod data;
pub mod detect;
pub mod import;
pub mod judge;
pub mod methods;
pub mod metrics;
pub mod order;
pub mod parse;
pub mod plan;
pub mod prompt;
pub mod rank;
pub mod report;
pub mod results;
pub mod score;
pub mod tap;
pub mod template;
pub mod texts;
pub mod writers;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::stats::Estimate;
use data::List;
use metrics::{Agg, TargetResult};
use order::Orders;
use parse::Parser;
use prompt::Prompt;
use rank::{RankRequest, Ranker};

/// How one target is evaluated: the orders, the prompt, the reading of replies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    pub k: usize,
    pub base_seed: i64,
    pub orders: Orders,
    pub parser: Parser,
    pub agg: Agg,
    pub prompt: Prompt,
    pub system_role: bool,
}

impl Default for Protocol {
    fn default() -> Protocol {
        Protocol {
            k: 10,
            base_seed: 0,
            orders: Orders::Python,
            parser: Parser::GeoBench,
            agg: Agg::Median,
            prompt: Prompt::default(),
            system_role: true,
        }
    }
}

/// One order's replies and the target's ranks in them (a GEO trial's stored step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub order: Vec<usize>,
    pub clean_reply: String,
    pub edited_reply: String,
    pub clean_rank: usize,
    pub edited_rank: usize,
    /// Why the clean list's call failed after its retries (its reply is then empty and the
    /// target missing, rank L+1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_failure: Option<String>,
    /// Why the edited list's call failed after its retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_failure: Option<String>,
    /// The stored key of the edited text this order ranked (see [`texts`]); absent in
    /// orders stored before keys were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_key: Option<String>,
    /// The tokens this order's ranker calls used, when the endpoint reported them (a reply
    /// read from the cache costs nothing again; offline rankers make no calls). `mirage
    /// runs show` and the run page sum it per ranker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::llm::Usage>,
}

impl OrderRecord {
    /// Whether either side's call failed.
    pub fn failed(&self) -> bool {
        self.clean_failure.is_some() || self.edited_failure.is_some()
    }
}

/// The reason when `e` is an endpoint's failure after its retries (it gave up, or refused
/// the request): such a call counts as a reply that names nothing. Any other error (a
/// missing key, the store) is not the ranker's answer and ends the trial as an error.
pub fn endpoint_failure(e: &anyhow::Error) -> Option<String> {
    use crate::llm::LlmError;
    if let Some(r) = e.downcast_ref::<Refusal>() {
        return Some(r.0.clone());
    }
    match e.downcast_ref::<LlmError>()? {
        // A wrong key or a wrong path (model) is a configuration error, not an answer: the
        // trial fails with the reason. A 403 is a refusal like a 400: content filters and
        // gateways answer it to single prompts of an endpoint that answers the rest.
        LlmError::Rejected { status: 401 | 404, .. } | LlmError::MissingKey(_) => None,
        LlmError::Exhausted { .. } | LlmError::Rejected { .. } => Some(format!("{e:#}")),
    }
}

/// A call that succeeded but names nothing usable (a content filter's stop, a truncated or
/// empty reply), or one that failed earlier in the run: a failed call with its reason.
#[derive(Debug)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// One order of one target: the clean and the edited list ranked under the same order.
pub async fn order_record(
    ranker: &dyn Ranker,
    protocol: &Protocol,
    list: &List,
    target: usize,
    edited: &str,
    order: Vec<usize>,
) -> anyhow::Result<OrderRecord> {
    let mut edited_items = list.items.clone();
    edited_items[target].text = edited.to_string();
    // An edit that changes nothing shows the clean list again: its reply is the clean
    // reply (or its failure), never a second draw.
    let unchanged = edited == list.items[target].text;
    let lists: &[&Vec<data::Item>] = if unchanged { &[&list.items] } else { &[&list.items, &edited_items] };
    let (replies, spent) = crate::llm::cache::metered(ask_each(ranker, protocol, list, target, lists, &order)).await;
    let mut replies = replies?;
    if unchanged {
        replies.push(replies[0].clone());
    }
    let (edited_reply, edited_rank, edited_failure) = replies.pop().expect("edited");
    let (clean_reply, clean_rank, clean_failure) = replies.pop().expect("clean");
    let calls = spent.ranker;
    Ok(OrderRecord {
        order,
        clean_reply,
        edited_reply,
        clean_rank,
        edited_rank,
        clean_failure,
        edited_failure,
        text_key: None,
        usage: if calls.calls > 0 { calls.known() } else { None },
    })
}

/// Each of `lists` ranked under `order`: (reply, the target's rank, why the call failed).
async fn ask_each(
    ranker: &dyn Ranker,
    protocol: &Protocol,
    list: &List,
    target: usize,
    lists: &[&Vec<data::Item>],
    order: &[usize],
) -> anyhow::Result<Vec<(String, usize, Option<String>)>> {
    let names: Vec<String> = list.items.iter().map(|i| i.name.clone()).collect();
    let mut replies = Vec::with_capacity(2);
    for items in lists.iter().copied() {
        let messages = if ranker.reads_prompt() {
            protocol.prompt.messages(&list.noun, items, order, protocol.system_role)
        } else {
            Vec::new()
        };
        let shown = order.iter().map(|&i| &items[i]).collect();
        let request =
            RankRequest { noun: &list.noun, shown, messages: &messages, prompt_version: &protocol.prompt.version };
        let reply = ranker
            .reply(&request)
            .await
            .with_context(|| format!("ranker {} on {}", ranker.name(), list.instance_key(target + 1)));
        // A call that failed after its retries names nothing: the target is missing.
        let (reply, failure) = match reply {
            Ok(r) => (r, None),
            Err(e) => (String::new(), Some(endpoint_failure(&e).ok_or(e)?)),
        };
        let (rank, _) = parse::target_rank(&reply, &names, target, protocol.parser);
        replies.push((reply, rank, failure));
    }
    Ok(replies)
}

/// The K orders of a target under a protocol.
pub fn target_orders(protocol: &Protocol, list: &List, target: usize) -> Vec<Vec<usize>> {
    let seed = order::instance_seed(protocol.base_seed, &list.instance_key(target + 1));
    order::orderings(list.items.len(), protocol.k, seed, protocol.orders)
}

/// How a target's replies were read: replies read (failed calls are not) and those read by
/// the fallback, in all and on the edited side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readings {
    pub replies: usize,
    pub fallback: usize,
    pub edited: usize,
    pub fallback_edited: usize,
}

/// How the replies of a target's order records were read.
pub fn readings(records: &[OrderRecord], names: &[String], parser: parse::Parser) -> Readings {
    let mut out = Readings::default();
    for r in records {
        for (reply, failure, edited) in
            [(&r.clean_reply, &r.clean_failure, false), (&r.edited_reply, &r.edited_failure, true)]
        {
            if failure.is_some() {
                continue;
            }
            let fallback = usize::from(parse::by_fallback(reply, names, parser));
            out.replies += 1;
            out.fallback += fallback;
            if edited {
                out.edited += 1;
                out.fallback_edited += fallback;
            }
        }
    }
    out
}

impl Summary {
    /// Whether the figures rest mostly on replies read by the fallback: more than half of
    /// the clean or of the edited replies.
    pub fn mostly_fallback(&self) -> bool {
        let (clean, fallback_clean) =
            (self.replies - self.edited_replies, self.fallback_replies - self.fallback_edited);
        self.fallback_edited * 2 > self.edited_replies || fallback_clean * 2 > clean
    }
}

/// The target's result from its order records.
pub fn result_of(records: &[OrderRecord], len: usize, agg: Agg) -> TargetResult {
    let ranks_b = records.iter().map(|r| r.clean_rank).collect();
    let ranks_a = records.iter().map(|r| r.edited_rank).collect();
    TargetResult::new(len, ranks_b, ranks_a, agg)
}

/// Ranks the list with the target's original and edited description under the same K
/// orders and returns the target's result with every order's record. `target` is 0-based.
pub async fn evaluate(
    ranker: &dyn Ranker,
    protocol: &Protocol,
    list: &List,
    target: usize,
    edited: &str,
) -> anyhow::Result<(TargetResult, Vec<OrderRecord>)> {
    let mut records = Vec::with_capacity(protocol.k);
    for order in target_orders(protocol, list, target) {
        records.push(order_record(ranker, protocol, list, target, edited, order).await?);
    }
    Ok((result_of(&records, list.items.len(), protocol.agg), records))
}

/// One target's result with where it belongs.
#[derive(Clone, Debug, Serialize)]
pub struct Scored {
    pub dataset: String,
    pub list: String,
    pub target: usize,
    pub result: TargetResult,
    /// Orders in which a ranker call failed (either side); the target counts as missing there.
    #[serde(default)]
    pub failed_orders: usize,
    /// Replies read and those read by the fallback (see [`Summary::fallback_replies`]).
    #[serde(default)]
    pub readings: Readings,
    /// Whether the edited text holds a listed keyword or phrase (GEO-Bench matching).
    pub kvr: bool,
    /// ppl(edited) / ppl(original) under the built-in 4-gram model, when defined.
    pub ppl_r: Option<f64>,
    /// For a TAP text: how its search went.
    #[serde(default)]
    pub search: Option<Search>,
    /// The stored key of the text the trial ranked (empty offline, where nothing is stored).
    #[serde(default)]
    pub text_key: String,
}

/// The rankers, and the (ranker, method) rows, every order of which had a ranker call fail:
/// each named with its number of orders (`bm25 (100 orders)`, `stuff under bm25 (100 orders)`).
pub fn silent(results: &std::collections::BTreeMap<(String, String), Vec<Scored>>) -> (Vec<String>, Vec<String>) {
    let mut by_ranker: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    for ((ranker, method), scored) in results {
        let orders = scored.iter().map(|s| s.result.ranks_a.len()).sum::<usize>();
        let failed = scored.iter().map(|s| s.failed_orders).sum::<usize>();
        let e = by_ranker.entry(ranker).or_default();
        (e.0, e.1) = (e.0 + orders, e.1 + failed);
        if orders > 0 && failed == orders {
            rows.push(format!("{method} under {ranker} ({orders} orders)"));
        }
    }
    let rankers = by_ranker
        .iter()
        .filter(|(_, (n, failed))| *n > 0 && failed == n)
        .map(|(r, (n, _))| format!("{r} ({n} orders)"));
    (rankers.collect(), rows)
}

/// The datasets among `scored` whose targets all come from a single list: no interval over
/// lists can show their spread, and no paired test is possible there.
pub fn single_list_datasets<'a>(scored: impl Iterator<Item = &'a Scored>) -> Vec<String> {
    let mut lists_of: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    for s in scored {
        lists_of.entry(&s.dataset).or_default().insert(&s.list);
    }
    lists_of.into_iter().filter(|(_, lists)| lists.len() < 2).map(|(d, _)| d.to_string()).collect()
}

/// How a TAP text's search went, as stored with the text: the nodes it scored, whether the
/// best reached rank 1 on the search's own orders, and its scoring calls (each node's m
/// orders) with those that failed after their retries (each ranked the candidate missing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Search {
    pub nodes: usize,
    pub reached: bool,
    #[serde(default)]
    pub calls: usize,
    #[serde(default)]
    pub failed_calls: usize,
}

/// Whether a text holds a keyword of the shipped list, read the way GEO-Bench reads it.
pub fn kvr(text: &str) -> bool {
    crate::detect::KeywordFilter::shipped().check_geobench(text).flagged
}

/// The headline figures of a set of targets: each the equal-dataset mean with a 95 %
/// interval over lists, stratified by dataset (`crate::stats::interval_weighted`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    /// Orders ranked (n × K) and those in which a ranker call failed after its retries
    /// (counted as replies that name nothing, never dropped).
    #[serde(default)]
    pub orders: usize,
    #[serde(default)]
    pub failed_orders: usize,
    /// Targets with at least one failed order.
    #[serde(default)]
    pub failed_targets: usize,
    /// Replies read (clean and edited, failed calls left out) and those read by the
    /// fallback (no numbered line ranked a name: names ranked by first mention); the same
    /// two counts for the edited side alone.
    #[serde(default)]
    pub replies: usize,
    #[serde(default)]
    pub fallback_replies: usize,
    #[serde(default)]
    pub edited_replies: usize,
    #[serde(default)]
    pub fallback_edited: usize,
    pub nrg: Estimate,
    pub s_at_0_1: Estimate,
    pub p_at_0_1: Estimate,
    pub s_at_0_2: Estimate,
    pub p_at_0_2: Estimate,
    /// Share of orders whose reply missed the target, edited (equal-dataset mean).
    pub missing: f64,
    /// The same share for the clean list.
    #[serde(default)]
    pub missing_clean: f64,
    /// NRG weighted by target instead of by dataset (the sensitivity check).
    pub nrg_target_weighted: f64,
    /// Share of edited texts the keyword filter flags (KVR).
    pub kvr: Estimate,
    /// NRG when a flagged edit is caught and gains nothing.
    pub nrg_after_keyword: Estimate,
    /// P@0.1 of edits the keyword filter lets pass (promoted and passed).
    pub promoted_and_passed: Estimate,
    /// PPL-R (built-in 4-gram model): the equal-dataset mean of ratios, and the median.
    pub ppl_r: Option<f64>,
    pub ppl_r_median: Option<f64>,
}

/// How targets are weighted in a row's figures and in the paired contrasts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// Each dataset counts equally (the paper's headline figures).
    #[default]
    Dataset,
    /// Each target counts equally (the sensitivity check), still resampled by list.
    Target,
}

/// The summary of `scored` (at least one target).
pub fn summarise(scored: &[Scored]) -> Option<Summary> {
    summarise_weighted(scored, crate::stats::Weight::Domain)
}

/// [`summarise`] with datasets weighted as `weight` says (`Pooled`: each target counts
/// equally); lists are resampled within their dataset either way.
pub fn summarise_weighted(scored: &[Scored], weight: crate::stats::Weight) -> Option<Summary> {
    use crate::stats::{Obs, Weight, interval_weighted, rate_interval_weighted};
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let est = |f: &dyn Fn(&Scored) -> f64| {
        let obs: Vec<Obs<'_>> = scored.iter().map(|s| Obs::value(&s.dataset, &s.list, f(s))).collect();
        interval_weighted(&obs, weight)
    };
    let rate = |f: &dyn Fn(&Scored) -> bool| {
        let obs: Vec<Obs<'_>> = scored.iter().map(|s| Obs::value(&s.dataset, &s.list, flag(f(s)))).collect();
        rate_interval_weighted(&obs, weight)
    };
    let pooled = weight == Weight::Pooled;
    Some(Summary {
        n: scored.len(),
        orders: scored.iter().map(|s| s.result.ranks_a.len()).sum(),
        failed_orders: scored.iter().map(|s| s.failed_orders).sum(),
        failed_targets: scored.iter().filter(|s| s.failed_orders > 0).count(),
        replies: scored.iter().map(|s| s.readings.replies).sum(),
        fallback_replies: scored.iter().map(|s| s.readings.fallback).sum(),
        edited_replies: scored.iter().map(|s| s.readings.edited).sum(),
        fallback_edited: scored.iter().map(|s| s.readings.fallback_edited).sum(),
        nrg: est(&|s| s.result.nrg)?,
        s_at_0_1: rate(&|s| s.result.s_at_0_1)?,
        p_at_0_1: rate(&|s| s.result.p_at_0_1)?,
        s_at_0_2: rate(&|s| s.result.s_at_0_2)?,
        p_at_0_2: rate(&|s| s.result.p_at_0_2)?,
        missing: est(&|s| s.result.missing_a)?.mean,
        missing_clean: est(&|s| s.result.missing_b)?.mean,
        nrg_target_weighted: scored.iter().map(|s| s.result.nrg).sum::<f64>() / scored.len() as f64,
        kvr: rate(&|s| s.kvr)?,
        nrg_after_keyword: est(&|s| if s.kvr { 0.0 } else { s.result.nrg })?,
        promoted_and_passed: rate(&|s| s.result.p_at_0_1 && !s.kvr)?,
        ppl_r: {
            let mut by: std::collections::BTreeMap<&str, (f64, f64)> = std::collections::BTreeMap::new();
            for (d, r) in
                scored.iter().filter_map(|s| s.ppl_r.map(|r| (if pooled { "" } else { s.dataset.as_str() }, r)))
            {
                let e = by.entry(d).or_default();
                e.0 += r;
                e.1 += 1.0;
            }
            (!by.is_empty()).then(|| by.values().map(|(sum, n)| sum / n).sum::<f64>() / by.len() as f64)
        },
        ppl_r_median: {
            let mut r: Vec<f64> = scored.iter().filter_map(|s| s.ppl_r).collect();
            r.sort_by(f64::total_cmp);
            (!r.is_empty())
                .then(|| if r.len() % 2 == 1 { r[r.len() / 2] } else { (r[r.len() / 2 - 1] + r[r.len() / 2]) / 2.0 })
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::LlmError;

    #[test]
    fn configuration_errors_are_not_answers() {
        let rejected = |status| anyhow::Error::new(LlmError::Rejected { status, body: "no".into() });
        for status in [401, 404] {
            assert_eq!(endpoint_failure(&rejected(status)), None, "{status}: the trial fails with the reason");
        }
        for status in [400, 403] {
            assert!(
                endpoint_failure(&rejected(status)).is_some(),
                "{status}: a refused prompt is a reply naming nothing"
            );
        }
        let gave_up = anyhow::Error::new(LlmError::Exhausted { attempts: 3, last: "HTTP 503".into() });
        assert!(endpoint_failure(&gave_up).is_some());
        assert_eq!(endpoint_failure(&anyhow::Error::new(LlmError::MissingKey("K".into()))), None);
    }

    /// An edit that changes nothing is asked once: the edited side is the clean reply, or
    /// the clean call's failure, so a flaky endpoint cannot make `clean` gain.
    #[tokio::test]
    async fn an_unchanged_edit_reuses_the_clean_reply() {
        struct Flaky(std::sync::atomic::AtomicUsize);
        #[async_trait::async_trait]
        impl Ranker for Flaky {
            fn name(&self) -> &str {
                "flaky"
            }
            fn model(&self) -> &str {
                "flaky"
            }
            fn reads_prompt(&self) -> bool {
                false
            }
            async fn reply(&self, _: &RankRequest<'_>) -> anyhow::Result<String> {
                // Fails the first call, answers every later one.
                if self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    return Err(LlmError::Exhausted { attempts: 1, last: "HTTP 500".into() }.into());
                }
                Ok("1. nothing".into())
            }
        }
        let lists = data::lists().expect("lists");
        let list = &lists[0];
        let ranker = Flaky(std::sync::atomic::AtomicUsize::new(0));
        let order: Vec<usize> = (0..list.items.len()).collect();
        let r = order_record(&ranker, &Protocol::default(), list, 0, &list.items[0].text, order).await.expect("record");
        assert_eq!(ranker.0.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once");
        assert_eq!((r.clean_rank, r.edited_rank), (r.clean_rank, r.clean_rank));
        assert!(r.clean_failure.is_some() && r.edited_failure == r.clean_failure);
    }
}
