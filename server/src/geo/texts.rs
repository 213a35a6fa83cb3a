//! Where a (variant, target)'s stored text lives. A text is made from the target's
//! description at the time; when that description changes (GEO-Bench originals adopted),
//! the text for the new description is stored under the variant's key with the
//! description's hash appended ([`for_original`]), so a text a run ranked is never
//! overwritten, and each trial records the key of the text it ranked
//! (`super::OrderRecord::text_key`).

use std::collections::{BTreeSet, HashMap};

use sha2::{Digest, Sha256};

use super::data::List;
use crate::db::{GeoText, Store};

/// The key under which `key`'s text made from `original` is stored when `key` itself holds
/// a text made from another original.
pub fn for_original(key: &str, original: &str) -> String {
    let words = original.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{key}~{}", &hex::encode(Sha256::digest(words.as_bytes()))[..8])
}

/// The `i`-th place of `key`'s texts made from `original`: `key` itself, then the key for
/// the original, then that key numbered (a TAP search run again after one that measured
/// nothing is stored in the next place, beside it).
fn place(key: &str, original: &str, i: usize) -> String {
    match i {
        0 => key.to_string(),
        1 => for_original(key, original),
        n => format!("{}.{n}", for_original(key, original)),
    }
}

/// What is stored for a (key, target).
#[derive(Debug)]
pub struct Lookup {
    /// The latest text made from the target's description now.
    pub current: Option<GeoText>,
    /// `key` holds a text made from another description.
    pub stale: bool,
    /// Where a new text for the description now goes: the first free place.
    pub next: String,
}

/// The stored texts of `key` for `list`'s item `target` (0-based), read along its places
/// until the first free one.
pub async fn lookup(store: &dyn Store, key: &str, list: &List, target: usize) -> anyhow::Result<Lookup> {
    let index = i64::try_from(target + 1)?;
    let original = &list.items[target].text;
    let (mut current, mut stale) = (None, false);
    for i in 0..1000 {
        let at = place(key, original, i);
        match store.geo_text(&at, &list.dataset, &list.category, index).await? {
            None => return Ok(Lookup { current, stale, next: at }),
            Some(t) if t.made_on(original) => current = Some(t),
            Some(_) => stale |= i == 0,
        }
    }
    anyhow::bail!(
        "{key}: a thousand texts of {} are stored; something writes them in a loop",
        list.instance_key(target + 1)
    )
}

/// The key of the text a trial ranked: the one its orders recorded, else (orders stored
/// before keys were recorded) the variant's `planned` key.
pub fn ranked_key<'a>(records: &'a [super::OrderRecord], planned: &'a str) -> &'a str {
    records.iter().find_map(|r| r.text_key.as_deref()).unwrap_or(planned)
}

/// A stored text's place: (key, dataset, list, index).
pub type TextKey = (String, String, String, i64);
/// Whether a text holds a listed keyword, its PPL-R against the list's original now (none
/// when it was made from another original), and a TAP text's search.
pub type Flags = (bool, Option<f64>, Option<super::Search>);

/// The flags of each text a run ranked, `ranked` holding (key, task id) pairs, and how many
/// of those texts were made from another original than the list's now (adopted since).
pub async fn flags(
    store: &dyn Store,
    lists: &[List],
    ranked: &BTreeSet<(String, String)>,
) -> anyhow::Result<(HashMap<TextKey, Flags>, usize)> {
    let ppl = super::detect::PplModel::new(lists);
    let by_list: HashMap<(&str, &str), &List> =
        lists.iter().map(|l| ((l.dataset.as_str(), l.category.as_str()), l)).collect();
    let keys: BTreeSet<&str> = ranked.iter().map(|(k, _)| k.as_str()).collect();
    let (mut flagged, mut stale) = (HashMap::new(), 0);
    for key in keys {
        for t in store.geo_texts(key).await? {
            let task = t.target()?.to_string();
            if !ranked.contains(&(key.to_string(), task)) {
                continue;
            }
            // The list's own original serves PPL-R as it serves the ranks (an imported text's
            // stored original may differ from it); a text made from another original is
            // counted, and no ratio is read from it.
            let list = by_list.get(&(t.dataset.as_str(), t.category.as_str()));
            let orig = list.and_then(|l| l.items.get(usize::try_from(t.target_idx - 1).ok()?));
            let ratio = match (list, orig) {
                (Some(list), Some(o)) if t.made_on(&o.text) => ppl.ratio(&t.adv_text, &o.text, list),
                (Some(_), Some(_)) => {
                    stale += 1;
                    None
                }
                _ => None,
            };
            let flags = (super::kvr(&t.adv_text), ratio, search_of(&t));
            flagged.insert((t.method, t.dataset, t.category, t.target_idx), flags);
        }
    }
    Ok((flagged, stale))
}

/// A TAP text's search, from what the search stored with it.
fn search_of(t: &GeoText) -> Option<super::Search> {
    let m = serde_json::from_str::<serde_json::Value>(&t.meta).ok()?;
    let count = |k: &str| m.get(k).and_then(serde_json::Value::as_u64).and_then(|v| usize::try_from(v).ok());
    Some(super::Search {
        nodes: count("nodes")?,
        reached: m.get("reached")?.as_bool()?,
        calls: count("calls").unwrap_or_default(),
        failed_calls: count("failed_calls").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_original_has_its_own_key() {
        let a = for_original("cseo:fluency@m#ab", "An  old\ndescription");
        assert_eq!(a, for_original("cseo:fluency@m#ab", "An old description"), "whitespace as made_on reads it");
        assert!(a.starts_with("cseo:fluency@m#ab~") && a.len() == "cseo:fluency@m#ab~".len() + 8, "{a}");
        assert_ne!(a, for_original("cseo:fluency@m#ab", "A new description"));
    }
}
