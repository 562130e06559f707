//! DELETE and DELETE on a collection: preconditions, propagation policy finalizers
//! (`orphan`, `foregroundDeletion`), graceful deletion via `deletionTimestamp` while
//! finalizers remain (`registry/generic/registry/store.go` `updateForGracefulDeletionAndFinalizers`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::read::ListParams;
use super::{
    Cluster, OpResult, Reply, Target, finalizers, is_deleting, meta_mut, meta_str, present,
    set_finalizers,
};
use crate::controllers::Work;
use crate::ids::now_rfc3339;
use crate::status::{ApiError, success_status};
use crate::store::ObjRef;

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Propagation {
    Orphan,
    #[default]
    Background,
    Foreground,
}

/// `DeleteOptions`, from the body and the query.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) propagation: Option<Propagation>,
    pub(crate) precondition_uid: Option<String>,
    pub(crate) precondition_rv: Option<String>,
    pub(crate) dry_run: bool,
}

impl DeleteOptions {
    /// Reads a `DeleteOptions` body (empty is fine) and overlays query parameters.
    pub(crate) fn parse(body: &[u8], query: &[(String, String)]) -> Result<Self, ApiError> {
        let mut opts = DeleteOptions::default();
        let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
        };
        let policy = |s: &str| match s {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        };
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation = Some(policy(p)?);
        }
        if let Some(orphan) = v.get("orphanDependents").and_then(Value::as_bool) {
            opts.propagation = Some(if orphan {
                Propagation::Orphan
            } else {
                Propagation::Background
            });
        }
        opts.precondition_uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.precondition_rv = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.dry_run = v
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|d| d == "All"));
        for (k, val) in query {
            match k.as_str() {
                "propagationPolicy" => opts.propagation = Some(policy(val)?),
                "dryRun" if val == "All" => opts.dry_run = true,
                _ => {}
            }
        }
        Ok(opts)
    }
}

/// What deleting one object did.
pub(crate) enum Deleted {
    /// Removed from storage; the final state.
    Removed(Arc<Value>),
    /// Kept with `deletionTimestamp` until its finalizers are gone.
    Pending(Arc<Value>),
}

const PROTECTED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

impl Cluster {
    /// Handles DELETE on a named object.
    pub(crate) fn delete(&mut self, t: &Target, opts: &DeleteOptions) -> OpResult {
        let old = self.existing(t)?;
        let gr = t.info.group_resource();
        if let Some(uid) = &opts.precondition_uid {
            let actual = meta_str(&old, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError::conflict(
                    gr,
                    &t.name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.precondition_rv {
            let actual = meta_str(&old, "resourceVersion").unwrap_or_default();
            if rv != actual {
                return Err(ApiError::conflict(
                    gr,
                    &t.name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        if t.info.group.is_empty()
            && t.info.kind == "Namespace"
            && self.controllers.namespace_lifecycle
            && PROTECTED_NAMESPACES.contains(&t.name.as_str())
        {
            return Err(ApiError::forbidden(
                gr,
                &t.name,
                "this namespace may not be deleted",
            ));
        }
        if opts.dry_run {
            return Ok(Reply {
                code: 200,
                body: present(&t.info, &t.version, &old),
            });
        }
        let r = Self::obj_ref(t, &t.name);
        let outcome = self.delete_object(&r, opts.propagation.unwrap_or_default());
        self.run_controllers();
        Ok(match outcome {
            Some(Deleted::Removed(last)) if t.info.builtin => Reply {
                code: 200,
                body: success_status(
                    &t.name,
                    &t.info.group,
                    &t.info.plural,
                    meta_str(&last, "uid").unwrap_or_default(),
                ),
            },
            Some(Deleted::Removed(obj) | Deleted::Pending(obj)) => Reply {
                code: 200,
                body: present(&t.info, &t.version, &obj),
            },
            None => return Err(ApiError::not_found(gr, &t.name)),
        })
    }

    /// Handles DELETE on a collection: deletes every object the selectors match.
    pub(crate) fn delete_collection(
        &mut self,
        t: &Target,
        list: &ListParams,
        opts: &DeleteOptions,
    ) -> OpResult {
        let filter = list.filter(t)?;
        let names: Vec<(String, String)> = self
            .store
            .iter(&t.info.key(), None)
            .filter(|o| filter.matches(o))
            .map(|o| {
                (
                    meta_str(o, "namespace").unwrap_or_default().to_string(),
                    meta_str(o, "name").unwrap_or_default().to_string(),
                )
            })
            .collect();
        let mut items = Vec::new();
        for (ns, name) in names {
            let r = ObjRef {
                key: t.info.key(),
                namespace: ns,
                name,
            };
            if opts.dry_run {
                if let Some(o) = self.store.get(&r.key, &r.namespace, &r.name) {
                    items.push(present(&t.info, &t.version, o));
                }
                continue;
            }
            match self.delete_object(&r, opts.propagation.unwrap_or_default()) {
                Some(Deleted::Removed(o) | Deleted::Pending(o)) => {
                    items.push(present(&t.info, &t.version, &o))
                }
                None => {}
            }
        }
        self.run_controllers();
        Ok(Reply {
            code: 200,
            body: json!({
                "kind": format!("{}List", t.info.kind),
                "apiVersion": t.info.api_version(&t.version),
                "metadata": {"resourceVersion": self.store.current_rv().to_string()},
                "items": items,
            }),
        })
    }

    /// Deletes one object: marks it deleting when finalizers (including the propagation
    /// policy's) remain, removes it otherwise. Controllers run later from the work queue.
    pub(crate) fn delete_object(&mut self, r: &ObjRef, policy: Propagation) -> Option<Deleted> {
        let info = self.registry.get(&r.key)?.clone();
        let old = self.store.get(&r.key, &r.namespace, &r.name)?.clone();
        let mut obj = (*old).clone();
        let mut list = finalizers(&obj);
        let policy_finalizer = match policy {
            Propagation::Orphan => Some("orphan"),
            Propagation::Foreground => Some("foregroundDeletion"),
            Propagation::Background => None,
        };
        if let Some(f) = policy_finalizer
            && self.controllers.garbage_collector
            && !list.iter().any(|x| x == f)
        {
            list.push(f.to_string());
            set_finalizers(&mut obj, &list);
        }
        let is_namespace = info.group.is_empty() && info.kind == "Namespace";
        if is_namespace && self.controllers.namespace_lifecycle {
            obj["status"] = json!({"phase": "Terminating"});
        }
        let pending = !list.is_empty() || self.waits_for_spec_finalizers(&obj, &info);
        if !pending {
            let last = self.store.remove(&r.key, &r.namespace, &r.name, obj);
            self.work.push_back(Work::Removed(r.clone(), last.clone()));
            return Some(Deleted::Removed(last));
        }
        if !is_deleting(&obj) {
            let meta = meta_mut(&mut obj);
            meta.insert("deletionTimestamp".into(), now_rfc3339().into());
            meta.insert("deletionGracePeriodSeconds".into(), 0.into());
            if let Some(g) = meta
                .get("generation")
                .and_then(Value::as_i64)
                .filter(|g| *g > 0)
            {
                meta.insert("generation".into(), (g + 1).into());
            }
        }
        if obj == *old {
            return Some(Deleted::Pending(old));
        }
        let stored = self.store.update(&r.key, &r.namespace, &r.name, obj);
        self.work.push_back(Work::Written(r.clone()));
        Some(Deleted::Pending(stored))
    }
}
