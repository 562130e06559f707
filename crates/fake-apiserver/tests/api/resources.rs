//! Every kind opcat touches can be stored and read back, with the right scope.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::server;

/// The CRD the tests use: namespaced `Widget` in `example.com/v1` with a status
/// subresource, a `listType=map` list keyed by `name`, a `listType=set`, an atomic list and
/// a defaulted field.
pub fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string", "default": "blue"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "properties": {
                                      "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "args": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string"},
                        "observedGeneration": {"type": "integer"}
                    }}
                }}}
            }]
        }
    }))
    .expect("valid CRD")
}

pub fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

pub async fn install_widgets(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .expect("create CRD");
}

pub fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("widget")
}

async fn round_trip<K>(api: Api<K>, obj: Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned + serde::Serialize,
{
    let typed: K = serde_json::from_value(obj).expect("fixture fits the type");
    let created = api
        .create(&PostParams::default(), &typed)
        .await
        .expect("create");
    let name = created.meta().name.clone().unwrap();
    let got = api.get(&name).await.expect("get");
    assert_eq!(got.meta().uid, created.meta().uid);
    let listed = api.list(&ListParams::default()).await.expect("list");
    assert!(
        listed
            .items
            .iter()
            .any(|o| o.meta().name.as_deref() == Some(name.as_str()))
    );
}

/// Namespaced and cluster-scoped builtin kinds each get their own storage and answer
/// create/get/list at their REST paths (`pkg/registry/*`).
#[tokio::test]
async fn every_builtin_kind_is_served() {
    let (_server, c) = server();
    let meta = |name: &str| json!({"name": name});
    round_trip(
        Api::<Namespace>::all(c.clone()),
        json!({"metadata": meta("team")}),
    )
    .await;
    round_trip(
        Api::<Secret>::default_namespaced(c.clone()),
        json!({"metadata": meta("s")}),
    )
    .await;
    round_trip(
        Api::<ServiceAccount>::default_namespaced(c.clone()),
        json!({"metadata": meta("sa")}),
    )
    .await;
    round_trip(
        Api::<ConfigMap>::default_namespaced(c.clone()),
        json!({"metadata": meta("cm")}),
    )
    .await;
    round_trip(
        Api::<Service>::default_namespaced(c.clone()),
        json!({"metadata": meta("svc"), "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    round_trip(
        Api::<Deployment>::default_namespaced(c.clone()),
        json!({"metadata": meta("d"), "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}}
        }}),
    )
    .await;
    round_trip(
        Api::<Role>::default_namespaced(c.clone()),
        json!({"metadata": meta("r"), "rules": []}),
    )
    .await;
    round_trip(
        Api::<RoleBinding>::default_namespaced(c.clone()),
        json!({"metadata": meta("rb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
    )
    .await;
    round_trip(
        Api::<ClusterRole>::all(c.clone()),
        json!({"metadata": meta("system:cr")}),
    )
    .await;
    round_trip(
        Api::<ClusterRoleBinding>::all(c.clone()),
        json!({"metadata": meta("crb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"}}),
    )
    .await;
    round_trip(
        Api::<Lease>::default_namespaced(c.clone()),
        json!({"metadata": meta("l")}),
    )
    .await;
    round_trip(
        Api::<Event>::default_namespaced(c.clone()),
        json!({"metadata": meta("e.1"), "involvedObject": {"kind": "Pod", "name": "p"}}),
    )
    .await;
    round_trip(
        Api::<EventsV1Event>::default_namespaced(c.clone()),
        json!({"metadata": meta("e.2"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "y", "action": "a", "reason": "r"}),
    )
    .await;
    round_trip(
        Api::<CustomResourceDefinition>::all(c.clone()),
        serde_json::to_value(widget_crd()).unwrap(),
    )
    .await;
}

/// Objects of a CRD-defined kind are stored like builtin ones; unknown fields are pruned and
/// schema defaults filled in (apiextensions structural pruning and defaulting).
#[tokio::test]
async fn custom_resources_are_pruned_and_defaulted() {
    let (_server, client) = server();
    install_widgets(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widgets_resource());
    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"size": 2, "bogus": true})),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"], json!({"size": 2, "color": "blue"}));
    assert_eq!(created.metadata.generation, Some(1));
}

/// A namespaced kind cannot be addressed without a namespace and a cluster-scoped kind cannot
/// be addressed inside one (404 for a path the server does not serve).
#[tokio::test]
async fn scope_mismatches_are_not_found() {
    let (_server, client) = server();
    let ns_in_ns: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::erase::<Namespace>(&()),
    );
    assert_eq!(
        crate::common::status(ns_in_ns.get("default").await).code,
        404
    );
    let secret_without_ns: Api<DynamicObject> =
        Api::all_with(client, &ApiResource::erase::<Secret>(&()));
    assert_eq!(
        crate::common::status(secret_without_ns.get("s").await).code,
        404
    );
}

/// `kube::runtime::events::Recorder` publishes `events.k8s.io/v1` Events (create, then a
/// merge patch of the series when the same event repeats).
#[tokio::test]
async fn kube_runtime_event_recorder_publishes() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::{Event as RuntimeEvent, EventType, Recorder, Reporter};
    let (_server, client) = server();
    let recorder = Recorder::new(client.clone(), Reporter::from("opcat"));
    let regarding = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some("settings".into()),
        namespace: Some("default".into()),
        ..ObjectReference::default()
    };
    let event = RuntimeEvent {
        type_: EventType::Normal,
        reason: "Installed".into(),
        note: Some("operator installed".into()),
        action: "Install".into(),
        secondary: None,
    };
    recorder.publish(&event, &regarding).await.unwrap();
    recorder.publish(&event, &regarding).await.unwrap();
    let events: Api<EventsV1Event> = Api::default_namespaced(client);
    let listed = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].reason.as_deref(), Some("Installed"));
    assert_eq!(listed[0].series.as_ref().map(|s| s.count), Some(2));
}
