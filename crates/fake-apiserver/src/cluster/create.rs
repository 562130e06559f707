//! POST: create (`generateName`, namespace lifecycle admission, server-set metadata,
//! ownership of every field by the creating manager).

use serde_json::Value;

use super::meta::{
    check_type_meta, empty_object, normalize, parse_object, resolve_namespace,
    without_managed_fields, write_managed_fields,
};
use super::{Cluster, OpResult, Reply, Target, WriteParams, meta_mut, meta_str, present};
use crate::controllers::Work;
use crate::ids::now_rfc3339;
use crate::ssa::{self, managed::ManagedFields, managed::Operation};
use crate::status::{self, ApiError};

impl Cluster {
    /// Namespace lifecycle admission for creates: the namespace must exist (404) and must
    /// not be terminating (403).
    pub(crate) fn admit_create(&self, t: &Target, name: &str) -> Result<(), ApiError> {
        if !t.info.namespaced || !self.controllers.namespace_lifecycle {
            return Ok(());
        }
        let ns_key = crate::resources::ResourceKey {
            group: String::new(),
            plural: "namespaces".into(),
        };
        match self.store.get(&ns_key, "", &t.namespace) {
            None => Err(ApiError::not_found(
                status::GroupResource {
                    group: "",
                    resource: "namespaces",
                },
                &t.namespace,
            )),
            Some(ns) if super::is_deleting(ns) => Err(ApiError::namespace_terminating(
                t.info.group_resource(),
                name,
                &t.namespace,
            )),
            Some(_) => Ok(()),
        }
    }

    /// Handles POST on a collection.
    pub(crate) fn create(&mut self, t: &Target, p: &WriteParams, body: &[u8]) -> OpResult {
        if t.subresource.is_some() {
            return Err(ApiError::method_not_allowed(
                "create",
                t.info.group_resource(),
            ));
        }
        let mut obj = parse_object(body)?;
        check_type_meta(t, &obj)?;
        resolve_namespace(t, &mut obj)?;
        let meta = meta_mut(&mut obj);
        let name = match meta
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            Some(n) => n.to_string(),
            None => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    format!("{prefix}{}", self.ids.name_suffix())
                }
                _ => {
                    return Err(ApiError::invalid(
                        &t.info.group,
                        &t.info.kind,
                        "",
                        vec![status::required(
                            "metadata.name",
                            "name or generateName is required",
                        )],
                    ));
                }
            },
        };
        meta.insert("name".into(), name.clone().into());
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        self.admit_create(t, &name)?;
        let incoming = ManagedFields::decode(&obj).filter(|m| !m.entries.is_empty());
        let who = p.manager_id(t, Operation::Update);
        let stored = self.create_object(t, obj, incoming, Some(&who), p.dry_run)?;
        Ok(Reply {
            code: 201,
            body: present(&t.info, &t.version, &stored),
        })
    }

    /// Sets server-owned metadata, defaults, validates, records ownership and stores a new
    /// object (shared by POST, apply-create and controllers). `who` is `None` when ownership
    /// is already in `managed`.
    pub(crate) fn create_object(
        &mut self,
        t: &Target,
        mut obj: Value,
        managed: Option<ManagedFields>,
        who: Option<&crate::ssa::managed::ManagerId>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let info = t.info.clone();
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        let uid = self.ids.uid();
        let meta = meta_mut(&mut obj);
        for field in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "generation",
        ] {
            meta.remove(field);
        }
        meta.insert("uid".into(), uid.into());
        meta.insert("creationTimestamp".into(), now_rfc3339().into());
        if info.tracks_generation {
            meta.insert("generation".into(), 1.into());
        }
        if info.has_status
            && let Value::Object(m) = &mut obj
        {
            m.remove("status");
        }
        if info.group.is_empty() && info.kind == "Namespace" {
            crate::controllers::namespace::on_create(
                &mut obj,
                self.controllers.namespace_lifecycle,
            );
        }
        normalize(&info, &mut obj, None)?;
        let mut managed = managed.unwrap_or_default();
        if let Some(who) = who {
            ssa::record_update(
                &empty_object(),
                &without_managed_fields(&obj),
                &info.schema,
                &mut managed,
                who,
            );
        }
        write_managed_fields(&mut obj, &managed);
        crate::controllers::apiservice::prepare_for_create(&info, &mut obj);
        if self.store.get(&info.key(), &t.namespace, &name).is_some() {
            return Err(ApiError::already_exists(info.group_resource(), &name));
        }
        if dry_run {
            return Ok(obj);
        }
        let stored = self.store.insert(&info.key(), &t.namespace, &name, obj);
        self.work.push_back(Work::Written(Self::obj_ref(t, &name)));
        self.run_controllers();
        Ok((*stored).clone())
    }
}
