//! Emulated cluster controllers, each switchable: namespace lifecycle, the ServiceAccount
//! controller, a minimal Deployment controller, CRD establishment and cleanup, APIService
//! availability, ClusterRole aggregation, and the garbage collector. They run synchronously after each write, from a work queue, until
//! nothing is left to do — so a test observes their effects as soon as the write returns
//! (as watch events and `resourceVersion` bumps, like the real asynchronous controllers).

pub(crate) mod apiservice;
pub(crate) mod clusterrole_aggregation;
pub(crate) mod crd;
pub(crate) mod deployment;
pub(crate) mod gc;
pub(crate) mod namespace;

use std::sync::Arc;

use serde_json::Value;

use crate::cluster::{Cluster, DeploymentMode, Target, WriteParams};
use crate::resources::ResourceKey;
use crate::store::ObjRef;

/// Which controllers run.
#[derive(Clone, Debug)]
pub(crate) struct ControllerConfig {
    pub(crate) namespace_lifecycle: bool,
    pub(crate) service_accounts: bool,
    pub(crate) deployments: DeploymentMode,
    pub(crate) crds: bool,
    pub(crate) garbage_collector: bool,
    pub(crate) api_services: bool,
    pub(crate) clusterrole_aggregation: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            namespace_lifecycle: true,
            service_accounts: true,
            deployments: DeploymentMode::Available,
            crds: true,
            garbage_collector: true,
            api_services: true,
            clusterrole_aggregation: true,
        }
    }
}

/// Something a controller may need to react to.
#[derive(Debug)]
pub(crate) enum Work {
    /// An object was created or updated.
    Written(ObjRef),
    /// An object was removed; its final state.
    Removed(ObjRef, Arc<Value>),
}

/// The field manager controllers write with.
pub(crate) const CONTROLLER_MANAGER: &str = "kube-controller-manager";

pub(crate) fn is_kind(key: &ResourceKey, group: &str, plural: &str) -> bool {
    key.group == group && key.plural == plural
}

impl Cluster {
    /// Drains the work queue; re-entrant calls (controllers writing) return at once.
    pub(crate) fn run_controllers(&mut self) {
        if self.in_controllers {
            return;
        }
        self.in_controllers = true;
        // A generous bound: each item does bounded work, so a loop here is a bug, not load.
        let mut budget = 1_000_000_usize;
        while let Some(work) = self.work.pop_front() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                tracing::error!("fake-apiserver controllers did not settle; dropping queued work");
                self.work.clear();
                break;
            }
            match work {
                Work::Written(r) => self.on_written(&r),
                Work::Removed(r, last) => self.on_removed(&r, &last),
            }
        }
        self.in_controllers = false;
    }

    /// Keeps the authorizer's subject index in step (always, like an informer's indexer).
    fn index_binding(&mut self, r: &ObjRef, now: Option<&Value>) {
        if is_kind(&r.key, "rbac.authorization.k8s.io", "rolebindings")
            || is_kind(&r.key, "rbac.authorization.k8s.io", "clusterrolebindings")
        {
            self.bindings.update(&r.namespace, &r.name, now);
        }
    }

    fn on_written(&mut self, r: &ObjRef) {
        let Some(obj) = self.store.get(&r.key, &r.namespace, &r.name).cloned() else {
            return;
        };
        self.index_binding(r, Some(&obj));
        if is_kind(&r.key, "", "namespaces") {
            self.namespace_written(&r.name, &obj);
        }
        if is_kind(&r.key, "apiextensions.k8s.io", "customresourcedefinitions") {
            self.crd_written(&r.name, &obj);
        }
        if is_kind(&r.key, "apps", "deployments") {
            self.deployment_written(r, &obj);
        }
        if is_kind(&r.key, "apiregistration.k8s.io", "apiservices") {
            self.count_remote_api_services();
        }
        if self.controllers.api_services {
            if is_kind(&r.key, "apiregistration.k8s.io", "apiservices") {
                self.apiservice_written(&r.name, &obj);
            }
            self.apiservices_backed_in(r);
        }
        if self.controllers.clusterrole_aggregation
            && is_kind(&r.key, "rbac.authorization.k8s.io", "clusterroles")
        {
            self.clusterrole_changed(&r.name, Some(&obj));
        }
        if self.controllers.garbage_collector {
            self.gc_written(r, &obj);
        }
    }

    fn on_removed(&mut self, r: &ObjRef, last: &Value) {
        self.index_binding(r, None);
        if self.controllers.garbage_collector {
            self.gc_removed(last);
        }
        if !r.namespace.is_empty() && self.controllers.namespace_lifecycle {
            self.namespace_content_removed(&r.namespace);
        }
        self.crd_content_removed(r);
        if self.controllers.api_services {
            self.apiservices_backed_in(r);
        }
        if is_kind(&r.key, "apiregistration.k8s.io", "apiservices") {
            self.forget_check(&r.name);
            self.count_remote_api_services();
        }
        if self.controllers.clusterrole_aggregation
            && is_kind(&r.key, "rbac.authorization.k8s.io", "clusterroles")
        {
            self.clusterrole_changed(&r.name, None);
        }
    }

    /// Internal update of the object at `r` through the normal write path, as `manager`.
    pub(crate) fn controller_update(
        &mut self,
        r: &ObjRef,
        subresource: Option<&str>,
        manager: &str,
        mutate: impl FnOnce(&mut Value),
    ) {
        let Some(t) = self.target_of(r, subresource) else {
            return;
        };
        let Some(old) = self.store.get(&r.key, &r.namespace, &r.name).cloned() else {
            return;
        };
        let mut new = (*old).clone();
        mutate(&mut new);
        let p = WriteParams {
            field_manager: Some(manager.to_string()),
            ..WriteParams::default()
        };
        let who = crate::ssa::managed::ManagerId {
            manager: manager.to_string(),
            operation: crate::ssa::managed::Operation::Update,
            subresource: subresource.unwrap_or_default().to_string(),
            api_version: t.info.api_version(&t.version),
        };
        if let Err(e) = self.commit_update(
            &t,
            &p,
            &old,
            new,
            None,
            None,
            crate::cluster::Ownership::Update(who),
        ) {
            tracing::warn!(resource = %r.key.plural, namespace = %r.namespace, name = %r.name, error = %e.message, "controller update rejected");
        }
    }

    /// Internal create, as `manager`.
    pub(crate) fn controller_create(&mut self, t: &Target, obj: Value, manager: &str) {
        let who = crate::ssa::managed::ManagerId {
            manager: manager.to_string(),
            operation: crate::ssa::managed::Operation::Update,
            subresource: String::new(),
            api_version: t.info.api_version(&t.version),
        };
        if let Err(e) = self.create_object(t, obj, None, Some(&who), false) {
            tracing::warn!(resource = %t.info.plural, namespace = %t.namespace, error = %e.message, "controller create rejected");
        }
    }

    /// Deletes (background propagation) each object of `refs` that is not being deleted yet.
    pub(crate) fn delete_unless_deleting(&mut self, refs: &[ObjRef]) {
        for r in refs {
            let deleting = self
                .store
                .get(&r.key, &r.namespace, &r.name)
                .is_some_and(|o| crate::cluster::is_deleting(o));
            if !deleting {
                self.delete_object(r, crate::cluster::Propagation::Background);
            }
        }
    }

    /// Objects in `namespace` across all resources.
    pub(crate) fn objects_in_namespace(&self, namespace: &str) -> Vec<ObjRef> {
        self.store
            .all_refs()
            .into_iter()
            .filter(|(r, _)| r.namespace == namespace)
            .map(|(r, _)| r)
            .collect()
    }
}
