//! Object storage with a cluster-wide `resourceVersion`, a bounded per-resource event history
//! (the watch cache window) and the registered watchers of each resource.
//!
//! Every write takes the next `resourceVersion`, records an event and hands it to the
//! watchers whose filter it passes, with the same selector semantics as the watch cache
//! (`storage/cacher`): an update that makes an object stop matching is a DELETED event for
//! that watcher, one that makes it start matching is an ADDED event.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::owner_index::OwnerIndex;
use crate::resources::ResourceKey;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// Watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// What a watch stream receives.
#[derive(Debug)]
pub(crate) enum WatchMsg {
    /// An event, and when it happened (a watch lag counts from then).
    Event(EventType, Arc<Value>, tokio::time::Instant),
    /// The resource stopped being served (its CRD was deleted).
    Closed,
}

/// Which objects a list or watch selects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub(crate) namespace: Option<String>,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Filter {
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let ns_ok = self.namespace.as_deref().is_none_or(|ns| {
            obj.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
        });
        ns_ok && self.labels.matches(obj) && self.fields.matches(obj)
    }
}

#[derive(Debug)]
struct HistoryEvent {
    rv: u64,
    kind: EventType,
    old: Option<Arc<Value>>,
    new: Arc<Value>,
}

#[derive(Debug)]
struct Watcher {
    filter: Filter,
    tx: mpsc::UnboundedSender<WatchMsg>,
}

#[derive(Debug, Default)]
struct Bucket {
    objects: BTreeMap<(String, String), Arc<Value>>,
    history: VecDeque<HistoryEvent>,
    /// Events with `rv <= floor` have been evicted from the history.
    floor: u64,
    watchers: Vec<Watcher>,
}

/// Where an object lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ObjRef {
    pub(crate) key: ResourceKey,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

/// A started watch: events to send first, then the live channel.
pub(crate) struct WatchStart {
    pub(crate) initial: Vec<(EventType, Arc<Value>)>,
    pub(crate) rx: mpsc::UnboundedReceiver<WatchMsg>,
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WatchFrom {
    /// Synthetic ADDED events for the current state, then changes ("0" or unset).
    CurrentState,
    /// Changes after this `resourceVersion`.
    After(u64),
}

/// All objects, by resource.
#[derive(Debug)]
pub(crate) struct Store {
    rv: u64,
    history_limit: usize,
    buckets: HashMap<ResourceKey, Bucket>,
    uids: HashMap<String, ObjRef>,
    owners: OwnerIndex,
}

fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

fn uid_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// The event a watcher with `filter` sees for `ev`, if any.
fn deliver(filter: &Filter, ev: &HistoryEvent) -> Option<(EventType, Arc<Value>)> {
    match ev.kind {
        EventType::Added | EventType::Deleted => {
            filter.matches(&ev.new).then(|| (ev.kind, ev.new.clone()))
        }
        EventType::Modified => {
            let was = ev.old.as_deref().is_some_and(|o| filter.matches(o));
            let is = filter.matches(&ev.new);
            match (was, is) {
                (true, true) => Some((EventType::Modified, ev.new.clone())),
                (false, true) => Some((EventType::Added, ev.new.clone())),
                (true, false) => {
                    let mut old = ev.old.as_deref().cloned().unwrap_or(Value::Null);
                    set_rv(&mut old, ev.rv);
                    Some((EventType::Deleted, Arc::new(old)))
                }
                (false, false) => None,
            }
        }
    }
}

impl Store {
    pub(crate) fn new(history_limit: usize) -> Self {
        Self {
            rv: 1,
            history_limit: history_limit.max(1),
            buckets: HashMap::new(),
            uids: HashMap::new(),
            owners: OwnerIndex::default(),
        }
    }

    /// The current cluster-wide `resourceVersion`.
    pub(crate) fn current_rv(&self) -> u64 {
        self.rv
    }

    pub(crate) fn set_history_limit(&mut self, limit: usize) {
        self.history_limit = limit.max(1);
        for bucket in self.buckets.values_mut() {
            while bucket.history.len() > self.history_limit {
                if let Some(ev) = bucket.history.pop_front() {
                    bucket.floor = ev.rv;
                }
            }
        }
    }

    pub(crate) fn get(&self, key: &ResourceKey, ns: &str, name: &str) -> Option<&Arc<Value>> {
        self.buckets
            .get(key)?
            .objects
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Where the object with `uid` lives.
    pub(crate) fn by_uid(&self, uid: &str) -> Option<&ObjRef> {
        self.uids.get(uid)
    }

    /// The objects whose owner references name `uid`, as stored now.
    pub(crate) fn dependents_of(&self, uid: &str) -> Vec<(ObjRef, Arc<Value>)> {
        self.owners
            .of(uid)
            .filter_map(|at| {
                let obj = self.get(&at.key, &at.namespace, &at.name)?;
                Some((at.clone(), obj.clone()))
            })
            .collect()
    }

    /// Objects of `key` in key order (namespace, name), optionally starting after `after`.
    pub(crate) fn iter<'a>(
        &'a self,
        key: &ResourceKey,
        after: Option<&'a (String, String)>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        let bucket = self.buckets.get(key);
        bucket.into_iter().flat_map(move |b| {
            let range = match after {
                Some(a) => b
                    .objects
                    .range::<(String, String), _>((
                        std::ops::Bound::Excluded(a.clone()),
                        std::ops::Bound::Unbounded,
                    ))
                    .map(|(_, v)| v)
                    .collect::<Vec<_>>(),
                None => b.objects.values().collect::<Vec<_>>(),
            };
            range.into_iter()
        })
    }

    /// Objects of `key` in `ns` ("" for cluster-scoped ones), in name order, borrowed: the
    /// authorizer reads bindings on every request and copies nothing.
    pub(crate) fn in_namespace<'a>(
        &'a self,
        key: &ResourceKey,
        ns: &'a str,
    ) -> impl Iterator<Item = &'a Arc<Value>> + use<'a> {
        self.buckets.get(key).into_iter().flat_map(move |b| {
            b.objects
                .range::<(String, String), _>((ns.to_string(), String::new())..)
                .take_while(move |((n, _), _)| n == ns)
                .map(|(_, v)| v)
        })
    }

    /// Where every object of `key` lives.
    pub(crate) fn refs(&self, key: &ResourceKey) -> Vec<ObjRef> {
        self.buckets.get(key).map_or_else(Vec::new, |b| {
            b.objects
                .keys()
                .map(|(ns, name)| ObjRef {
                    key: key.clone(),
                    namespace: ns.clone(),
                    name: name.clone(),
                })
                .collect()
        })
    }

    /// Every object of every resource (for garbage collection and namespace cleanup).
    pub(crate) fn all_refs(&self) -> Vec<(ObjRef, Arc<Value>)> {
        self.buckets
            .iter()
            .flat_map(|(key, b)| {
                b.objects.iter().map(move |((ns, name), v)| {
                    (
                        ObjRef {
                            key: key.clone(),
                            namespace: ns.clone(),
                            name: name.clone(),
                        },
                        v.clone(),
                    )
                })
            })
            .collect()
    }

    /// Oldest `resourceVersion` a watch or continue of `key` can resume from.
    pub(crate) fn floor(&self, key: &ResourceKey) -> u64 {
        self.buckets.get(key).map_or(0, |b| b.floor)
    }

    fn record(&mut self, key: &ResourceKey, ev: HistoryEvent) {
        let limit = self.history_limit;
        let bucket = self.buckets.entry(key.clone()).or_default();
        bucket.watchers.retain(|w| match deliver(&w.filter, &ev) {
            Some((kind, obj)) => {
                w.tx.send(WatchMsg::Event(kind, obj, tokio::time::Instant::now()))
                    .is_ok()
            }
            None => !w.tx.is_closed(),
        });
        bucket.history.push_back(ev);
        while bucket.history.len() > limit {
            if let Some(old) = bucket.history.pop_front() {
                bucket.floor = old.rv;
            }
        }
    }

    /// Stores a new object under the next `resourceVersion` and returns it.
    pub(crate) fn insert(
        &mut self,
        key: &ResourceKey,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> Arc<Value> {
        self.commit(key, ns, name, obj, EventType::Added)
    }

    /// Replaces an existing object under the next `resourceVersion` and returns it.
    pub(crate) fn update(
        &mut self,
        key: &ResourceKey,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> Arc<Value> {
        self.commit(key, ns, name, obj, EventType::Modified)
    }

    /// Removes an object; `last` is its final state (the DELETED event carries it).
    pub(crate) fn remove(
        &mut self,
        key: &ResourceKey,
        ns: &str,
        name: &str,
        last: Value,
    ) -> Arc<Value> {
        self.commit(key, ns, name, last, EventType::Deleted)
    }

    /// One write: the next `resourceVersion`, the storage change, the uid index, the event.
    fn commit(
        &mut self,
        key: &ResourceKey,
        ns: &str,
        name: &str,
        mut obj: Value,
        kind: EventType,
    ) -> Arc<Value> {
        self.rv += 1;
        set_rv(&mut obj, self.rv);
        let obj = Arc::new(obj);
        let slot = (ns.to_string(), name.to_string());
        let objects = &mut self.buckets.entry(key.clone()).or_default().objects;
        let previous = match kind {
            EventType::Deleted => objects.remove(&slot),
            EventType::Added | EventType::Modified => objects.insert(slot, obj.clone()),
        };
        let at = ObjRef {
            key: key.clone(),
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        if let Some(previous) = &previous {
            self.owners.remove(&at, previous);
        }
        if kind != EventType::Deleted {
            self.owners.add(&at, &obj);
        }
        let old = previous.filter(|_| kind == EventType::Modified);
        if let Some(uid) = uid_of(&obj) {
            if kind == EventType::Deleted {
                self.uids.remove(uid);
            } else {
                self.uids.insert(uid.to_string(), at);
            }
        }
        let rv = self.rv;
        let old = old.filter(|_| kind == EventType::Modified);
        self.record(
            key,
            HistoryEvent {
                rv,
                kind,
                old,
                new: obj.clone(),
            },
        );
        obj
    }

    /// Forgets a resource entirely (its CRD is gone) and ends its watches.
    pub(crate) fn drop_resource(&mut self, key: &ResourceKey) {
        if let Some(bucket) = self.buckets.remove(key) {
            for w in bucket.watchers {
                let _ = w.tx.send(WatchMsg::Closed);
            }
            for ((namespace, name), obj) in &bucket.objects {
                if let Some(uid) = uid_of(obj) {
                    self.uids.remove(uid);
                }
                let at = ObjRef {
                    key: key.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                };
                self.owners.remove(&at, obj);
            }
        }
    }

    /// Registers a watcher; fails with 410 when `from` is older than the retained history.
    pub(crate) fn watch(
        &mut self,
        key: &ResourceKey,
        filter: Filter,
        from: WatchFrom,
    ) -> Result<WatchStart, ApiError> {
        let bucket = self.buckets.entry(key.clone()).or_default();
        let initial = match from {
            WatchFrom::CurrentState => bucket
                .objects
                .values()
                .filter(|o| filter.matches(o))
                .map(|o| (EventType::Added, o.clone()))
                .collect(),
            WatchFrom::After(rv) => {
                if rv < bucket.floor {
                    return Err(ApiError::too_old_resource_version(rv, bucket.floor + 1));
                }
                bucket
                    .history
                    .iter()
                    .filter(|ev| ev.rv > rv)
                    .filter_map(|ev| deliver(&filter, ev))
                    .collect()
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        bucket.watchers.push(Watcher { filter, tx });
        Ok(WatchStart { initial, rx })
    }

    /// Number of open watches on `key` (tests use it to wait for a controller to start).
    pub(crate) fn watcher_count(&self, key: &ResourceKey) -> usize {
        self.buckets.get(key).map_or(0, |b| {
            b.watchers.iter().filter(|w| !w.tx.is_closed()).count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> ResourceKey {
        ResourceKey {
            group: String::new(),
            plural: "configmaps".into(),
        }
    }

    fn cm(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": labels}})
    }

    #[test]
    fn writes_bump_resource_version_and_notify() {
        let mut s = Store::new(100);
        let mut w = s
            .watch(&key(), Filter::default(), WatchFrom::After(s.current_rv()))
            .unwrap();
        let a = s.insert(&key(), "ns", "a", cm("a", json!({})));
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        let Ok(WatchMsg::Event(EventType::Added, o, _)) = w.rx.try_recv() else {
            panic!()
        };
        assert_eq!(o["metadata"]["name"], "a");
    }

    #[test]
    fn label_change_out_of_selector_is_a_delete_for_that_watcher() {
        let mut s = Store::new(100);
        s.insert(&key(), "ns", "a", cm("a", json!({"app": "x"})));
        let filter = Filter {
            labels: LabelSelector::parse("app=x").unwrap(),
            ..Filter::default()
        };
        let mut w = s
            .watch(&key(), filter, WatchFrom::After(s.current_rv()))
            .unwrap();
        s.update(&key(), "ns", "a", cm("a", json!({"app": "y"})));
        let Ok(WatchMsg::Event(EventType::Deleted, o, _)) = w.rx.try_recv() else {
            panic!()
        };
        assert_eq!(o["metadata"]["resourceVersion"], "3");
    }

    #[test]
    fn resuming_before_the_window_is_gone() {
        let mut s = Store::new(2);
        for n in ["a", "b", "c", "d"] {
            s.insert(&key(), "ns", n, cm(n, json!({})));
        }
        let Err(err) = s.watch(&key(), Filter::default(), WatchFrom::After(2)) else {
            panic!()
        };
        assert_eq!(err.code, 410);
        let ok = s
            .watch(&key(), Filter::default(), WatchFrom::After(3))
            .unwrap();
        assert_eq!(ok.initial.len(), 2);
    }
}
