//! OLM's provided-API roles (issue 27, item 1), through the in-memory API server with its
//! RBAC authorizer, bootstrap roles (`admin`, `edit`, `view`) and clusterrole-aggregation
//! controller, and opcat running as its own ServiceAccount bound by `deploy/rbac.yaml`:
//!
//! - after an install into `team-a`, a user bound to `admin` there may create the operator's
//!   custom resource (a real request with the user's token), one bound to `view` may list but
//!   not create, one without a binding may do neither, and one bound to the OperatorGroup's
//!   `olm.og.<group>.admin-<hash>` role may create too; the roles are named and labelled as
//!   OLM names and labels them, and the group carries `olm.providedAPIs`;
//! - an uninstall leaves the API's roles to the CRD (as OLM: `admin` keeps the API) and takes
//!   the API out of the group's annotation and roles; deleting the CRD takes its roles along;
//! - a deleted OperatorGroup's three roles go (OLM's `operatorGroupDeleted`), also when opcat
//!   was stopped at the time, and nothing else does;
//! - without `escalate` in `deploy/rbac.yaml`, opcat could not write them.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use csv_support::{
    TIMEOUT, catalog_with_secrets, delete_csv, install, logs, namespaces, wait_gone,
};
use fake_apiserver::Verb;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding, RoleRef, Subject};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch};
use kube::api::{ListParams, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use opcat::api::{ClusterServiceVersion, ClusterServiceVersionPhase as Phase, OperatorGroup};
use opcat::controller::clock::SystemClock;
use opcat::controller::context::Settings;
use serde_json::json;
use support::Env;
use tokio::sync::oneshot;

const NS: &str = "team-a";
const GROUP: &str = "team-a-group";
const CSV: &str = "widget-operator.v1.0.0";
const CRD: &str = "widgets.example.opcat.dev";
/// `Widget.v1alpha1.example.opcat.dev`, FNV-1a as OLM hashes it.
const WIDGET_HASH: &str = "ef5f4faf7752f381";
/// `olm.og.team-a-group.admin-` + base62(SHA-224(`team-a/team-a-group/admin`)).
const GROUP_ADMIN: &str = "olm.og.team-a-group.admin-89bLlAGwGkE3veNEfmCldXS922S0AFKmrNJnJb";

fn widgets(client: Client, namespace: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.opcat.dev", "v1alpha1", "Widget");
    Api::namespaced_with(client, namespace, &ApiResource::from_gvk(&gvk))
}

fn widget(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.opcat.dev/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 1}
    }))
    .unwrap()
}

/// The HTTP status of a failed request, 200 for any success.
fn code<T>(result: Result<T, kube::Error>) -> u16 {
    match result {
        Ok(_) => 200,
        Err(kube::Error::Api(status)) => status.code,
        Err(other) => panic!("unexpected error: {other}"),
    }
}

/// What `user` gets back for a create and a list of Widgets in `namespace`.
async fn widget_access(env: &Env, user: &str, namespace: &str, name: &str) -> (u16, u16) {
    let api = widgets(
        env.api.client_with_token(&format!("{user}-token")),
        namespace,
    );
    let create = code(api.create(&PostParams::default(), &widget(name)).await);
    let list = code(api.list(&ListParams::default()).await);
    (create, list)
}

/// Binds `user` to ClusterRole `role` in `namespace`.
async fn bind(env: &Env, namespace: &str, user: &str, role: &str) {
    let binding = RoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{user}-{}", role.len())),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            ..Subject::default()
        }]),
    };
    env.create(&binding).await;
}

/// Creates every object of `deploy/rbac.yaml` (`escalate` dropped from the ClusterRole when
/// asked) and returns a token of opcat's ServiceAccount.
async fn opcat_service_account(env: &Env, escalate: bool) -> String {
    namespaces(env, &["opcat-system"]).await;
    let text = std::fs::read_to_string(support::repo_root().join("deploy/rbac.yaml")).unwrap();
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
    for mut document in documents {
        if !escalate {
            for rule in document["rules"].as_array_mut().into_iter().flatten() {
                if let Some(verbs) = rule["verbs"].as_array_mut() {
                    verbs.retain(|verb| verb != "escalate");
                }
            }
        }
        let (group, version) = match document["apiVersion"].as_str().unwrap().split_once('/') {
            Some((group, version)) => (group.to_owned(), version.to_owned()),
            None => (
                String::new(),
                document["apiVersion"].as_str().unwrap().to_owned(),
            ),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, document["kind"].as_str().unwrap());
        let resource = ApiResource::from_gvk(&gvk);
        let object: DynamicObject = serde_json::from_value(document).unwrap();
        let api: Api<DynamicObject> = match object.namespace() {
            Some(namespace) => Api::namespaced_with(env.client.clone(), &namespace, &resource),
            None => Api::all_with(env.client.clone(), &resource),
        };
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    env.api.service_account_token("opcat-system", "opcat")
}

/// Starts the manager with `client` (not through `Env`, which runs it as a superuser).
fn start_manager(env: &Env, client: Client) -> oneshot::Sender<()> {
    let (stop, stopped) = oneshot::channel::<()>();
    let running = opcat::controller::manager::start(
        client,
        env.opcat_registry.clone(),
        Arc::new(SystemClock),
        Env::settings(),
        async move {
            let _ = stopped.await;
        },
    );
    tokio::spawn(running.future);
    stop
}

fn labels(role: &ClusterRole) -> Vec<String> {
    role.labels()
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect()
}

fn aggregated(role: &ClusterRole) -> Vec<String> {
    role.aggregation_rule
        .iter()
        .flat_map(|rule| rule.cluster_role_selectors.iter().flatten())
        .flat_map(|selector| selector.match_labels.iter().flatten())
        .map(|(key, value)| format!("{key}={value}"))
        .collect()
}

/// Whether a rule of `role` grants `verb` on widgets.
fn grants(role: &ClusterRole, verb: &str) -> bool {
    role.rules.iter().flatten().any(|rule| {
        rule.resources.iter().flatten().any(|r| r == "widgets")
            && rule.verbs.iter().any(|v| v == verb || v == "*")
    })
}

fn provided_apis(env: &Env) -> Option<String> {
    let group: OperatorGroup = env.api.get(NS, GROUP).unwrap();
    group.annotations().get("olm.providedAPIs").cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_get_the_operators_api_through_admin_edit_view_as_with_olm() {
    logs();
    let api = fake_apiserver::FakeApiServer::builder()
        .clusterrole_aggregation(true)
        .user_token("alice-token", "alice", &[])
        .user_token("bob-token", "bob", &[])
        .user_token("carol-token", "carol", &[])
        .user_token("dave-token", "dave", &[])
        .build();
    let env = Env::with_api(api).await;
    namespaces(&env, &[NS, "team-b"]).await;
    catalog_with_secrets(&env, &["registry-creds"]).await;
    csv_support::operator_group(&env, NS, GROUP, &[NS]).await;
    bind(&env, NS, "alice", "admin").await;
    bind(&env, NS, "bob", "view").await;
    bind(&env, NS, "dave", GROUP_ADMIN).await;
    let token = opcat_service_account(&env, true).await;
    install(&env, NS, "widget-operator", "1.0.0").await;
    let _stop = start_manager(&env, env.api.client_with_token(&token));
    csv_support::wait_phase(&env, NS, CSV, Phase::Succeeded).await;
    env.wait_until("the group aggregates the Widget API", TIMEOUT, || {
        env.api
            .get::<ClusterRole>("", GROUP_ADMIN)
            .is_some_and(|role| grants(&role, "create"))
    })
    .await;

    // The roles of the API, as OLM names and labels them, owned by the CRD.
    let crd: CustomResourceDefinition = env.api.get("", CRD).unwrap();
    for (suffix, level, verbs) in [
        ("admin", "admin", vec!["*"]),
        ("edit", "edit", vec!["create", "update", "patch", "delete"]),
        ("view", "view", vec!["get", "list", "watch"]),
        ("crdview", "view", vec!["get"]),
    ] {
        let name = format!("{CRD}-v1alpha1-{suffix}");
        let role: ClusterRole = env.api.get("", &name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(
            labels(&role),
            [
                "app.kubernetes.io/managed-by=opcat".to_owned(),
                "olm.managed=true".to_owned(),
                format!("olm.opgroup.permissions/aggregate-to-{WIDGET_HASH}-{level}=true"),
                format!("rbac.authorization.k8s.io/aggregate-to-{level}=true"),
            ],
            "{name}"
        );
        assert_eq!(role.rules.as_ref().unwrap()[0].verbs, verbs, "{name}");
        let owner = &role.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), &owner.uid),
            (
                "CustomResourceDefinition",
                CRD,
                crd.metadata.uid.as_ref().unwrap()
            )
        );
        assert_eq!(owner.block_owner_deletion, Some(false));
    }
    // The group's roles and annotation.
    for level in ["admin", "edit", "view"] {
        let role = env
            .api
            .list::<ClusterRole>(None)
            .into_iter()
            .find(|role| {
                role.name_any()
                    .starts_with(&format!("olm.og.{GROUP}.{level}-"))
            })
            .unwrap_or_else(|| panic!("no {level} role of the group"));
        assert_eq!(
            aggregated(&role),
            [format!(
                "olm.opgroup.permissions/aggregate-to-{WIDGET_HASH}-{level}=true"
            )]
        );
        assert_eq!(role.labels()["olm.owner"], GROUP);
        assert_eq!(role.labels()["olm.owner.kind"], "OperatorGroup");
        assert_eq!(role.labels()["olm.owner.namespace"], NS);
    }
    assert_eq!(
        provided_apis(&env).as_deref(),
        Some("Widget.v1alpha1.example.opcat.dev")
    );

    // Real requests, each with the user's own token.
    assert_eq!(
        widget_access(&env, "alice", NS, "a").await,
        (200, 200),
        "admin"
    );
    assert_eq!(
        widget_access(&env, "bob", NS, "b").await,
        (403, 200),
        "view"
    );
    assert_eq!(
        widget_access(&env, "carol", NS, "c").await,
        (403, 403),
        "nobody"
    );
    assert_eq!(
        widget_access(&env, "dave", NS, "d").await,
        (200, 200),
        "group admin"
    );
    assert_eq!(
        widget_access(&env, "alice", "team-b", "a").await,
        (403, 403),
        "admin of team-a only"
    );

    // Uninstall: the API's roles stay with the CRD; the group no longer provides it.
    delete_csv(&env, NS, CSV).await;
    wait_gone(&env, NS, CSV).await;
    env.wait_until("the API leaves the group", TIMEOUT, || {
        provided_apis(&env).as_deref() == Some("")
    })
    .await;
    env.wait_until("the group's roles grant nothing", TIMEOUT, || {
        env.api
            .get::<ClusterRole>("", GROUP_ADMIN)
            .is_some_and(|role| {
                role.aggregation_rule.is_none() && role.rules.iter().flatten().next().is_none()
            })
    })
    .await;
    assert!(env.api.list::<ClusterServiceVersion>(Some(NS)).is_empty());
    assert_eq!(
        widget_access(&env, "dave", NS, "e").await.0,
        403,
        "group admin"
    );
    assert_eq!(
        widget_access(&env, "alice", NS, "f").await.0,
        200,
        "admin, as OLM"
    );
    for suffix in ["admin", "edit", "view", "crdview"] {
        let name = format!("{CRD}-v1alpha1-{suffix}");
        assert!(env.api.get::<ClusterRole>("", &name).is_some(), "{name}");
    }

    // The roles go with the API.
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .delete(CRD, &DeleteParams::default())
        .await
        .unwrap();
    env.wait_until("the API's roles are collected", TIMEOUT, || {
        env.api
            .list::<ClusterRole>(None)
            .iter()
            .all(|role| !role.name_any().starts_with(CRD))
    })
    .await;
    // `admin` no longer grants the API (RBAC answers before the missing resource's 404).
    let admin: ClusterRole = env.api.get("", "admin").unwrap();
    assert!(!grants(&admin, "create"));
    assert_eq!(widget_access(&env, "alice", NS, "g").await.0, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_escalate_opcat_could_not_grant_the_operators_api() {
    let env = Env::new().await;
    namespaces(&env, &[NS]).await;
    let role = |name: &str, verbs: &[&str]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["example.opcat.dev"], "resources": ["widgets"], "verbs": verbs}]
        })
    };
    let group_role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "olm.og.group.admin-x"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {
            format!("olm.opgroup.permissions/aggregate-to-{WIDGET_HASH}-admin"): "true"
        }}]}
    });
    let apply = |client: Client, body: serde_json::Value| async move {
        let api: Api<ClusterRole> = Api::all(client);
        let name = body["metadata"]["name"].as_str().unwrap().to_owned();
        code(
            api.patch(
                &name,
                &PatchParams::apply("opcat").force(),
                &Patch::Apply(&body),
            )
            .await,
        )
    };
    let token = opcat_service_account(&env, false).await;
    let opcat = env.api.client_with_token(&token);
    assert_eq!(apply(opcat.clone(), role("a-admin", &["*"])).await, 403);
    assert_eq!(apply(opcat.clone(), group_role.clone()).await, 403);
    // What deploy/rbac.yaml grants: the same writes succeed.
    Api::<ClusterRole>::all(env.client.clone())
        .patch(
            "opcat",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([{
                    "op": "replace",
                    "path": "/rules",
                    "value": opcat_rules()
                }]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(apply(opcat.clone(), role("a-admin", &["*"])).await, 200);
    assert_eq!(apply(opcat, group_role).await, 200);
}

/// The rules of the ClusterRole `opcat` in `deploy/rbac.yaml`.
fn opcat_rules() -> serde_json::Value {
    let text = std::fs::read_to_string(support::repo_root().join("deploy/rbac.yaml")).unwrap();
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
    documents
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "opcat")
        .unwrap()["rules"]
        .clone()
}

/// The names of every ClusterRole.
fn cluster_roles(env: &Env) -> BTreeSet<String> {
    env.api
        .list::<ClusterRole>(None)
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

/// The manager's requests about ClusterRoles so far, watches aside.
fn cluster_role_requests(env: &Env) -> u64 {
    env.manager_requests()
        .iter()
        .filter(|(key, _)| key.resource == "clusterroles" && key.verb != Verb::Watch)
        .map(|(_, count)| count)
        .sum()
}

async fn delete_group(env: &Env, namespace: &str, name: &str) {
    Api::<OperatorGroup>::namespaced(env.client.clone(), namespace)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_operator_groups_roles_go_even_if_opcat_missed_the_deletion() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "team-b"]).await;
    catalog_with_secrets(&env, &["registry-creds"]).await;
    csv_support::operator_group(&env, NS, GROUP, &[NS]).await;
    csv_support::operator_group(&env, "team-b", "team-b-group", &["team-b"]).await;
    // A role with the group's owner labels that opcat did not make (OLM's, say): never deleted.
    let foreign: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": format!("olm.og.{GROUP}.admin-olm"), "labels": {
            "olm.owner": GROUP, "olm.owner.kind": "OperatorGroup", "olm.owner.namespace": NS
        }}
    }))
    .unwrap();
    env.create(&foreign).await;
    install(&env, NS, "widget-operator", "1.0.0").await;
    // Resyncs (and with them sweeps) every 300 ms.
    let settings = Settings {
        resync: Duration::from_millis(300),
        ..Env::settings()
    };
    env.start_manager_with(settings.clone());
    csv_support::wait_phase(&env, NS, CSV, Phase::Succeeded).await;
    let group_roles = |namespace: &str, group: &str| -> BTreeSet<String> {
        env.api
            .list::<ClusterRole>(None)
            .into_iter()
            .filter(|role| {
                role.labels().get("olm.owner").map(String::as_str) == Some(group)
                    && role.labels().get("olm.owner.namespace").map(String::as_str)
                        == Some(namespace)
                    && role.labels().contains_key("app.kubernetes.io/managed-by")
            })
            .map(|role| role.name_any())
            .collect()
    };
    env.wait_until("both groups have their roles", TIMEOUT, || {
        group_roles(NS, GROUP).len() == 3 && group_roles("team-b", "team-b-group").len() == 3
    })
    .await;
    env.wait_until("the group aggregates the Widget API", TIMEOUT, || {
        env.api
            .get::<ClusterRole>("", GROUP_ADMIN)
            .is_some_and(|role| grants(&role, "create"))
    })
    .await;
    env.wait_quiet("install converged").await;
    let team_a = group_roles(NS, GROUP);
    let team_b = group_roles("team-b", "team-b-group");
    let before = cluster_roles(&env);
    assert!(before.contains(GROUP_ADMIN) && team_a.contains(GROUP_ADMIN));
    for suffix in ["admin", "edit", "view", "crdview"] {
        assert!(
            before.contains(&format!("{CRD}-v1alpha1-{suffix}")),
            "{suffix}"
        );
    }

    // Converged: sweeps and resyncs ask nothing about ClusterRoles.
    let requests = cluster_role_requests(&env);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        cluster_role_requests(&env),
        requests,
        "{}",
        env.manager_requests()
    );

    // Deleted while opcat runs: exactly its three roles go.
    delete_group(&env, NS, GROUP).await;
    env.wait_until("the deleted group's roles go", TIMEOUT, || {
        cluster_roles(&env).is_disjoint(&team_a)
    })
    .await;
    let after: BTreeSet<String> = before.difference(&team_a).cloned().collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(cluster_roles(&env), after);

    // Deleted while opcat is stopped: the first sweep after the start finds them.
    env.stop_manager().await;
    delete_group(&env, "team-b", "team-b-group").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        cluster_roles(&env).is_superset(&team_b),
        "nobody else deletes them"
    );
    env.start_manager_with(settings);
    env.wait_until(
        "the roles of the group deleted meanwhile go",
        TIMEOUT,
        || cluster_roles(&env).is_disjoint(&team_b),
    )
    .await;
    let rest: BTreeSet<String> = after.difference(&team_b).cloned().collect();
    assert_eq!(cluster_roles(&env), rest);
    assert!(rest.contains(&foreign.name_any()));
    env.stop_manager().await;
}
