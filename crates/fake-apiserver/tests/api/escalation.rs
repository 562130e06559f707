//! RBAC's escalation prevention (`pkg/registry/rbac/*/policybased/storage.go`,
//! `ConfirmNoEscalation`, `policy_comparator.go` `Covers`): a namespace admin may hand out
//! what it holds, not more, unless it may `escalate` or `bind`.

use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::status;
use crate::rbac::{binding, grant, rbac_server, role, seed, user};

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// A user bound to `admin` in `a` may create Roles and RoleBindings granting what `admin`
/// holds there; a Role granting more (nodes) or a binding to `cluster-admin` is 403 with the
/// missing rules listed.
#[tokio::test]
async fn namespace_admins_cannot_grant_more_than_they_hold() {
    let server = rbac_server();
    seed(
        &server,
        binding("a", "alice-admin", ("ClusterRole", "admin"), user("alice")),
    );
    let alice = server.client_with_token("alice-token");
    let roles: Api<Role> = Api::namespaced(alice.clone(), "a");
    let readers = role(
        "a",
        "cm-readers",
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]),
    );
    roles
        .create(&PostParams::default(), &typed(readers))
        .await
        .unwrap();
    let nodes = role(
        "a",
        "node-readers",
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes"]}]),
    );
    let err = status(roles.create(&PostParams::default(), &typed(nodes)).await);
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "roles.rbac.authorization.k8s.io \"node-readers\" is forbidden: user \"alice\" (groups=[\"team-a\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"list\"]}"
    );
    let bindings: Api<RoleBinding> = Api::namespaced(alice, "a");
    let view = binding("a", "bob-views", ("ClusterRole", "view"), user("bob"));
    bindings
        .create(&PostParams::default(), &typed(view))
        .await
        .unwrap();
    let root = binding(
        "a",
        "bob-root",
        ("ClusterRole", "cluster-admin"),
        user("bob"),
    );
    let err = status(bindings.create(&PostParams::default(), &typed(root)).await);
    assert_eq!(err.code, 403);
    assert!(
        err.message
            .contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        err.message
    );
}

/// `escalate` on roles and `bind` on a named ClusterRole lift the checks
/// (`RoleEscalationAuthorized`, `BindingAuthorized`).
#[tokio::test]
async fn escalate_and_bind_verbs_allow_it() {
    let server = rbac_server();
    seed(
        &server,
        role(
            "",
            "rbac-manager",
            json!([
                {"verbs": ["create", "escalate"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]},
                {"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["cluster-admin"]},
            ]),
        ),
    );
    seed(
        &server,
        binding(
            "a",
            "alice-rbac",
            ("ClusterRole", "rbac-manager"),
            user("alice"),
        ),
    );
    let alice = server.client_with_token("alice-token");
    let roles: Api<Role> = Api::namespaced(alice.clone(), "a");
    let nodes = role(
        "a",
        "node-readers",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]),
    );
    roles
        .create(&PostParams::default(), &typed(nodes))
        .await
        .unwrap();
    let bindings: Api<RoleBinding> = Api::namespaced(alice, "a");
    let root = binding(
        "a",
        "bob-root",
        ("ClusterRole", "cluster-admin"),
        user("bob"),
    );
    bindings
        .create(&PostParams::default(), &typed(root))
        .await
        .unwrap();
    let edit = binding("a", "bob-edit", ("ClusterRole", "edit"), user("bob"));
    assert_eq!(
        status(bindings.create(&PostParams::default(), &typed(edit)).await).code,
        403,
        "bind names cluster-admin only"
    );
}

/// An `aggregationRule` can gather anything: setting one needs full authority.
#[tokio::test]
async fn aggregation_rules_need_cluster_admin() {
    let server = rbac_server();
    grant(
        &server,
        "",
        "role-maker",
        json!([
        {"verbs": ["create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]}]),
        user("bob"),
    );
    let roles: Api<ClusterRole> = Api::all(server.client_with_token("bob-token"));
    let aggregating: ClusterRole = typed(json!({"metadata": {"name": "gatherer"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}));
    let err = status(roles.create(&PostParams::default(), &aggregating).await);
    assert_eq!(
        err.message,
        r#"clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: must have cluster-admin privileges to use the aggregationRule"#
    );
}
