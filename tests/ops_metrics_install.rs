//! `/metrics` after a real install: the admin server in front of the manager while a
//! Subscription installs the example operator from the private catalog (real `docker-registry`
//! with basic auth, in-memory API server) and its pull secret is rotated. What an operator of
//! opcat would graph must move: reconciles of every controller, the catalog pull, the copies
//! gauge, the rotation and its propagation lag.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ops_support;
mod subscription_support;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use opcat::admin::{AdminServer, Health, METRICS_CONTENT_TYPE};
use opcat::api::Operator;
use opcat::metrics::controllers;
use opcat::pull_secrets::names::copy_name;
use ops_support::{Family, http_get, parse_openmetrics};
use subscription_support::{CATALOG, CATALOG_NAMESPACE, Fixture, NAMESPACE, PULL_SECRET, TIMEOUT};

/// `/metrics`, parsed by the reference OpenMetrics parser, by family name.
async fn scrape(admin: &AdminServer) -> BTreeMap<String, Family> {
    let (status, content_type, text) = http_get(admin.local_addr(), "/metrics").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(content_type, METRICS_CONTENT_TYPE);
    parse_openmetrics(&text)
        .into_iter()
        .map(|family| (family.name.clone(), family))
        .collect()
}

/// The value of `sample` with exactly `labels` in `families`.
fn value(families: &BTreeMap<String, Family>, sample: &str, labels: &[(&str, &str)]) -> f64 {
    let family_name = sample
        .strip_suffix("_total")
        .or_else(|| sample.strip_suffix("_count"))
        .or_else(|| sample.strip_suffix("_sum"))
        .unwrap_or(sample);
    families
        .get(family_name)
        .unwrap_or_else(|| panic!("no family {family_name} in {:?}", families.keys()))
        .value(sample, labels)
}

/// Managed pull-secret copies in the API server (label `opcat.dev/managed=true`).
fn copies_in_cluster(fixture: &Fixture) -> Vec<Secret> {
    fixture
        .env
        .api
        .list::<Secret>(None)
        .into_iter()
        .filter(|secret| {
            secret
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get("opcat.dev/managed"))
                .is_some_and(|value| value == "true")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_an_install_and_a_rotation_count_what_happened() {
    let mut fixture = Fixture::start().await;
    let metrics = fixture.env.context().metrics.clone();
    let admin = AdminServer::start(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(Health::default()),
        metrics,
    )
    .await
    .expect("admin server");

    fixture.subscribe("widgets", |_| {}).await;
    let csv = "widget-operator.v1.2.0";
    fixture.wait_installed("widgets", csv).await;
    fixture.wait_csv_phase(csv, "Succeeded").await;
    let copy = copy_name(CATALOG_NAMESPACE, CATALOG, PULL_SECRET);

    // Rotate the source: the registry's entry gains an email (copies hold only the entries the
    // operator's images need, so a new entry for another registry would not reach them).
    let mut rotated: serde_json::Value =
        serde_json::from_str(&fixture.right_credentials()).unwrap();
    for entry in rotated["auths"].as_object_mut().unwrap().values_mut() {
        entry["email"] = serde_json::json!("ops@example.com");
    }
    fixture.set_pull_secret(&rotated.to_string()).await;
    let source = fixture
        .env
        .api
        .get::<Secret>(CATALOG_NAMESPACE, PULL_SECRET)
        .unwrap();
    fixture
        .env
        .wait_until("the copy carries the rotated data", TIMEOUT, || {
            fixture
                .env
                .api
                .get::<Secret>(NAMESPACE, &copy)
                .is_some_and(|copy| copy.data == source.data)
        })
        .await;
    // The completion is recorded by the reconcile that wrote the last copy, right after it.
    fixture
        .env
        .wait_until("the rotation is counted", TIMEOUT, || {
            support::metric_value(
                &fixture.env.context().metrics.encode(),
                "opcat_pull_secret_rotations_total",
            ) == Some(1.0)
        })
        .await;

    // The Operator reconciler gathers an install's burst of changes and writes its status a
    // moment after the first one: wait for it, so that it has reconciled before the stop.
    fixture
        .env
        .wait_until(
            "the install's Operator lists its components",
            TIMEOUT,
            || {
                fixture
                    .env
                    .api
                    .get::<Operator>("", &format!("widget-operator.{NAMESPACE}"))
                    .and_then(|operator| operator.status)
                    .is_some_and(|status| status.components.is_some())
            },
        )
        .await;

    // What the running manager has loaded is sampled at scrape time, so read it live.
    let live = scrape(&admin).await;
    assert_eq!(value(&live, "opcat_catalog_index_catalogs", &[]), 1.0);
    // One copy (the install namespace's), as in the cluster.
    assert_eq!(copies_in_cluster(&fixture).len(), 1);
    assert_eq!(value(&live, "opcat_pull_secret_copies", &[]), 1.0);

    // A scrape reads one family after another: a reconcile finishing in between counts in the
    // histogram but not in the counter read before it. Counters are read once the manager has
    // stopped (every in-flight reconcile finished), as one consistent snapshot.
    fixture.env.stop_manager().await;
    let families = scrape(&admin).await;
    for controller in controllers::ALL {
        let reconciles = value(
            &families,
            "opcat_reconcile_total",
            &[("controller", controller)],
        );
        assert!(
            reconciles > 0.0,
            "{controller} reconciled {reconciles} times"
        );
        assert_eq!(
            value(
                &families,
                "opcat_reconcile_duration_seconds_count",
                &[("controller", controller)]
            ),
            reconciles,
            "{controller}: every reconcile is timed"
        );
    }
    assert!(
        value(
            &families,
            "opcat_catalog_pulls_total",
            &[("result", "pulled")]
        ) >= 1.0
    );
    assert_eq!(
        value(
            &families,
            "opcat_catalog_pulls_total",
            &[("result", "failed")]
        ),
        0.0
    );
    assert!(value(&families, "opcat_catalog_pull_bytes_total", &[]) > 0.0);

    // Written twice: created at install, updated by the rotation.
    assert_eq!(
        value(&families, "opcat_pull_secret_copy_writes_total", &[]),
        2.0
    );
    assert_eq!(
        value(&families, "opcat_pull_secret_rotations_total", &[]),
        1.0
    );
    assert_eq!(
        value(&families, "opcat_pull_secret_rotations_pending", &[]),
        0.0
    );
    assert_eq!(
        value(
            &families,
            "opcat_pull_secret_propagation_lag_seconds_count",
            &[]
        ),
        1.0
    );
    let lag = value(
        &families,
        "opcat_pull_secret_propagation_lag_seconds_sum",
        &[],
    );
    assert!(
        lag > 0.0 && lag < TIMEOUT.as_secs_f64(),
        "lag of the one rotation: {lag} s"
    );

    ops_support::assert_allowed_by_rbac(&fixture.env.manager_requests());
}
