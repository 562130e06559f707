//! Source pull-secret changes waiting for their copies: when each was first seen, so the
//! propagation lag can be measured when the copies catch up.

use std::collections::HashMap;

use k8s_openapi::jiff::Timestamp;

/// Most source-Secret changes tracked at once while their copies are being updated; further
/// changes are not timed (a stuck propagation must not grow memory without bound).
pub const MAX_PENDING_ROTATIONS: usize = 10_000;

/// Pending changes by source Secret `(namespace, name)`.
#[derive(Debug, Default)]
pub struct PendingRotations {
    first_seen: HashMap<(String, String), Timestamp>,
}

impl PendingRotations {
    /// Records a change seen at `at`; the first unpropagated change of a source is kept.
    /// False when the change is not tracked because too many are pending.
    pub fn observed(&mut self, namespace: &str, name: &str, at: Timestamp) -> bool {
        let key = (namespace.to_owned(), name.to_owned());
        if self.first_seen.len() >= MAX_PENDING_ROTATIONS && !self.first_seen.contains_key(&key) {
            return false;
        }
        self.first_seen.entry(key).or_insert(at);
        true
    }

    /// Removes the pending change of a source, returning when it was first seen.
    pub fn take(&mut self, namespace: &str, name: &str) -> Option<Timestamp> {
        self.first_seen
            .remove(&(namespace.to_owned(), name.to_owned()))
    }

    /// How many changes are pending.
    pub fn count(&self) -> usize {
        self.first_seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_change_and_is_bounded() {
        let mut pending = PendingRotations::default();
        let later = Timestamp::from_second(10).unwrap_or(Timestamp::UNIX_EPOCH);
        assert!(pending.observed("ns", "a", Timestamp::UNIX_EPOCH));
        assert!(pending.observed("ns", "a", later));
        assert_eq!(pending.take("ns", "a"), Some(Timestamp::UNIX_EPOCH));
        assert_eq!(pending.count(), 0);
        for index in 0..MAX_PENDING_ROTATIONS {
            assert!(pending.observed("ns", &index.to_string(), later));
        }
        assert!(!pending.observed("ns", "one-too-many", later));
        assert!(
            pending.observed("ns", "0", later),
            "a tracked source still is"
        );
        assert_eq!(pending.count(), MAX_PENDING_ROTATIONS);
    }
}
