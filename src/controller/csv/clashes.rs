//! Copies are created first and read only when the create says the name is taken (issue 12: a
//! GET per wanted copy missing from the label-selected cache, two per first install, only to
//! find out that nothing was there). A `POST` never overwrites, so creating first is safe; the
//! 409 `AlreadyExists` is then answered by one GET:
//!
//! - the Secret is opcat's copy of the same source (`pull_secrets::copy::is_ours_to_write`, the
//!   test the copy planner applies; the cache had not seen it yet): it is taken as written;
//! - anything else is a foreign Secret holding the copy's name (DESIGN invariant 3): its name is
//!   remembered here, the reconcile fails with the 409 and is retried, and from then on the
//!   reconcile reads that name (GET) so that the plan sees the foreign Secret and reports the
//!   `PullSecretConflict` condition, as it always did. A name is forgotten once a read finds no
//!   foreign Secret there.
//!
//! Touches nothing: the memory is pure.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Names of copies a foreign Secret was found to hold, by namespace.
#[derive(Debug, Default)]
pub struct NameClashes {
    names: Mutex<BTreeSet<(String, String)>>,
}

impl NameClashes {
    /// The remembered clashing names in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Vec<String> {
        let Ok(names) = self.names.lock() else {
            return Vec::new();
        };
        names
            .range((namespace.to_owned(), String::new())..)
            .take_while(|(ns, _)| ns == namespace)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// Remembers that a foreign Secret holds `namespace/name`.
    pub fn record(&self, namespace: &str, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.insert((namespace.to_owned(), name.to_owned()));
        }
    }

    /// Forgets `namespace/name` (no foreign Secret there any more).
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.remove(&(namespace.to_owned(), name.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clashes_are_remembered_per_namespace_until_forgotten() {
        let clashes = NameClashes::default();
        clashes.record("b", "copy-1");
        clashes.record("a", "copy-2");
        clashes.record("a", "copy-1");
        clashes.record("ab", "copy-3");
        assert_eq!(clashes.in_namespace("a"), ["copy-1", "copy-2"]);
        clashes.forget("a", "copy-1");
        assert_eq!(clashes.in_namespace("a"), ["copy-2"]);
        assert!(clashes.in_namespace("c").is_empty());
    }
}
