//! What the copy store must show before an original is planned again: the copies its last
//! reconcile wrote (with the hashes it wrote) and deleted, as kube-controller-manager's
//! ReplicaSet controller waits for its "expectations". The store is a watch and lags the
//! writes: a plan made before it shows them creates copies that exist (409, taken for a
//! foreign CSV holding the name), deletes copies that are gone and writes statuses again.
//!
//! The writes are checked in the order they were made and forgotten as the store shows them,
//! so following one reconcile of N copies costs O(N) however often the original is queued.
//! A write the store never shows (someone changed the copy meanwhile) holds the original for
//! at most [`PATIENCE`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::store::{CopiedCsvs, Origin};
use crate::copied_csv::Hashes;

/// How long an original waits for the store to show its writes.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// One write: the target namespace and what the copy there carries now (`None`: deleted).
type Write = (String, Option<Hashes>);

/// The writes of each original the store has not shown yet.
#[derive(Default)]
pub struct Expectations {
    pending: Mutex<HashMap<Origin, (Instant, VecDeque<Write>)>>,
}

impl Expectations {
    /// Records the writes of a reconcile of `origin` that succeeded (replacing any earlier).
    pub fn expect(&self, origin: &Origin, writes: Vec<Write>) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        if writes.is_empty() {
            pending.remove(origin);
        } else {
            pending.insert(origin.clone(), (Instant::now(), writes.into()));
        }
    }

    /// Forgets the writes of `origin` (a reconcile failed: its retry plans from the store).
    pub fn forget(&self, origin: &Origin) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(origin);
        }
    }

    /// Whether `origin` still waits for the store to show some of its writes.
    pub fn waiting(&self, origin: &Origin, store: &CopiedCsvs) -> bool {
        let Ok(mut pending) = self.pending.lock() else {
            return false;
        };
        let Some((since, writes)) = pending.get_mut(origin) else {
            return false;
        };
        if since.elapsed() >= PATIENCE {
            pending.remove(origin);
            return false;
        }
        while let Some((target, hashes)) = writes.front() {
            if !store.shows(origin, target, hashes.as_ref()) {
                return true;
            }
            writes.pop_front();
        }
        pending.remove(origin);
        false
    }
}
