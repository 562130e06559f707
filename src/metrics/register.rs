//! Registration of every series with its name, help text and unit: what `/metrics` documents.

use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use super::Metrics;

/// Registers each of `metrics`' series in `registry`.
pub(super) fn series(registry: &mut Registry, metrics: &Metrics) {
    registry.register(
        "build",
        "opcat version",
        Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
    );
    registry.register(
        "reconcile",
        "Reconciles finished (successful or failed), per controller",
        metrics.reconciles.clone(),
    );
    registry.register(
        "reconcile_errors",
        "Reconciles that failed, per controller and error kind (a bounded classification, \
         never the message); expected waits are not errors",
        metrics.reconcile_errors.clone(),
    );
    registry.register_with_unit(
        "reconcile_duration",
        "Time one reconcile took, per controller",
        Unit::Seconds,
        metrics.reconcile_duration.clone(),
    );
    registry.register(
        "queue_depth",
        "Reconciles started and not finished yet, per controller. Objects waiting for a free \
         worker inside kube-runtime's scheduler are not visible to opcat and not counted; a \
         value stuck at --concurrency means work is queueing behind it",
        metrics.queue_depth.clone(),
    );
    registry.register(
        "catalog_pulls",
        "Catalog image loads by result: pulled from the registry, found in the on-disk cache, \
         or failed",
        metrics.catalog_pulls.clone(),
    );
    registry.register_with_unit(
        "catalog_pull",
        "Bytes downloaded from registries for catalog images",
        Unit::Bytes,
        metrics.catalog_pull_bytes.clone(),
    );
    registry.register(
        "catalog_index_catalogs",
        "CatalogSources whose catalog is loaded in memory",
        metrics.catalog_index_catalogs.clone(),
    );
    registry.register(
        "catalog_index_packages",
        "Packages across the catalogs loaded in memory",
        metrics.catalog_index_packages.clone(),
    );
    registry.register(
        "catalog_index_bundles",
        "Bundles across the catalogs loaded in memory",
        metrics.catalog_index_bundles.clone(),
    );
    registry.register(
        "leader",
        "1 while this replica holds the leader lease and reconciles (always 1 without \
         --leader-elect), 0 on a standby",
        metrics.leader.clone(),
    );
    registry.register(
        "pull_secret_copies",
        "Pull-secret copies opcat manages (Secrets labelled opcat.dev/managed=true)",
        metrics.pull_secret_copies.clone(),
    );
    registry.register(
        "pull_secret_copy_writes",
        "Pull-secret copies created or updated",
        metrics.pull_secret_copy_writes.clone(),
    );
    registry.register(
        "pull_secret_rotations",
        "Source pull-secret changes whose copies were all updated",
        metrics.pull_secret_rotations.clone(),
    );
    registry.register(
        "pull_secret_rotations_pending",
        "Source pull-secret changes observed whose copies are not all updated yet",
        metrics.pull_secret_rotations_pending.clone(),
    );
    registry.register_with_unit(
        "pull_secret_propagation_lag",
        "Time from a source pull-secret change being observed to all its copies updated",
        Unit::Seconds,
        metrics.pull_secret_propagation_lag.clone(),
    );
}
