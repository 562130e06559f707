//! Server-side apply (`PATCH` with `application/apply-patch+yaml`): the field-manager merge of
//! `ssa`, the fields a create or update resets, then [`Cluster::commit_update`].

use serde_json::{Map, Value};

use super::meta::{check_name, check_type_meta, resolve_namespace, without_managed_fields};
use super::update::Ownership;
use super::{Cluster, OpResult, Reply, Target, WriteParams, meta_mut, meta_str, present};
use crate::ids::now_rfc3339;
use crate::ssa::managed::{ManagedFields, ManagerId, Operation};
use crate::ssa::{self, ApplyError};
use crate::status::{self, ApiError};

impl Cluster {
    /// Server-side apply (PATCH with `application/apply-patch+yaml`).
    pub(super) fn apply(&mut self, t: &Target, p: &WriteParams, body: &[u8]) -> OpResult {
        let mut config: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => {
                let text = std::str::from_utf8(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
                serde_saphyr::from_str(text)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
            }
        };
        if !config.is_object() {
            return Err(ApiError::bad_request(
                "error decoding YAML: expected an object",
            ));
        }
        if config.get("apiVersion").is_none() || config.get("kind").is_none() {
            return Err(ApiError::bad_request(
                "error decoding YAML: Object 'Kind' is missing or 'apiVersion' is missing",
            ));
        }
        check_type_meta(t, &config)?;
        if p.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![status::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
        if config.pointer("/metadata/managedFields").is_some() {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        check_name(t, &mut config)?;
        resolve_namespace(t, &mut config)?;
        let precondition = meta_str(&config, "resourceVersion").map(str::to_string);
        strip_reset_fields(t, &mut config);
        let who = p.manager_id(t, Operation::Apply);
        let schema = t.info.schema.clone();
        match self
            .store
            .get(&t.info.key(), &t.namespace, &t.name)
            .cloned()
        {
            None => {
                if t.subresource.is_some() {
                    return Err(ApiError::not_found(t.info.group_resource(), &t.name));
                }
                self.admit_create(t, &t.name)?;
                let mut live =
                    serde_json::json!({"apiVersion": config["apiVersion"], "kind": config["kind"]});
                meta_mut(&mut live).insert("name".into(), t.name.clone().into());
                if t.info.namespaced {
                    meta_mut(&mut live).insert("namespace".into(), t.namespace.clone().into());
                }
                let mut managed = ManagedFields::default();
                let merged = ssa::apply(&live, &config, &schema, &mut managed, &who, p.force)
                    .map_err(|e| apply_error(t, e))?;
                stamp(&mut managed, &who);
                let stored = self.create_object(t, merged, Some(managed), None, p.dry_run)?;
                Ok(Reply {
                    code: 201,
                    body: present(&t.info, &t.version, &stored),
                })
            }
            Some(old) => {
                let mut managed = ManagedFields::decode(&old).unwrap_or_default();
                let live = without_managed_fields(&old);
                let merged = ssa::apply(&live, &config, &schema, &mut managed, &who, p.force)
                    .map_err(|e| apply_error(t, e))?;
                stamp(&mut managed, &who);
                self.commit_update(
                    t,
                    p,
                    &old,
                    merged,
                    precondition,
                    None,
                    Ownership::Computed(managed),
                )
            }
        }
    }
}

/// Apply ignores the fields the subresource does not own: `status` on the main resource,
/// everything but `status` on `/status`.
fn strip_reset_fields(t: &Target, config: &mut Value) {
    let Value::Object(m) = config else {
        return;
    };
    match t.subresource.as_deref() {
        None if t.info.has_status => {
            m.remove("status");
        }
        Some("status") => {
            let mut kept = Map::new();
            for key in ["apiVersion", "kind", "status"] {
                if let Some(v) = m.get(key) {
                    kept.insert(key.into(), v.clone());
                }
            }
            let mut meta = Map::new();
            for key in ["name", "namespace"] {
                if let Some(v) = m.get("metadata").and_then(|md| md.get(key)) {
                    meta.insert(key.into(), v.clone());
                }
            }
            kept.insert("metadata".into(), Value::Object(meta));
            *m = kept;
        }
        _ => {}
    }
}

fn stamp(managed: &mut ManagedFields, who: &ManagerId) {
    if let Some(entry) = managed.get(who).cloned() {
        managed.put(who, entry.set, Some(now_rfc3339()));
    }
}

fn apply_error(t: &Target, e: ApplyError) -> ApiError {
    match e {
        ApplyError::Conflict(err) => err,
        ApplyError::Invalid(err) => ApiError::invalid(
            &t.info.group,
            &t.info.kind,
            &t.name,
            vec![status::invalid_value(&err.path, &Value::Null, &err.message)],
        ),
    }
}
