//! Upgrades and uninstalls (issue 5 items 4 and 5): a newer CSV takes over the objects it
//! keeps, the ones its bundle dropped are deleted, the replaced CSV goes Replacing → Deleting
//! and its cleanup leaves the new CSV's objects alone; deleting a CSV removes everything opcat
//! added except the CRD.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod ops_support;
mod support;

use std::collections::BTreeSet;
use std::path::Path;

use csv_support::*;
use fake_apiserver::DeploymentMode;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use opcat::api::ClusterServiceVersion;
use opcat::api::ClusterServiceVersionPhase as Phase;
use support::Env;

const NS: &str = "ops";
const PACKAGE: &str = "widget-operator";
const SECRET: &str = "registry-creds";

fn labelled_for(env: &Env, csv: &str) -> BTreeSet<String> {
    let roles = env
        .api
        .list::<Role>(Some(NS))
        .into_iter()
        .filter(|role| role.labels().get("opcat.dev/csv").map(String::as_str) == Some(csv))
        .map(|role| format!("Role {}", role.name_any()));
    let cluster_roles = env
        .api
        .list::<ClusterRole>(None)
        .into_iter()
        .filter(|role| role.labels().get("opcat.dev/csv").map(String::as_str) == Some(csv))
        .map(|role| format!("ClusterRole {}", role.name_any()));
    roles.chain(cluster_roles).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_takes_over_kept_objects_sweeps_dropped_ones_and_deletes_the_old_csv() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    operator_group(&env, NS, "ops-group", &[NS]).await;
    let old = install(&env, NS, PACKAGE, "1.0.0").await;
    env.start_manager();
    wait_phase(&env, NS, &old.name_any(), Phase::Succeeded).await;
    let old_rbac = labelled_for(&env, &old.name_any());
    // Two permissions, two clusterPermissions, and the OperatorCondition's Role.
    assert_eq!(old_rbac.len(), 5, "{old_rbac:?}");
    assert!(
        env.api
            .get::<Service>(NS, "widget-controller-metrics")
            .is_some()
    );

    // v1.1.0 without its Service manifest: the Service must go with the upgrade.
    let dir = env.registry.scratch("widget-1.1.0-no-service");
    copy_dir(&env.images.bundles_dir.join(PACKAGE).join("1.1.0"), &dir);
    std::fs::remove_file(dir.join("manifests/widget-controller-metrics_v1_service.yaml")).unwrap();
    let image = push_bundle(
        &env,
        &dir,
        "opcat-examples/widget-operator-bundle:v1.1.0-no-service",
    )
    .await;
    // Hold the new Deployments so the old CSV can be seen Replacing.
    env.api
        .set_deployment_mode(DeploymentMode::HeldUntilReleased);
    let new = env.create(&installed_csv(&dir, NS, PACKAGE, &image)).await;
    assert_eq!(new.spec.replaces.as_deref(), Some(old.name_any().as_str()));
    let replacing = wait_phase(&env, NS, &old.name_any(), Phase::Replacing).await;
    let status = replacing.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("BeingReplaced"));
    assert_eq!(
        status.message.as_deref(),
        Some("being replaced by csv: ops/widget-operator.v1.1.0")
    );
    wait_phase(&env, NS, &new.name_any(), Phase::Installing).await;

    for deployment in ["widget-controller", "widget-dashboard"] {
        env.api.release_deployment(NS, deployment);
    }
    wait_phase(&env, NS, &new.name_any(), Phase::Succeeded).await;
    wait_gone(&env, NS, &old.name_any()).await;

    // Kept objects now belong to the new CSV.
    for name in ["widget-controller", "widget-dashboard"] {
        let deployment = env.api.get::<Deployment>(NS, name).unwrap();
        assert_eq!(
            deployment.labels().get("opcat.dev/csv").map(String::as_str),
            Some("widget-operator.v1.1.0")
        );
        let owners: Vec<_> = deployment
            .owner_references()
            .iter()
            .map(|o| o.name.clone())
            .collect();
        assert_eq!(owners, ["widget-operator.v1.1.0"]);
        let image = deployment.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .clone()
            .unwrap();
        assert!(image.ends_with("widget-operator:v1.1.0"), "{image}");
    }
    for sa in ["widget-controller", "widget-auditor"] {
        let sa = env
            .api
            .get::<ServiceAccount>(NS, sa)
            .expect("kept ServiceAccount");
        assert_eq!(
            sa.labels().get("opcat.dev/csv").map(String::as_str),
            Some("widget-operator.v1.1.0")
        );
    }
    let crd = env
        .api
        .get::<CustomResourceDefinition>("", "widgets.example.opcat.dev")
        .unwrap();
    assert_eq!(
        crd.labels().get("opcat.dev/csv").map(String::as_str),
        Some("widget-operator.v1.1.0")
    );
    // RBAC is named after the CSV: the old objects are swept, the new ones exist.
    assert!(
        labelled_for(&env, &old.name_any()).is_empty(),
        "old RBAC deleted"
    );
    for old_object in &old_rbac {
        let name = old_object.split_once(' ').unwrap().1;
        assert!(
            env.api.get::<Role>(NS, name).is_none()
                && env.api.get::<ClusterRole>("", name).is_none()
        );
    }
    assert_eq!(labelled_for(&env, &new.name_any()).len(), 5);
    // Dropped by the new bundle: deleted.
    assert!(
        env.api
            .get::<Service>(NS, "widget-controller-metrics")
            .is_none()
    );
    // The copy is owned by the new CSV only, and still attached.
    let copy = env.api.get::<Secret>(NS, &copy_name(SECRET)).unwrap();
    let owners: Vec<_> = copy
        .owner_references()
        .iter()
        .map(|o| o.name.clone())
        .collect();
    assert_eq!(owners, ["widget-operator.v1.1.0"]);
    assert_eq!(sa_pull_secrets(&env, NS, "default"), [copy_name(SECRET)]);
    assert_eq!(
        sa_pull_secrets(&env, NS, "widget-controller"),
        [copy_name(SECRET)]
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_removes_everything_opcat_added_except_the_crd() {
    // No garbage collector: opcat itself removes what it added.
    let mut env = env_without_gc().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &[SECRET, "mirror-creds"]).await;
    // AllNamespaces: cluster-scoped RBAC too, which has no owner reference to collect it.
    operator_group(&env, NS, "ops-group", &[""]).await;
    let csv = install(&env, NS, PACKAGE, "1.0.0").await;
    env.start_manager();
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    assert!(objects_marked_by_opcat(&env).len() > 10);

    delete_csv(&env, NS, &csv.name_any()).await;
    wait_gone(&env, NS, &csv.name_any()).await;
    let crd = "CustomResourceDefinition /widgets.example.opcat.dev".to_owned();
    // The uninstall removed everything before the CSV went, but its copies in the other
    // namespaces: the copied-CSV controller removes those from the moment the CSV is being
    // deleted, and may finish after it is gone (OLM removes them after it).
    let copy = |object: &String| object.starts_with("ClusterServiceVersion ");
    assert_eq!(
        objects_marked_by_opcat(&env)
            .iter()
            .filter(|object| !copy(object))
            .collect::<Vec<_>>(),
        [&crd],
        "nothing of opcat's remains but the CRD and copies of the CSV"
    );
    env.wait_until("the copies of the CSV are gone", TIMEOUT, || {
        env.api.list::<ClusterServiceVersion>(None).is_empty()
    })
    .await;
    assert_eq!(
        objects_marked_by_opcat(&env),
        BTreeSet::from([crd]),
        "nothing of opcat's remains but the CRD"
    );
    assert!(
        env.api
            .get::<ServiceAccount>(NS, "default")
            .unwrap()
            .image_pull_secrets
            .unwrap_or_default()
            .is_empty()
    );
    assert!(
        env.api
            .get::<ServiceAccount>(NS, "widget-controller")
            .is_none(),
        "created by opcat, deleted with the operator"
    );
    assert!(env.api.get::<Deployment>(NS, "widget-controller").is_none());
    // The sources are untouched.
    assert!(env.api.get::<Secret>(CATALOG_NAMESPACE, SECRET).is_some());
    assert!(env.api.list::<ClusterServiceVersion>(Some(NS)).is_empty());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_in_another_target_namespace_is_created_and_removed_with_the_operator() {
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "watched"]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    // SingleNamespace: the operator in `ops` watches `watched`.
    operator_group(&env, NS, "ops-group", &["watched"]).await;
    let csv = install(&env, NS, PACKAGE, "1.0.0").await;
    env.start_manager();
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    let roles_in = |ns: &str| -> Vec<Role> { env.api.list::<Role>(Some(ns)) };
    let tenant = roles_in("watched");
    assert_eq!(
        tenant.len(),
        2,
        "a Role per permission in the target namespace"
    );
    for role in &tenant {
        assert_eq!(
            role.labels()
                .get("opcat.dev/csv-namespace")
                .map(String::as_str),
            Some(NS)
        );
        assert!(
            role.owner_references().is_empty(),
            "no cross-namespace owner reference"
        );
    }
    assert_eq!(
        roles_in(NS).len(),
        3,
        "and in the operator's own namespace, with the OperatorCondition's Role"
    );

    delete_csv(&env, NS, &csv.name_any()).await;
    wait_gone(&env, NS, &csv.name_any()).await;
    assert!(
        roles_in("watched").is_empty(),
        "removed by the finalizer: no GC would"
    );
    assert!(roles_in(NS).is_empty());
    // Roles in another namespace, created and deleted: the ClusterRole allows all of it.
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
    env.stop_manager().await;
}
