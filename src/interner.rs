//! Sharing of equal values: an [`Interner`] hands out one `Arc` for every value equal to one it
//! already holds, so a thousand stored objects that carry the same large part (the install
//! strategy of a CSV installed in a thousand namespaces) keep one copy of it.
//!
//! Values are found by a hash of their JSON serialisation (any serialisable type, no `Hash`
//! needed) and confirmed with `PartialEq`. The interner holds only weak references: a value is
//! dropped when the last object using it is, and dead entries are pruned whenever the table
//! has doubled since the last pruning, so its own memory stays proportional to the values
//! alive.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde::Serialize;

/// Entries below which the table is never pruned.
const MIN_PRUNE: usize = 64;

/// Shares equal values (see the module docs).
pub struct Interner<T> {
    table: Mutex<Table<T>>,
}

struct Table<T> {
    by_hash: HashMap<u64, Vec<Weak<T>>>,
    /// Weak references held, dead or alive.
    entries: usize,
    /// Prune when `entries` reaches this.
    prune_at: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self {
            table: Mutex::new(Table {
                by_hash: HashMap::new(),
                entries: 0,
                prune_at: MIN_PRUNE,
            }),
        }
    }
}

impl<T: Serialize + PartialEq> Interner<T> {
    /// The shared `Arc` of a value equal to `value`: one already held, or `value` itself, which
    /// is then held for the next equal value.
    pub fn intern(&self, value: Arc<T>) -> Arc<T> {
        let Some(hash) = hash_of(value.as_ref()) else {
            // Not serialisable: not shared.
            return value;
        };
        // A poisoned lock only means another thread panicked while holding it; the table is
        // still a valid cache (at worst it misses an entry).
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let candidates = table.by_hash.entry(hash).or_default();
        if let Some(shared) = candidates
            .iter()
            .filter_map(Weak::upgrade)
            .find(|held| held.as_ref() == value.as_ref())
        {
            return shared;
        }
        candidates.push(Arc::downgrade(&value));
        table.entries += 1;
        if table.entries >= table.prune_at {
            table.prune();
        }
        value
    }

    /// Values held and alive.
    pub fn len(&self) -> usize {
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table
            .by_hash
            .values()
            .flatten()
            .filter(|held| held.strong_count() > 0)
            .count()
    }

    /// Whether no value is held alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Table<T> {
    /// Drops dead entries; the next pruning happens when the table has doubled again.
    fn prune(&mut self) {
        self.by_hash.retain(|_, candidates| {
            candidates.retain(|held| held.strong_count() > 0);
            !candidates.is_empty()
        });
        self.by_hash.shrink_to_fit();
        self.entries = self.by_hash.values().map(Vec::len).sum();
        self.prune_at = (self.entries * 2).max(MIN_PRUNE);
    }
}

/// A hash of `value`'s JSON, written straight into the hasher (no JSON text is built).
fn hash_of<T: Serialize>(value: &T) -> Option<u64> {
    struct HashWriter(DefaultHasher);
    impl io::Write for HashWriter {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut writer = HashWriter(DefaultHasher::new());
    serde_json::to_writer(&mut writer, value).ok()?;
    Some(writer.0.finish())
}

/// Strings shared the same way, for caches that hold the same few strings many times over: every
/// object opcat creates carries the same label keys, `managed-by` value, CSV name and annotation
/// keys, once per namespace it is installed in. One `Arc<str>` per distinct string instead of one
/// `String` per occurrence is what keeps such caches small at 10,000 namespaces
/// (scripts/bench-scale.sh). Unlike [`Interner`], strings are held strongly and pruned by count.
/// Below this many strings the set of [`Strings`] is never pruned.
const MIN_PRUNE_AT: usize = 1024;

/// A set of shared strings (see above). Strings no caller holds any more are dropped when the set has doubled
/// since the last pruning, so its size stays within twice what is in use.
#[derive(Debug)]
pub struct Strings {
    state: Mutex<StringsState>,
}

#[derive(Debug)]
struct StringsState {
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
            state: Mutex::new(StringsState {
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

    #[derive(Serialize, PartialEq, Debug)]
    struct Strategy {
        deployments: Vec<String>,
    }

    fn strategy(names: &[&str]) -> Arc<Strategy> {
        Arc::new(Strategy {
            deployments: names.iter().map(|name| (*name).to_owned()).collect(),
        })
    }

    #[test]
    fn equal_values_share_one_arc() {
        let interner = Interner::default();
        let first = interner.intern(strategy(&["operator", "webhook"]));
        let second = interner.intern(strategy(&["operator", "webhook"]));
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(interner.len(), 1);
    }

    #[test]
    fn different_values_stay_apart() {
        let interner = Interner::default();
        let first = interner.intern(strategy(&["operator"]));
        let second = interner.intern(strategy(&["other"]));
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(*second, *strategy(&["other"]));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn values_are_dropped_with_their_last_user() {
        let interner = Interner::default();
        let first = interner.intern(strategy(&["operator"]));
        drop(first);
        assert!(interner.is_empty());
        // A new equal value is held afresh.
        let again = interner.intern(strategy(&["operator"]));
        assert_eq!(Arc::strong_count(&again), 1);
        assert_eq!(interner.len(), 1);
    }

    #[test]
    fn dead_entries_are_pruned() {
        let interner = Interner::default();
        let kept = interner.intern(strategy(&["kept"]));
        for i in 0..10_000 {
            let name = format!("gone-{i}");
            drop(interner.intern(strategy(&[&name])));
        }
        let table = interner.table.lock().unwrap();
        assert!(table.entries < 2 * MIN_PRUNE, "{} entries", table.entries);
        assert!(table.by_hash.len() <= table.entries);
        drop(table);
        assert!(Arc::ptr_eq(&kept, &interner.intern(strategy(&["kept"]))));
    }

    #[test]
    fn a_hash_collision_is_told_apart_by_equality() {
        let interner: Interner<Strategy> = Interner::default();
        let value = strategy(&["a"]);
        // Plant a different value under the hash of `value`.
        let planted = strategy(&["b"]);
        let hash = hash_of(value.as_ref()).unwrap();
        {
            let mut table = interner.table.lock().unwrap();
            table
                .by_hash
                .entry(hash)
                .or_default()
                .push(Arc::downgrade(&planted));
            table.entries += 1;
        }
        let interned = interner.intern(Arc::clone(&value));
        assert!(Arc::ptr_eq(&interned, &value));
        assert_eq!(interner.len(), 2);
    }

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
