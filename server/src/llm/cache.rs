//! Model calls through the answer cache: an answer is kept by a key the caller derives
//! from (model, prompt version, inputs), so a rerun, another page view or another method
//! that asks the same question reuses it instead of calling the endpoint again.

use serde_json::Value;

use super::{LlmClient, Message, Usage};
use crate::db::Store;

/// What the model calls made through the cache within a [`metered`] future cost: the
/// tokens summed, and whether any call's cost is unknown (an answer cached before its
/// tokens were recorded, or an endpoint that reports none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// The tokens of the calls whose tokens are known.
    pub usage: Usage,
    pub calls: u64,
    /// Calls whose tokens are not known.
    pub unknown_calls: u64,
}

impl Spent {
    /// The tokens, when every call's are known.
    pub fn known(self) -> Option<Usage> {
        (self.unknown_calls == 0).then_some(self.usage)
    }

    fn add(&mut self, usage: Option<Usage>) {
        self.calls += 1;
        match usage {
            Some(u) => {
                self.usage.prompt_tokens += u.prompt_tokens;
                self.usage.completion_tokens += u.completion_tokens;
            }
            None => self.unknown_calls += 1,
        }
    }
}

/// Whose question a cached call asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asker {
    /// A judge: the reasoning grade, the labels' second opinion, the detection filter.
    Judge,
    /// The attacker writing an interested party's text.
    Attacker,
    /// A GEO ranker: charged for the calls it makes, not for replies read from the cache
    /// (the clean list's reply is asked once and shared by every method).
    Ranker,
}

/// What a [`metered`] future's cached model calls cost, by who asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spending {
    pub judge: Spent,
    pub attacker: Spent,
    pub ranker: Spent,
}

/// A meter to run work under ([`Meter::run`]) and read afterwards, also when the work
/// was dropped half-way.
#[derive(Clone, Debug, Default)]
pub struct Meter(std::sync::Arc<std::sync::Mutex<Spending>>);

impl Meter {
    /// Runs `work` counting what its cached model calls cost: a fresh answer counts the
    /// tokens its requests used, a cached one the tokens it cost when it was asked, so a
    /// score reads the same whether or not the answer was already there.
    pub async fn run<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        METER.scope(self.clone(), work).await
    }

    /// What was counted so far.
    pub fn spent(&self) -> Spending {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

tokio::task_local! {
    static METER: Meter;
}

/// Runs `work` under a fresh [`Meter`] and returns what it spent.
pub async fn metered<T>(work: impl std::future::Future<Output = T>) -> (T, Spending) {
    let meter = Meter::default();
    let out = meter.run(work).await;
    (out, meter.spent())
}

/// Runs `work` outside any meter: for work shared by many trials (a filter's calibration)
/// that no one trial should be charged for.
pub async fn unmetered<T>(work: impl std::future::Future<Output = T>) -> T {
    metered(work).await.0
}

/// Counts one call of `asker` that cost `usage` (unknown: `None`) on the meter in scope.
pub fn charge(asker: Asker, usage: Option<Usage>) {
    let _ = METER.try_with(|m| {
        let mut spending = m.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match asker {
            Asker::Judge => spending.judge.add(usage),
            Asker::Attacker => spending.attacker.add(usage),
            Asker::Ranker => spending.ranker.add(usage),
        }
    });
}

fn tokens(u: Usage) -> (u64, u64) {
    (u.prompt_tokens, u.completion_tokens)
}

/// Per-key turns among this process's tasks: a key's lock while someone asks under it.
/// Entries whose lock nobody holds or waits for are dropped on the next call.
async fn one_at_a_time(key: &str) -> tokio::sync::OwnedMutexGuard<()> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, Mutex, Weak};
    type Turns = Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>;
    static TURNS: LazyLock<Turns> = LazyLock::new(Default::default);
    let lock = {
        let mut turns = TURNS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        turns.retain(|_, w| w.strong_count() > 0);
        match turns.get(key).and_then(Weak::upgrade) {
            Some(lock) => lock,
            None => {
                let lock = Arc::new(tokio::sync::Mutex::new(()));
                turns.insert(key.to_string(), Arc::downgrade(&lock));
                lock
            }
        }
    };
    lock.lock_owned().await
}

/// A question to ask through the cache: its key, who answers (model and prompt version,
/// kept with the answer) and who asks (for the meter).
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    pub key: &'a str,
    pub source: &'a str,
    pub asker: Asker,
}

/// Asks a model for a JSON object through the cache: a cached answer that `parse` accepts
/// is reused; otherwise up to two requests, the second asking for the bare object.
pub async fn ask_cached<T>(
    client: &dyn LlmClient,
    cache: &dyn Store,
    question: Question<'_>,
    messages: Vec<Message>,
    schema: &Value,
    parse: impl Fn(&str) -> Option<T>,
) -> anyhow::Result<T> {
    let Question { key, source: judge_name, asker } = question;
    let cached = || async {
        let hit = cache.cache_get_used(key).await?;
        anyhow::Ok(hit.and_then(|(body, used)| {
            let parsed = parse(&body)?;
            charge(asker, used.map(|(p, c)| Usage { prompt_tokens: p, completion_tokens: c }));
            Some(parsed)
        }))
    };
    if let Some(hit) = cached().await? {
        return Ok(hit);
    }
    let _turn = one_at_a_time(key).await;
    if let Some(hit) = cached().await? {
        return Ok(hit);
    }
    let mut messages = messages;
    let mut last = String::new();
    // Both requests count: the answer cost what it took to get a readable one.
    // A reply that carried no usage leaves the answer's cost unknown, not 0.
    let (mut used, mut answered) = (Some(Usage::default()), false);
    for _ in 0..2 {
        let reply = match client.complete(&messages, Some(schema)).await {
            Ok(reply) => reply,
            Err(e) => {
                if answered {
                    charge(asker, used);
                }
                return Err(e.into());
            }
        };
        (used, answered) = (Usage::sum(used, reply.usage), true);
        if let Some(parsed) = parse(&reply.content) {
            cache.cache_put(key, judge_name, &reply.content, used.map(tokens)).await?;
            charge(asker, used);
            return Ok(parsed);
        }
        last = reply.content.chars().take(200).collect();
        messages.push(Message::assistant(reply.content));
        messages.push(Message::user("Answer with only the JSON object the instructions describe."));
    }
    charge(asker, used);
    anyhow::bail!("the judge's reply could not be read: {last:?}")
}

/// The cached answer under `key`, or `produce`'s, stored under `key` for next time
/// (`source` names who answered). For answers kept as they came (texts, JSON lists).
pub async fn remembered(
    cache: &dyn Store,
    key: &str,
    source: &str,
    produce: impl std::future::Future<Output = anyhow::Result<String>>,
) -> anyhow::Result<String> {
    if let Some(hit) = cache.cache_get(key).await? {
        return Ok(hit);
    }
    // Tasks of this process asking the same question at once: one asks, the others read.
    let _turn = one_at_a_time(key).await;
    if let Some(hit) = cache.cache_get(key).await? {
        return Ok(hit);
    }
    let fresh = produce.await?;
    cache.cache_put(key, source, &fresh, None).await?;
    Ok(fresh)
}
