//! What opcat created, from shared metadata-only watches: one watch per kind a bundle may hold
//! (the static resource table), selected by `app.kubernetes.io/managed-by=opcat`, indexed by the
//! CSV whose labels each object carries. The CSV reconciler sweeps and drift-checks from here
//! instead of listing every kind at every reconcile (13 LISTs per reconcile before; at 1,000
//! installs the largest share of opcat's requests, scripts/bench-scale.sh).
//!
//! Metadata is what the sweep needs (key, uid, labels, deletion). The drift check also needs the
//! content; instead of caching whole objects, each entry remembers the version opcat last saw
//! whole and in line with the render ([`Verified`]): the generation for kinds that have one
//! (bumped by any change outside metadata and status), else the `resourceVersion`. While the
//! watched metadata still shows that version, the content is unchanged and the drift check is
//! done without a request; otherwise the reconciler GETs the object (one request) and checks it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

mod verification;

use verification::Entry;
pub use verification::Verified;

use super::compact_meta::CompactMeta;
use super::field_owners::FieldOwners;
use super::resources::{self, ResolvedResource};
use super::stores::{Driver, Scope, created_by_opcat};
use crate::bundle::ownership::{CSV_LABEL, CSV_NAMESPACE_LABEL, csv_label_value};
use crate::interner::Strings;
use crate::pull_secrets::names::label_value;

/// `(namespace or "", name)` of an object of one kind; the namespace is shared
/// ([`crate::interner::Strings`]).
type Key = (Arc<str>, Box<str>);

/// `(CSV namespace label, CSV label)` of an object, shared.
type CsvIndex = (Arc<str>, Arc<str>);

/// An object as a watch event shows it, in the form the cache keeps.
type Observed = (Key, CompactMeta, Option<FieldOwners>);

/// One kind's objects.
#[derive(Default)]
struct KindState {
    /// Boxed: a map slot holds a pointer, not the whole entry.
    objects: HashMap<Key, Box<Entry>>,
    /// CSV → keys (a handful per CSV and kind).
    by_csv: HashMap<CsvIndex, Vec<Key>>,
    /// Objects of a relist in progress (between `Init` and `InitDone`).
    relist: Option<Vec<Observed>>,
}

fn key_of(meta: &ObjectMeta, strings: &Strings) -> Key {
    (
        strings.get(meta.namespace.as_deref().unwrap_or_default()),
        meta.name.as_deref().unwrap_or_default().into(),
    )
}

/// What the cache keeps of an object of `kind` a watch shows.
fn observed(kind: &str, meta: ObjectMeta, strings: &Strings) -> Observed {
    let owners = FieldOwners::of(kind, &meta);
    (
        key_of(&meta, strings),
        CompactMeta::new(meta, strings),
        owners,
    )
}

fn csv_of(meta: &CompactMeta) -> Option<CsvIndex> {
    Some((
        meta.label(CSV_NAMESPACE_LABEL)?.clone(),
        meta.label(CSV_LABEL)?.clone(),
    ))
}

impl KindState {
    fn remove(&mut self, key: &Key) -> Option<Box<Entry>> {
        let entry = self.objects.remove(key)?;
        if let Some(csv) = csv_of(&entry.meta)
            && let Some(keys) = self.by_csv.get_mut(&csv)
        {
            keys.retain(|held| held != key);
            if keys.is_empty() {
                self.by_csv.remove(&csv);
            }
        }
        Some(entry)
    }

    fn apply(&mut self, (key, meta, owners): Observed) {
        // What was verified stays verified as long as the object is the same one.
        let verified = self.remove(&key).and_then(|old| old.carried(&meta, owners));
        self.insert(key, meta, owners, verified);
    }

    fn insert(
        &mut self,
        key: Key,
        meta: CompactMeta,
        owners: Option<FieldOwners>,
        verified: Option<Verified>,
    ) {
        if let Some(csv) = csv_of(&meta) {
            self.by_csv.entry(csv).or_default().push(key.clone());
        }
        let entry = Entry {
            meta,
            verified,
            owners,
        };
        self.objects.insert(key, Box::new(entry));
    }

    fn replace_all(&mut self, objects: Vec<Observed>) {
        let mut old = std::mem::take(&mut self.objects);
        self.by_csv.clear();
        for (key, meta, owners) in objects {
            let verified = old
                .remove(&key)
                .and_then(|previous| previous.carried(&meta, owners));
            self.insert(key, meta, owners, verified);
        }
    }

    fn owned_object(&self, key: &Key, resource: &ResolvedResource) -> Option<OwnedObject> {
        self.owned_object_with(key, resource, CompactMeta::to_meta)
    }

    /// The cached object under `key`, its metadata made whole by `restore`.
    fn owned_object_with(
        &self,
        key: &Key,
        resource: &ResolvedResource,
        restore: impl Fn(&CompactMeta, &str, &str) -> ObjectMeta,
    ) -> Option<OwnedObject> {
        let entry = self.objects.get(key)?;
        Some(OwnedObject {
            resource: resource.clone(),
            meta: restore(&entry.meta, &key.0, &key.1),
            verified: entry.is_verified(),
        })
    }
}

/// One kind's cache and its watch state.
struct KindCache {
    resource: ResolvedResource,
    state: RwLock<KindState>,
    listed: watch::Sender<bool>,
}

/// The caches of every kind of the static resource table but Namespaces (opcat creates none).
/// Secrets too are selected by opcat's label (DESIGN invariant 11) and held as metadata only:
/// no Secret data is cached here.
#[derive(Clone)]
pub struct OwnedObjects {
    kinds: Arc<Vec<KindCache>>,
    /// Label and annotation strings and namespaces, shared by every kind's entries.
    strings: Arc<Strings>,
}

/// An object of a CSV, as the metadata watch shows it (the metadata opcat reads: see
/// [`CompactMeta`]).
#[derive(Clone, Debug)]
pub struct OwnedObject {
    pub resource: ResolvedResource,
    pub meta: ObjectMeta,
    /// Whether the content is the one opcat last saw whole and in line (see [`Verified`]).
    pub verified: bool,
}

impl OwnedObject {
    /// Whether the object carries label `key`.
    pub fn has_label(&self, key: &str) -> bool {
        self.meta
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(key))
    }
}

impl Default for OwnedObjects {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnedObjects {
    /// Empty caches, one per cached kind.
    pub fn new() -> Self {
        let kinds = resources::known_kinds()
            .filter(|resolved| resolved.resource.kind != "Namespace")
            .map(|resource| KindCache {
                resource,
                state: RwLock::default(),
                listed: watch::channel(false).0,
            })
            .collect();
        Self {
            kinds: Arc::new(kinds),
            strings: Arc::default(),
        }
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<&KindCache> {
        self.kinds.iter().find(|cache| {
            cache.resource.resource.kind == kind
                && cache.resource.resource.api_version == api_version
        })
    }

    /// Whether `api_version`/`kind` is cached here (the other kinds are listed).
    pub fn caches(&self, api_version: &str, kind: &str) -> bool {
        self.kind(api_version, kind).is_some()
    }

    /// Whether every watch has listed once.
    pub fn is_listed(&self) -> bool {
        self.kinds.iter().all(|cache| *cache.listed.borrow())
    }

    /// Receivers of each watch's "listed" flag, for [`super::stores::Stores`] readiness.
    pub fn listed(&self) -> Vec<watch::Receiver<bool>> {
        self.kinds
            .iter()
            .map(|cache| cache.listed.subscribe())
            .collect()
    }

    /// The objects labelled for CSV `csv` of `namespace`, of every cached kind.
    pub fn of_csv(&self, csv: &str, namespace: &str) -> Vec<OwnedObject> {
        let index: CsvIndex = (label_value(namespace).into(), csv_label_value(csv).into());
        let mut found = Vec::new();
        for cache in self.kinds.iter() {
            let Ok(state) = cache.state.read() else {
                continue;
            };
            for key in state.by_csv.get(&index).into_iter().flatten() {
                found.extend(state.owned_object(key, &cache.resource));
            }
        }
        found
    }

    /// The object `namespace/name` of a kind, if opcat's label selects it.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<OwnedObject> {
        self.lookup(api_version, kind, (namespace, name), CompactMeta::to_meta)
    }

    /// [`OwnedObjects::get`] without the labels whose key starts with `prefix`, at a cost that
    /// does not grow with them ([`CompactMeta::to_meta_without_labels`]).
    pub fn get_without_labels(
        &self,
        api_version: &str,
        kind: &str,
        (namespace, name): (Option<&str>, &str),
        prefix: &str,
    ) -> Option<OwnedObject> {
        self.lookup(
            api_version,
            kind,
            (namespace, name),
            |meta, namespace, name| meta.to_meta_without_labels(namespace, name, prefix),
        )
    }

    /// Whether the object `namespace/name` of a kind carries label `key` (`None`: not
    /// cached), without restoring its metadata (a shared CRD carries a label per install).
    pub fn has_label(
        &self,
        api_version: &str,
        kind: &str,
        (namespace, name): (Option<&str>, &str),
        key: &str,
    ) -> Option<bool> {
        let cache = self.kind(api_version, kind)?;
        let state = cache.state.read().ok()?;
        let entry = state
            .objects
            .get(&(namespace.unwrap_or_default().into(), name.into()))?;
        Some(entry.meta.label(key).is_some())
    }

    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        (namespace, name): (Option<&str>, &str),
        restore: impl Fn(&CompactMeta, &str, &str) -> ObjectMeta,
    ) -> Option<OwnedObject> {
        let cache = self.kind(api_version, kind)?;
        let state = cache.state.read().ok()?;
        let key: Key = (namespace.unwrap_or_default().into(), name.into());
        state.owned_object_with(&key, &cache.resource, restore)
    }

    /// The objects of one kind whose name and metadata `keep` accepts (an in-memory walk of
    /// that kind's cache).
    pub fn of_kind(
        &self,
        api_version: &str,
        kind: &str,
        keep: impl Fn(&str, &CompactMeta) -> bool,
    ) -> Vec<OwnedObject> {
        let Some(cache) = self.kind(api_version, kind) else {
            return Vec::new();
        };
        let Ok(state) = cache.state.read() else {
            return Vec::new();
        };
        state
            .objects
            .iter()
            .filter(|(key, entry)| keep(&key.1, &entry.meta))
            .filter_map(|(key, _)| state.owned_object(key, &cache.resource))
            .collect()
    }

    /// Starts every watch. Kinds the cluster does not serve are marked listed and left empty.
    pub fn drive(&self, client: &Client, scope: &Scope) -> Vec<Driver> {
        (0..self.kinds.len())
            .map(|index| {
                let kinds = self.kinds.clone();
                let strings = self.strings.clone();
                let client = client.clone();
                let scope = scope.clone();
                let driver: Driver = Box::pin(async move {
                    let cache = &kinds[index];
                    drive_kind(cache, &strings, client, &scope).await;
                });
                driver
            })
            .collect()
    }
}

async fn drive_kind(cache: &KindCache, strings: &Strings, client: Client, scope: &Scope) {
    let resource = &cache.resource;
    // `Api<PartialObjectMeta<_>>` makes metadata-only requests.
    let api: Api<PartialObjectMeta<DynamicObject>> = match (resource.namespaced, scope) {
        (true, Scope::Namespace(namespace)) => {
            Api::namespaced_with(client, namespace, &resource.resource)
        }
        _ => Api::all_with(client, &resource.resource),
    };
    let config = watcher::Config::default().labels(&created_by_opcat());
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let compact = |meta| observed(&resource.resource.kind, meta, strings);
    while let Some(event) = events.next().await {
        let Ok(mut state) = cache.state.write() else {
            return;
        };
        match event {
            Ok(watcher::Event::Apply(object)) => {
                state.apply(compact(object.metadata));
            }
            Ok(watcher::Event::Delete(object)) => {
                state.remove(&key_of(&object.metadata, strings));
            }
            Ok(watcher::Event::Init) => state.relist = Some(Vec::new()),
            Ok(watcher::Event::InitApply(object)) => {
                let entry = compact(object.metadata);
                state.relist.get_or_insert_default().push(entry);
            }
            Ok(watcher::Event::InitDone) => {
                let objects = state.relist.take().unwrap_or_default();
                state.replace_all(objects);
                drop(state);
                cache.listed.send_replace(true);
            }
            Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                if status.code == 404 =>
            {
                // A kind of the static table this cluster does not serve: nothing to cache.
                tracing::debug!(kind = %resource.resource.kind, "kind not served; not watched");
                drop(state);
                cache.listed.send_replace(true);
                futures::future::pending::<()>().await;
            }
            Err(error) => {
                drop(state);
                tracing::warn!(
                    resource = %resource.resource.plural,
                    error = %crate::failure::error_chain(&error),
                    "watch failed; retrying"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
