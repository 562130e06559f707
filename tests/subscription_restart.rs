//! Idempotence across a manager restart, and the pull-secret report mirrored from the CSV.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod subscription_support;
mod support;

use std::time::Duration;

use fake_apiserver::{Fault, Verb};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;
use subscription_support::{Fixture, NAMESPACE, condition, plan_csvs, plan_phase};

const CSV: &str = "widget-operator.v1.2.0";

async fn install(fixture: &Fixture) {
    fixture.subscribe("widgets", |_| {}).await;
    fixture.wait_installed("widgets", CSV).await;
    fixture.wait_csv_phase(CSV, "Succeeded").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_of_a_converged_cluster_writes_nothing_and_creates_no_second_plan() {
    let mut fixture = Fixture::start().await;
    install(&fixture).await;
    fixture
        .assert_no_writes_for(Duration::from_secs(2), "converged before the restart")
        .await;

    fixture.env.stop_manager().await;
    fixture
        .env
        .start_manager_with(opcat::controller::context::Settings {
            resync: Duration::from_millis(500),
            ..support::Env::settings()
        });
    // The new process restores the catalog from its disk cache (the CatalogSource stays READY,
    // no registry pull), the Subscription waits quietly until it is back, and nothing is
    // rewritten: a restart of a converged cluster makes zero writes.
    fixture
        .assert_no_writes_for(Duration::from_secs(4), "restarted")
        .await;
    assert!(
        fixture
            .env
            .context()
            .catalogs
            .get(
                subscription_support::CATALOG_NAMESPACE,
                subscription_support::CATALOG
            )
            .is_some(),
        "the catalog is loaded again after the restart"
    );
    assert_eq!(plan_csvs(&fixture.plans()), [CSV]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pull_secret_report_of_the_csv_is_mirrored_into_the_subscription() {
    let fixture = Fixture::start().await;
    // A Secret that is not opcat's already holds the name of the pull-secret copy.
    let copy = opcat::pull_secrets::names::copy_name(
        subscription_support::CATALOG_NAMESPACE,
        subscription_support::CATALOG,
        subscription_support::PULL_SECRET,
    );
    let mut foreign = fixture.env.pull_secret(NAMESPACE, &copy);
    foreign.data = Some(
        [(
            ".dockerconfigjson".to_owned(),
            k8s_openapi::ByteString(b"{\"auths\":{}}".to_vec()),
        )]
        .into(),
    );
    fixture.env.create(&foreign).await;
    install(&fixture).await;

    // The installer reports the conflict on the CSV; the Subscription shows it.
    let subscription = fixture
        .wait_condition("widgets", "PullSecretConflict", "True")
        .await;
    let conflict = condition(&subscription, "PullSecretConflict").unwrap();
    assert_eq!(conflict.reason.as_deref(), Some("SecretNameInUse"));
    assert!(
        conflict
            .message
            .as_deref()
            .unwrap_or_default()
            .contains(&copy),
        "the condition names the Secret: {conflict:?}"
    );
    let stored: Secret = fixture.env.api.get(NAMESPACE, &copy).unwrap();
    assert_eq!(
        stored.data, foreign.data,
        "the foreign Secret is left untouched"
    );
    assert!(condition(&subscription, "PullCredentialsReady").is_some());

    // The owner removes it: opcat creates its copy and the conflict clears on the Subscription.
    let secrets: Api<Secret> = Api::namespaced(fixture.env.client.clone(), NAMESPACE);
    secrets
        .delete(&copy, &Default::default())
        .await
        .expect("delete foreign secret");
    let subscription = fixture
        .wait_condition("widgets", "PullSecretConflict", "False")
        .await;
    assert_eq!(
        condition(&subscription, "PullSecretConflict")
            .unwrap()
            .reason
            .as_deref(),
        Some("NoConflict")
    );
    let copied: Secret = fixture.env.api.get(NAMESPACE, &copy).unwrap();
    assert_eq!(copied.labels()["opcat.dev/managed"], "true");
    assert!(condition(&subscription, "CatalogSourcesUnhealthy").is_some());
}

/// A restart in the middle of an install: the first process created the InstallPlan but stopped
/// before reconciling it (no status), and the new process's CSV watch lists late (its first
/// list fails), so the Subscription reconcile starts before the stores it decides from are
/// ready and waits for them while other tasks check the stores too (the CSV reconciler and the
/// readiness probe do). It must be woken: the install finishes with the same plan, and the
/// manager then stops promptly (a reconcile left waiting would hold the graceful stop until
/// its deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_install_finishes_the_install_and_stops_promptly() {
    let mut fixture = Fixture::start().await;
    // The first process: its InstallPlan status writes never land.
    fixture.env.api.inject_failure(
        Fault::new(500)
            .verb(Verb::Patch)
            .resource("installplans")
            .times(usize::MAX),
    );
    fixture.subscribe("widgets", |_| {}).await;
    fixture
        .env
        .wait_until(
            "the InstallPlan is created",
            Duration::from_secs(60),
            || !fixture.plans_for(CSV).is_empty(),
        )
        .await;
    fixture.env.stop_manager().await;
    fixture.env.api.clear_failures();
    let plans = fixture.plans();
    assert_eq!(plan_csvs(&plans), [CSV]);
    assert_eq!(
        plan_phase(&plans[0]),
        "",
        "left unreconciled by the first process"
    );

    // The second process, whose CSV watch lists only after a retry.
    start_with_late_list(&mut fixture, "clusterserviceversions").await;
    fixture.wait_installed("widgets", CSV).await;
    assert_eq!(
        fixture.plans().iter().map(name_any).collect::<Vec<_>>(),
        plans.iter().map(name_any).collect::<Vec<_>>(),
        "the restart made no second InstallPlan"
    );
    fixture.env.wait_quiet("installed after the restart").await;
    assert_stops_promptly(&mut fixture).await;
}

fn name_any(plan: &opcat::api::InstallPlan) -> String {
    plan.name_any()
}

/// Starts a new manager whose first list of `resource` fails (that watch lists after its
/// retry, so the reconciles that start at once wait for it), and waits until every store
/// listed.
async fn start_with_late_list(fixture: &mut Fixture, resource: &str) {
    fixture
        .env
        .api
        .inject_failure(Fault::new(500).verb(Verb::List).resource(resource));
    fixture.env.reopen_registry();
    fixture.env.start_manager();
    let context = fixture.env.context();
    fixture
        .env
        .wait_until(
            &format!("the stores list after the {resource} watch's retry"),
            Duration::from_secs(60),
            || context.stores.is_ready(),
        )
        .await;
}

/// The graceful stop finishes: no reconcile is left in flight.
async fn assert_stops_promptly(fixture: &mut Fixture) {
    assert!(
        fixture
            .env
            .stop_manager_within(Duration::from_secs(10))
            .await,
        "the manager stops without waiting for a forgotten reconcile"
    );
}

/// `opcat run` after a restart, then a pull-secret rotation, then SIGTERM: the stop waits only
/// for reconciles in flight. Here the namespace watch lists late (its first list fails), so the
/// OperatorGroup reconcile that starts with the new manager waits for the stores while others
/// check them; had it missed its wake-up it would sit in flight, unseen (the OperatorGroup's
/// status was already right), and the graceful stop would wait for it until its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_and_a_rotation_the_manager_stops_promptly() {
    let mut fixture = Fixture::start().await;
    install(&fixture).await;
    fixture.env.stop_manager().await;

    start_with_late_list(&mut fixture, "namespaces").await;
    fixture.env.wait_quiet("restarted").await;

    // Rotation: the same credentials with an e-mail added reach the copy in place. (The copy
    // holds the entries the operator needs, re-encoded: compared as JSON, not as bytes.)
    let mut rotated: serde_json::Value =
        serde_json::from_str(&fixture.right_credentials()).unwrap();
    for entry in rotated["auths"].as_object_mut().unwrap().values_mut() {
        entry["email"] = "rotated@example.com".into();
    }
    fixture.set_pull_secret(&rotated.to_string()).await;
    let copy = opcat::pull_secrets::names::copy_name(
        subscription_support::CATALOG_NAMESPACE,
        subscription_support::CATALOG,
        subscription_support::PULL_SECRET,
    );
    fixture
        .env
        .wait_until(
            "the copy carries the rotated data",
            Duration::from_secs(60),
            || {
                fixture
                    .env
                    .api
                    .get::<Secret>(NAMESPACE, &copy)
                    .and_then(|secret| secret.data)
                    .and_then(|data| data.get(".dockerconfigjson").cloned())
                    .and_then(|value| serde_json::from_slice::<serde_json::Value>(&value.0).ok())
                    .is_some_and(|copied| copied == rotated)
            },
        )
        .await;
    fixture.env.wait_quiet("rotated").await;
    assert_stops_promptly(&mut fixture).await;
}
