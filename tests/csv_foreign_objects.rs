//! An object the bundle names that already exists without opcat's labels is not taken over:
//! the install fails with OLM's `InstallComponentFailed` and the object stays as its owner
//! left it. (The RBAC opcat names with a hash over its content is created without that lookup,
//! issue 12; the names a bundle chooses always get it.)
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::collections::BTreeMap;

use csv_support::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::ResourceExt;
use opcat::api::ClusterServiceVersionPhase as Phase;
use support::Env;

const NS: &str = "ops";

/// The user's Deployment, under the name and with the selector of the bundle's (so that an
/// apply would succeed: only the lookup keeps opcat off it).
fn users_deployment() -> Deployment {
    let labels = BTreeMap::from([(
        "app.kubernetes.io/name".to_owned(),
        "widget-controller".to_owned(),
    )]);
    Deployment {
        metadata: ObjectMeta {
            name: Some("widget-controller".to_owned()),
            namespace: Some(NS.to_owned()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".to_owned(),
                        image: Some("registry.example/users/app:1".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_the_bundle_names_that_exists_without_opcats_labels_is_not_taken_over() {
    let mut env = Env::new().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &["registry-creds"]).await;
    operator_group(&env, NS, "group", &[NS]).await;
    let before = env.create(&users_deployment()).await;
    let csv = install(&env, NS, "widget-operator", "1.0.0").await;
    env.start_manager();

    let failed = wait_phase(&env, NS, &csv.name_any(), Phase::Failed).await;
    let status = failed.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("InstallComponentFailed"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("Deployment ops/widget-controller")
            && message.contains("not managed by opcat"),
        "the status names the object in the way: {message}"
    );
    let after = env.api.get::<Deployment>(NS, "widget-controller").unwrap();
    // (The API server's Deployment controller may have written its status since.)
    assert_eq!(
        after.spec, before.spec,
        "the user's Deployment is not written"
    );
    assert_eq!(after.labels(), before.labels());
    assert_eq!(after.annotations(), before.annotations());
    let managers: Vec<_> = after
        .managed_fields()
        .iter()
        .filter_map(|entry| entry.manager.as_deref())
        .collect();
    assert!(
        !managers.contains(&"opcat"),
        "opcat manages no field: {managers:?}"
    );
    env.stop_manager().await;
}
