//! The source Secrets the rotation fast path ([`super::fast_path`]) is rotating right now, so
//! that a CSV reconcile running meanwhile (a resync, another event) leaves their copies' new
//! data to it. Without this, at 10,000 namespaces about 1,500 reconciles a rotation overlapped
//! each replaced a copy the fast path was about to replace, or had just replaced: one of the
//! two got a 409, and the reconcile also published a per-namespace Event for its write
//! (scripts/bench-scale.sh: 11,493 copy updates and 1,270 Events for 10,000 copies).
//!
//! A deferred write is not lost: when the fast path is done with a source it triggers every
//! CSV of that source's catalogs, and those reconciles, no longer deferring, write whatever
//! copy the fast path left (a 409, a copy it skipped).

use std::collections::HashSet;
use std::sync::Mutex;

use crate::controller::source_secrets::SecretKey;
use crate::pull_secrets::{CopyAction, CopyWrite};

/// The sources being rotated by the fast path.
#[derive(Debug, Default)]
pub struct Rotating {
    sources: Mutex<HashSet<SecretKey>>,
}

/// Marks a source as being rotated until dropped.
pub struct RotationGuard<'a> {
    rotating: &'a Rotating,
    key: SecretKey,
}

impl Drop for RotationGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut sources) = self.rotating.sources.lock() {
            sources.remove(&self.key);
        }
    }
}

impl Rotating {
    /// Marks `key` as being rotated until the guard is dropped.
    pub fn start(&self, key: &SecretKey) -> RotationGuard<'_> {
        if let Ok(mut sources) = self.sources.lock() {
            sources.insert(key.clone());
        }
        RotationGuard {
            rotating: self,
            key: key.clone(),
        }
    }

    /// Drops from `writes` (copies of a catalog in `catalog_namespace`, where its sources are)
    /// the in-place updates that only change the data of a copy whose source is being
    /// rotated: the writes the fast path makes. Returns how many were dropped.
    pub fn defer(&self, catalog_namespace: &str, writes: &mut Vec<CopyWrite>) -> usize {
        let Ok(sources) = self.sources.lock() else {
            return 0;
        };
        if sources.is_empty() {
            return 0;
        }
        let before = writes.len();
        writes.retain(|write| {
            let key = (catalog_namespace.to_owned(), write.source_name.clone());
            !(is_data_only(&write.action) && sources.contains(&key))
        });
        before - writes.len()
    }
}

/// An in-place update of the data alone (what the fast path writes).
fn is_data_only(action: &CopyAction) -> bool {
    matches!(
        action,
        CopyAction::Update { changes, .. } if changes.data && !changes.metadata && !changes.owners
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Secret;

    use super::*;
    use crate::pull_secrets::CopyChanges;

    fn update(source: &str, data: bool, metadata: bool) -> CopyWrite {
        CopyWrite {
            source_name: source.into(),
            action: CopyAction::Update {
                secret: Secret::default(),
                changes: CopyChanges {
                    data,
                    metadata,
                    owners: false,
                },
            },
        }
    }

    fn create(source: &str) -> CopyWrite {
        CopyWrite {
            source_name: source.into(),
            action: CopyAction::Create(Secret::default()),
        }
    }

    fn sources(writes: &[CopyWrite]) -> Vec<(&str, bool)> {
        writes
            .iter()
            .map(|write| {
                (
                    write.source_name.as_str(),
                    matches!(write.action, CopyAction::Create(_)),
                )
            })
            .collect()
    }

    #[test]
    fn only_data_updates_of_copies_of_a_source_being_rotated_are_deferred() {
        let rotating = Rotating::default();
        let writes = || {
            vec![
                update("creds", true, false),
                update("creds", true, true),
                create("creds"),
                update("mirror", true, false),
            ]
        };
        let mut idle = writes();
        assert_eq!(rotating.defer("olm", &mut idle), 0, "nothing is rotating");

        let guard = rotating.start(&("olm".to_owned(), "creds".to_owned()));
        let mut during = writes();
        assert_eq!(rotating.defer("olm", &mut during), 1);
        assert_eq!(
            sources(&during),
            [("creds", false), ("creds", true), ("mirror", false)],
            "a metadata change and a create are still the reconcile's"
        );
        let mut elsewhere = writes();
        assert_eq!(
            rotating.defer("other", &mut elsewhere),
            0,
            "a source of the same name in another namespace"
        );

        drop(guard);
        let mut after = writes();
        assert_eq!(rotating.defer("olm", &mut after), 0, "the rotation ended");
    }
}
