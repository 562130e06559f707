//! Server-set metadata: `resourceVersion`, `uid`, `creationTimestamp`, `generation`.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{config_map, rv, server, status};

pub fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/op:1.0"}]}
            }
        }
    }))
    .expect("deployment fixture")
}

/// Every write takes a new, larger `resourceVersion` (etcd revision), uid and
/// creationTimestamp are set on create and never change, and a patch carrying a stale
/// `resourceVersion` is 409 (`metadata.resourceVersion` as a precondition).
#[tokio::test]
async fn resource_version_increases_and_guards_writes() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &config_map("m", &[]))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 36);
    assert!(created.metadata.creation_timestamp.is_some());

    let patched = api
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "2"}})),
        )
        .await
        .unwrap();
    assert!(rv(&patched) > rv(&created));
    assert_eq!(patched.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        patched.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );

    let stale = json!({"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"k": "3"}});
    let err = status(
        api.patch("m", &PatchParams::default(), &Patch::Merge(stale))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));

    // Writes to other objects also move the cluster-wide version.
    let other = api
        .create(&PostParams::default(), &config_map("n", &[]))
        .await
        .unwrap();
    assert!(rv(&other) > rv(&patched));
}

/// A write that changes nothing is not persisted: same `resourceVersion`, no watch event
/// (etcd3 store skips no-op updates; managedFields timestamps are ignored).
#[tokio::test]
async fn no_op_writes_keep_the_resource_version() {
    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &config_map("same", &[]))
        .await
        .unwrap();
    let replaced = api
        .replace("same", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    let before = server.resource_version();
    let ssa = PatchParams::apply("opcat");
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "same"}, "data": {"k": "v"}});
    let a = api.patch("same", &ssa, &Patch::Apply(&cfg)).await.unwrap();
    let b = api.patch("same", &ssa, &Patch::Apply(&cfg)).await.unwrap();
    assert_eq!(a.metadata.resource_version, b.metadata.resource_version);
    assert_eq!(
        server.resource_version(),
        before + 1,
        "only the first apply changed anything"
    );
}

/// `generation` starts at 1 and increments when the spec changes, not when only metadata or
/// status changes (`deploymentStrategy.PrepareForUpdate`, CRD strategy for custom resources).
#[tokio::test]
async fn generation_moves_on_spec_changes_only() {
    let server = fake_apiserver::FakeApiServer::builder()
        .deployment_mode(fake_apiserver::DeploymentMode::Disabled)
        .build();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    let created = api
        .create(&PostParams::default(), &deployment("g"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let labels = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labels.metadata.generation, Some(1));

    let with_status = api
        .patch_status(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.metadata.generation, Some(1));

    let spec = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
}

/// A metadata-only client (`Accept: ...;as=PartialObjectMetadata...`, kube's
/// `Api<PartialObjectMeta<K>>`) gets `meta.k8s.io/v1` objects with metadata only from get, list
/// and watch, as the real server's `transformObject` answers (apiserver
/// `pkg/endpoints/handlers/response.go`).
#[tokio::test]
async fn metadata_only_reads_carry_no_content() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{ListParams, PartialObjectMeta, WatchEvent, WatchParams};

    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &config_map("m", &[("app", "x")]))
        .await
        .unwrap();
    let raw = server
        .raw("", "v1", "configmaps", "default", "m")
        .expect("stored");
    assert!(raw.get("data").is_some());

    let meta: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(client);
    let one = meta.get_metadata("m").await.unwrap();
    assert_eq!(one.metadata.labels, crate::common::labels(&[("app", "x")]));
    let types = one.types.expect("typed");
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    let list = meta.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let version = list.metadata.resource_version.clone().unwrap();

    let mut events = meta
        .watch_metadata(&WatchParams::default(), &version)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "m",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    let Some(WatchEvent::Modified(changed)) = events.try_next().await.unwrap() else {
        panic!("a MODIFIED event")
    };
    assert_eq!(changed.metadata.name.as_deref(), Some("m"));
    assert_eq!(
        changed.types.map(|t| t.kind).as_deref(),
        Some("PartialObjectMetadata")
    );
}
