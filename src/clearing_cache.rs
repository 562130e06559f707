//! A small shared map that forgets everything when it is full: for caches whose keys are few and
//! whose values are cheap to rebuild compared with what they save (a registry client per
//! credential, a parsed bundle per image digest). Clearing instead of evicting one entry keeps it
//! simple; a cleared entry is rebuilt on its next use.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// At most `capacity` entries, shared between tasks.
#[derive(Debug)]
pub struct ClearingCache<K, V> {
    entries: Mutex<HashMap<K, V>>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> ClearingCache<K, V> {
    /// An empty cache that holds at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    /// Stores `value` under `key` and returns what the cache holds there: the value a concurrent
    /// caller stored first, if any, so that every caller shares one. When the cache is full it is
    /// emptied first; when its lock is poisoned, `value` is returned unstored.
    pub fn insert_or_keep(&self, key: K, value: V) -> V {
        let Some(mut entries) = self.with_room_for(&key) else {
            return value;
        };
        entries.entry(key).or_insert(value).clone()
    }

    /// Stores `value` under `key`, replacing what was there (for values that a newer answer
    /// supersedes). When the cache is full it is emptied first; when its lock is poisoned,
    /// nothing is stored.
    pub fn insert(&self, key: K, value: V) {
        if let Some(mut entries) = self.with_room_for(&key) {
            entries.insert(key, value);
        }
    }

    /// The locked entries, emptied first when full and `key` is not among them; `None` when
    /// the lock is poisoned.
    fn with_room_for(&self, key: &K) -> Option<MutexGuard<'_, HashMap<K, V>>> {
        let mut entries = self.entries.lock().ok()?;
        if entries.len() >= self.capacity && !entries.contains_key(key) {
            entries.clear();
        }
        Some(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_value_is_shared_and_a_full_cache_starts_over() {
        let cache = ClearingCache::new(2);
        assert_eq!(cache.insert_or_keep("a", 1), 1);
        assert_eq!(cache.insert_or_keep("a", 2), 1, "the first one stays");
        assert_eq!(cache.insert_or_keep("b", 3), 3);
        assert_eq!(cache.get(&"a"), Some(1));
        assert_eq!(cache.insert_or_keep("c", 4), 4, "full: emptied first");
        assert_eq!(cache.get(&"a"), None);
        assert_eq!(cache.get(&"b"), None);
        assert_eq!(cache.get(&"c"), Some(4));
    }

    #[test]
    fn insert_replaces_and_a_full_cache_starts_over() {
        let cache = ClearingCache::new(2);
        cache.insert("a", 1);
        cache.insert("a", 2);
        assert_eq!(cache.get(&"a"), Some(2), "the newer one replaces it");
        cache.insert("b", 3);
        cache.insert("c", 4);
        assert_eq!(cache.get(&"a"), None, "full: emptied first");
        assert_eq!(cache.get(&"c"), Some(4));
    }
}
