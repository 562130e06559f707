//! A converged install at rest (issue 12): resyncs re-check from the watch caches, so a window
//! with several resyncs of every controller holds no GET, no LIST and no write in the API
//! server's request log.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::time::Duration;

use csv_support::*;
use fake_apiserver::Verb;
use kube::ResourceExt;
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::controller::context::Settings;
use support::{Env, MANAGER_AGENT};

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
    env.wait_quiet("the install to converge").await;
    // The watch events of the last writes reach the caches.
    tokio::time::sleep(Duration::from_secs(2)).await;

    env.api.reset_counts();
    let before = env.reconciles(opcat::metrics::controllers::CSV);
    env.wait_until("several resyncs of the converged CSV", TIMEOUT, || {
        env.reconciles(opcat::metrics::controllers::CSV) >= before + 6.0
    })
    .await;
    let requests: Vec<String> = env
        .api
        .request_log()
        .into_iter()
        .filter(|request| request.agent.as_deref() == Some(MANAGER_AGENT))
        .filter(|request| request.key.verb != Verb::Watch)
        .map(|request| request.describe())
        .collect();
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
