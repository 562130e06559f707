//! Sharing of equal values: an [`Interner`] hands out one `Arc` for every value equal to one it
//! already holds, so a thousand stored objects that carry the same large part (the install
//! strategy of a CSV installed in a thousand namespaces) keep one copy of it; [`Strings`] does
//! the same for the label and annotation strings the owned-object caches hold once per
//! namespace.
//!
//! Both keep one table: values found by a hash (of their JSON for an [`Interner`], so no `Hash`
//! is needed; of the text for [`Strings`]) and confirmed by equality. The table holds only weak
//! references: a value is dropped when the last object using it is, and dead entries are pruned
//! whenever the table has doubled since the last pruning, so its own memory stays proportional
//! to the values alive.

use std::collections::HashMap;
use std::hash::{BuildHasher, DefaultHasher, Hasher, RandomState};
use std::io;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde::Serialize;

/// Entries below which a table is never pruned.
const MIN_PRUNE: usize = 64;

/// Weak references to shared values by hash.
struct Table<T: ?Sized> {
    by_hash: HashMap<u64, Vec<Weak<T>>>,
    /// Weak references held, dead or alive.
    entries: usize,
    /// Prune when `entries` reaches this.
    prune_at: usize,
}

impl<T: ?Sized> Default for Table<T> {
    fn default() -> Self {
        Self {
            by_hash: HashMap::new(),
            entries: 0,
            prune_at: MIN_PRUNE,
        }
    }
}

impl<T: ?Sized> Table<T> {
    /// The held value under `hash` that `is_equal` accepts, or the one `make` builds, then held.
    fn share(
        &mut self,
        hash: u64,
        is_equal: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Arc<T>,
    ) -> Arc<T> {
        let candidates = self.by_hash.entry(hash).or_default();
        if let Some(shared) = candidates
            .iter()
            .filter_map(Weak::upgrade)
            .find(|held| is_equal(held))
        {
            return shared;
        }
        let value = make();
        candidates.push(Arc::downgrade(&value));
        self.entries += 1;
        if self.entries >= self.prune_at {
            self.prune();
        }
        value
    }

    /// Values held and alive.
    fn alive(&self) -> usize {
        self.by_hash
            .values()
            .flatten()
            .filter(|held| held.strong_count() > 0)
            .count()
    }

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

/// A table behind a lock. A poisoned lock only means another thread panicked while holding it;
/// the table is still a valid cache (at worst it misses an entry).
fn lock<T: ?Sized>(table: &Mutex<Table<T>>) -> std::sync::MutexGuard<'_, Table<T>> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Shares equal values (see the module docs).
pub struct Interner<T> {
    table: Mutex<Table<T>>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self {
            table: Mutex::default(),
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
        lock(&self.table).share(hash, |held| held == value.as_ref(), || value.clone())
    }

    /// Values held and alive.
    pub fn len(&self) -> usize {
        lock(&self.table).alive()
    }

    /// Whether no value is held alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

/// Shared strings (see the module docs): one `Arc<str>` per distinct string in use instead of
/// one `String` per occurrence, which is what keeps the owned-object caches small at 10,000
/// namespaces (scripts/bench-scale.sh).
#[derive(Default)]
pub struct Strings {
    table: Mutex<Table<str>>,
    hasher: RandomState,
}

impl Strings {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared copy of `value` (a new one when no equal string is in use).
    pub fn get(&self, value: &str) -> Arc<str> {
        let hash = self.hasher.hash_one(value);
        lock(&self.table).share(hash, |held| held == value, || Arc::from(value))
    }

    /// How many distinct strings are in use.
    pub fn len(&self) -> usize {
        lock(&self.table).alive()
    }

    /// Whether no string is in use.
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
        for n in 0..MIN_PRUNE {
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
