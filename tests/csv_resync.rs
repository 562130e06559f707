//! A converged install at rest (issue 12): resyncs re-check from the watch caches, so a window
//! with several resyncs of every controller holds no GET, no LIST and no write in the API
//! server's request log. Its OperatorCondition too: conditions the operator set and opcat
//! observed, and events on the object that change nothing opcat writes, cost no request.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::time::Duration;

use csv_support::*;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::api::OperatorCondition;
use opcat::controller::context::Settings;
use serde_json::json;
use support::Env;

const NS: &str = "ops";
const PACKAGE: &str = "widget-operator";
const SECRET: &str = "registry-creds";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converged_install_makes_no_reads_or_writes_across_resyncs() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &[SECRET, "mirror-creds"]).await;
    operator_group(&env, NS, "ops-group", &[NS]).await;
    subscription(&env, NS, PACKAGE, None).await;
    install(&env, NS, PACKAGE, "1.0.0").await;
    let settings = Settings {
        resync: Duration::from_millis(500),
        ..Env::settings()
    };
    env.start_manager_with(settings);
    let csv = csv_name(PACKAGE, "1.0.0");
    wait_phase(&env, NS, &csv, Phase::Succeeded).await;
    wait_report(&env, NS, &csv, "PullCredentialsReady", "True").await;
    // The operator reports a condition; opcat observes it into the status.
    let conditions: Api<OperatorCondition> = Api::namespaced(env.client.clone(), NS);
    conditions
        .patch(
            &csv,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"conditions": [{
                "type": "Upgradeable", "status": "True", "reason": "Ready",
                "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"
            }]}})),
        )
        .await
        .unwrap();
    env.wait_for::<OperatorCondition>(NS, &csv, TIMEOUT, |condition| {
        condition
            .status
            .as_ref()
            .and_then(|status| status.condition("Upgradeable"))
            .is_some_and(|observed| observed.observed_generation == condition.metadata.generation)
    })
    .await;
    env.wait_quiet("the install to converge").await;
    // The watch events of the last writes reach the caches.
    tokio::time::sleep(Duration::from_secs(2)).await;

    env.api.reset_counts();
    // An event on the OperatorCondition that changes nothing opcat writes: both of its
    // reconcilers look, from the caches.
    let before_conditions = env.reconciles(opcat::metrics::controllers::OPERATOR_CONDITION);
    conditions
        .patch(
            &csv,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/touched": "yes"}}})),
        )
        .await
        .unwrap();
    env.wait_until("the OperatorCondition reconciled", TIMEOUT, || {
        env.reconciles(opcat::metrics::controllers::OPERATOR_CONDITION) > before_conditions
    })
    .await;
    let before = env.reconciles(opcat::metrics::controllers::CSV);
    env.wait_until("several resyncs of the converged CSV", TIMEOUT, || {
        env.reconciles(opcat::metrics::controllers::CSV) >= before + 6.0
    })
    .await;
    let requests = env.manager_requests_since_reset();
    assert!(
        requests.is_empty(),
        "a converged install must be checked from the caches, without requests; the manager sent:\n{}",
        requests.join("\n")
    );
    let installed = env
        .api
        .get::<opcat::api::ClusterServiceVersion>(NS, &csv)
        .expect("the CSV");
    assert_eq!(installed.name_any(), csv);
    env.stop_manager().await;
}
