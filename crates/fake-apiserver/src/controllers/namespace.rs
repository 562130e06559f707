//! Namespace lifecycle (`pkg/controller/namespace`, `plugin/pkg/admission/namespace/lifecycle`)
//! and the ServiceAccount controller's `default` account (`pkg/controller/serviceaccount`).
//!
//! A new Namespace gets `spec.finalizers: [kubernetes]` and `status.phase: Active`.
//! Deleting it sets `deletionTimestamp` and `phase: Terminating`, deletes everything in it,
//! and once nothing is left removes the `kubernetes` finalizer, which removes the Namespace
//! (if no `metadata.finalizers` remain).

use serde_json::{Value, json};

use super::CONTROLLER_MANAGER;
use crate::cluster::{Cluster, Target, is_deleting};
use crate::resources::ResourceKey;
use crate::store::ObjRef;

/// Defaults of a new Namespace.
pub(crate) fn on_create(obj: &mut Value, lifecycle: bool) {
    if lifecycle {
        let spec = obj
            .as_object_mut()
            .map(|m| m.entry("spec").or_insert_with(|| json!({})));
        if let Some(Value::Object(spec)) = spec {
            spec.entry("finalizers")
                .or_insert_with(|| json!(["kubernetes"]));
        }
    }
    obj["status"] = json!({"phase": "Active"});
}

fn namespaces_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "namespaces".into(),
    }
}

impl Cluster {
    pub(crate) fn namespace_written(&mut self, name: &str, obj: &Value) {
        if is_deleting(obj) {
            if self.controllers.namespace_lifecycle {
                self.namespace_cleanup(name);
            }
        } else if self.controllers.service_accounts {
            self.ensure_default_service_account(name);
        }
    }

    pub(crate) fn namespace_content_removed(&mut self, namespace: &str) {
        let deleting = self
            .store
            .get(&namespaces_key(), "", namespace)
            .is_some_and(|ns| is_deleting(ns));
        if deleting {
            self.namespace_cleanup(namespace);
        }
    }

    fn namespace_cleanup(&mut self, namespace: &str) {
        self.delete_unless_deleting(&self.objects_in_namespace(namespace));
        if !self.objects_in_namespace(namespace).is_empty() {
            return;
        }
        let ns_ref = ObjRef {
            key: namespaces_key(),
            namespace: String::new(),
            name: namespace.to_string(),
        };
        self.controller_update(&ns_ref, Some("finalize"), CONTROLLER_MANAGER, |ns| {
            if let Some(Value::Array(f)) = ns.pointer_mut("/spec/finalizers") {
                f.retain(|x| x != "kubernetes");
            }
        });
    }

    fn ensure_default_service_account(&mut self, namespace: &str) {
        let sa_key = ResourceKey {
            group: String::new(),
            plural: "serviceaccounts".into(),
        };
        if self.store.get(&sa_key, namespace, "default").is_some() {
            return;
        }
        let Some(info) = self.registry.get(&sa_key).cloned() else {
            return;
        };
        let t = Target {
            version: "v1".into(),
            info,
            namespace: namespace.to_string(),
            name: "default".into(),
            subresource: None,
        };
        let sa = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": namespace},
        });
        self.controller_create(&t, sa, CONTROLLER_MANAGER);
    }
}
