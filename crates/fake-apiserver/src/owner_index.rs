//! The garbage collector's graph of owners: for each owner uid, the objects whose
//! `metadata.ownerReferences` name it (the real collector keeps the same graph,
//! `pkg/controller/garbagecollector/graph.go`). Kept by the store on every write, so finding
//! the dependents of a deleted object costs its dependents, not a scan of every object (10,000
//! copied CSVs deleted one by one took minutes with the scan).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::store::ObjRef;

/// Owner uid → dependents.
#[derive(Debug, Default)]
pub(crate) struct OwnerIndex {
    dependents: HashMap<String, HashSet<ObjRef>>,
}

/// The uids `obj`'s owner references name.
fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|owner| owner.get("uid").and_then(Value::as_str))
}

impl OwnerIndex {
    /// Records the owners of `obj`, stored at `at`.
    pub(crate) fn add(&mut self, at: &ObjRef, obj: &Value) {
        for uid in owner_uids(obj) {
            self.dependents
                .entry(uid.to_owned())
                .or_default()
                .insert(at.clone());
        }
    }

    /// Forgets the owners of `obj`, no longer stored at `at` in that state.
    pub(crate) fn remove(&mut self, at: &ObjRef, obj: &Value) {
        for uid in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(uid) {
                set.remove(at);
                if set.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
    }

    /// Where the objects naming owner `uid` live.
    pub(crate) fn of(&self, uid: &str) -> impl Iterator<Item = &ObjRef> {
        self.dependents.get(uid).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resources::ResourceKey;

    fn at(name: &str) -> ObjRef {
        ObjRef {
            key: ResourceKey {
                group: String::new(),
                plural: "configmaps".into(),
            },
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    fn owned_by(uids: &[&str]) -> Value {
        let refs: Vec<Value> = uids.iter().map(|uid| json!({"uid": uid})).collect();
        json!({"metadata": {"ownerReferences": refs}})
    }

    #[test]
    fn dependents_follow_their_owner_references() {
        let mut index = OwnerIndex::default();
        index.add(&at("a"), &owned_by(&["o1", "o2"]));
        index.add(&at("b"), &owned_by(&["o1"]));
        assert_eq!(index.of("o1").count(), 2);
        // `a` drops o1: an update is the old state removed and the new one added.
        index.remove(&at("a"), &owned_by(&["o1", "o2"]));
        index.add(&at("a"), &owned_by(&["o2"]));
        assert_eq!(index.of("o1").collect::<Vec<_>>(), vec![&at("b")]);
        index.remove(&at("b"), &owned_by(&["o1"]));
        assert_eq!(index.of("o1").count(), 0);
        assert!(!index.dependents.contains_key("o1"));
        assert_eq!(index.of("o2").count(), 1);
    }
}
