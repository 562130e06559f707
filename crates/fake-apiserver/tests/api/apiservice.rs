//! `apiregistration.k8s.io/v1` APIService: validation
//! (`kube-aggregator/pkg/apis/apiregistration/validation/validation.go`), defaults
//! (`apiregistration/v1/defaults.go`), the create strategy
//! (`kube-aggregator/pkg/registry/apiservice/strategy.go`) and the `Available` condition of
//! the availability controllers (`kube-aggregator/pkg/controllers/status/...`).

use fake_apiserver::{DeploymentMode, FakeApiServer};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::common::{assert_invalid, server};

fn api_service(name: &str, spec: Value) -> APIService {
    serde_json::from_value(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn remote_spec() -> Value {
    json!({
        "group": "wardle.example.com", "version": "v1alpha1",
        "groupPriorityMinimum": 1000, "versionPriority": 15,
        "service": {"namespace": "default", "name": "wardle-api"},
        "caBundle": "Y2E=",
    })
}

/// (status, reason) of the `Available` condition.
fn available(a: &APIService) -> (String, String) {
    let c = a
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Available"))
        .expect("an Available condition");
    (c.status.clone(), c.reason.clone().unwrap_or_default())
}

/// APIService is discoverable, cluster-scoped, and a local one (no `service`) is
/// `Available=True` with reason `Local` in the create response already (`PrepareForCreate`).
#[tokio::test]
async fn local_api_services_are_available_at_once() {
    let (_server, client) = server();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let gvk = kube::api::GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService");
    let (_, caps) = discovery.resolve_gvk(&gvk).unwrap();
    assert_eq!(caps.scope, Scope::Cluster);
    let api: Api<APIService> = Api::all(client);
    let created = api
        .create(
            &PostParams::default(),
            &api_service(
                "v1.widgets.example.com",
                json!({"group": "widgets.example.com", "version": "v1",
                       "groupPriorityMinimum": 1000, "versionPriority": 100}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(available(&created), ("True".into(), "Local".into()));
}

/// A remote APIService gets `port: 443` and follows its backend: `ServiceNotFound`, then
/// `MissingEndpoints` while the Deployment behind the Service is not ready, then `Passed`
/// once it is; deleting the Service makes it unavailable again.
#[tokio::test]
async fn remote_api_services_follow_their_service_and_endpoints() {
    let server = FakeApiServer::builder()
        .deployment_mode(DeploymentMode::HeldUntilReleased)
        .build();
    let client = server.client();
    let api: Api<APIService> = Api::all(client.clone());
    let created = api
        .create(
            &PostParams::default(),
            &api_service("v1alpha1.wardle.example.com", remote_spec()),
        )
        .await
        .unwrap();
    assert_eq!(created.spec.unwrap().service.unwrap().port, Some(443));
    let get = || async { api.get("v1alpha1.wardle.example.com").await.unwrap() };
    assert_eq!(
        available(&get().await),
        ("False".into(), "ServiceNotFound".into())
    );

    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "wardle-api"},
        "spec": {"selector": {"app": "wardle"}, "ports": [{"name": "https", "port": 443, "targetPort": 8443}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    assert_eq!(
        available(&get().await),
        ("False".into(), "MissingEndpoints".into())
    );

    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "wardle"},
        "spec": {"selector": {"matchLabels": {"app": "wardle"}},
                 "template": {"metadata": {"labels": {"app": "wardle"}},
                              "spec": {"containers": [{"name": "api", "image": "wardle:1"}]}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    assert_eq!(available(&get().await).1, "MissingEndpoints");
    server.release_deployment("default", "wardle");
    assert_eq!(available(&get().await), ("True".into(), "Passed".into()));

    services
        .delete("wardle-api", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        available(&get().await),
        ("False".into(), "ServiceNotFound".into())
    );
}

/// A ClusterIP Service that does not listen on `spec.service.port` is `ServicePortError`.
#[tokio::test]
async fn a_service_on_another_port_is_a_port_error() {
    let (_server, client) = server();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "wardle-api"},
        "spec": {"selector": {"app": "wardle"}, "ports": [{"port": 6443}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let api: Api<APIService> = Api::all(client);
    api.create(
        &PostParams::default(),
        &api_service("v1alpha1.wardle.example.com", remote_spec()),
    )
    .await
    .unwrap();
    let got = api.get("v1alpha1.wardle.example.com").await.unwrap();
    assert_eq!(available(&got), ("False".into(), "ServicePortError".into()));
    let msg = got.status.unwrap().conditions.unwrap()[0].message.clone();
    assert_eq!(
        msg.as_deref(),
        Some("service/wardle-api in \"default\" is not listening on port 443")
    );
}

/// `ValidateAPIService`: the name is `version.group`, priorities are bounded, a local
/// APIService takes no TLS settings and `insecureSkipTLSVerify` excludes `caBundle`.
#[tokio::test]
async fn invalid_api_services_are_rejected_with_the_upstream_field_errors() {
    let (_server, client) = server();
    let api: Api<APIService> = Api::all(client);
    let with = |change: Value| {
        let mut spec = remote_spec();
        for (k, v) in change.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    };
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "v1.wardle.example.com",
            with(json!({})),
            "metadata.name",
            "Invalid value: \"v1.wardle.example.com\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\"",
        ),
        (
            "v1alpha1.wardle.example.com",
            with(json!({"groupPriorityMinimum": 20001})),
            "spec.groupPriorityMinimum",
            "Invalid value: 20001: must be positive and less than 20000",
        ),
        (
            "v1alpha1.wardle.example.com",
            with(json!({"versionPriority": 0})),
            "spec.versionPriority",
            "Invalid value: 0: must be positive and less than 1000",
        ),
        (
            "v1alpha1.wardle.example.com",
            with(json!({"insecureSkipTLSVerify": true})),
            "spec.insecureSkipTLSVerify",
            "Invalid value: true: may not be true if caBundle is present",
        ),
        (
            "v1alpha1.wardle.example.com",
            with(json!({"service": null})),
            "spec.caBundle",
            "Invalid value: \"2 bytes\": local APIServices may not have a caBundle",
        ),
        (
            "v1alpha1.wardle.example.com",
            with(json!({"service": {"namespace": "default", "name": "wardle-api", "port": 70000}})),
            "spec.service.port",
            "Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (
            "v1alpha1.",
            with(json!({"group": ""})),
            "spec.group",
            "Required value: only v1 may have an empty group and it better be legacy kube",
        ),
    ];
    for (name, spec, field, message) in cases {
        let created = api
            .create(&PostParams::default(), &api_service(name, spec))
            .await;
        assert_invalid(created, field, message);
    }
}

/// A client cannot set status through the main resource: the create strategy drops it and
/// updates keep the stored one; `/status` takes condition statuses True, False or Unknown.
#[tokio::test]
async fn status_is_owned_by_the_status_subresource() {
    let (_server, client) = server();
    let api: Api<APIService> = Api::all(client);
    let mut body = api_service("v1alpha1.wardle.example.com", remote_spec());
    body.status = serde_json::from_value(
        json!({"conditions": [{"type": "Available", "status": "True", "reason": "Faked"}]}),
    )
    .unwrap();
    let created = api.create(&PostParams::default(), &body).await.unwrap();
    let conditions = created
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    assert!(conditions.is_empty(), "{conditions:?}");
    let stored = api.get("v1alpha1.wardle.example.com").await.unwrap();
    assert_eq!(available(&stored).1, "ServiceNotFound");
    let patched = api
        .patch_status(
            "v1alpha1.wardle.example.com",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [{"type": "Available", "status": "Yes"}]}}),
            ),
        )
        .await;
    assert_invalid(
        patched,
        "status.conditions[0].status",
        "Unsupported value: \"Yes\": supported values: \"True\", \"False\", \"Unknown\"",
    );
}
