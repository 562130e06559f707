//! A reconcile's own writes, until the watch brings them back.
//!
//! A reconcile reads its object from a reflector store. Right after it wrote the object's status,
//! the next reconcile of the same object (queued by an earlier event) may still read the version
//! from before the write. Recomputing from that stale copy redoes work (a second bundle pull) and
//! writes again with fresh timestamps. [`OwnWrites`] remembers the versions a write superseded,
//! so such a reconcile can wait for the store instead; the watch event of the write triggers the
//! next reconcile.

use std::collections::HashMap;
use std::sync::Mutex;

/// Superseded `resourceVersion`s, by object UID.
#[derive(Debug, Default)]
pub struct OwnWrites {
    superseded: Mutex<HashMap<String, Vec<String>>>,
}

impl OwnWrites {
    /// Records that a write turned version `read` of object `uid` into version `written`.
    pub fn wrote(&self, uid: &str, read: Option<&str>, written: Option<&str>) {
        let (Some(read), Some(written)) = (read, written) else {
            return;
        };
        if read == written {
            return;
        }
        if let Ok(mut superseded) = self.superseded.lock() {
            superseded
                .entry(uid.to_owned())
                .or_default()
                .push(read.to_owned());
        }
    }

    /// Whether `version` of object `uid` is one this process already wrote over (the store has
    /// not caught up). A newer version forgets the object's record.
    pub fn is_stale(&self, uid: Option<&str>, version: Option<&str>) -> bool {
        let (Some(uid), Some(version)) = (uid, version) else {
            return false;
        };
        let Ok(mut superseded) = self.superseded.lock() else {
            return false;
        };
        match superseded.get(uid) {
            Some(versions) if versions.iter().any(|v| v == version) => true,
            Some(_) => {
                superseded.remove(uid);
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OwnWrites;

    #[test]
    fn versions_a_write_superseded_are_stale_until_a_newer_one_is_seen() {
        let writes = OwnWrites::default();
        assert!(!writes.is_stale(Some("a"), Some("1")));
        writes.wrote("a", Some("1"), Some("2"));
        writes.wrote("a", Some("2"), Some("3"));
        assert!(writes.is_stale(Some("a"), Some("1")));
        assert!(writes.is_stale(Some("a"), Some("2")));
        assert!(!writes.is_stale(Some("b"), Some("1")));
        assert!(!writes.is_stale(Some("a"), Some("3")));
        assert!(
            !writes.is_stale(Some("a"), Some("1")),
            "forgotten once the store caught up"
        );
    }

    #[test]
    fn a_write_that_changed_nothing_leaves_nothing_stale() {
        let writes = OwnWrites::default();
        writes.wrote("a", Some("5"), Some("5"));
        assert!(!writes.is_stale(Some("a"), Some("5")));
    }
}
