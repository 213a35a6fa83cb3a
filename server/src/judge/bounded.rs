//! A store bounded in bytes, for what a scorer keeps across trajectories.

use rustc_hash::FxHashMap;

/// A bounded store: past [`Kept::BYTES`] of keys and values (about), nothing more is kept.
/// `BOUND` is 32 MiB unless a store asks for less (one kept per task, say).
pub struct Kept<K, V, const BOUND: usize = { 32 << 20 }> {
    map: FxHashMap<K, V>,
    bytes: usize,
}

impl<K, V, const BOUND: usize> Default for Kept<K, V, BOUND> {
    fn default() -> Self {
        Kept { map: FxHashMap::default(), bytes: 0 }
    }
}

impl<K: std::hash::Hash + Eq, V, const BOUND: usize> Kept<K, V, BOUND> {
    pub const BYTES: usize = BOUND;

    /// The bytes counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The keys and values kept.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }

    pub fn get<Q: std::hash::Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.get(key)
    }

    /// Whether the store is (all but) full: within a sixteenth of its bound.
    pub fn full(&self) -> bool {
        self.bytes * 16 >= Self::BYTES * 15
    }

    /// Keeps `value` under `key` when there is room for `bytes` more.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
        if self.bytes + bytes <= Self::BYTES {
            self.bytes += bytes;
            self.map.insert(key, value);
        }
    }
}

/// The value kept under `key` in `store`, else the one `make` gives with its size in bytes
/// (kept now, when there is room): the read-or-fill of every store a scorer shares.
pub fn kept_or<K, V, Q, const BOUND: usize>(
    store: &std::sync::RwLock<Kept<K, V, BOUND>>,
    key: &Q,
    make: impl FnOnce() -> (V, usize),
) -> V
where
    K: std::hash::Hash + Eq + std::borrow::Borrow<Q> + for<'q> From<&'q Q>,
    V: Clone,
    Q: std::hash::Hash + Eq + ?Sized,
{
    if let Some(v) = store.read().ok().and_then(|s| s.get(key).cloned()) {
        return v;
    }
    let (v, bytes) = make();
    if let Ok(mut s) = store.write() {
        s.insert(key.into(), v.clone(), bytes);
    }
    v
}
