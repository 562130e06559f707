//! Source pull secrets, watched **by name** (DESIGN invariant 11): one field-selected watch per
//! Secret that some CatalogSource lists in `spec.secrets`, started and stopped as CatalogSources
//! change. opcat never lists or watches all Secrets.
//!
//! Readers get the current state of a source (present, missing, or not yet known) and can
//! subscribe to change notifications, which controllers turn into reconciles.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector::ReflectHandle};
use kube::{Client, ResourceExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::CatalogSource;

/// How often the watch set is compared with the CatalogSources even without an event.
const DELETION_SWEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// `(namespace, name)` of a source Secret.
pub type SecretKey = (String, String);

/// What opcat knows about a source Secret.
#[derive(Clone, Debug)]
pub enum SourceState {
    /// The watch has not listed yet.
    Unknown,
    /// The Secret does not exist.
    Missing,
    /// The Secret as last seen.
    Present(Arc<Secret>),
}

#[derive(Default)]
struct Inner {
    states: RwLock<HashMap<SecretKey, SourceState>>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<SecretKey>>>,
    watches: Mutex<HashMap<SecretKey, JoinHandle<()>>>,
}

/// The source Secrets of every CatalogSource.
#[derive(Clone, Default)]
pub struct SourceSecrets {
    inner: Arc<Inner>,
}

impl SourceSecrets {
    /// The state of `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> SourceState {
        self.inner
            .states
            .read()
            .ok()
            .and_then(|states| {
                states
                    .get(&(namespace.to_owned(), name.to_owned()))
                    .cloned()
            })
            .unwrap_or(SourceState::Unknown)
    }

    /// Notifications: the key of every source Secret whose state changed.
    pub fn subscribe(&self) -> impl Stream<Item = SecretKey> + Send + 'static {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Ok(mut subscribers) = self.inner.subscribers.lock() {
            subscribers.push(sender);
        }
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|key| (key, receiver))
        })
    }

    fn set(&self, key: &SecretKey, state: SourceState) {
        let changed = match self.inner.states.write() {
            Ok(mut states) => {
                let changed = match (states.get(key), &state) {
                    (Some(SourceState::Present(old)), SourceState::Present(new)) => {
                        old.resource_version() != new.resource_version()
                    }
                    (Some(SourceState::Missing), SourceState::Missing) => false,
                    _ => true,
                };
                states.insert(key.clone(), state);
                changed
            }
            Err(_) => false,
        };
        if changed {
            self.notify(key);
        }
    }

    fn notify(&self, key: &SecretKey) {
        if let Ok(mut subscribers) = self.inner.subscribers.lock() {
            subscribers.retain(|sender| sender.send(key.clone()).is_ok());
        }
    }

    /// Keeps one watch per referenced Secret, following the CatalogSource store. Runs until the
    /// CatalogSource stream ends.
    pub async fn run(
        self,
        client: Client,
        catalog_sources: Store<CatalogSource>,
        mut changes: ReflectHandle<CatalogSource>,
    ) {
        // The per-Secret watches are spawned tasks: stop them however this future ends,
        // including when it is dropped (a manager stopped or a leadership term abandoned).
        let _stop = StopAllOnDrop(self.clone());
        // Reconcile the watch set on every CatalogSource event (including the initial list), and
        // on a short tick: the shared stream carries no deletions, so a deleted CatalogSource's
        // watches are stopped by the next tick.
        let mut tick = tokio::time::interval(DELETION_SWEEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.sync_watches(&client, &catalog_sources);
            tokio::select! {
                change = changes.next() => if change.is_none() { break },
                _ = tick.tick() => {}
            }
        }
    }

    fn sync_watches(&self, client: &Client, catalog_sources: &Store<CatalogSource>) {
        let wanted: BTreeSet<SecretKey> = catalog_sources
            .state()
            .iter()
            .flat_map(|catalog| {
                let namespace = catalog.namespace().unwrap_or_default();
                catalog
                    .spec
                    .secret_names()
                    .map(move |name| (namespace.clone(), name.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let Ok(mut watches) = self.inner.watches.lock() else {
            return;
        };
        let stale: Vec<SecretKey> = watches
            .keys()
            .filter(|key| !wanted.contains(*key))
            .cloned()
            .collect();
        for key in stale {
            if let Some(handle) = watches.remove(&key) {
                handle.abort();
            }
            if let Ok(mut states) = self.inner.states.write() {
                states.remove(&key);
            }
            // Its state is unknown again; subscribers that keep per-source state forget it.
            self.notify(&key);
            tracing::debug!(namespace = %key.0, secret = %key.1, "stopped watching source secret");
        }
        for key in wanted {
            if watches.contains_key(&key) {
                continue;
            }
            tracing::debug!(namespace = %key.0, secret = %key.1, "watching source secret");
            let handle = tokio::spawn(self.clone().watch_one(client.clone(), key.clone()));
            watches.insert(key, handle);
        }
    }

    async fn watch_one(self, client: Client, key: SecretKey) {
        let api: Api<Secret> = Api::namespaced(client, &key.0);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", key.1));
        let mut events = watcher::watcher(api, config).default_backoff().boxed();
        let mut listed: Option<Arc<Secret>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Init) => listed = None,
                Ok(Event::InitApply(secret)) => listed = Some(Arc::new(secret)),
                Ok(Event::InitDone) => match listed.take() {
                    Some(secret) => self.set(&key, SourceState::Present(secret)),
                    None => self.set(&key, SourceState::Missing),
                },
                Ok(Event::Apply(secret)) => self.set(&key, SourceState::Present(Arc::new(secret))),
                Ok(Event::Delete(_)) => self.set(&key, SourceState::Missing),
                Err(error) => tracing::warn!(
                    namespace = %key.0,
                    secret = %key.1,
                    error = %crate::failure::error_chain(&error),
                    "watch of source secret failed; retrying"
                ),
            }
        }
    }

    fn stop_all(&self) {
        if let Ok(mut watches) = self.inner.watches.lock() {
            for (_, handle) in watches.drain() {
                handle.abort();
            }
        }
    }
}

/// Stops every per-Secret watch when dropped.
struct StopAllOnDrop(SourceSecrets);

impl Drop for StopAllOnDrop {
    fn drop(&mut self) {
        self.0.stop_all();
    }
}
