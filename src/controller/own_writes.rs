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

/// What this process wrote over for one object.
#[derive(Debug, Default)]
struct Superseded {
    versions: Vec<String>,
    /// The version its last write made.
    last_written: Option<String>,
}

/// Superseded `resourceVersion`s, by object UID.
#[derive(Debug, Default)]
pub struct OwnWrites {
    superseded: Mutex<HashMap<String, Superseded>>,
}

impl OwnWrites {
    /// Records that a write turned version `read` of object `uid` into version `written`. A
    /// version this process wrote earlier is superseded too: two writes of one reconcile (a
    /// CSV's annotation, then its status) leave the first one's watch event stale.
    pub fn wrote(&self, uid: &str, read: Option<&str>, written: Option<&str>) {
        let (Some(read), Some(written)) = (read, written) else {
            return;
        };
        if read == written {
            return;
        }
        if let Ok(mut superseded) = self.superseded.lock() {
            let entry = superseded.entry(uid.to_owned()).or_default();
            entry.versions.push(read.to_owned());
            if let Some(previous) = entry.last_written.replace(written.to_owned())
                && previous != written
            {
                entry.versions.push(previous);
            }
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
            Some(entry) if entry.versions.iter().any(|v| v == version) => true,
            Some(_) => {
                superseded.remove(uid);
                false
            }
            None => false,
        }
    }
}

/// The versions this process wrote, by object UID, until their watch event (the echo) arrives:
/// the echo of an in-place write need not trigger the reconciles the write was part of. At most
/// one entry per object (its latest write); an entry goes when its echo or the object's
/// deletion is seen.
#[derive(Debug, Default)]
pub struct Echoes {
    written: Mutex<HashMap<String, String>>,
}

impl Echoes {
    /// Records that this process wrote version `written` of object `uid`.
    pub fn wrote(&self, uid: Option<&str>, written: Option<&str>) {
        let (Some(uid), Some(written)) = (uid, written) else {
            return;
        };
        if let Ok(mut echoes) = self.written.lock() {
            echoes.insert(uid.to_owned(), written.to_owned());
        }
    }

    /// Whether the event of `version` of object `uid` is the echo of a recorded write (which
    /// it then forgets). Any other version is not, and keeps the record: it may be an event
    /// from before the write.
    pub fn is_echo(&self, uid: Option<&str>, version: Option<&str>) -> bool {
        let (Some(uid), Some(version)) = (uid, version) else {
            return false;
        };
        let Ok(mut echoes) = self.written.lock() else {
            return false;
        };
        if echoes.get(uid).is_some_and(|written| written == version) {
            echoes.remove(uid);
            return true;
        }
        false
    }

    /// Forgets object `uid` (it was deleted).
    pub fn forget(&self, uid: Option<&str>) {
        if let (Some(uid), Ok(mut echoes)) = (uid, self.written.lock()) {
            echoes.remove(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Echoes, OwnWrites};

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
    fn two_writes_from_the_same_read_leave_the_first_ones_version_stale() {
        let writes = OwnWrites::default();
        // Annotation, then status, both from version 1 as read.
        writes.wrote("a", Some("1"), Some("2"));
        writes.wrote("a", Some("1"), Some("3"));
        assert!(
            writes.is_stale(Some("a"), Some("2")),
            "the annotation's event"
        );
        assert!(!writes.is_stale(Some("a"), Some("3")));
    }

    #[test]
    fn a_write_that_changed_nothing_leaves_nothing_stale() {
        let writes = OwnWrites::default();
        writes.wrote("a", Some("5"), Some("5"));
        assert!(!writes.is_stale(Some("a"), Some("5")));
    }

    #[test]
    fn only_the_exact_version_written_is_an_echo_and_only_once() {
        let echoes = Echoes::default();
        echoes.wrote(Some("a"), Some("5"));
        assert!(
            !echoes.is_echo(Some("a"), Some("4")),
            "an event from before"
        );
        assert!(!echoes.is_echo(Some("b"), Some("5")));
        assert!(echoes.is_echo(Some("a"), Some("5")));
        assert!(!echoes.is_echo(Some("a"), Some("5")), "forgotten once seen");
        echoes.wrote(Some("a"), Some("6"));
        echoes.forget(Some("a"));
        assert!(!echoes.is_echo(Some("a"), Some("6")));
    }
}
