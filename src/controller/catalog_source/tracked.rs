//! What the reconciler remembers about each CatalogSource between reconciles (memory only; after
//! a restart it is rebuilt from status and the on-disk image cache, see [`super::poll::restorable`]).

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::jiff::Timestamp;

use super::secrets::Fingerprint;
use crate::controller::catalogs::CatalogKey;

/// The last contact with the registry (or registry server) of one CatalogSource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    /// UID of the CatalogSource it was made for (a recreated object starts afresh).
    pub uid: Option<String>,
    /// `spec.image` or `spec.address` it was made for.
    pub source: String,
    /// The source secrets it was made with.
    pub secrets: Fingerprint,
    /// When it was made (`connectionState.lastConnect`).
    pub last_connect: Timestamp,
    /// When the registry last answered with a digest (`latestImageRegistryPoll`), or the
    /// registry server last sent its catalog.
    pub last_poll: Option<Timestamp>,
    /// When a registry server last answered a health check (address catalogs only).
    pub last_check: Option<Timestamp>,
    /// Set when it failed.
    pub failure: Option<Failure>,
}

/// Why the last contact failed, as status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Reason of the `Ready` condition.
    pub ready_reason: &'static str,
    /// Bounded label (logs, metrics).
    pub kind: &'static str,
    /// What happened (image, registry, secrets tried; never secret data).
    pub message: String,
    /// When to try again without any change.
    pub retry_at: Timestamp,
}

/// Tracked state of every CatalogSource, keyed by `(namespace, name)`.
#[derive(Debug, Default)]
pub struct TrackedMap {
    entries: Mutex<HashMap<CatalogKey, Tracked>>,
}

impl TrackedMap {
    /// The state of `namespace/name`.
    pub fn get(&self, key: &CatalogKey) -> Option<Tracked> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    /// Records the latest contact.
    pub fn insert(&self, key: CatalogKey, tracked: Tracked) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(key, tracked);
        }
    }

    /// Forgets `namespace/name`.
    pub fn remove(&self, key: &CatalogKey) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(key);
        }
    }

    /// Every tracked key.
    pub fn keys(&self) -> Vec<CatalogKey> {
        self.entries
            .lock()
            .map(|entries| entries.keys().cloned().collect())
            .unwrap_or_default()
    }
}
