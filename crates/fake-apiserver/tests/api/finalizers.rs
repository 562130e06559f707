//! Finalizers and graceful deletion (`registry/generic/registry/store.go`,
//! "Finalizers" on kubernetes.io).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{config_map, server, status};

fn with_finalizers(name: &str, finalizers: &[&str]) -> ConfigMap {
    let mut cm = config_map(name, &[]);
    cm.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_string()).collect());
    cm
}

/// Deleting an object with finalizers sets `deletionTimestamp` and
/// `deletionGracePeriodSeconds: 0` and keeps it; removing the last finalizer removes it.
#[tokio::test]
async fn delete_waits_for_the_last_finalizer() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(
        &PostParams::default(),
        &with_finalizers("f", &["opcat.dev/cleanup", "example.com/other"]),
    )
    .await
    .unwrap();
    let answer = api.delete("f", &DeleteParams::default()).await.unwrap();
    let kept = answer.left().expect("the object, still present");
    assert!(kept.metadata.deletion_timestamp.is_some());
    assert_eq!(kept.metadata.deletion_grace_period_seconds, Some(0));

    let still = api.get("f").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());

    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "test", "path": "/metadata/finalizers/0", "value": "opcat.dev/cleanup"},
                {"op": "remove", "path": "/metadata/finalizers/0"}
            ]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    assert!(api.get("f").await.is_ok(), "one finalizer left");

    let last = api
        .patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(last.metadata.finalizers.is_none());
    assert_eq!(status(api.get("f").await).code, 404);
}

/// No new finalizer can be added to an object that is being deleted (422,
/// `ValidateObjectMetaUpdate`); removing and keeping existing ones is fine.
#[tokio::test]
async fn no_new_finalizers_while_deleting() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(
        &PostParams::default(),
        &with_finalizers("g", &["opcat.dev/cleanup"]),
    )
    .await
    .unwrap();
    api.delete("g", &DeleteParams::default()).await.unwrap();
    let err = status(
        api.patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["opcat.dev/cleanup", "late.example.com/x"]}}),
            ),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message
            .contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        err.message
    );
    // Other changes to a deleting object are still accepted.
    api.patch(
        "g",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
}

/// Deleting again while finalizers are pending changes nothing (same deletionTimestamp).
#[tokio::test]
async fn repeated_delete_is_idempotent() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(
        &PostParams::default(),
        &with_finalizers("h", &["opcat.dev/cleanup"]),
    )
    .await
    .unwrap();
    let first = api
        .delete("h", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    let second = api
        .delete("h", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(
        first.metadata.deletion_timestamp,
        second.metadata.deletion_timestamp
    );
    assert_eq!(
        first.metadata.resource_version,
        second.metadata.resource_version
    );
}

/// Delete preconditions on uid and resourceVersion fail with 409.
#[tokio::test]
async fn delete_preconditions() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("pre", &[]))
        .await
        .unwrap();
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = status(api.delete("pre", &dp).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition: nope"),
        "{}",
        err.message
    );
}

/// `kube::runtime::finalizer` adds its finalizer with a JSON patch that tests the missing
/// `/metadata/finalizers` against `null` (accepted by the API server's `evanphx/json-patch`),
/// and removes it once cleanup succeeded, which lets the deletion complete.
#[tokio::test]
async fn kube_runtime_finalizer_helper_works_end_to_end() {
    use kube::runtime::finalizer::{Event, finalizer};
    use std::sync::Arc;
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("rt", &[]))
        .await
        .unwrap();
    let run = |obj: ConfigMap| {
        let api = api.clone();
        async move {
            finalizer(
                &api,
                "opcat.dev/cleanup",
                Arc::new(obj),
                |event| async move {
                    match event {
                        Event::Apply(_) | Event::Cleanup(_) => Ok::<_, std::convert::Infallible>(
                            kube::runtime::controller::Action::await_change(),
                        ),
                    }
                },
            )
            .await
            .map(|_| ())
        }
    };
    run(api.get("rt").await.unwrap()).await.unwrap();
    let with = api.get("rt").await.unwrap();
    assert_eq!(
        with.metadata.finalizers,
        Some(vec!["opcat.dev/cleanup".to_string()])
    );

    api.delete("rt", &DeleteParams::default()).await.unwrap();
    run(api.get("rt").await.unwrap()).await.unwrap();
    assert_eq!(status(api.get("rt").await).code, 404);
}
