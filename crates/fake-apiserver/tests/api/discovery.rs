//! Discovery: builtin groups, and CRDs appearing once created.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::{Discovery, Scope};

use crate::common::server;
use crate::resources::widget_crd;

/// `kube::Discovery::run` walks `/api`, `/apis` and each group version and finds the
/// builtin kinds with their scope (`k8s.io/apiserver/pkg/endpoints/discovery`).
#[tokio::test]
async fn discovery_lists_builtin_kinds() {
    let (_server, client) = server();
    let discovery = Discovery::new(client).run().await.unwrap();
    let (secret, caps) = discovery
        .resolve_gvk(&kube::api::GroupVersionKind::gvk("", "v1", "Secret"))
        .unwrap();
    assert_eq!(secret.plural, "secrets");
    assert_eq!(caps.scope, Scope::Namespaced);
    let (_, caps) = discovery
        .resolve_gvk(&kube::api::GroupVersionKind::gvk(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
        ))
        .unwrap();
    assert_eq!(caps.scope, Scope::Cluster);
    assert!(discovery.has_group("apps"));
    assert!(discovery.has_group("coordination.k8s.io"));
    assert!(discovery.has_group("events.k8s.io"));
}

/// Creating a CustomResourceDefinition makes its resource available in discovery and on
/// its REST path (`apiextensions-apiserver` serves a CRD once its names are accepted).
#[tokio::test]
async fn created_crd_becomes_discoverable_and_usable() {
    let (_server, client) = server();
    let before = Discovery::new(client.clone()).run().await.unwrap();
    assert!(!before.has_group("example.com"));

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();

    let after = Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = after
        .resolve_gvk(&kube::api::GroupVersionKind::gvk(
            "example.com",
            "v1",
            "Widget",
        ))
        .expect("Widget discoverable after CRD creation");
    assert_eq!(caps.scope, Scope::Namespaced);
    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}
    }))
    .unwrap();
    widgets.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(
        widgets.list(&Default::default()).await.unwrap().items.len(),
        1
    );
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`, served by default since 1.30) lists the
/// same resources in one request per root.
#[tokio::test]
async fn aggregated_discovery_matches_classic() {
    let (_server, client) = server();
    let discovery = Discovery::new(client).run_aggregated().await.unwrap();
    let (deploy, caps) = discovery
        .resolve_gvk(&kube::api::GroupVersionKind::gvk(
            "apps",
            "v1",
            "Deployment",
        ))
        .unwrap();
    assert_eq!(deploy.plural, "deployments");
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status"));
}
