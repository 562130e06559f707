//! Idempotence across a manager restart, and the pull-secret report mirrored from the CSV.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod subscription_support;
mod support;

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use opcat::api::ClusterServiceVersion;
use opcat::controller::keys;
use serde_json::json;
use subscription_support::{Fixture, NAMESPACE, condition, plan_csvs};

const CSV: &str = "widget-operator.v1.2.0";

async fn install(fixture: &Fixture) {
    fixture.subscribe("widgets", |_| {}).await;
    fixture.wait_installed("widgets", CSV).await;
    fixture.set_csv_phase(CSV, "Succeeded").await;
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

/// Writes (or removes) the CSV's pull-secret report, as the CSV reconciler would.
async fn set_report(fixture: &Fixture, conditions: Option<serde_json::Value>) {
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(fixture.env.client.clone(), NAMESPACE);
    let value = conditions.map_or(serde_json::Value::Null, |c| c.to_string().into());
    csvs.patch(
        CSV,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {keys::csv::PULL_SECRETS_REPORT: value}}}),
        ),
    )
    .await
    .expect("annotate CSV");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pull_secret_report_of_the_csv_is_mirrored_into_the_subscription() {
    let fixture = Fixture::start().await;
    install(&fixture).await;
    let report = |conditions| set_report(&fixture, conditions);

    report(Some(json!([
        {"type": "PullSecretConflict", "status": "True", "reason": "SecretNameInUse",
         "message": "secret operators/opcat-pull-x exists and is not opcat's"},
        {"type": "PullSecretsNotPropagated", "status": "False", "reason": "Propagated",
         "message": "pull secrets may be copied"},
        {"type": "PullCredentialsReady", "status": "False", "reason": "Unauthorized",
         "message": "image example.com/op:v1: 401"},
    ])))
    .await;
    let subscription = fixture
        .wait_condition("widgets", "PullSecretConflict", "True")
        .await;
    let conflict = condition(&subscription, "PullSecretConflict").unwrap();
    assert_eq!(conflict.reason.as_deref(), Some("SecretNameInUse"));
    assert_eq!(
        conflict.message.as_deref(),
        Some("secret operators/opcat-pull-x exists and is not opcat's")
    );
    let ready = condition(&subscription, "PullCredentialsReady").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("Unauthorized"))
    );
    assert!(condition(&subscription, "PullSecretsNotPropagated").is_some());

    // The conflict is resolved and the conditions with it.
    report(Some(json!([
        {"type": "PullSecretConflict", "status": "False", "reason": "NoConflict", "message": "none"},
        {"type": "PullCredentialsReady", "status": "True", "reason": "ImagesResolvable", "message": "ok"},
    ])))
    .await;
    let subscription = fixture
        .wait_condition("widgets", "PullSecretConflict", "False")
        .await;
    assert!(condition(&subscription, "PullSecretsNotPropagated").is_none());
    assert_eq!(
        condition(&subscription, "PullCredentialsReady")
            .unwrap()
            .status,
        "True"
    );

    // No report, no pull-secret conditions; the others stay.
    report(None).await;
    let subscription = fixture
        .wait_subscription("widgets", "report conditions removed", |sub| {
            condition(sub, "PullSecretConflict").is_none()
                && condition(sub, "PullCredentialsReady").is_none()
        })
        .await;
    assert!(condition(&subscription, "CatalogSourcesUnhealthy").is_some());
}
