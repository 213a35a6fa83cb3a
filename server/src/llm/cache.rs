//! Model calls through the answer cache: an answer is kept by a key the caller derives
//! from (model, prompt version, inputs), so a rerun, another page view or another method
//! that asks the same question reuses it instead of calling the endpoint again.

use serde_json::Value;

use super::{LlmClient, Message};
use crate::db::Store;

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

/// Asks a model for a JSON object through the cache: a cached answer that `parse` accepts
/// is reused; otherwise up to two requests, the second asking for the bare object.
pub async fn ask_cached<T>(
    client: &dyn LlmClient,
    cache: &dyn Store,
    key: &str,
    judge_name: &str,
    messages: Vec<Message>,
    schema: &Value,
    parse: impl Fn(&str) -> Option<T>,
) -> anyhow::Result<T> {
    if let Some(body) = cache.cache_get(key).await?
        && let Some(hit) = parse(&body)
    {
        return Ok(hit);
    }
    let _turn = one_at_a_time(key).await;
    if let Some(body) = cache.cache_get(key).await?
        && let Some(hit) = parse(&body)
    {
        return Ok(hit);
    }
    let mut messages = messages;
    let mut last = String::new();
    for _ in 0..2 {
        let reply = client.complete(&messages, Some(schema)).await?;
        if let Some(parsed) = parse(&reply.content) {
            cache.cache_put(key, judge_name, &reply.content).await?;
            return Ok(parsed);
        }
        last = reply.content.chars().take(200).collect();
        messages.push(Message::assistant(reply.content));
        messages.push(Message::user("Answer with only the JSON object the instructions describe."));
    }
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
    cache.cache_put(key, source, &fresh).await?;
    Ok(fresh)
}
