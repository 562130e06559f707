//! RBAC authorization of every request, through real `kube::Client`s presenting bearer
//! tokens: `plugin/pkg/auth/authorizer/rbac/rbac.go` (`RuleAllows`), its resolver
//! `pkg/registry/rbac/validation/rule.go` (`VisitRulesFor`, `appliesToUser`) and the 403 of
//! `endpoints/handlers/responsewriters/errors.go` (`forbiddenMessage`).

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{config_map, status};

/// A server with users `alice` (group `team-a`) and `bob`, namespaces `a` and `b`, and a
/// ConfigMap `settings` in each.
pub fn rbac_server() -> FakeApiServer {
    let server = FakeApiServer::builder()
        .user_token("alice-token", "alice", &["team-a"])
        .user_token("bob-token", "bob", &[])
        .user_token("root-token", "root", &["system:masters"])
        .build();
    for ns in ["a", "b"] {
        seed(
            &server,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
        let mut cm = config_map("settings", &[]);
        cm.metadata.namespace = Some(ns.into());
        server.seed(&cm).unwrap();
    }
    server
}

/// Creates `obj` (by its `kind`) as the admin.
pub fn seed(server: &FakeApiServer, obj: Value) {
    match obj["kind"].as_str().unwrap() {
        "Namespace" => drop(server.seed(&serde_json::from_value::<Namespace>(obj).unwrap())),
        "Role" => drop(server.seed(&serde_json::from_value::<Role>(obj).unwrap())),
        "RoleBinding" => drop(server.seed(&serde_json::from_value::<RoleBinding>(obj).unwrap())),
        "ClusterRole" => drop(server.seed(&serde_json::from_value::<ClusterRole>(obj).unwrap())),
        "ClusterRoleBinding" => {
            drop(server.seed(&serde_json::from_value::<ClusterRoleBinding>(obj).unwrap()));
        }
        other => panic!("seed: unexpected kind {other}"),
    }
}

/// A Role in `ns`, or a ClusterRole when `ns` is empty.
pub fn role(ns: &str, name: &str, rules: Value) -> Value {
    let kind = if ns.is_empty() { "ClusterRole" } else { "Role" };
    let mut obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                         "metadata": {"name": name}, "rules": rules});
    if !ns.is_empty() {
        obj["metadata"]["namespace"] = json!(ns);
    }
    obj
}

/// A RoleBinding in `ns`, or a ClusterRoleBinding when `ns` is empty, of `(kind, name)`.
pub fn binding(ns: &str, name: &str, role_ref: (&str, &str), subjects: Value) -> Value {
    let kind = if ns.is_empty() {
        "ClusterRoleBinding"
    } else {
        "RoleBinding"
    };
    let mut obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_ref.0, "name": role_ref.1},
        "subjects": subjects});
    if !ns.is_empty() {
        obj["metadata"]["namespace"] = json!(ns);
    }
    obj
}

/// A Role `name` in `ns` with `rules` (a ClusterRole when `ns` is empty) and a binding of the
/// same name giving it to `subjects` there.
pub fn grant(server: &FakeApiServer, ns: &str, name: &str, rules: Value, subjects: Value) {
    let kind = if ns.is_empty() { "ClusterRole" } else { "Role" };
    seed(server, role(ns, name, rules));
    seed(server, binding(ns, name, (kind, name), subjects));
}

pub fn user(name: &str) -> Value {
    json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}])
}

fn cms(client: &Client, ns: &str) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), ns)
}

/// The HTTP code of a call (200 for success).
async fn code<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> u16 {
    match call.await {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

/// A Role bound by a RoleBinding grants its rules in that namespace only; a user without any
/// binding may do nothing (RBAC has no opinion and the request is forbidden).
#[tokio::test]
async fn role_bindings_grant_in_their_namespace_only() {
    let server = rbac_server();
    grant(
        &server,
        "a",
        "cm-reader",
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]),
        user("alice"),
    );
    let alice = server.client_with_token("alice-token");
    assert_eq!(code(cms(&alice, "a").get("settings")).await, 200);
    assert_eq!(
        code(cms(&alice, "a").list(&ListParams::default())).await,
        200
    );
    assert_eq!(code(cms(&alice, "b").get("settings")).await, 403);
    assert_eq!(
        code(cms(&alice, "a").delete("settings", &Default::default())).await,
        403
    );
    let all: Api<ConfigMap> = Api::all(alice.clone());
    assert_eq!(
        code(all.list(&ListParams::default())).await,
        403,
        "all namespaces is cluster scope"
    );
    let bob = server.client_with_token("bob-token");
    assert_eq!(code(cms(&bob, "a").get("settings")).await, 403);
}

/// A ClusterRole bound by a RoleBinding grants in the binding's namespace; bound by a
/// ClusterRoleBinding it grants in every namespace and on cluster-scoped resources.
#[tokio::test]
async fn cluster_roles_grant_where_they_are_bound() {
    let server = rbac_server();
    seed(
        &server,
        role(
            "",
            "cm-writer",
            json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]),
        ),
    );
    seed(
        &server,
        binding(
            "a",
            "alice-writes",
            ("ClusterRole", "cm-writer"),
            user("alice"),
        ),
    );
    grant(
        &server,
        "",
        "ns-reader",
        json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["namespaces", "secrets"]}]),
        user("bob"),
    );
    let alice = server.client_with_token("alice-token");
    let created = cms(&alice, "a")
        .create(&PostParams::default(), &config_map("new", &[]))
        .await;
    assert!(created.is_ok(), "{created:?}");
    assert_eq!(
        code(cms(&alice, "b").create(&PostParams::default(), &config_map("new", &[]))).await,
        403
    );
    let bob = server.client_with_token("bob-token");
    let namespaces: Api<Namespace> = Api::all(bob.clone());
    assert_eq!(code(namespaces.list(&ListParams::default())).await, 200);
    let secrets: Api<Secret> = Api::all(bob.clone());
    assert_eq!(
        code(secrets.list(&ListParams::default())).await,
        200,
        "every namespace"
    );
    assert_eq!(
        code(namespaces.get("a")).await,
        403,
        "list does not grant get"
    );
}

/// `resourceNames` restricts a rule to named objects: get of another name, and a list without
/// a `metadata.name` field selector, are forbidden; a list pinned to the name is allowed
/// (`RequestInfoFactory` takes the name from the field selector).
#[tokio::test]
async fn resource_names_restrict_rules_to_named_objects() {
    let server = rbac_server();
    grant(
        &server,
        "a",
        "one",
        json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""],
        "resources": ["configmaps"], "resourceNames": ["settings"]}]),
        user("alice"),
    );
    let mut other = config_map("other", &[]);
    other.metadata.namespace = Some("a".into());
    server.seed(&other).unwrap();
    let api = cms(&server.client_with_token("alice-token"), "a");
    assert_eq!(code(api.get("settings")).await, 200);
    assert_eq!(code(api.get("other")).await, 403);
    assert_eq!(code(api.list(&ListParams::default())).await, 403);
    let pinned = ListParams::default().fields("metadata.name=settings");
    assert_eq!(code(api.list(&pinned)).await, 200);
}

/// A rule names subresources as `resource/subresource` (or `*/subresource`): it covers the
/// subresource and not the main resource, and a rule on the main resource does not cover
/// its subresources.
#[tokio::test]
async fn subresources_need_their_own_rules() {
    let server = rbac_server();
    grant(
        &server,
        "a",
        "status-writer",
        json!([
            {"verbs": ["get", "patch"], "apiGroups": ["apps"], "resources": ["deployments/status"]},
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]},
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]},
        ]),
        user("alice"),
    );
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    server.seed(&deployment).unwrap();
    let api: Api<Deployment> = Api::namespaced(server.client_with_token("alice-token"), "a");
    let patch = Patch::Merge(json!({"status": {"observedGeneration": 5}}));
    assert_eq!(
        code(api.patch_status("web", &PatchParams::default(), &patch)).await,
        200
    );
    let patch = Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}));
    assert_eq!(
        code(api.patch("web", &PatchParams::default(), &patch)).await,
        403
    );
    assert_eq!(code(api.get("web")).await, 200);
}

/// `*` in verbs, API groups and resources matches everything; a ClusterRoleBinding to a
/// group applies to its members.
#[tokio::test]
async fn wildcards_and_groups() {
    let server = rbac_server();
    grant(
        &server,
        "",
        "everything",
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"}]),
    );
    let alice = server.client_with_token("alice-token");
    assert_eq!(
        code(cms(&alice, "b").delete("settings", &Default::default())).await,
        200
    );
    let deployments: Api<Deployment> = Api::all(alice);
    assert_eq!(code(deployments.list(&ListParams::default())).await, 200);
    let bob = server.client_with_token("bob-token");
    assert_eq!(
        code(cms(&bob, "a").get("settings")).await,
        403,
        "bob is not in team-a"
    );
}

/// A ServiceAccount subject without a namespace in a RoleBinding means the binding's
/// namespace; ServiceAccount tokens are also in `system:serviceaccounts[:<ns>]`.
#[tokio::test]
async fn service_accounts_are_subjects_by_namespace_and_groups() {
    let server = rbac_server();
    grant(
        &server,
        "a",
        "cm-reader",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]),
        json!([{"kind": "ServiceAccount", "name": "default"}]),
    );
    seed(
        &server,
        binding(
            "b",
            "all-sas-of-a",
            ("ClusterRole", "view"),
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts:a"}]),
        ),
    );
    let token = server.service_account_token("a", "default");
    let sa = server.client_with_token(&token);
    assert_eq!(code(cms(&sa, "a").get("settings")).await, 200);
    assert_eq!(
        code(cms(&sa, "b").get("settings")).await,
        200,
        "through its namespace group"
    );
    let other = server.client_with_token(&server.service_account_token("b", "default"));
    assert_eq!(
        code(cms(&other, "a").get("settings")).await,
        403,
        "the binding's namespace, not b"
    );
}

/// The 403 `Status` is worded as kube-apiserver words it, with `details` naming the group,
/// resource and object; a binding to a missing role adds RBAC's resolution error as the
/// reason; `system:masters` is never asked about.
#[tokio::test]
async fn denials_are_worded_like_kube_apiserver() {
    let server = rbac_server();
    let alice = server.client_with_token("alice-token");
    let err = status(cms(&alice, "a").get("settings").await);
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        r#"configmaps "settings" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "a""#
    );
    let details = err.details.as_ref().unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("settings", "configmaps")
    );
    let deployments: Api<Deployment> = Api::all(alice.clone());
    let err = status(deployments.list(&ListParams::default()).await);
    assert_eq!(
        err.message,
        r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" at the cluster scope"#
    );
    seed(
        &server,
        binding("a", "dangling", ("Role", "missing"), user("alice")),
    );
    let err = status(cms(&alice, "a").get("settings").await);
    assert!(
        err.message.ends_with(
            r#"in the namespace "a": RBAC: role.rbac.authorization.k8s.io "missing" not found"#
        ),
        "{}",
        err.message
    );
    let root = server.client_with_token("root-token");
    assert_eq!(
        code(cms(&root, "b").delete("settings", &Default::default())).await,
        200
    );
}

/// Non-resource URLs are authorized by path: every authenticated user may read discovery and
/// `/version` (`system:discovery`, `system:public-info-viewer`), other paths need a
/// `nonResourceURLs` rule (`User "bob" cannot get path "/metrics"`).
#[tokio::test]
async fn non_resource_urls_are_authorized_by_path() {
    let server = rbac_server();
    let bob = server.client_with_token("bob-token");
    assert!(bob.apiserver_version().await.is_ok());
    let discovery = kube::discovery::Discovery::new(bob.clone()).run().await;
    assert!(discovery.is_ok(), "{:?}", discovery.err());
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let err = bob.request_text(request).await.unwrap_err();
    let kube::Error::Api(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        r#"forbidden: User "bob" cannot get path "/metrics""#
    );
    grant(
        &server,
        "",
        "metrics",
        json!([{"verbs": ["get"], "nonResourceURLs": ["/met*"]}]),
        user("bob"),
    );
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let err = bob.request_text(request).await.unwrap_err();
    let kube::Error::Api(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.code, 404, "allowed, and the fake serves nothing there");
}
