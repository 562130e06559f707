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

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use super::resources::{self, ResolvedResource};
use super::stores::{Driver, Scope, created_by_opcat};
use crate::bundle::ownership::{CSV_LABEL, CSV_NAMESPACE_LABEL, csv_label_value};
use crate::pull_secrets::names::label_value;

/// `(namespace or "", name)` of an object of one kind.
type Key = (String, String);

/// The version of an object opcat last saw whole and in line with what it renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verified {
    /// `metadata.generation` (kinds whose content changes bump it).
    Generation(i64),
    /// `metadata.resourceVersion` (kinds without a generation).
    ResourceVersion(String),
}

impl Verified {
    /// The version of `meta` to remember.
    pub fn of(meta: &ObjectMeta) -> Option<Self> {
        match (meta.generation, &meta.resource_version) {
            (Some(generation), _) => Some(Self::Generation(generation)),
            (None, Some(version)) => Some(Self::ResourceVersion(version.clone())),
            (None, None) => None,
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    meta: Arc<ObjectMeta>,
    verified: Option<Verified>,
}

/// One kind's objects.
#[derive(Default)]
struct KindState {
    objects: HashMap<Key, Entry>,
    /// `(CSV namespace label, CSV label)` → keys.
    by_csv: HashMap<(String, String), BTreeSet<Key>>,
    /// Objects of a relist in progress (between `Init` and `InitDone`).
    relist: Option<Vec<ObjectMeta>>,
}

fn key_of(meta: &ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

fn csv_of(meta: &ObjectMeta) -> Option<(String, String)> {
    let labels = meta.labels.as_ref()?;
    Some((
        labels.get(CSV_NAMESPACE_LABEL)?.clone(),
        labels.get(CSV_LABEL)?.clone(),
    ))
}

impl KindState {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.objects.remove(key)?;
        if let Some(csv) = csv_of(&entry.meta)
            && let Some(keys) = self.by_csv.get_mut(&csv)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_csv.remove(&csv);
            }
        }
        Some(entry)
    }

    fn apply(&mut self, mut meta: ObjectMeta) {
        meta.managed_fields = None;
        let key = key_of(&meta);
        // What was verified stays verified as long as the object is the same one.
        let verified = self
            .remove(&key)
            .filter(|old| old.meta.uid == meta.uid)
            .and_then(|old| old.verified);
        if let Some(csv) = csv_of(&meta) {
            self.by_csv.entry(csv).or_default().insert(key.clone());
        }
        self.objects.insert(
            key,
            Entry {
                meta: Arc::new(meta),
                verified,
            },
        );
    }

    fn replace_all(&mut self, objects: Vec<ObjectMeta>) {
        let mut old = std::mem::take(&mut self.objects);
        self.by_csv.clear();
        for meta in objects {
            let key = key_of(&meta);
            let previous = old.remove(&key);
            self.apply(meta);
            if let (Some(previous), Some(entry)) = (previous, self.objects.get_mut(&key))
                && previous.meta.uid == entry.meta.uid
            {
                entry.verified = previous.verified;
            }
        }
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
}

/// An object of a CSV, as the metadata watch shows it.
#[derive(Clone, Debug)]
pub struct OwnedObject {
    pub resource: ResolvedResource,
    pub meta: Arc<ObjectMeta>,
    pub verified: Option<Verified>,
}

impl OwnedObject {
    /// Whether the content is the one opcat last saw whole and in line (see [`Verified`]).
    pub fn is_verified(&self) -> bool {
        self.verified.is_some() && self.verified == Verified::of(&self.meta)
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
        let index = (label_value(namespace), csv_label_value(csv));
        let mut found = Vec::new();
        for cache in self.kinds.iter() {
            let Ok(state) = cache.state.read() else {
                continue;
            };
            for key in state.by_csv.get(&index).into_iter().flatten() {
                if let Some(entry) = state.objects.get(key) {
                    found.push(OwnedObject {
                        resource: cache.resource.clone(),
                        meta: entry.meta.clone(),
                        verified: entry.verified.clone(),
                    });
                }
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
        let cache = self.kind(api_version, kind)?;
        let state = cache.state.read().ok()?;
        let entry = state
            .objects
            .get(&(namespace.unwrap_or_default().to_owned(), name.to_owned()))?;
        Some(OwnedObject {
            resource: cache.resource.clone(),
            meta: entry.meta.clone(),
            verified: entry.verified.clone(),
        })
    }

    /// Records that the object `written` (as the server returned it after a write, or as read)
    /// is in line with the render.
    pub fn verified(&self, written: &DynamicObject) {
        let Some(types) = &written.types else {
            return;
        };
        let Some(cache) = self.kind(&types.api_version, &types.kind) else {
            return;
        };
        let Some(version) = Verified::of(&written.metadata) else {
            return;
        };
        let Ok(mut state) = cache.state.write() else {
            return;
        };
        let key = key_of(&written.metadata);
        match state.objects.get_mut(&key) {
            Some(entry) if entry.meta.uid == written.metadata.uid => {
                entry.verified = Some(version);
            }
            // Not seen by the watch yet: store it as written, the watch event will follow.
            None if csv_of(&written.metadata).is_some() => {
                state.apply(written.metadata.clone());
                if let Some(entry) = state.objects.get_mut(&key) {
                    entry.verified = Some(version);
                }
            }
            _ => {}
        }
    }

    /// Starts every watch. Kinds the cluster does not serve are marked listed and left empty.
    pub fn drive(&self, client: &Client, scope: &Scope) -> Vec<Driver> {
        (0..self.kinds.len())
            .map(|index| {
                let kinds = self.kinds.clone();
                let client = client.clone();
                let scope = scope.clone();
                let driver: Driver = Box::pin(async move {
                    let cache = &kinds[index];
                    drive_kind(cache, client, &scope).await;
                });
                driver
            })
            .collect()
    }
}

async fn drive_kind(cache: &KindCache, client: Client, scope: &Scope) {
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
    while let Some(event) = events.next().await {
        let Ok(mut state) = cache.state.write() else {
            return;
        };
        match event {
            Ok(watcher::Event::Apply(object)) => state.apply(object.metadata),
            Ok(watcher::Event::Delete(object)) => {
                state.remove(&key_of(&object.metadata));
            }
            Ok(watcher::Event::Init) => state.relist = Some(Vec::new()),
            Ok(watcher::Event::InitApply(object)) => {
                state.relist.get_or_insert_default().push(object.metadata);
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
mod tests {
    use super::*;

    fn meta(name: &str, csv: &str, uid: &str, generation: Option<i64>, rv: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ops".into()),
            uid: Some(uid.into()),
            generation,
            resource_version: Some(rv.into()),
            labels: Some(
                [
                    (CSV_LABEL.to_owned(), csv_label_value(csv)),
                    (CSV_NAMESPACE_LABEL.to_owned(), label_value("ops")),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn objects_are_found_by_their_csv_and_leave_its_index_when_deleted_or_relabelled() {
        let mut state = KindState::default();
        state.apply(meta("a", "widget.v1", "1", None, "5"));
        state.apply(meta("b", "widget.v1", "2", None, "6"));
        state.apply(meta("c", "gadget.v1", "3", None, "7"));
        let index = (label_value("ops"), csv_label_value("widget.v1"));
        assert_eq!(state.by_csv[&index].len(), 2);
        state.remove(&("ops".into(), "a".into()));
        state.apply(meta("b", "gadget.v1", "2", None, "8"));
        assert!(!state.by_csv.contains_key(&index));
        let other = (label_value("ops"), csv_label_value("gadget.v1"));
        assert_eq!(state.by_csv[&other].len(), 2);
    }

    #[test]
    fn a_verified_version_survives_updates_and_relists_of_the_same_object_only() {
        let mut state = KindState::default();
        state.apply(meta("a", "w", "1", Some(2), "5"));
        let key: Key = ("ops".into(), "a".into());
        state.objects.get_mut(&key).unwrap().verified = Some(Verified::Generation(2));
        // A status write: new resourceVersion, same generation.
        state.apply(meta("a", "w", "1", Some(2), "6"));
        let entry = &state.objects[&key];
        assert_eq!(entry.verified, Verified::of(&entry.meta));
        state.replace_all(vec![meta("a", "w", "1", Some(3), "9")]);
        let entry = &state.objects[&key];
        assert_eq!(entry.verified, Some(Verified::Generation(2)));
        assert_ne!(
            entry.verified,
            Verified::of(&entry.meta),
            "the spec changed"
        );
        // Deleted and created again under the same name: a new object, nothing verified.
        state.apply(meta("a", "w", "2", Some(1), "10"));
        assert_eq!(state.objects[&key].verified, None);
    }
}
