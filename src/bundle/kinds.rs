//! The kinds a registry+v1 bundle may contain, and whether each is namespaced.
//!
//! The list is operator-registry's (`pkg/lib/bundle/supported_resources.go`), which `opm` and
//! OLM use to accept or refuse a bundle. One intentional difference: operator-registry marks
//! `VerticalPodAutoscaler` as cluster-scoped, but `autoscaling.k8s.io/v1` serves it namespaced;
//! opcat places it in the install namespace like every other namespaced object.

/// `kind` of the ClusterServiceVersion manifest.
pub const CLUSTER_SERVICE_VERSION: &str = "ClusterServiceVersion";
/// `kind` of a CustomResourceDefinition manifest.
pub const CUSTOM_RESOURCE_DEFINITION: &str = "CustomResourceDefinition";
/// `kind` of a ServiceAccount manifest.
pub const SERVICE_ACCOUNT: &str = "ServiceAccount";
/// `kind` of a Role.
pub const ROLE: &str = "Role";
/// `kind` of a RoleBinding.
pub const ROLE_BINDING: &str = "RoleBinding";
/// `kind` of a ClusterRole.
pub const CLUSTER_ROLE: &str = "ClusterRole";
/// `kind` of a ClusterRoleBinding.
pub const CLUSTER_ROLE_BINDING: &str = "ClusterRoleBinding";
/// `kind` of a Deployment.
pub const DEPLOYMENT: &str = "Deployment";

/// The only CRD API version opcat installs. `v1beta1` is no longer served (Kubernetes 1.22+).
pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
/// The CRD API version opcat refuses with a specific message.
pub const CRD_API_VERSION_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
/// API version of the RBAC objects opcat renders.
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
/// API group of the RBAC objects opcat renders.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Every kind a registry+v1 bundle may contain, with whether it is namespaced, in
/// operator-registry's order.
pub const ALLOWED_KINDS: &[(&str, bool)] = &[
    (CLUSTER_SERVICE_VERSION, true),
    (CUSTOM_RESOURCE_DEFINITION, false),
    (CLUSTER_ROLE, false),
    (CLUSTER_ROLE_BINDING, false),
    ("Service", true),
    (SERVICE_ACCOUNT, true),
    (ROLE, true),
    (ROLE_BINDING, true),
    ("PrometheusRule", true),
    ("ServiceMonitor", true),
    ("Secret", true),
    ("ConfigMap", true),
    ("PodDisruptionBudget", true),
    ("PriorityClass", false),
    ("VerticalPodAutoscaler", true),
    ("ConsoleYAMLSample", false),
    ("ConsoleQuickStart", false),
    ("ConsoleCLIDownload", false),
    ("ConsoleLink", false),
    ("ConsolePlugin", false),
    ("NetworkPolicy", true),
    ("PodMonitor", true),
];

/// The API version OLM v0 uses for the kinds it creates with typed clients, where a manifest's
/// own `apiVersion` is never looked at. Real bundles omit `apiVersion` on such objects and
/// install fine with OLM; opcat fills it in (with a warning) for these kinds only.
pub fn typed_client_api_version(kind: &str) -> Option<&'static str> {
    match kind {
        CLUSTER_ROLE | CLUSTER_ROLE_BINDING | ROLE | ROLE_BINDING => Some(RBAC_API_VERSION),
        SERVICE_ACCOUNT | "Service" | "Secret" | "ConfigMap" => Some("v1"),
        _ => None,
    }
}

/// Whether `kind` may appear in a registry+v1 bundle.
pub fn is_allowed(kind: &str) -> bool {
    ALLOWED_KINDS.iter().any(|(allowed, _)| *allowed == kind)
}

/// Whether objects of the allowed `kind` live in a namespace (`None` for kinds that are not
/// allowed).
pub fn is_namespaced(kind: &str) -> Option<bool> {
    ALLOWED_KINDS
        .iter()
        .find(|(allowed, _)| *allowed == kind)
        .map(|(_, namespaced)| *namespaced)
}

/// The allowed kinds, comma-separated, for error messages.
pub fn allowed_list() -> String {
    ALLOWED_KINDS
        .iter()
        .map(|(kind, _)| *kind)
        .collect::<Vec<_>>()
        .join(", ")
}
