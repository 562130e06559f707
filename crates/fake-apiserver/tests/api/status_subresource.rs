//! The status subresource split (`PrepareForUpdate` of status-enabled strategies).

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::server;
use crate::metadata::deployment;
use crate::resources::{install_widgets, widget, widgets_resource};

/// Writes to the main resource ignore `status`; writes to `/status` ignore everything but
/// `status` (Deployment strategy and `deploymentStatusStrategy`).
#[tokio::test]
async fn main_resource_and_status_are_written_separately() {
    let server = fake_apiserver::FakeApiServer::builder()
        .deployment_mode(fake_apiserver::DeploymentMode::Disabled)
        .build();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    let mut d = deployment("s");
    d.status = Some(serde_json::from_value(json!({"replicas": 9})).unwrap());
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    assert!(created.status.is_none(), "status is dropped on create");

    let main = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}, "status": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(main.spec.as_ref().unwrap().replicas, Some(4));
    assert!(main.status.is_none(), "status ignored on the main resource");

    let status = api
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}, "metadata": {"labels": {"a": "b"}}, "status": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(status.status.unwrap().replicas, Some(4));
    assert_eq!(
        status.spec.unwrap().replicas,
        Some(4),
        "spec ignored on /status"
    );
    assert!(
        status.metadata.labels.is_none(),
        "metadata ignored on /status"
    );
}

/// The same split holds for a CRD with `subresources.status` (apiextensions status strategy).
#[tokio::test]
async fn custom_resource_status_subresource() {
    let (_server, client) = server();
    install_widgets(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widgets_resource());
    api.create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let main = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    assert!(main.data.get("status").is_none());
    let with_status = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}, "spec": {"size": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["phase"], "Ready");
    assert_eq!(with_status.data["spec"]["size"], 1);
    assert_eq!(with_status.metadata.generation, Some(1));
}
