//! Emulated cluster controllers: namespace lifecycle, ServiceAccounts, Deployments, CRDs.

use fake_apiserver::{DeploymentMode, FakeApiServer};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{config_map, create_namespace, server, status};
use crate::metadata::deployment;
use crate::resources::install_widgets;

/// NamespaceLifecycle admission: creating in a missing namespace is 404
/// `namespaces "x" not found`; in a terminating one 403 with reason Forbidden
/// (`plugin/pkg/admission/namespace/lifecycle`).
#[tokio::test]
async fn namespace_lifecycle_admission() {
    let (_server, client) = server();
    let missing: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
    let err = status(
        missing
            .create(&PostParams::default(), &config_map("c", &[]))
            .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );

    create_namespace(&client, "closing").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "closing");
    let mut held = config_map("held", &[]);
    held.metadata.finalizers = Some(vec!["opcat.dev/cleanup".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("closing", &DeleteParams::default())
        .await
        .unwrap();
    let ns = namespaces.get("closing").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(ns.metadata.deletion_timestamp.is_some());

    let err = status(
        cms.create(&PostParams::default(), &config_map("late", &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert!(
        err.message.contains("because it is being terminated"),
        "{}",
        err.message
    );

    // The namespace goes once its last object is finalized.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(status(namespaces.get("closing").await).code, 404);
}

/// The ServiceAccount controller creates `default` in every new namespace.
#[tokio::test]
async fn default_service_account_appears() {
    let (_server, client) = server();
    create_namespace(&client, "fresh").await;
    let sas: Api<ServiceAccount> = Api::namespaced(client, "fresh");
    assert!(sas.get("default").await.is_ok());
}

/// The Deployment controller reports `observedGeneration` and availability; held
/// Deployments report `Available=False` until released, so an install can be observed going
/// from Installing to Succeeded.
#[tokio::test]
async fn deployments_become_available_when_released() {
    let server = FakeApiServer::builder()
        .deployment_mode(DeploymentMode::HeldUntilReleased)
        .build();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &deployment("op"))
        .await
        .unwrap();
    let held = api.get("op").await.unwrap().status.unwrap();
    assert_eq!(held.observed_generation, Some(1));
    let available = |s: &k8s_openapi::api::apps::v1::DeploymentStatus| {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Available")
            .map(|c| c.status.clone())
    };
    assert_eq!(available(&held).as_deref(), Some("False"));
    assert_eq!(held.available_replicas, None);

    server.release_deployment("default", "op");
    let ready = api.get("op").await.unwrap().status.unwrap();
    assert_eq!(available(&ready).as_deref(), Some("True"));
    assert_eq!(ready.available_replicas, Some(1));

    // A spec change is observed again.
    api.patch(
        "op",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let status = api.get("op").await.unwrap().status.unwrap();
    assert_eq!(
        (status.observed_generation, status.available_replicas),
        (Some(2), Some(3))
    );
}

/// A new CRD reports `NamesAccepted` and `Established`, carries the cleanup finalizer, and
/// deleting it deletes its custom resources first.
#[tokio::test]
async fn crds_are_established_and_clean_up() {
    let (_server, client) = server();
    install_widgets(&client).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get("widgets.example.com").await.unwrap();
    let conditions = crd.status.unwrap().conditions.unwrap();
    for t in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True"),
            "{t}"
        );
    }
    assert!(
        crd.metadata
            .finalizers
            .unwrap()
            .contains(&"customresourcecleanup.apiextensions.k8s.io".to_string())
    );

    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &crate::resources::widgets_resource(),
    );
    widgets
        .create(
            &PostParams::default(),
            &crate::resources::widget("w", json!({})),
        )
        .await
        .unwrap();
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(status(crds.get("widgets.example.com").await).code, 404);
    assert_eq!(
        status(widgets.get("w").await).code,
        404,
        "the kind is no longer served"
    );
}

/// Every Namespace carries `kubernetes.io/metadata.name=<name>`, set by the server on create and
/// put back on update (`pkg/apis/core/v1/defaults.go` `SetDefaults_Namespace`,
/// `pkg/registry/core/namespace/strategy.go` `Canonicalize`).
#[tokio::test]
async fn namespaces_are_labelled_with_their_name() {
    let (_server, client) = server();
    create_namespace(&client, "team-a").await;
    let api: Api<Namespace> = Api::all(client.clone());
    let label = |ns: &Namespace| {
        ns.metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get("kubernetes.io/metadata.name").cloned())
    };
    assert_eq!(
        label(&api.get("team-a").await.unwrap()).as_deref(),
        Some("team-a")
    );
    let patched = api
        .patch(
            "team-a",
            &PatchParams::default(),
            &Patch::Merge(json!(
                {"metadata": {"labels": {"kubernetes.io/metadata.name": "other", "x": "y"}}}
            )),
        )
        .await
        .unwrap();
    assert_eq!(label(&patched).as_deref(), Some("team-a"));
}
