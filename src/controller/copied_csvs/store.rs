//! What opcat knows of the copied CSVs in the cluster: a metadata-only watch of the CSVs labelled
//! `olm.copiedFrom`, keeping of each copy only its namespace, uid, resourceVersion and the two
//! hashes it was written from, indexed by the original it copies (`olm.copiedFrom` namespace,
//! name). Never whole objects: a copy is as large as its CSV (spec, `alm-examples`), and an
//! AllNamespaces operator has one in every namespace (OLM issue #2701: 15 operators × 400
//! namespaces took OLM to 4–10 GB).
//!
//! Each change is reported as the original's key ([`Origin`]) to the copied-CSV reconciler, so a
//! copy someone deleted or edited is put back.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{mpsc, watch};

use crate::api::ClusterServiceVersion;
use crate::api::olm_keys::COPIED_FROM;
use crate::controller::stores::{Driver, Scope};
use crate::copied_csv::{Hashes, NON_STATUS_HASH, STATUS_HASH, Written};
use crate::interner::Strings;

/// The original CSV a copy was made from: `(namespace, name)`.
pub type Origin = (Arc<str>, Arc<str>);

/// One copy, as far as the reconciler needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCopy {
    pub uid: Box<str>,
    pub resource_version: Box<str>,
    /// Shared between the copies of one original ([`Strings`]).
    pub non_status: Option<Arc<str>>,
    pub status: Option<Arc<str>>,
}

impl StoredCopy {
    /// The hashes the copy says it was written from.
    pub fn written(&self) -> Written<'_> {
        Written {
            non_status: self.non_status.as_deref(),
            status: self.status.as_deref(),
        }
    }
}

#[derive(Default)]
struct State {
    /// Original → target namespace → copy.
    by_origin: HashMap<Origin, HashMap<Arc<str>, StoredCopy>>,
    /// `(namespace, name)` of a copy → its original, for deletions and relabelled copies.
    origin_of: HashMap<(Arc<str>, Arc<str>), Origin>,
    /// Copies of a relist in progress (between `Init` and `InitDone`).
    relist: Option<Vec<ObjectMeta>>,
}

impl State {
    fn remove(&mut self, key: &(Arc<str>, Arc<str>)) -> Option<Origin> {
        let origin = self.origin_of.remove(key)?;
        if let Some(copies) = self.by_origin.get_mut(&origin) {
            copies.remove(&key.0);
            if copies.is_empty() {
                self.by_origin.remove(&origin);
            }
        }
        Some(origin)
    }

    /// Stores `meta`; returns the originals whose copies changed (the old one too when a copy
    /// was relabelled).
    fn apply(&mut self, meta: ObjectMeta, strings: &Strings) -> Vec<Origin> {
        let Some(key) = key_of(&meta, strings) else {
            return Vec::new();
        };
        let mut changed: Vec<Origin> = self.remove(&key).into_iter().collect();
        let annotation = |name: &str| {
            meta.annotations
                .as_ref()
                .and_then(|annotations| annotations.get(name))
                .map(|value| strings.get(value))
        };
        let Some(from) = meta
            .labels
            .as_ref()
            .and_then(|labels| labels.get(COPIED_FROM))
        else {
            return changed;
        };
        let origin: Origin = (strings.get(from), key.1.clone());
        let copy = StoredCopy {
            uid: meta.uid.as_deref().unwrap_or_default().into(),
            resource_version: meta.resource_version.as_deref().unwrap_or_default().into(),
            non_status: annotation(NON_STATUS_HASH),
            status: annotation(STATUS_HASH),
        };
        self.by_origin
            .entry(origin.clone())
            .or_default()
            .insert(key.0.clone(), copy);
        self.origin_of.insert(key, origin.clone());
        if !changed.contains(&origin) {
            changed.push(origin);
        }
        changed
    }
}

fn key_of(meta: &ObjectMeta, strings: &Strings) -> Option<(Arc<str>, Arc<str>)> {
    Some((
        strings.get(meta.namespace.as_deref()?),
        strings.get(meta.name.as_deref()?),
    ))
}

/// The copied CSVs (cheap to clone).
#[derive(Clone)]
pub struct CopiedCsvs {
    state: Arc<RwLock<State>>,
    strings: Arc<Strings>,
    listed: Arc<watch::Sender<bool>>,
    changes: Arc<RwLock<Option<mpsc::UnboundedSender<Origin>>>>,
}

impl Default for CopiedCsvs {
    fn default() -> Self {
        Self::new()
    }
}

impl CopiedCsvs {
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            strings: Arc::new(Strings::new()),
            listed: Arc::new(watch::channel(false).0),
            changes: Arc::default(),
        }
    }

    /// The copies of `namespace/name`, by target namespace.
    pub fn copies_of(&self, namespace: &str, name: &str) -> HashMap<Arc<str>, StoredCopy> {
        let Ok(state) = self.state.read() else {
            return HashMap::new();
        };
        let origin: Origin = (namespace.into(), name.into());
        state.by_origin.get(&origin).cloned().unwrap_or_default()
    }

    /// Whether the copy of `origin` in `target` is there with `hashes` written on it
    /// (`Some`), or absent (`None`).
    pub fn shows(&self, origin: &Origin, target: &str, hashes: Option<&Hashes>) -> bool {
        let Ok(state) = self.state.read() else {
            return false;
        };
        let copy = state
            .by_origin
            .get(origin)
            .and_then(|copies| copies.get(target));
        match (copy, hashes) {
            (None, None) => true,
            (Some(copy), Some(hashes)) => {
                copy.non_status.as_deref() == Some(hashes.non_status.as_str())
                    && copy.status.as_deref() == Some(hashes.status.as_str())
            }
            _ => false,
        }
    }

    /// How many copies the original `namespace/name` has.
    pub fn count_of(&self, namespace: &str, name: &str) -> usize {
        let origin: Origin = (namespace.into(), name.into());
        self.state
            .read()
            .map(|state| state.by_origin.get(&origin).map_or(0, HashMap::len))
            .unwrap_or_default()
    }

    /// Every original that has copies.
    pub fn origins(&self) -> Vec<Origin> {
        self.state
            .read()
            .map(|state| state.by_origin.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// How many copies there are in all.
    pub fn len(&self) -> usize {
        self.state
            .read()
            .map(|state| state.origin_of.len())
            .unwrap_or_default()
    }

    /// Whether there are no copies.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Receiver of the watch's "listed" flag, for [`super::super::stores::Stores`] readiness.
    pub fn listed(&self) -> watch::Receiver<bool> {
        self.listed.subscribe()
    }

    /// Marks the store listed without a watch (a namespace-scoped manager has no copies).
    pub fn mark_listed(&self) {
        self.listed.send_replace(true);
    }

    /// The originals whose copies change, from now on (one subscriber: the reconciler).
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Origin> {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Ok(mut changes) = self.changes.write() {
            *changes = Some(sender);
        }
        receiver
    }

    fn report(&self, origins: Vec<Origin>) {
        let Ok(changes) = self.changes.read() else {
            return;
        };
        if let Some(sender) = changes.as_ref() {
            for origin in origins {
                // No subscriber (stopping) is not an error.
                let _ = sender.send(origin);
            }
        }
    }

    /// Runs the metadata-only watch of copies until the process stops.
    pub fn drive(&self, client: &Client) -> Driver {
        let store = self.clone();
        let api: Api<PartialObjectMeta<ClusterServiceVersion>> = Api::all(client.clone());
        let config = watcher::Config::default().labels(COPIED_FROM);
        Box::pin(async move {
            let mut events = std::pin::pin!(watcher(api, config).default_backoff());
            while let Some(event) = events.next().await {
                let changed = store.handle(event);
                store.report(changed);
            }
        })
    }

    fn handle(
        &self,
        event: Result<watcher::Event<PartialObjectMeta<ClusterServiceVersion>>, watcher::Error>,
    ) -> Vec<Origin> {
        let Ok(mut state) = self.state.write() else {
            return Vec::new();
        };
        match event {
            Ok(watcher::Event::Apply(object)) => state.apply(object.metadata, &self.strings),
            Ok(watcher::Event::Delete(object)) => key_of(&object.metadata, &self.strings)
                .and_then(|key| state.remove(&key))
                .into_iter()
                .collect(),
            Ok(watcher::Event::Init) => {
                state.relist = Some(Vec::new());
                Vec::new()
            }
            Ok(watcher::Event::InitApply(object)) => {
                if let Some(relist) = state.relist.as_mut() {
                    relist.push(object.metadata);
                }
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => {
                let listed = state.relist.take().unwrap_or_default();
                let mut changed: Vec<Origin> = state.by_origin.keys().cloned().collect();
                state.by_origin.clear();
                state.origin_of.clear();
                for meta in listed {
                    changed.extend(state.apply(meta, &self.strings));
                }
                changed.sort_unstable();
                changed.dedup();
                drop(state);
                self.listed.send_replace(true);
                changed
            }
            Err(error) => {
                tracing::warn!(resource = "clusterserviceversions (copies)", error = %crate::failure::error_chain(&error), "watch failed; retrying");
                Vec::new()
            }
        }
    }
}

/// Where a namespace-scoped manager stands: it watches no copies.
pub fn scope_watches_copies(scope: &Scope) -> bool {
    matches!(scope, Scope::Cluster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::compact_meta::string_map;

    fn copy(namespace: &str, from: &str, status_hash: Option<&str>) -> ObjectMeta {
        let mut annotations = vec![(NON_STATUS_HASH, "n1")];
        annotations.extend(status_hash.map(|hash| (STATUS_HASH, hash)));
        ObjectMeta {
            name: Some("widget.v1".into()),
            namespace: Some(namespace.into()),
            uid: Some(format!("{namespace}-uid")),
            resource_version: Some("7".into()),
            labels: string_map(&[(COPIED_FROM, from)]),
            annotations: string_map(&annotations),
            ..ObjectMeta::default()
        }
    }

    fn event(
        event: watcher::Event<ObjectMeta>,
    ) -> Result<watcher::Event<PartialObjectMeta<ClusterServiceVersion>>, watcher::Error> {
        let partial = |metadata| PartialObjectMeta {
            types: None,
            metadata,
            _phantom: std::marker::PhantomData,
        };
        Ok(match event {
            watcher::Event::Apply(meta) => watcher::Event::Apply(partial(meta)),
            watcher::Event::Delete(meta) => watcher::Event::Delete(partial(meta)),
            watcher::Event::InitApply(meta) => watcher::Event::InitApply(partial(meta)),
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitDone => watcher::Event::InitDone,
        })
    }

    #[test]
    fn copies_are_indexed_by_their_original_with_their_hashes() {
        let store = CopiedCsvs::new();
        let origin: Origin = ("operators".into(), "widget.v1".into());
        assert_eq!(
            store.handle(event(watcher::Event::Apply(copy(
                "team-a",
                "operators",
                Some("s1")
            )))),
            std::slice::from_ref(&origin)
        );
        store.handle(event(watcher::Event::Apply(copy(
            "team-b",
            "operators",
            None,
        ))));
        let copies = store.copies_of("operators", "widget.v1");
        assert_eq!(copies.len(), 2);
        let a = &copies["team-a"];
        assert_eq!(
            a.written(),
            Written {
                non_status: Some("n1"),
                status: Some("s1")
            }
        );
        assert_eq!(&*a.uid, "team-a-uid");
        assert_eq!(copies["team-b"].written().status, None);
        // Copies of one original share their hash strings.
        assert!(Arc::ptr_eq(
            copies["team-a"].non_status.as_ref().unwrap(),
            copies["team-b"].non_status.as_ref().unwrap()
        ));
        assert_eq!(
            store.handle(event(watcher::Event::Delete(copy(
                "team-a",
                "operators",
                None
            )))),
            [origin]
        );
        assert_eq!(store.count_of("operators", "widget.v1"), 1);
    }

    #[test]
    fn a_relist_replaces_the_copies_and_reports_vanished_originals() {
        let store = CopiedCsvs::new();
        store.handle(event(watcher::Event::Apply(copy("team-a", "old-ns", None))));
        assert!(!*store.listed().borrow());
        store.handle(event(watcher::Event::Init));
        store.handle(event(watcher::Event::InitApply(copy(
            "team-b",
            "operators",
            None,
        ))));
        let changed = store.handle(event(watcher::Event::InitDone));
        assert_eq!(
            changed,
            [
                ("old-ns".into(), "widget.v1".into()),
                ("operators".into(), "widget.v1".into())
            ]
        );
        assert!(store.copies_of("old-ns", "widget.v1").is_empty());
        assert_eq!(store.len(), 1);
        assert!(*store.listed().borrow());
    }
}
