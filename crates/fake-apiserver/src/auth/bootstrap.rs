//! The default RBAC objects kube-apiserver's bootstrap policy creates at start
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `namespace_policy.go`),
//! those a tenant, an operator or an aggregated API server relies on:
//!
//! * ClusterRoles `cluster-admin`; `admin`, `edit`, `view` with their `aggregationRule` over
//!   `rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}` (`edit` aggregates into
//!   `admin`, `view` into `edit`) and the `system:aggregate-to-{admin,edit,view}` roles that
//!   fill them; `system:discovery`, `system:basic-user` and `system:public-info-viewer` (what
//!   every authenticated user may do: discovery, `/version`, self reviews);
//!   `system:auth-delegator` (TokenReview and SubjectAccessReview, for aggregated servers).
//! * ClusterRoleBindings `cluster-admin` (`system:masters`), `system:discovery`,
//!   `system:basic-user` and `system:public-info-viewer` (`system:authenticated`).
//! * Role `kube-system/extension-apiserver-authentication-reader`.
//!
//! Every object carries `kubernetes.io/bootstrapping: rbac-defaults` and the
//! `rbac.authorization.kubernetes.io/autoupdate` annotation. The other bootstrap roles
//! (nodes, controllers, kubelet API, ...) are not created.

use serde_json::{Value, json};

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}

fn metadata(name: &str, labels: &[(&str, &str)]) -> Value {
    let mut all = serde_json::Map::new();
    all.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for (k, v) in labels {
        all.insert((*k).to_string(), json!(v));
    }
    json!({
        "name": name,
        "labels": all,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": metadata(name, labels), "rules": rules,
    })
}

fn aggregated(name: &str, labels: &[(&str, &str)], into: &str) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{into}"): "true"}}
    ]});
    role
}

fn binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": metadata(role, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

const TO_ADMIN: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-admin", "true");
const TO_EDIT: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-edit", "true");
const TO_VIEW: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-view", "true");

fn aggregate_to_edit() -> Vec<Value> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], "", &["serviceaccounts"]),
        rule(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        rule(WRITE, "batch", &["jobs", "cronjobs"]),
        rule(
            WRITE,
            "extensions",
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, "policy", &["poddisruptionbudgets"]),
        rule(
            WRITE,
            "networking.k8s.io",
            &["networkpolicies", "ingresses"],
        ),
    ]
}

fn aggregate_to_view() -> Vec<Value> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, "", &["namespaces"]),
        rule(READ, "discovery.k8s.io", &["endpointslices"]),
        rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            "batch",
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            "extensions",
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

/// The cluster-scoped objects, in creation order (aggregated roles before their sources, so
/// the aggregation controller fills them as the sources arrive).
pub(crate) fn cluster_objects() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], "*", &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        aggregated("admin", &[], "admin"),
        aggregated("edit", &[TO_ADMIN], "edit"),
        aggregated("view", &[TO_EDIT], "view"),
        cluster_role(
            "system:aggregate-to-admin",
            &[TO_ADMIN],
            vec![
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["localsubjectaccessreviews"],
                ),
                rule(
                    READ_WRITE,
                    "rbac.authorization.k8s.io",
                    &["roles", "rolebindings"],
                ),
            ],
        ),
        cluster_role("system:aggregate-to-edit", &[TO_EDIT], aggregate_to_edit()),
        cluster_role("system:aggregate-to-view", &[TO_VIEW], aggregate_to_view()),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], "authentication.k8s.io", &["tokenreviews"]),
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]
}

/// The `kube-system` Role that lets aggregated API servers read the front-proxy settings.
pub(crate) fn kube_system_objects() -> Vec<Value> {
    let mut meta = metadata("extension-apiserver-authentication-reader", &[]);
    meta["namespace"] = json!("kube-system");
    vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": meta,
        "rules": [{
            "verbs": READ, "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["extension-apiserver-authentication"],
        }],
    })]
}
