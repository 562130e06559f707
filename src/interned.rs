//! Shared strings for caches that hold the same few strings many times over: every object opcat
//! creates carries the same label keys, `managed-by` value, CSV name and annotation keys, once per
//! namespace it is installed in. Holding one `Arc<str>` per distinct string instead of one
//! `String` per occurrence is what keeps such caches small at 10,000 namespaces
//! (scripts/bench-scale.sh).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Below this many strings the set is never pruned.
const MIN_PRUNE_AT: usize = 1024;

/// A set of shared strings. Strings no caller holds any more are dropped when the set has doubled
/// since the last pruning, so its size stays within twice what is in use.
#[derive(Debug)]
pub struct Strings {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    set: HashSet<Arc<str>>,
    prune_at: usize,
}

impl Default for Strings {
    fn default() -> Self {
        Self::new()
    }
}

impl Strings {
    /// An empty set.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                set: HashSet::new(),
                prune_at: MIN_PRUNE_AT,
            }),
        }
    }

    /// The shared copy of `value` (a new one when `value` is not held yet; an unshared one when
    /// the lock is poisoned).
    pub fn get(&self, value: &str) -> Arc<str> {
        let Ok(mut state) = self.state.lock() else {
            return Arc::from(value);
        };
        if let Some(found) = state.set.get(value) {
            return found.clone();
        }
        if state.set.len() >= state.prune_at {
            // Held by the set alone: no cache uses it any more.
            state.set.retain(|held| Arc::strong_count(held) > 1);
            state.prune_at = (state.set.len() * 2).max(MIN_PRUNE_AT);
        }
        let shared: Arc<str> = Arc::from(value);
        state.set.insert(shared.clone());
        shared
    }

    /// How many distinct strings the set holds (in use or not yet pruned).
    pub fn len(&self) -> usize {
        self.state.lock().map(|state| state.set.len()).unwrap_or(0)
    }

    /// Whether the set holds no string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_allocation_and_unused_ones_are_pruned() {
        let strings = Strings::new();
        let a = strings.get("app.kubernetes.io/managed-by");
        let b = strings.get("app.kubernetes.io/managed-by");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(strings.len(), 1);

        // Fill the set past its pruning size with strings nobody keeps.
        for n in 0..MIN_PRUNE_AT {
            drop(strings.get(&format!("gone-{n}")));
        }
        let kept = strings.get("kept");
        assert!(
            strings.len() <= 3,
            "only the strings in use remain after pruning: {}",
            strings.len()
        );
        assert!(Arc::ptr_eq(
            &a,
            &strings.get("app.kubernetes.io/managed-by")
        ));
        assert_eq!(&*kept, "kept");
    }
}
