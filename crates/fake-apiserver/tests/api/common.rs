//! Fixtures shared by the tests.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::core::Status;

/// A server with default settings and an in-process client.
pub fn server() -> (FakeApiServer, Client) {
    let server = FakeApiServer::new();
    let client = server.client();
    (server, client)
}

pub fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
    )
}

pub fn config_map(name: &str, pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labels(pairs),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..ConfigMap::default()
    }
}

pub fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("token".to_string(), "t0".to_string())])),
        ..Secret::default()
    }
}

pub async fn create_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// The `Status` of a failed call (panics when the call did not fail with one).
pub fn status<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Asserts that a call failed with 422 Invalid naming `field` with exactly `message` among
/// its causes, and returns the `Status`.
pub fn assert_invalid<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    field: &str,
    message: &str,
) -> Box<Status> {
    let err = status(result);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{field}");
    let causes = &err.details.as_ref().expect("details").causes;
    assert!(
        causes
            .iter()
            .any(|c| c.field == field && c.message == message),
        "{field} {message}: {causes:?}"
    );
    err
}

/// Polls `check` until it returns true, failing after `within`.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn rv<K: kube::Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("numeric resourceVersion")
}
