//! Pull secrets over an operator's life (issue 6 items 4 and 6): a copy shared by two CSVs
//! outlives the first uninstall and the last one leaves nothing; a manager restart between
//! steps still converges; the preflight reports per image with the propagated credentials.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::collections::BTreeSet;

use csv_support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use opcat::api::ClusterServiceVersion;
use opcat::api::ClusterServiceVersionPhase as Phase;
use support::Env;

const NS: &str = "team-a";
const CREDS: &str = "registry-creds";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_shared_by_two_csvs_outlives_the_first_uninstall_and_the_last_leaves_nothing() {
    let (mut env, widget, gadget) = two_operators_sharing_a_copy().await;
    let copy = copy_name(CREDS);
    let owners = |env: &Env| -> BTreeSet<String> {
        env.api
            .get::<Secret>(NS, &copy)
            .map(|s| {
                s.owner_references()
                    .iter()
                    .map(|o| o.name.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    env.wait_until("the copy is owned by both CSVs", TIMEOUT, || {
        owners(&env).len() == 2
    })
    .await;
    assert_eq!(
        sa_pull_secrets(&env, NS, "gadget-operator"),
        std::slice::from_ref(&copy)
    );
    assert_eq!(
        sa_pull_secrets(&env, NS, "default"),
        std::slice::from_ref(&copy)
    );

    delete_csv(&env, NS, &widget.name_any()).await;
    wait_gone(&env, NS, &widget.name_any()).await;
    assert_eq!(
        owners(&env),
        BTreeSet::from([gadget.name_any()]),
        "kept for the gadget operator"
    );
    assert_eq!(
        sa_pull_secrets(&env, NS, "gadget-operator"),
        std::slice::from_ref(&copy)
    );
    assert!(
        sa_pull_secrets(&env, NS, "default").is_empty(),
        "only the widget operator used default"
    );
    assert_eq!(
        template_pull_secrets(&env, NS, "gadget-operator"),
        std::slice::from_ref(&copy)
    );

    delete_csv(&env, NS, &gadget.name_any()).await;
    wait_gone(&env, NS, &gadget.name_any()).await;
    assert_eq!(
        objects_marked_by_opcat(&env),
        BTreeSet::from([
            "CustomResourceDefinition /gadgets.example.opcat.dev".to_owned(),
            "CustomResourceDefinition /widgets.example.opcat.dev".to_owned(),
        ]),
        "nothing of opcat's remains but the CRDs"
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_restart_between_steps_still_converges() {
    let mut env = Env::new().await;
    catalog_with_secrets(&env, &[CREDS]).await;
    namespaces(&env, &[NS]).await;
    operator_group(&env, NS, "group", &[NS]).await;
    let csv = install(&env, NS, "widget-operator", "1.0.0").await;
    let name = csv.name_any();
    let copy = copy_name(CREDS);

    // Stop as soon as the copy exists: ServiceAccounts and Deployments may not be done.
    env.start_manager();
    env.wait_until("copy created", TIMEOUT, || {
        env.api.get::<Secret>(NS, &copy).is_some()
    })
    .await;
    env.stop_manager().await;
    env.start_manager();
    wait_phase(&env, NS, &name, Phase::Succeeded).await;
    for sa in ["widget-controller", "widget-auditor", "default"] {
        assert_eq!(
            sa_pull_secrets(&env, NS, sa),
            std::slice::from_ref(&copy),
            "{sa}"
        );
    }

    // Stop in the middle of an uninstall: the finalizer holds until a manager finishes.
    delete_csv(&env, NS, &name).await;
    env.stop_manager().await;
    let held = env.api.get::<ClusterServiceVersion>(NS, &name);
    assert!(
        held.is_none()
            || held.is_some_and(|csv| csv.finalizers().iter().any(|f| f == "opcat.dev/cleanup")),
        "either finished or still held by the finalizer"
    );
    env.start_manager();
    wait_gone(&env, NS, &name).await;
    assert_eq!(
        objects_marked_by_opcat(&env),
        BTreeSet::from(["CustomResourceDefinition /widgets.example.opcat.dev".to_owned()])
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preflight_reports_each_image_with_the_propagated_credentials() {
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "team-b"]).await;
    // team-a gets working credentials.
    catalog_with_secrets(&env, &[CREDS]).await;
    operator_group(&env, NS, "group", &[NS]).await;
    let good = install(&env, NS, "widget-operator", "1.0.0").await;
    env.start_manager();
    let csv = wait_report(&env, NS, &good.name_any(), "PullCredentialsReady", "True").await;
    let (_, reason, message) = report(&csv)["PullCredentialsReady"].clone();
    assert_eq!(reason, "ImagesResolvable");
    assert_eq!(message, "1 of 1 images resolved with the pull secrets");

    // A wrong password: reported with image, registry and the copy tried; the install is not
    // blocked (the report is for humans before pods sit in ImagePullBackOff).
    let config = test_registry::dockerconfigjson(
        &env.registry.host,
        support::REGISTRY_USER,
        "wrong-password",
    );
    let api: kube::Api<Secret> = kube::Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    let mut source = api.get(CREDS).await.unwrap();
    source.data = Some(std::collections::BTreeMap::from([(
        ".dockerconfigjson".to_owned(),
        k8s_openapi::ByteString(config.into_bytes()),
    )]));
    api.replace(CREDS, &Default::default(), &source)
        .await
        .unwrap();
    let csv = wait_report(&env, NS, &good.name_any(), "PullCredentialsReady", "False").await;
    let (_, reason, message) = report(&csv)["PullCredentialsReady"].clone();
    assert_eq!(reason, "Unauthorized");
    assert!(message.contains("widget-operator:v1.0.0"), "{message}");
    assert!(
        message.contains(&format!("registry {}", env.registry.host)),
        "{message}"
    );
    assert!(message.contains("(401)"), "{message}");
    assert!(
        message.contains(&copy_name(CREDS)),
        "names the copy pods use: {message}"
    );
    assert_eq!(
        env.api
            .get::<ClusterServiceVersion>(NS, &good.name_any())
            .unwrap()
            .status
            .unwrap()
            .phase,
        Some(Phase::Succeeded)
    );

    // A namespace the catalog may not copy into: its images have no credentials, assumed public.
    patch_catalog(
        &env,
        serde_json::json!({"metadata": {"annotations": {"opcat.dev/propagate-to": "kubernetes.io/metadata.name in (team-a)"}}}),
    )
    .await;
    operator_group(&env, "team-b", "group", &["team-b"]).await;
    let blocked = install(&env, "team-b", "widget-operator", "1.0.0").await;
    let csv = wait_report(
        &env,
        "team-b",
        &blocked.name_any(),
        "PullCredentialsReady",
        "True",
    )
    .await;
    let (_, _, message) = report(&csv)["PullCredentialsReady"].clone();
    assert!(message.contains("no credentials for registry"), "{message}");
    assert!(message.contains("assumed public"), "{message}");
    assert!(
        env.api
            .get::<Deployment>("team-b", "widget-controller")
            .is_some(),
        "not blocked"
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstalls_after_the_catalog_source_is_gone_still_remove_exactly_what_opcat_added() {
    let (mut env, widget, gadget) = two_operators_sharing_a_copy().await;
    let copy = copy_name(CREDS);
    env.wait_until("gadget attached", TIMEOUT, || {
        sa_pull_secrets(&env, NS, "gadget-operator") == std::slice::from_ref(&copy)
    })
    .await;

    let catalogs: kube::Api<opcat::api::CatalogSource> =
        kube::Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    catalogs.delete(CATALOG, &Default::default()).await.unwrap();
    delete_csv(&env, NS, &widget.name_any()).await;
    wait_gone(&env, NS, &widget.name_any()).await;
    assert!(
        sa_pull_secrets(&env, NS, "default").is_empty(),
        "only the widget used default"
    );
    assert_eq!(
        sa_pull_secrets(&env, NS, "gadget-operator"),
        std::slice::from_ref(&copy),
        "the gadget operator still needs it"
    );
    assert!(env.api.get::<Secret>(NS, &copy).is_some());

    delete_csv(&env, NS, &gadget.name_any()).await;
    wait_gone(&env, NS, &gadget.name_any()).await;
    assert_eq!(
        objects_marked_by_opcat(&env),
        BTreeSet::from([
            "CustomResourceDefinition /gadgets.example.opcat.dev".to_owned(),
            "CustomResourceDefinition /widgets.example.opcat.dev".to_owned(),
        ])
    );
    env.stop_manager().await;
}

/// widget-operator and gadget-operator installed in [`NS`] from one catalog, so they share the
/// copy of [`CREDS`], both `Succeeded` under a running manager. No garbage collector: opcat
/// itself must remove what it added.
async fn two_operators_sharing_a_copy() -> (Env, ClusterServiceVersion, ClusterServiceVersion) {
    let mut env = env_without_gc().await;
    catalog_with_secrets(&env, &[CREDS]).await;
    namespaces(&env, &[NS]).await;
    operator_group(&env, NS, "group", &[NS]).await;
    let widget = install(&env, NS, "widget-operator", "1.0.0").await;
    let gadget = install(&env, NS, "gadget-operator", "0.1.0").await;
    env.start_manager();
    wait_phase(&env, NS, &widget.name_any(), Phase::Succeeded).await;
    wait_phase(&env, NS, &gadget.name_any(), Phase::Succeeded).await;
    (env, widget, gadget)
}
