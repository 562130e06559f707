//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation`
//! controller (`pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`)
//! keeps the bootstrap `admin`/`edit`/`view` roles (`bootstrappolicy/policy.go`) in step with
//! the ClusterRoles labelled `rbac.authorization.k8s.io/aggregate-to-*` — the way OLM's
//! provided-API roles reach tenants bound to those roles.

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::rbac::{binding, rbac_server, seed, user};

fn widget_role(label: &str) -> ClusterRole {
    serde_json::from_value(json!({
        "metadata": {"name": "widgets-v1-view",
                     "labels": {format!("rbac.authorization.k8s.io/aggregate-to-{label}"): "true"}},
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
    }))
    .unwrap()
}

fn grants_widgets(server: &FakeApiServer, role: &str) -> bool {
    let role: ClusterRole = server.get("", role).unwrap();
    role.rules
        .unwrap_or_default()
        .iter()
        .any(|r| r.resources.as_deref().unwrap_or_default() == ["widgets"])
}

/// The bootstrap roles start aggregated: `view` reads ConfigMaps, `edit` also writes them
/// (and holds everything `view` has), `admin` also manages Roles; the controller owns their
/// `rules` in `managedFields`.
#[tokio::test]
async fn bootstrap_roles_start_aggregated() {
    let server = FakeApiServer::new();
    let view: ClusterRole = server.get("", "view").unwrap();
    let edit: ClusterRole = server.get("", "edit").unwrap();
    let admin: ClusterRole = server.get("", "admin").unwrap();
    let has = |role: &ClusterRole, verb: &str, resource: &str| {
        role.rules.iter().flatten().any(|r| {
            r.verbs.iter().any(|v| v == verb) && r.resources.iter().flatten().any(|x| x == resource)
        })
    };
    assert!(has(&view, "list", "configmaps") && !has(&view, "create", "configmaps"));
    assert!(has(&edit, "create", "configmaps") && has(&edit, "list", "configmaps"));
    assert!(has(&admin, "create", "roles") && has(&admin, "list", "configmaps"));
    let managers: Vec<_> = admin
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("clusterrole-aggregation-controller".into(), "Apply".into())),
        "{managers:?}"
    );
}

/// A ClusterRole labelled `aggregate-to-view` flows into `view`, `edit` and `admin` as it is
/// created; relabelled `aggregate-to-edit` it leaves `view` only; deleted it leaves all three.
/// A user bound to `view` in a namespace gains and loses access with it.
#[tokio::test]
async fn labelled_cluster_roles_flow_into_admin_edit_and_view() {
    let server = rbac_server();
    seed(
        &server,
        binding("a", "alice-views", ("ClusterRole", "view"), user("alice")),
    );
    let roles: Api<ClusterRole> = Api::all(server.client());
    roles
        .create(&PostParams::default(), &widget_role("view"))
        .await
        .unwrap();
    for role in ["view", "edit", "admin"] {
        assert!(grants_widgets(&server, role), "{role} after create");
    }
    let alice = server.client_with_token("alice-token");
    let ask = |verb: &str| -> k8s_openapi::api::authorization::v1::SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes":
            {"verb": verb, "group": "example.com", "resource": "widgets", "namespace": "a"}}}))
        .unwrap()
    };
    let reviews: Api<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview> =
        Api::all(alice);
    let allowed =
        |r: k8s_openapi::api::authorization::v1::SelfSubjectAccessReview| r.status.unwrap().allowed;
    assert!(allowed(
        reviews
            .create(&PostParams::default(), &ask("list"))
            .await
            .unwrap()
    ));

    let relabel = Patch::Merge(json!({"metadata": {"labels": {
        "rbac.authorization.k8s.io/aggregate-to-view": null,
        "rbac.authorization.k8s.io/aggregate-to-edit": "true"}}}));
    roles
        .patch("widgets-v1-view", &PatchParams::default(), &relabel)
        .await
        .unwrap();
    assert!(!grants_widgets(&server, "view"));
    assert!(grants_widgets(&server, "edit") && grants_widgets(&server, "admin"));
    assert!(!allowed(
        reviews
            .create(&PostParams::default(), &ask("list"))
            .await
            .unwrap()
    ));

    roles
        .delete("widgets-v1-view", &DeleteParams::default())
        .await
        .unwrap();
    for role in ["view", "edit", "admin"] {
        assert!(!grants_widgets(&server, role), "{role} after delete");
    }
}

/// A change of the rules of a selected role is followed; rules held by several sources appear
/// once; an aggregating role's own hand-written rules are replaced.
#[tokio::test]
async fn aggregated_rules_follow_their_sources() {
    let server = FakeApiServer::new();
    let roles: Api<ClusterRole> = Api::all(server.client());
    let aggregator: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "widgets-all"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [
            {"key": "example.com/widgets", "operator": "Exists"}]}]},
        "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    }))
    .unwrap();
    roles
        .create(&PostParams::default(), &aggregator)
        .await
        .unwrap();
    let stored: ClusterRole = server.get("", "widgets-all").unwrap();
    assert_eq!(stored.rules, Some(Vec::new()), "nothing selected yet");
    for name in ["one", "two"] {
        let source: ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"example.com/widgets": "yes"}},
            "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
        }))
        .unwrap();
        roles.create(&PostParams::default(), &source).await.unwrap();
    }
    let stored: ClusterRole = server.get("", "widgets-all").unwrap();
    assert_eq!(stored.rules.unwrap().len(), 1, "the shared rule once");
    let patch = Patch::Merge(
        json!({"rules": [{"verbs": ["delete"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
    );
    roles
        .patch("two", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let verbs: Vec<String> = server
        .get::<ClusterRole>("", "widgets-all")
        .unwrap()
        .rules
        .unwrap()
        .into_iter()
        .flat_map(|r| r.verbs)
        .collect();
    assert_eq!(verbs, ["get", "delete"], "selector order, then name order");
}

/// The controller is switchable: without it the aggregated roles keep the rules they were
/// created with (none for the bootstrap ones).
#[tokio::test]
async fn aggregation_can_be_switched_off() {
    let server = FakeApiServer::builder()
        .clusterrole_aggregation(false)
        .build();
    let admin: ClusterRole = server.get("", "admin").unwrap();
    assert!(admin.rules.unwrap_or_default().is_empty());
}

/// Every way a role enters or leaves a selection is followed: a source relabelled out of a
/// selector and back in, an aggregating role whose selectors change, a selector that requires
/// no label (`NotIn`: it also selects roles without the label), and a deleted source.
#[tokio::test]
async fn selections_follow_relabelling_selector_changes_and_deletion() {
    let server = FakeApiServer::new();
    let roles: Api<ClusterRole> = Api::all(server.client());
    let create = |body: serde_json::Value| {
        let roles = roles.clone();
        async move {
            let role: ClusterRole = serde_json::from_value(body).unwrap();
            roles.create(&PostParams::default(), &role).await.unwrap();
        }
    };
    let patch = |name: &'static str, body: serde_json::Value| {
        let roles = roles.clone();
        async move {
            let p = Patch::Merge(body);
            roles
                .patch(name, &PatchParams::default(), &p)
                .await
                .unwrap();
        }
    };
    let labels = |labels: serde_json::Value| json!({"metadata": {"labels": labels}});
    let selecting = |selector: serde_json::Value| json!({"clusterRoleSelectors": [selector]});
    create(
        json!({"metadata": {"name": "picky", "labels": {"example.com/tier": "low"}},
        "aggregationRule": selecting(json!({"matchLabels": {"example.com/team": "a"}}))}),
    )
    .await;
    create(json!({"metadata": {"name": "unlow"}, "aggregationRule": selecting(json!(
        {"matchExpressions": [{"key": "example.com/tier", "operator": "NotIn", "values": ["low"]}]}))}))
    .await;
    let mut source = widget_role("nobody");
    source.metadata.name = Some("source".into());
    source.metadata.labels = Some(
        [("example.com/team", "a"), ("example.com/tier", "low")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
    );
    roles.create(&PostParams::default(), &source).await.unwrap();
    let grants = |role| grants_widgets(&server, role);
    assert!(grants("picky") && !grants("unlow"), "created");

    patch("source", labels(json!({"example.com/team": "b"}))).await;
    assert!(!grants("picky"), "relabelled out");
    patch("source", labels(json!({"example.com/team": "a"}))).await;
    assert!(grants("picky"), "relabelled back in");

    let other = json!({"matchExpressions": [{"key": "example.com/other", "operator": "Exists"}]});
    patch("picky", json!({"aggregationRule": selecting(other)})).await;
    assert!(!grants("picky"), "selector changed away");
    patch("source", labels(json!({"example.com/other": "x"}))).await;
    assert!(grants("picky"), "selected by the new selector");

    let moved = json!({"example.com/other": null, "example.com/tier": "high"});
    patch("source", labels(moved)).await;
    assert!(
        !grants("picky") && grants("unlow"),
        "into the NotIn selector"
    );

    roles
        .delete("source", &DeleteParams::default())
        .await
        .unwrap();
    assert!(!grants("picky") && !grants("unlow"), "source deleted");
}
