//! `deploy/rbac.yaml` allows every request opcat makes: the manager (every shared watch, the
//! by-name watch of a source pull secret) and leader election, driven against the in-memory API
//! server, which counts each request by verb, group, resource and subresource.
//!
//! `ops_support::assert_allowed_by_rbac` is the check; tests that drive the reconcilers end to
//! end call it too, so the ClusterRole follows the code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::Verb;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use opcat::admin::{Health, Phase};
use opcat::api::CatalogSource;
use opcat::controller::leader::lease::LeaseTimings;
use opcat::controller::leader::{Elector, LeaderConfig};
use opcat::metrics::Metrics;
use ops_support::{api_server, assert_allowed_by_rbac, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_role_allows_every_request_the_manager_and_leader_election_make() {
    let api = api_server(&["opcat-system", "opcat-catalogs"]).await;
    let catalog: CatalogSource = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "private", "namespace": "opcat-catalogs"},
        "spec": {
            "sourceType": "grpc",
            "image": "registry.example.com/catalog:latest",
            "secrets": ["registry-creds"]
        }
    }))
    .unwrap();
    Api::<CatalogSource>::namespaced(api.client(), "opcat-catalogs")
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    api.reset_counts();

    let health = Arc::new(Health::default());
    let metrics = Arc::new(Metrics::new());
    let (mut term, _cache) =
        ops_support::manager_factory(api.client(), metrics.clone(), health.clone());
    let elector = Elector::new(
        api.client(),
        LeaderConfig {
            namespace: "opcat-system".to_owned(),
            lease_name: "opcat-leader".to_owned(),
            identity: "opcat-0".to_owned(),
            timings: LeaseTimings::new(Duration::from_secs(3), Duration::from_secs(2)).unwrap(),
        },
        health.clone(),
        metrics.clone(),
        Duration::from_secs(5),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(async move { elector.run(&mut term, stopped.map(|_| ())).await });
    wait_until("opcat reconciles", TIMEOUT, || {
        health.phase() == Phase::Reconciling
    })
    .await;
    // The source pull secret is watched by name.
    wait_until("the source secret is watched", TIMEOUT, || {
        api.request_counts().get(Verb::Watch, "secrets") >= 2
    })
    .await;
    // Several renewals.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = stop.send(());
    run.await.unwrap().unwrap();

    let counts = api.request_counts();
    for (verb, resource) in [
        (Verb::Watch, "catalogsources"),
        (Verb::Watch, "clusterserviceversions"),
        (Verb::Watch, "deployments"),
        (Verb::Watch, "namespaces"),
        (Verb::Watch, "validatingwebhookconfigurations"),
        (Verb::Watch, "mutatingwebhookconfigurations"),
        (Verb::Watch, "apiservices"),
        (Verb::Watch, "leases"),
        (Verb::Patch, "leases"),
    ] {
        assert!(
            counts.get(verb, resource) > 0,
            "no {verb} {resource}:\n{counts}"
        );
    }
    assert_allowed_by_rbac(&counts);
}

#[tokio::test]
async fn the_checker_refuses_what_the_cluster_role_does_not_grant() {
    // opcat must never delete CRDs nor Pods (it only labels its own); a request doing so is
    // reported.
    let rules = ops_support::rbac_rules();
    assert!(rules.iter().any(|rule| rule.role == "ClusterRole/opcat"));
    assert!(
        rules
            .iter()
            .any(|rule| rule.role == "Role/opcat-leader-election")
    );
    let api = fake_apiserver::FakeApiServer::new();
    let crds: Api<CustomResourceDefinition> = Api::all(api.client());
    let _ = crds.delete("anything", &Default::default()).await;
    let pods: Api<Pod> = Api::namespaced(api.client(), "default");
    let _ = pods.delete("anything", &Default::default()).await;
    let denied = ops_support::denied_by_rbac(&api.request_counts());
    assert_eq!(
        denied,
        [
            "delete core/pods (1 requests)",
            "delete apiextensions.k8s.io/customresourcedefinitions (1 requests)",
        ]
    );
}
