//! Garbage collection of owner references ("Garbage Collection" on kubernetes.io,
//! `pkg/controller/garbagecollector`).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::api::{Api, DeleteParams, PostParams};

use crate::common::{config_map, create_namespace, eventually, server, status};

fn owned_by(mut cm: ConfigMap, owners: &[&ConfigMap], block: bool) -> ConfigMap {
    cm.metadata.owner_references = Some(
        owners
            .iter()
            .map(|o| {
                let mut r = o.controller_owner_ref(&()).unwrap();
                r.controller = None;
                r.block_owner_deletion = Some(block);
                r
            })
            .collect::<Vec<OwnerReference>>(),
    );
    cm
}

/// Background propagation: once all owners are gone the dependent is deleted; while one
/// owner remains it stays, and the reference to the deleted owner is removed.
#[tokio::test]
async fn dependents_go_when_all_owners_are_gone() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();
    let a = api.create(&pp, &config_map("owner-a", &[])).await.unwrap();
    let b = api.create(&pp, &config_map("owner-b", &[])).await.unwrap();
    api.create(&pp, &owned_by(config_map("dep", &[]), &[&a, &b], false))
        .await
        .unwrap();

    api.delete("owner-a", &DeleteParams::default())
        .await
        .unwrap();
    let dep = api.get("dep").await.expect("one owner remains");
    let refs = dep.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].name, "owner-b");

    api.delete("owner-b", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        std::time::Duration::from_secs(1),
        "dependent deleted",
        || async { api.get_opt("dep").await.unwrap().is_none() },
    )
    .await;
}

/// An owner reference to an object in another namespace is treated as absent: the
/// dependent is collected (`OwnerRefInvalidNamespace`, kubernetes#92743).
#[tokio::test]
async fn cross_namespace_owner_counts_as_absent() {
    let (_server, client) = server();
    create_namespace(&client, "elsewhere").await;
    let there: Api<ConfigMap> = Api::namespaced(client.clone(), "elsewhere");
    let owner = there
        .create(&PostParams::default(), &config_map("owner", &[]))
        .await
        .unwrap();
    let here: Api<ConfigMap> = Api::default_namespaced(client);
    here.create(
        &PostParams::default(),
        &owned_by(config_map("dep", &[]), &[&owner], false),
    )
    .await
    .unwrap();
    assert_eq!(status(here.get("dep").await).code, 404);
    assert!(there.get("owner").await.is_ok());
}

/// Deleting a Namespace deletes what is in it, then the Namespace itself.
/// (Namespace controller, "Namespaces" on kubernetes.io.)
#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents() {
    let (_server, client) = server();
    create_namespace(&client, "team").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team");
    secrets
        .create(&PostParams::default(), &crate::common::secret("s"))
        .await
        .unwrap();
    let ns: Api<Namespace> = Api::all(client.clone());
    ns.delete("team", &DeleteParams::default()).await.unwrap();
    assert_eq!(status(secrets.get("s").await).code, 404);
    assert_eq!(status(ns.get("team").await).code, 404);
}

/// Foreground propagation: the owner stays with the `foregroundDeletion` finalizer until the
/// dependents that block it are gone; orphan propagation keeps dependents and strips the
/// owner reference.
#[tokio::test]
async fn foreground_and_orphan_propagation() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();
    let owner = api.create(&pp, &config_map("fg-owner", &[])).await.unwrap();
    let mut dep = owned_by(config_map("fg-dep", &[]), &[&owner], true);
    dep.metadata.finalizers = Some(vec!["opcat.dev/cleanup".into()]);
    api.create(&pp, &dep).await.unwrap();

    api.delete("fg-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = api.get("fg-owner").await.unwrap();
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    assert!(
        api.get("fg-dep")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    api.patch(
        "fg-dep",
        &Default::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(status(api.get("fg-dep").await).code, 404);
    assert_eq!(status(api.get("fg-owner").await).code, 404);

    let owner = api.create(&pp, &config_map("or-owner", &[])).await.unwrap();
    api.create(&pp, &owned_by(config_map("or-dep", &[]), &[&owner], false))
        .await
        .unwrap();
    api.delete("or-owner", &DeleteParams::orphan())
        .await
        .unwrap();
    assert_eq!(status(api.get("or-owner").await).code, 404);
    let orphan = api.get("or-dep").await.unwrap();
    assert!(orphan.metadata.owner_references.is_none());
}
