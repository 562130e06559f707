//! CustomResourceDefinition controllers (`apiextensions-apiserver/pkg/controller/*`):
//! a new CRD is served at once and reports `NamesAccepted` and `Established`; it carries the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer, and deleting it deletes every
//! custom resource of that kind before the CRD (and its API) goes away.

use serde_json::Value;

use crate::cluster::{Cluster, finalizers, is_deleting};
use crate::ids::now_rfc3339;
use crate::resources::{ResourceKey, crd};
use crate::store::ObjRef;

const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
const APISERVER: &str = "kube-apiserver";

fn crds_key() -> ResourceKey {
    ResourceKey {
        group: "apiextensions.k8s.io".into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// `widgets.example.com` → the key of the resource it defines.
fn served_key(crd_name: &str) -> Option<ResourceKey> {
    let (plural, group) = crd_name.split_once('.')?;
    Some(ResourceKey {
        group: group.to_string(),
        plural: plural.to_string(),
    })
}

impl Cluster {
    pub(crate) fn crd_written(&mut self, name: &str, obj: &Value) {
        let r = ObjRef {
            key: crds_key(),
            namespace: String::new(),
            name: name.to_string(),
        };
        if is_deleting(obj) {
            self.crd_cleanup(name);
            return;
        }
        match crd::resource_from_crd(obj) {
            Ok(info) => self.registry.insert(info),
            Err(causes) => {
                tracing::warn!(crd = %name, ?causes, "stored CRD is invalid; not serving it");
                return;
            }
        }
        if !self.controllers.crds {
            return;
        }
        if !finalizers(obj).iter().any(|f| f == CLEANUP_FINALIZER) {
            self.controller_update(&r, None, APISERVER, |c| {
                let mut list = finalizers(c);
                list.push(CLEANUP_FINALIZER.to_string());
                crate::cluster::set_finalizers(c, &list);
            });
        }
        let established = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Established")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        if !established {
            let status = crd::established_status(obj, &now_rfc3339());
            self.controller_update(&r, Some("status"), APISERVER, move |c| {
                c["status"] = status;
            });
        }
    }

    fn crd_cleanup(&mut self, crd_name: &str) {
        let Some(key) = served_key(crd_name) else {
            return;
        };
        self.delete_unless_deleting(&self.store.refs(&key));
        if !self.store.refs(&key).is_empty() {
            return;
        }
        let r = ObjRef {
            key: crds_key(),
            namespace: String::new(),
            name: crd_name.to_string(),
        };
        self.controller_update(&r, None, APISERVER, |c| {
            let list: Vec<String> = finalizers(c)
                .into_iter()
                .filter(|f| f != CLEANUP_FINALIZER)
                .collect();
            crate::cluster::set_finalizers(c, &list);
        });
    }

    pub(crate) fn crd_content_removed(&mut self, r: &ObjRef) {
        if r.key == crds_key() {
            if let Some(key) = served_key(&r.name) {
                self.registry.remove(&key);
                self.store.drop_resource(&key);
            }
            return;
        }
        let crd_name = format!("{}.{}", r.key.plural, r.key.group);
        let deleting = self
            .store
            .get(&crds_key(), "", &crd_name)
            .is_some_and(|c| is_deleting(c));
        if deleting && self.controllers.crds {
            self.crd_cleanup(&crd_name);
        }
    }
}
