//! PUT, PATCH (JSON patch, merge patch, strategic merge patch) and server-side apply.
//! All of them end in [`Cluster::commit_update`], which enforces the optimistic-concurrency,
//! subresource, finalizer, validation and no-op rules of `registry/generic/registry/store.go`.

use std::sync::Arc;

use serde_json::Value;

use super::meta::{
    check_name, check_no_new_finalizers, check_type_meta, is_noop, normalize, parse_object,
    resolve_namespace, restore_server_fields, spec_changed, without_managed_fields,
    write_managed_fields,
};
use super::{
    Cluster, OpResult, Reply, Target, WriteParams, finalizers, is_deleting, meta_mut, meta_str,
    present,
};
use crate::controllers::Work;
use crate::ssa::managed::{ManagedFields, ManagerId, Operation};
use crate::ssa::{self};
use crate::status::{self, ApiError};

/// How ownership is recorded for an update.
pub(crate) enum Ownership {
    /// An Update/Patch by this manager takes the fields it changed.
    Update(ManagerId),
    /// Already computed (apply).
    Computed(ManagedFields),
}

/// A PATCH body, by `Content-Type`: server-side apply or a patch of an existing object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchType {
    Apply,
    Patch(PatchFormat),
}

/// Patch formats that change an existing object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchFormat {
    Json,
    Merge,
    Strategic,
}

impl PatchType {
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/json-patch+json" => Some(PatchType::Patch(PatchFormat::Json)),
            "application/merge-patch+json" => Some(PatchType::Patch(PatchFormat::Merge)),
            "application/strategic-merge-patch+json" => {
                Some(PatchType::Patch(PatchFormat::Strategic))
            }
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

impl Cluster {
    /// Handles PUT on a named object (or its `status`/`finalize` subresource).
    pub(crate) fn update(&mut self, t: &Target, p: &WriteParams, body: &[u8]) -> OpResult {
        let mut new = parse_object(body)?;
        check_type_meta(t, &new)?;
        check_name(t, &mut new)?;
        resolve_namespace(t, &mut new)?;
        let old = self.existing(t)?;
        let precondition = meta_str(&new, "resourceVersion").map(str::to_string);
        if precondition.as_deref().is_none_or(str::is_empty) && !t.info.builtin {
            return Err(ApiError::invalid(
                &t.info.group,
                &t.info.kind,
                &t.name,
                vec![status::invalid_value(
                    "metadata.resourceVersion",
                    &Value::String("0x0".into()),
                    "must be specified for an update",
                )],
            ));
        }
        let incoming = if t.subresource.is_none() {
            ManagedFields::decode(&new).filter(|m| !m.entries.is_empty())
        } else {
            None
        };
        let who = p.manager_id(t, Operation::Update);
        self.commit_update(
            t,
            p,
            &old,
            new,
            precondition,
            incoming,
            Ownership::Update(who),
        )
    }

    /// Handles PATCH of any type.
    pub(crate) fn patch(
        &mut self,
        t: &Target,
        p: &WriteParams,
        kind: PatchType,
        body: &[u8],
    ) -> OpResult {
        let format = match kind {
            PatchType::Apply => return self.apply(t, p, body),
            PatchType::Patch(format) => format,
        };
        let old = self.existing(t)?;
        // The patch applies to the object as served at the request's version (a CRD's
        // versions convert with strategy `None`: only `apiVersion` changes).
        let mut doc = present(&t.info, &t.version, &old);
        match format {
            PatchFormat::Json => {
                let ops: json_patch::Patch = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                apply_json_patch(&mut doc, &ops)?;
            }
            PatchFormat::Merge => {
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                json_patch::merge(&mut doc, &patch);
            }
            PatchFormat::Strategic => {
                if !t.info.builtin {
                    return Err(ApiError::unsupported_media_type(
                        "application/strategic-merge-patch+json",
                    ));
                }
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                doc = crate::smp::strategic_merge(&doc, &patch, &t.info.schema)
                    .map_err(ApiError::unprocessable)?;
            }
        }
        if !doc.is_object() {
            return Err(ApiError::unprocessable(
                "the patched object is not a JSON object",
            ));
        }
        check_type_meta(t, &doc)?;
        if meta_str(&doc, "name") != Some(t.name.as_str()) {
            return Err(ApiError::bad_request(
                "metadata.name may not be changed by a patch",
            ));
        }
        let precondition = meta_str(&doc, "resourceVersion").map(str::to_string);
        let incoming = if t.subresource.is_none() {
            ManagedFields::decode(&doc).filter(|m| {
                !m.entries.is_empty() && Some(m) != ManagedFields::decode(&old).as_ref()
            })
        } else {
            None
        };
        let who = p.manager_id(t, Operation::Update);
        self.commit_update(
            t,
            p,
            &old,
            doc,
            precondition,
            incoming,
            Ownership::Update(who),
        )
    }

    /// The shared tail of every update. `precondition` is the `resourceVersion` the client
    /// sent; `incoming` are managedFields the client supplied to replace the stored ones.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit_update(
        &mut self,
        t: &Target,
        p: &WriteParams,
        old: &Arc<Value>,
        mut new: Value,
        precondition: Option<String>,
        incoming: Option<ManagedFields>,
        ownership: Ownership,
    ) -> OpResult {
        let info = t.info.clone();
        if let Some(rv) = precondition.filter(|rv| !rv.is_empty())
            && Some(rv.as_str()) != meta_str(old, "resourceVersion")
        {
            return Err(ApiError::conflict_modified(info.group_resource(), &t.name));
        }
        restore_server_fields(old, &mut new);
        match t.subresource.as_deref() {
            None if info.has_status => copy_field(old, &mut new, "status"),
            None => {}
            Some("status") => {
                let mut only_status = (**old).clone();
                copy_field(&new, &mut only_status, "status");
                new = only_status;
            }
            Some("finalize") if info.kind == "Namespace" => {
                let mut only = (**old).clone();
                let finalizers = new.pointer("/spec/finalizers").cloned();
                if let Some(spec) = only.get_mut("spec").and_then(Value::as_object_mut) {
                    match finalizers {
                        Some(f) => spec.insert("finalizers".into(), f),
                        None => spec.remove("finalizers"),
                    };
                }
                new = only;
            }
            Some(other) => {
                return Err(ApiError::not_found(
                    info.group_resource(),
                    &format!("{}/{other}", t.name),
                ));
            }
        }
        check_no_new_finalizers(&info, old, &new)?;
        normalize(&info, &mut new, Some(old))?;
        if info.tracks_generation && spec_changed(&info, old, &new) {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta_mut(&mut new).insert("generation".into(), (generation + 1).into());
        }
        let managed = match ownership {
            Ownership::Computed(m) => m,
            Ownership::Update(who) => {
                let mut managed = incoming
                    .or_else(|| ManagedFields::decode(old))
                    .unwrap_or_default();
                ssa::record_update(
                    &without_managed_fields(old),
                    &without_managed_fields(&new),
                    &info.schema,
                    &mut managed,
                    &who,
                );
                managed
            }
        };
        write_managed_fields(&mut new, &managed);
        if is_noop(old, &new) {
            return Ok(Reply {
                code: 200,
                body: present(&info, &t.version, old),
            });
        }
        if p.dry_run {
            return Ok(Reply {
                code: 200,
                body: present(&info, &t.version, &new),
            });
        }
        let key = info.key();
        let obj_ref = Self::obj_ref(t, &t.name);
        if is_deleting(&new)
            && finalizers(&new).is_empty()
            && !self.waits_for_spec_finalizers(&new, &info)
        {
            let last = self.store.remove(&key, &t.namespace, &t.name, new);
            self.work.push_back(Work::Removed(obj_ref, last.clone()));
            self.run_controllers();
            return Ok(Reply {
                code: 200,
                body: present(&info, &t.version, &last),
            });
        }
        let stored = self.store.update(&key, &t.namespace, &t.name, new);
        self.work.push_back(Work::Written(obj_ref));
        self.run_controllers();
        Ok(Reply {
            code: 200,
            body: present(&info, &t.version, &stored),
        })
    }

    /// A Namespace is only removed once its `spec.finalizers` are empty too.
    pub(crate) fn waits_for_spec_finalizers(
        &self,
        obj: &Value,
        info: &crate::resources::ResourceInfo,
    ) -> bool {
        info.group.is_empty()
            && info.kind == "Namespace"
            && obj
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty())
    }
}

/// RFC 6902 as the API server applies it (`evanphx/json-patch`): a `test` of a missing path
/// against `null` succeeds, which `kube::runtime::finalizer` relies on to add the first
/// finalizer. `doc` is a scratch copy: on error the caller stores nothing.
fn apply_json_patch(doc: &mut Value, ops: &json_patch::Patch) -> Result<(), ApiError> {
    for op in &ops.0 {
        if let json_patch::PatchOperation::Test(t) = op
            && t.value.is_null()
            && doc.pointer(t.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(doc, std::slice::from_ref(op))
            .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    }
    Ok(())
}

fn copy_field(from: &Value, to: &mut Value, field: &str) {
    if let Value::Object(m) = to {
        match from.get(field) {
            Some(v) => {
                m.insert(field.into(), v.clone());
            }
            None => {
                m.remove(field);
            }
        }
    }
}
