//! Tests of the metrics as Prometheus sees them: through the encoded text.

use std::time::Duration;

use super::*;

#[derive(Debug, thiserror::Error)]
#[error("test failure")]
struct Failure(&'static str);

impl ReconcileFailure for Failure {
    fn kind(&self) -> &'static str {
        self.0
    }
    fn is_transient(&self) -> bool {
        true
    }
}

/// The value of the sample line that starts with `prefix` (name and labels).
fn value(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(prefix)?.trim().parse().ok())
}

#[tokio::test]
async fn reconciles_are_counted_timed_and_errors_labelled_by_kind() {
    let metrics = Metrics::new();
    let ok: Result<Action, Failure> = metrics
        .instrument(controllers::CSV, async { Ok(Action::await_change()) })
        .await;
    assert!(ok.is_ok());
    let failed = metrics
        .instrument(controllers::CSV, async {
            Err::<Action, _>(Failure("api_conflict"))
        })
        .await;
    assert!(failed.is_err());

    let text = metrics.encode();
    assert_eq!(
        value(
            &text,
            r#"opcat_reconcile_total{controller="clusterserviceversion"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            r#"opcat_reconcile_errors_total{controller="clusterserviceversion",error_kind="api_conflict"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            r#"opcat_reconcile_duration_seconds_count{controller="clusterserviceversion"}"#
        ),
        Some(2.0)
    );
    // Every controller's series exists before its first reconcile.
    assert_eq!(
        value(&text, r#"opcat_reconcile_total{controller="subscription"}"#),
        Some(0.0)
    );
    assert_eq!(
        value(&text, r#"opcat_queue_depth{controller="csv"}"#),
        None,
        "labels are the constants, nothing else"
    );
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
}

#[tokio::test]
async fn queue_depth_counts_running_reconciles_and_abandoned_ones_leave() {
    let metrics = std::sync::Arc::new(Metrics::new());
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            metrics
                .instrument(controllers::SUBSCRIPTION, async move {
                    let _ = released.await;
                    Ok::<_, Failure>(Action::await_change())
                })
                .await
        })
    };
    let depth = r#"opcat_queue_depth{controller="subscription"}"#;
    for _ in 0..100 {
        if value(&metrics.encode(), depth) == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(value(&metrics.encode(), depth), Some(1.0));
    let _ = release.send(());
    assert!(running.await.is_ok());
    assert_eq!(value(&metrics.encode(), depth), Some(0.0));

    // Abandoned (dropped) reconciles are not counted as finished, and leave the gauge.
    let abandoned = metrics.instrument(controllers::SUBSCRIPTION, async {
        std::future::pending::<Result<Action, Failure>>().await
    });
    let timed_out = tokio::time::timeout(Duration::from_millis(20), abandoned).await;
    assert!(timed_out.is_err());
    let text = metrics.encode();
    assert_eq!(value(&text, depth), Some(0.0));
    assert_eq!(
        value(&text, r#"opcat_reconcile_total{controller="subscription"}"#),
        Some(1.0)
    );
}

#[test]
fn catalog_pulls_count_results_and_bytes() {
    let metrics = Metrics::new();
    metrics.catalog_pulled(1_000, PullResult::Pulled);
    metrics.catalog_pulled(0, PullResult::Cached);
    metrics.catalog_pulled(0, PullResult::Failed);
    metrics.catalog_pulled(500, PullResult::Pulled);
    let text = metrics.encode();
    assert_eq!(
        value(&text, r#"opcat_catalog_pulls_total{result="pulled"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(&text, r#"opcat_catalog_pulls_total{result="cached"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(&text, r#"opcat_catalog_pulls_total{result="failed"}"#),
        Some(1.0)
    );
    assert_eq!(value(&text, "opcat_catalog_pull_bytes_total"), Some(1500.0));
}

#[test]
fn sampled_gauges_follow_the_running_manager_and_drop_to_zero_without_one() {
    let metrics = Metrics::new();
    assert_eq!(
        value(&metrics.encode(), "opcat_catalog_index_bundles"),
        Some(0.0)
    );
    let manager = std::sync::Arc::new(());
    let weak = std::sync::Arc::downgrade(&manager);
    metrics.set_sampler(move || {
        weak.upgrade().map(|_| Sample {
            catalogs: 2,
            packages: 5,
            bundles: 17,
            pull_secret_copies: 3,
        })
    });
    let text = metrics.encode();
    assert_eq!(value(&text, "opcat_catalog_index_catalogs"), Some(2.0));
    assert_eq!(value(&text, "opcat_catalog_index_packages"), Some(5.0));
    assert_eq!(value(&text, "opcat_catalog_index_bundles"), Some(17.0));
    assert_eq!(value(&text, "opcat_pull_secret_copies"), Some(3.0));
    drop(manager);
    let text = metrics.encode();
    assert_eq!(value(&text, "opcat_catalog_index_bundles"), Some(0.0));
    assert_eq!(value(&text, "opcat_pull_secret_copies"), Some(0.0));
}

#[test]
fn propagation_lag_is_measured_from_the_first_unpropagated_change() {
    let metrics = Metrics::new();
    let t0 = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let at = |seconds: i64| {
        t0.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(t0)
    };
    metrics.rotation_observed("olm", "registry-creds", at(0));
    // A second change before the copies caught up does not restart the clock.
    metrics.rotation_observed("olm", "registry-creds", at(3));
    metrics.rotation_observed("olm", "other", at(1));
    let text = metrics.encode();
    assert_eq!(
        value(&text, "opcat_pull_secret_rotations_pending"),
        Some(2.0)
    );

    metrics.rotation_completed("olm", "registry-creds", at(5));
    // Completing again (another reconcile) records nothing new.
    metrics.rotation_completed("olm", "registry-creds", at(9));
    metrics.rotation_abandoned("olm", "other");
    metrics.copies_written(4);
    let text = metrics.encode();
    assert_eq!(value(&text, "opcat_pull_secret_rotations_total"), Some(1.0));
    assert_eq!(
        value(&text, "opcat_pull_secret_rotations_pending"),
        Some(0.0)
    );
    assert_eq!(
        value(&text, "opcat_pull_secret_propagation_lag_seconds_sum"),
        Some(5.0)
    );
    assert_eq!(
        value(
            &text,
            r#"opcat_pull_secret_propagation_lag_seconds_bucket{le="3.2"}"#
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &text,
            r#"opcat_pull_secret_propagation_lag_seconds_bucket{le="6.4"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&text, "opcat_pull_secret_copy_writes_total"),
        Some(4.0)
    );
}

#[test]
fn pending_rotations_are_bounded() {
    let metrics = Metrics::new();
    for index in 0..MAX_PENDING_ROTATIONS + 10 {
        metrics.rotation_observed("ns", &format!("secret-{index}"), Timestamp::UNIX_EPOCH);
    }
    assert_eq!(
        value(&metrics.encode(), "opcat_pull_secret_rotations_pending"),
        Some(MAX_PENDING_ROTATIONS as f64)
    );
}

#[test]
fn leader_gauge_and_build_info() {
    let metrics = Metrics::new();
    assert!(!metrics.is_leader());
    metrics.set_leader(true);
    assert!(metrics.is_leader());
    let text = metrics.encode();
    assert_eq!(value(&text, "opcat_leader"), Some(1.0));
    assert!(text.contains(&format!(
        "opcat_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    )));
}
