//! The Operator API (`operators.coreos.com/v1` Operator, as OLM's operator and adoption
//! controllers keep it): an install has one Operator `<package>.<namespace>` whose
//! `status.components` lists every object labelled `operators.coreos.com/<package>.<namespace>`
//! (exactly those), with their conditions; it comes back when deleted while the install exists,
//! goes once nothing of the install is left, and a converged cluster is checked without a
//! request. A CRD two installs share is a component of both, and keeps the other's label when
//! one is uninstalled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod subscription_support;
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use opcat::api::operator::component_selector;
use opcat::api::{ClusterServiceVersion, InstallPlan, Operator, OperatorCondition, Subscription};
use serde::de::DeserializeOwned;
use subscription_support::{Fixture, NAMESPACE, TIMEOUT};
use support::Env;

const PACKAGE: &str = "widget-operator";
const CRD: &str = "widgets.example.opcat.dev";

/// `(kind, namespace, name)` of a component.
type Component = (String, Option<String>, String);

fn labelled_of<K>(env: &Env, key: &str, found: &mut BTreeSet<Component>)
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    for object in env.api.list::<K>(None) {
        if object.labels().contains_key(key) {
            found.insert((
                K::kind(&()).into_owned(),
                object.meta().namespace.clone(),
                object.name_any(),
            ));
        }
    }
}

/// Every object in the cluster labelled `key`, of the kinds an install has.
fn labelled(env: &Env, key: &str) -> BTreeSet<Component> {
    let mut found = BTreeSet::new();
    labelled_of::<Subscription>(env, key, &mut found);
    labelled_of::<ClusterServiceVersion>(env, key, &mut found);
    labelled_of::<InstallPlan>(env, key, &mut found);
    labelled_of::<OperatorCondition>(env, key, &mut found);
    labelled_of::<Deployment>(env, key, &mut found);
    labelled_of::<ServiceAccount>(env, key, &mut found);
    labelled_of::<Secret>(env, key, &mut found);
    labelled_of::<Service>(env, key, &mut found);
    labelled_of::<ConfigMap>(env, key, &mut found);
    labelled_of::<Role>(env, key, &mut found);
    labelled_of::<RoleBinding>(env, key, &mut found);
    labelled_of::<ClusterRole>(env, key, &mut found);
    labelled_of::<ClusterRoleBinding>(env, key, &mut found);
    labelled_of::<CustomResourceDefinition>(env, key, &mut found);
    found
}

/// The components an Operator's status lists.
fn refs(operator: &Operator) -> BTreeSet<Component> {
    operator
        .status
        .iter()
        .flat_map(|status| status.components.iter())
        .flat_map(|components| components.refs.iter().flatten())
        .map(|reference| {
            (
                reference.kind.clone().unwrap_or_default(),
                reference.namespace.clone(),
                reference.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn key(namespace: &str) -> String {
    format!("operators.coreos.com/{PACKAGE}.{namespace}")
}

/// Waits until the Operator of the install in `namespace` lists exactly the labelled objects
/// (and at least `kinds`).
async fn wait_operator_in_line(env: &Env, namespace: &str, kinds: &[&str]) -> Operator {
    let name = format!("{PACKAGE}.{namespace}");
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let operator = env.api.get::<Operator>("", &name);
        let expected = labelled(env, &key(namespace));
        if let Some(operator) = &operator {
            let listed = refs(operator);
            let has_kinds = kinds
                .iter()
                .all(|kind| listed.iter().any(|(found, _, _)| found == kind));
            if listed == expected && has_kinds {
                return operator.clone();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Operator {name} not in line with the labelled objects: {:#?}\nlabelled: {expected:#?}",
            operator.as_ref().map(refs)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn install(fixture: &Fixture, namespace: &str) -> String {
    fixture
        .subscribe_in(namespace, PACKAGE, |spec| {
            spec.package = PACKAGE.into();
        })
        .await;
    let subscription = fixture
        .env
        .wait_for::<Subscription>(namespace, PACKAGE, TIMEOUT, |subscription| {
            subscription
                .status
                .as_ref()
                .is_some_and(|status| status.installed_csv.is_some())
        })
        .await;
    let csv = subscription.status.unwrap().installed_csv.unwrap();
    fixture
        .env
        .wait_for::<ClusterServiceVersion>(namespace, &csv, TIMEOUT, |csv| {
            csv.status
                .as_ref()
                .and_then(|status| status.phase)
                .is_some_and(|phase| phase.as_str() == "Succeeded")
        })
        .await;
    csv
}

async fn uninstall(env: &Env, namespace: &str, csv: &str) {
    let subscriptions: Api<Subscription> = Api::namespaced(env.client.clone(), namespace);
    subscriptions
        .delete(PACKAGE, &DeleteParams::default())
        .await
        .unwrap();
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(env.client.clone(), namespace);
    csvs.delete(csv, &DeleteParams::default()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_is_an_operator_of_every_labelled_object_and_goes_with_it() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    let csv = install(&fixture, NAMESPACE).await;
    let operator = wait_operator_in_line(
        env,
        NAMESPACE,
        &[
            "Subscription",
            "ClusterServiceVersion",
            "InstallPlan",
            "Deployment",
            "ServiceAccount",
            "CustomResourceDefinition",
            "Secret",
            "OperatorCondition",
        ],
    )
    .await;
    let components = operator.status.unwrap().components.unwrap();
    assert_eq!(
        components.label_selector,
        Some(component_selector(&format!("{PACKAGE}.{NAMESPACE}")))
    );
    let refs = components.refs.unwrap();
    let sorted = {
        let mut sorted = refs.clone();
        sorted.sort_by(|a, b| {
            (&a.kind, &a.api_version, &a.namespace, &a.name).cmp(&(
                &b.kind,
                &b.api_version,
                &b.namespace,
                &b.name,
            ))
        });
        sorted
    };
    assert_eq!(
        refs, sorted,
        "refs sorted by kind, apiVersion, namespace, name"
    );
    // The CSV's condition is its phase, as OLM writes it.
    let csv_ref = refs
        .iter()
        .find(|r| r.kind.as_deref() == Some("ClusterServiceVersion"))
        .unwrap();
    assert_eq!(csv_ref.name.as_deref(), Some(csv.as_str()));
    assert_eq!(
        csv_ref.api_version.as_deref(),
        Some("operators.coreos.com/v1alpha1")
    );
    let condition = &csv_ref.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (condition.type_.as_str(), condition.status.as_str()),
        ("Succeeded", "True")
    );
    assert_eq!(condition.reason.as_deref(), Some("InstallSucceeded"));
    // A Deployment's conditions are copied.
    let deployment = refs
        .iter()
        .find(|r| r.kind.as_deref() == Some("Deployment"))
        .unwrap();
    assert!(
        deployment
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        "{deployment:?}"
    );
    // The pull-secret copy is a component.
    assert!(
        refs.iter().any(|r| r.kind.as_deref() == Some("Secret")
            && env
                .api
                .get::<Secret>(NAMESPACE, r.name.as_deref().unwrap())
                .is_some_and(|secret| secret.labels().contains_key("opcat.dev/managed"))),
        "{refs:#?}"
    );

    // Converged: checked from the caches, without a request.
    env.wait_quiet("the install to converge").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    env.api.reset_counts();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = env.manager_requests_since_reset();
    assert!(
        requests.is_empty(),
        "requests at steady state:\n{}",
        requests.join("\n")
    );

    // Deleted while installed: it comes back.
    let operators: Api<Operator> = Api::all(env.client.clone());
    let name = format!("{PACKAGE}.{NAMESPACE}");
    let uid = operators.get(&name).await.unwrap().uid();
    operators
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    env.wait_until("the Operator back", TIMEOUT, || {
        env.api
            .get::<Operator>("", &name)
            .is_some_and(|operator| operator.uid() != uid)
    })
    .await;
    wait_operator_in_line(env, NAMESPACE, &["ClusterServiceVersion"]).await;

    // Uninstalled: the Operator goes, and nothing is left labelled but the CRD's... nothing.
    uninstall(env, NAMESPACE, &csv).await;
    env.wait_until("the Operator gone", TIMEOUT, || {
        env.api.get::<Operator>("", &name).is_none()
    })
    .await;
    let left: Vec<_> = labelled(env, &key(NAMESPACE))
        .into_iter()
        .filter(|(kind, _, _)| kind != "InstallPlan")
        .collect();
    assert!(left.is_empty(), "left labelled: {left:?}");
    assert!(
        !env.api
            .get::<CustomResourceDefinition>("", CRD)
            .expect("CRDs are kept")
            .labels()
            .contains_key(&key(NAMESPACE))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_two_installs_share_is_a_component_of_both_until_one_goes() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    fixture.tenant("team-b").await;
    let csv_a = install(&fixture, NAMESPACE).await;
    install(&fixture, "team-b").await;
    for namespace in [NAMESPACE, "team-b"] {
        wait_operator_in_line(env, namespace, &["CustomResourceDefinition"]).await;
    }
    let crd = env.api.get::<CustomResourceDefinition>("", CRD).unwrap();
    for namespace in [NAMESPACE, "team-b"] {
        assert!(
            crd.labels().contains_key(&key(namespace)),
            "{:?}",
            crd.labels()
        );
    }

    uninstall(env, NAMESPACE, &csv_a).await;
    env.wait_until("the first install's Operator gone", TIMEOUT, || {
        env.api
            .get::<Operator>("", &format!("{PACKAGE}.{NAMESPACE}"))
            .is_none()
    })
    .await;
    let crd = env.api.get::<CustomResourceDefinition>("", CRD).unwrap();
    assert!(
        !crd.labels().contains_key(&key(NAMESPACE)),
        "{:?}",
        crd.labels()
    );
    assert!(
        crd.labels().contains_key(&key("team-b")),
        "{:?}",
        crd.labels()
    );
    wait_operator_in_line(env, "team-b", &["CustomResourceDefinition"]).await;
}
