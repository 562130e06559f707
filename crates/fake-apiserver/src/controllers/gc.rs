//! The garbage collector (`pkg/controller/garbagecollector`), run right after the writes
//! that can change its decisions.
//!
//! * A dependent whose owners are all absent is deleted (background propagation). An owner
//!   is absent when no object has its uid, or that object has another name or kind, or it
//!   lives in another namespace than the dependent (cross-namespace owner references are
//!   treated as absent), or it is namespaced while the dependent is cluster-scoped.
//! * A dependent with some owners present loses the references to the absent ones.
//! * `foregroundDeletion`: dependents are deleted first; the owner goes once no dependent
//!   with `blockOwnerDeletion: true` remains.
//! * `orphan`: dependents lose their reference to the owner, then the owner goes.
//! * Owner references to kinds the server does not serve are left alone (the real GC keeps
//!   retrying those).

use std::sync::Arc;

use serde_json::Value;

use super::CONTROLLER_MANAGER;
use crate::cluster::{Cluster, Propagation, finalizers, is_deleting, meta_str, set_finalizers};
use crate::store::ObjRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnerState {
    Present,
    Absent,
    WaitingForDependents,
}

fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or_default()
}

fn remove_finalizer(obj: &mut Value, name: &str) {
    let list: Vec<String> = finalizers(obj).into_iter().filter(|f| f != name).collect();
    set_finalizers(obj, &list);
}

fn remove_owner_refs(obj: &mut Value, uids: &[String]) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let kept: Vec<Value> = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter(|r| !uids.iter().any(|u| u == ref_uid(r)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if kept.is_empty() {
            meta.remove("ownerReferences");
        } else {
            meta.insert("ownerReferences".into(), Value::Array(kept));
        }
    }
}

impl Cluster {
    fn owner_state(&self, dependent: &ObjRef, owner: &Value) -> OwnerState {
        let api_version = owner
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = owner
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(info) = self.registry.by_kind(api_version, kind) else {
            return OwnerState::Present;
        };
        let Some(loc) = self.store.by_uid(ref_uid(owner)) else {
            return OwnerState::Absent;
        };
        let name = owner
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let wrong_place = loc.key != info.key()
            || loc.name != name
            || (info.namespaced
                && (dependent.namespace.is_empty() || loc.namespace != dependent.namespace));
        if wrong_place {
            return OwnerState::Absent;
        }
        match self.store.get(&loc.key, &loc.namespace, &loc.name) {
            Some(o)
                if is_deleting(o) && finalizers(o).iter().any(|f| f == "foregroundDeletion") =>
            {
                OwnerState::WaitingForDependents
            }
            Some(_) => OwnerState::Present,
            None => OwnerState::Absent,
        }
    }

    fn dependents_of(&self, uid: &str) -> Vec<(ObjRef, Arc<Value>)> {
        self.store.dependents_of(uid)
    }

    pub(crate) fn gc_written(&mut self, r: &ObjRef, obj: &Value) {
        if is_deleting(obj) {
            let list = finalizers(obj);
            if list.iter().any(|f| f == "orphan") {
                self.gc_orphan(r, obj);
            }
            if list.iter().any(|f| f == "foregroundDeletion") {
                self.gc_foreground(r, obj);
            }
            return;
        }
        if !owner_refs(obj).is_empty() {
            self.gc_check_dependent(r);
        }
    }

    pub(crate) fn gc_removed(&mut self, last: &Value) {
        if let Some(uid) = meta_str(last, "uid") {
            for (dep, _) in self.dependents_of(uid) {
                self.gc_check_dependent(&dep);
            }
        }
        for owner in owner_refs(last) {
            let Some(loc) = self.store.by_uid(ref_uid(&owner)).cloned() else {
                continue;
            };
            if let Some(o) = self.store.get(&loc.key, &loc.namespace, &loc.name).cloned()
                && is_deleting(&o)
                && finalizers(&o).iter().any(|f| f == "foregroundDeletion")
            {
                self.gc_foreground(&loc, &o);
            }
        }
    }

    fn gc_check_dependent(&mut self, r: &ObjRef) {
        let Some(obj) = self.store.get(&r.key, &r.namespace, &r.name).cloned() else {
            return;
        };
        if is_deleting(&obj) {
            return;
        }
        let refs = owner_refs(&obj);
        if refs.is_empty() {
            return;
        }
        let states: Vec<(String, OwnerState)> = refs
            .iter()
            .map(|o| (ref_uid(o).to_string(), self.owner_state(r, o)))
            .collect();
        let solid = states.iter().any(|(_, s)| *s == OwnerState::Present);
        if solid {
            let drop: Vec<String> = states
                .iter()
                .filter(|(_, s)| *s != OwnerState::Present)
                .map(|(u, _)| u.clone())
                .collect();
            if !drop.is_empty() {
                self.controller_update(r, None, CONTROLLER_MANAGER, |o| {
                    remove_owner_refs(o, &drop)
                });
            }
            return;
        }
        let waiting = states
            .iter()
            .any(|(_, s)| *s == OwnerState::WaitingForDependents);
        let has_dependents =
            meta_str(&obj, "uid").is_some_and(|u| !self.dependents_of(u).is_empty());
        let policy = if waiting && has_dependents {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        self.delete_object(r, policy);
    }

    fn gc_foreground(&mut self, owner: &ObjRef, obj: &Value) {
        let Some(uid) = meta_str(obj, "uid").map(str::to_string) else {
            return;
        };
        for (dep, o) in self.dependents_of(&uid) {
            if !is_deleting(&o) {
                self.gc_check_dependent(&dep);
            }
        }
        let blocking = self.dependents_of(&uid).into_iter().any(|(_, o)| {
            owner_refs(&o).iter().any(|r| {
                ref_uid(r) == uid && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
            })
        });
        if !blocking {
            self.controller_update(owner, None, CONTROLLER_MANAGER, |o| {
                remove_finalizer(o, "foregroundDeletion");
            });
        }
    }

    fn gc_orphan(&mut self, owner: &ObjRef, obj: &Value) {
        let Some(uid) = meta_str(obj, "uid").map(str::to_string) else {
            return;
        };
        for (dep, _) in self.dependents_of(&uid) {
            let drop = vec![uid.clone()];
            self.controller_update(&dep, None, CONTROLLER_MANAGER, |o| {
                remove_owner_refs(o, &drop)
            });
        }
        self.controller_update(owner, None, CONTROLLER_MANAGER, |o| {
            remove_finalizer(o, "orphan")
        });
    }
}
