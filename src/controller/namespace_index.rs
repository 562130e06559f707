//! A namespace index beside a shared store: the names of its objects by namespace, kept from
//! the same watch events ([`super::stores`] feeds it).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

/// The names of a store's objects by namespace, kept from the same watch events as the store.
/// Reading "the objects in namespace N" through it costs what N holds; filtering
/// `Store::state()` cost what the cluster holds, at every reconcile and every watch event a
/// trigger maps (10,000 namespaces: most of the controller's CPU went into copying those
/// snapshots, scripts/bench-scale.sh).
#[derive(Clone, Default)]
pub struct NamespaceIndex {
    names: Arc<RwLock<IndexState>>,
}

#[derive(Default)]
struct IndexState {
    /// Sorted names: most namespaces hold one or two objects of a kind, for which a `Vec` costs
    /// a tenth of a `BTreeSet`'s smallest node.
    by_namespace: HashMap<Box<str>, Vec<Box<str>>>,
    /// Names of a relist in progress (between `Init` and `InitDone`).
    relist: Option<Vec<(String, String)>>,
}

/// Inserts `name` into the sorted `names` unless it is there.
fn insert(names: &mut Vec<Box<str>>, name: &str) {
    if let Err(index) = names.binary_search_by(|held| (**held).cmp(name)) {
        names.insert(index, name.into());
    }
}

fn namespaced_name<K: Resource>(object: &K) -> (String, String) {
    let meta = object.meta();
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl NamespaceIndex {
    pub(super) fn apply<K: Resource>(&self, event: &watcher::Event<K>) {
        let Ok(mut state) = self.names.write() else {
            return;
        };
        match event {
            watcher::Event::Apply(object) => {
                let (namespace, name) = namespaced_name(object);
                insert(
                    state.by_namespace.entry(namespace.into()).or_default(),
                    &name,
                );
            }
            watcher::Event::Delete(object) => {
                let (namespace, name) = namespaced_name(object);
                if let Some(names) = state.by_namespace.get_mut(namespace.as_str()) {
                    names.retain(|held| **held != *name);
                    if names.is_empty() {
                        state.by_namespace.remove(namespace.as_str());
                    }
                }
            }
            watcher::Event::Init => state.relist = Some(Vec::new()),
            watcher::Event::InitApply(object) => {
                state
                    .relist
                    .get_or_insert_default()
                    .push(namespaced_name(object));
            }
            watcher::Event::InitDone => {
                let mut by_namespace = HashMap::<Box<str>, Vec<Box<str>>>::new();
                for (namespace, name) in state.relist.take().unwrap_or_default() {
                    insert(by_namespace.entry(namespace.into()).or_default(), &name);
                }
                state.by_namespace = by_namespace;
            }
        }
    }

    fn names(&self, namespace: &str) -> Vec<String> {
        self.names
            .read()
            .ok()
            .and_then(|state| {
                let names = state.by_namespace.get(namespace)?;
                Some(names.iter().map(|name| name.to_string()).collect())
            })
            .unwrap_or_default()
    }
}

/// A store and its [`NamespaceIndex`]; dereferences to the store.
pub struct Indexed<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    index: NamespaceIndex,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Clone for Indexed<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            index: self.index.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> std::ops::Deref for Indexed<K> {
    type Target = Store<K>;

    fn deref(&self) -> &Store<K> {
        &self.store
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Indexed<K> {
    /// The objects in `namespace`, by name.
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.index
            .names(namespace)
            .iter()
            .filter_map(|name| self.store.get(&ObjectRef::new(name).within(namespace)))
            .collect()
    }

    /// `store` with `index` (which the same watch feeds).
    pub fn new(store: Store<K>, index: NamespaceIndex) -> Self {
        Self { store, index }
    }

    /// The store alone.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// A store holding `objects`, indexed (tests build stores by hand).
    pub fn of(objects: impl IntoIterator<Item = K>) -> Self {
        let (store, mut writer) = kube::runtime::reflector::store::<K>();
        let index = NamespaceIndex::default();
        index.apply(&watcher::Event::<K>::Init);
        for object in objects {
            index.apply(&watcher::Event::InitApply(object.clone()));
            writer.apply_watcher_event(&watcher::Event::Apply(object));
        }
        index.apply(&watcher::Event::<K>::InitDone);
        Self { store, index }
    }
}

/// `namespace/name` of each reference, sorted (tests compare what a trigger maps to).
#[cfg(test)]
pub fn sorted_names<K: Resource<DynamicType = ()>>(refs: Vec<ObjectRef<K>>) -> Vec<String> {
    let mut names: Vec<String> = refs
        .into_iter()
        .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn object(namespace: &str, name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn names_are_sorted_once_each_and_follow_deletes_and_relists() {
        let index = NamespaceIndex::default();
        for name in ["b", "a", "b", "c"] {
            index.apply(&watcher::Event::Apply(object("ops", name)));
        }
        index.apply(&watcher::Event::Apply(object("other", "z")));
        assert_eq!(index.names("ops"), ["a", "b", "c"]);
        index.apply(&watcher::Event::Delete(object("ops", "b")));
        assert_eq!(index.names("ops"), ["a", "c"]);

        index.apply(&watcher::Event::<ConfigMap>::Init);
        index.apply(&watcher::Event::InitApply(object("ops", "d")));
        assert_eq!(index.names("ops"), ["a", "c"], "a relist applies when done");
        index.apply(&watcher::Event::<ConfigMap>::InitDone);
        assert_eq!(index.names("ops"), ["d"]);
        assert!(index.names("other").is_empty());
    }
}
