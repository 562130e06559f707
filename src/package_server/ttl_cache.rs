//! A small map whose entries expire: the answers of TokenReviews and SubjectAccessReviews,
//! kept briefly as `k8s.io/apiserver`'s delegating authenticator and authorizer keep them
//! (10 s for allowed and denied alike by default).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries kept at most; past it, expired entries go first, then everything (a burst of
/// distinct requests must not grow memory without bound).
const CAPACITY: usize = 4096;

/// A map of answers that expire after a time-to-live chosen per entry.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K, V> Default for TtlCache<K, V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// The answer for `key` if it has not expired at `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(value, _)| value.clone())
    }

    /// Keeps `value` for `key` for `ttl` from `now`.
    pub fn insert(&self, key: K, value: V, ttl: Duration, now: Instant) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (value, now + ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_expire_and_the_map_stays_bounded() {
        let cache = TtlCache::default();
        let start = Instant::now();
        cache.insert("a", 1, Duration::from_secs(10), start);
        assert_eq!(cache.get(&"a", start + Duration::from_secs(9)), Some(1));
        assert_eq!(cache.get(&"a", start + Duration::from_secs(10)), None);
        let many = TtlCache::default();
        for i in 0..(CAPACITY * 2) {
            many.insert(i, i, Duration::from_secs(10), start);
        }
        assert!(many.entries.lock().unwrap().len() <= CAPACITY);
    }
}
