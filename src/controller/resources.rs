//! Which API resource serves a kind: a static table for the kinds a registry+v1 bundle may hold
//! and opcat writes itself, and discovery (cached) for anything else, such as
//! `monitoring.coreos.com` kinds that only exist when their CRDs are installed.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;

/// An API resource and whether its objects live in a namespace.
#[derive(Clone, Debug)]
pub struct ResolvedResource {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Why a kind could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("kind {kind} in {api_version} is not served by the cluster")]
    NotServed {
        api_version: String,
        kind: String,
        #[source]
        source: kube::Error,
    },
}

impl ResourceError {
    /// Bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        "kind_not_served"
    }
}

// (group, version, kind, plural, namespaced)
const KNOWN: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "ConfigMap", "configmaps", true),
    ("", "v1", "Secret", "secrets", true),
    ("", "v1", "Service", "services", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    ("", "v1", "Namespace", "namespaces", false),
    ("apps", "v1", "Deployment", "deployments", true),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        false,
    ),
];

/// Resolves kinds to resources; shared by every reconciler.
#[derive(Clone)]
pub struct Resources {
    client: Client,
    discovered: Arc<RwLock<HashMap<GroupVersionKind, ResolvedResource>>>,
}

impl Resources {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            discovered: Arc::default(),
        }
    }

    /// The resource for `apiVersion` + `kind`, from the static table or discovery.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResolvedResource, ResourceError> {
        let gvk = gvk(api_version, kind);
        if let Some(known) = known(&gvk) {
            return Ok(known);
        }
        if let Some(found) = self.cached(&gvk) {
            return Ok(found);
        }
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|source| ResourceError::NotServed {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                source,
            })?;
        let resolved = ResolvedResource {
            resource,
            namespaced: matches!(capabilities.scope, Scope::Namespaced),
        };
        if let Ok(mut cache) = self.discovered.write() {
            cache.insert(gvk, resolved.clone());
        }
        Ok(resolved)
    }

    fn cached(&self, gvk: &GroupVersionKind) -> Option<ResolvedResource> {
        self.discovered.read().ok()?.get(gvk).cloned()
    }
}

/// Splits `group/version` (or the core `version`) into a GVK.
pub fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    match api_version.split_once('/') {
        Some((group, version)) => GroupVersionKind::gvk(group, version, kind),
        None => GroupVersionKind::gvk("", api_version, kind),
    }
}

/// Every kind of the static table.
pub fn known_kinds() -> impl Iterator<Item = ResolvedResource> {
    KNOWN.iter().map(
        |(group, version, kind, plural, namespaced)| ResolvedResource {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, version, kind),
                plural,
            ),
            namespaced: *namespaced,
        },
    )
}

/// The static table entry for a kind, if it is one opcat knows without discovery.
pub fn known(gvk: &GroupVersionKind) -> Option<ResolvedResource> {
    KNOWN
        .iter()
        .find(|(group, version, kind, _, _)| {
            *group == gvk.group && *version == gvk.version && *kind == gvk.kind
        })
        .map(|(_, _, _, plural, namespaced)| ResolvedResource {
            resource: ApiResource::from_gvk_with_plural(gvk, plural),
            namespaced: *namespaced,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kinds_resolve_without_discovery() {
        let role = known(&gvk("rbac.authorization.k8s.io/v1", "ClusterRole")).unwrap();
        assert_eq!(role.resource.plural, "clusterroles");
        assert!(!role.namespaced);
        let service = known(&gvk("v1", "Service")).unwrap();
        assert_eq!(service.resource.group, "");
        assert!(service.namespaced);
        assert!(known(&gvk("monitoring.coreos.com/v1", "ServiceMonitor")).is_none());
    }
}
