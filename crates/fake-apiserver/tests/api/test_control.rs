//! Test controls: injected failures, latency, request counts.

use std::time::{Duration, Instant};

use fake_apiserver::{Fault, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{config_map, server, status};

/// An injected failure answers the next matching requests with the chosen code and a
/// `Status` whose reason matches it (as the real server pairs them), then stops.
#[tokio::test]
async fn injected_failures_match_and_run_out() {
    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", &[]))
        .await
        .unwrap();
    server.inject_failure(
        Fault::new(503)
            .verb(Verb::Patch)
            .resource("configmaps")
            .name("a")
            .times(2),
    );
    let patch = Patch::Merge(json!({"data": {"k": "x"}}));
    // Other names and verbs are unaffected.
    api.patch("b", &PatchParams::default(), &patch)
        .await
        .unwrap();
    api.get("a").await.unwrap();
    for _ in 0..2 {
        let err = status(api.patch("a", &PatchParams::default(), &patch).await);
        assert_eq!((err.code, err.reason.as_str()), (503, "ServiceUnavailable"));
    }
    api.patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap();

    server.inject_failure(Fault::new(409).resource("configmaps"));
    assert_eq!(
        status(api.list(&ListParams::default()).await).reason,
        "Conflict"
    );
}

/// Added latency delays every request.
#[tokio::test]
async fn latency_delays_requests() {
    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    server.set_latency(Duration::from_millis(150));
    let start = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    server.set_latency(Duration::ZERO);
}

/// Requests are counted by verb, resource and subresource; `writes()` is what a "zero
/// writes at steady state" test asserts; reads through the server handle are not counted.
#[tokio::test]
async fn requests_are_counted_by_verb_and_resource() {
    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    server.reset_counts();
    api.create(&PostParams::default(), &config_map("c", &[]))
        .await
        .unwrap();
    api.get("c").await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    api.patch(
        "c",
        &PatchParams::apply("opcat"),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
    )
    .await
    .unwrap();
    let _: Option<ConfigMap> = server.get("default", "c");
    let counts = server.request_counts();
    assert_eq!(counts.get(Verb::Create, "configmaps"), 1);
    assert_eq!(counts.get(Verb::Get, "configmaps"), 1);
    assert_eq!(counts.get(Verb::List, "configmaps"), 1);
    assert_eq!(counts.get(Verb::Patch, "configmaps"), 1);
    assert_eq!(counts.writes(), 2);
    assert_eq!(counts.total(), 4);
    server.reset_counts();
    api.get("c").await.unwrap();
    assert_eq!(server.request_counts().writes(), 0);
}

/// Requests of a tagged client are counted apart from the test's own, and survive a reset.
#[tokio::test]
async fn tagged_clients_are_counted_apart_and_never_reset() {
    let (server, client) = server();
    let controller: Api<ConfigMap> = Api::default_namespaced(server.client_as("controller"));
    let test: Api<ConfigMap> = Api::default_namespaced(client);
    test.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    controller.get("a").await.unwrap();
    controller
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    server.reset_counts();

    let counts = server.request_counts_of("controller");
    assert_eq!(counts.get(Verb::Get, "configmaps"), 1);
    assert_eq!(counts.get(Verb::Delete, "configmaps"), 1);
    assert_eq!(
        counts.get(Verb::Create, "configmaps"),
        0,
        "the test's create"
    );
    assert_eq!(server.request_counts().total(), 0);
    assert_eq!(server.request_counts_of("nobody").total(), 0);
}

/// A tagged client's list and watch requests are recorded with their namespace and selectors,
/// once each: a test can tell a wholesale watch from a label- or name-selected one.
#[tokio::test]
async fn collection_reads_of_a_tagged_client_keep_their_selectors() {
    let (server, _) = server();
    let controller = server.client_as("controller");
    let everywhere: Api<ConfigMap> = Api::all(controller.clone());
    let here: Api<ConfigMap> = Api::default_namespaced(controller);
    everywhere
        .list(&ListParams::default().labels("app=x"))
        .await
        .unwrap();
    everywhere
        .list(&ListParams::default().labels("app=x"))
        .await
        .unwrap();
    here.list(&ListParams::default().fields("metadata.name=a"))
        .await
        .unwrap();

    let reads = server.collection_reads_of("controller");
    let seen: Vec<_> = reads
        .iter()
        .map(|r| {
            (
                r.verb,
                r.resource.as_str(),
                r.namespace.as_str(),
                r.label_selector.as_str(),
                r.field_selector.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Verb::List, "configmaps", "", "app=x", ""),
            (Verb::List, "configmaps", "default", "", "metadata.name=a"),
        ]
    );
    assert!(server.collection_reads_of("nobody").is_empty());
}
