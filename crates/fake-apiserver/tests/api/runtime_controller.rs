//! A real `kube::runtime::Controller` with an owned secondary resource, unmodified.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::common::{config_map, eventually, server};

#[derive(Debug, thiserror::Error)]
#[error("kube: {0}")]
struct ReconcileError(#[from] kube::Error);

struct Ctx {
    client: Client,
    reconciles: AtomicUsize,
}

/// Keeps `<name>-copy` (a Secret owned by the ConfigMap) equal to the ConfigMap's data.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let ns = cm.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let name = format!("{}-copy", cm.name_any());
    let want: BTreeMap<String, ByteString> = cm
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, ByteString(v.into_bytes())))
        .collect();
    if let Some(existing) = secrets.get_opt(&name).await?
        && existing.data.clone().unwrap_or_default() == want
    {
        return Ok(Action::await_change());
    }
    let owner = cm
        .controller_owner_ref(&())
        .expect("stored objects have a uid");
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(want),
        ..Secret::default()
    };
    let mut body = serde_json::to_value(&secret).expect("serialisable");
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Secret");
    secrets
        .patch(
            &name,
            &PatchParams::apply("copy-controller").force(),
            &Patch::Apply(body),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &ReconcileError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(50))
}

/// `Controller::new(..).owns(..)` runs against the server: it reconciles a new primary,
/// reacts within a second when someone changes or deletes the owned Secret, and makes no
/// writes once converged (the watch-driven loop of `kube-runtime`).
#[tokio::test]
async fn controller_reacts_to_owned_resource_changes_within_a_second() {
    let (server, client) = server();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
    });
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let controller = Controller::new(
        cms.clone(),
        watcher::Config::default().labels("role=source"),
    )
    .owns(secrets.clone(), watcher::Config::default())
    .run(reconcile, error_policy, ctx.clone())
    .for_each(|_| async {});
    let task = tokio::spawn(controller);
    eventually(
        Duration::from_secs(2),
        "controller watching both kinds",
        || async {
            server.watcher_count::<ConfigMap>() > 0 && server.watcher_count::<Secret>() > 0
        },
    )
    .await;

    let mut source = config_map("src", &[("role", "source")]);
    source.data = Some(BTreeMap::from([("token".to_string(), "v1".to_string())]));
    cms.create(&PostParams::default(), &source).await.unwrap();
    let copied = |value: &'static str| {
        let secrets = secrets.clone();
        move || {
            let secrets = secrets.clone();
            async move {
                secrets
                    .get_opt("src-copy")
                    .await
                    .unwrap()
                    .and_then(|s| s.data)
                    .is_some_and(|d| {
                        d.get("token").map(|b| b.0.as_slice()) == Some(value.as_bytes())
                    })
            }
        }
    };
    eventually(Duration::from_secs(1), "copy created", copied("v1")).await;

    // Someone else tampers with the owned Secret: the controller restores it.
    secrets
        .patch(
            "src-copy",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"token": "dGFtcGVyZWQ="}})),
        )
        .await
        .unwrap();
    eventually(
        Duration::from_secs(1),
        "tampered copy restored",
        copied("v1"),
    )
    .await;

    // Deleting the owned Secret brings it back.
    secrets
        .delete("src-copy", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(1),
        "deleted copy recreated",
        copied("v1"),
    )
    .await;

    // A change to the primary propagates.
    cms.patch(
        "src",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"token": "v2"}})),
    )
    .await
    .unwrap();
    eventually(Duration::from_secs(1), "rotation propagated", copied("v2")).await;

    // Converged: no more writes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.reset_counts();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.request_counts().writes(),
        0,
        "{}",
        server.request_counts()
    );

    // Deleting the primary garbage-collects the copy.
    cms.delete("src", &DeleteParams::default()).await.unwrap();
    eventually(Duration::from_secs(1), "copy collected", || async {
        secrets.get_opt("src-copy").await.unwrap().is_none()
    })
    .await;
    assert!(ctx.reconciles.load(Ordering::SeqCst) >= 4);
    task.abort();
}
