//! Prometheus metrics, served by the admin server at `/metrics` in the OpenMetrics text format.
//!
//! One [`Metrics`] per process, shared by every leadership term through
//! `controller::context::Context::metrics`. Label values are bounded: controller names are
//! `&'static str` constants ([`controllers`]), error kinds are `ReconcileFailure::kind()`, pull
//! results are [`PullResult`]; an error message never becomes a label.
//!
//! Counters and histograms are updated by the code that does the work (the reconcile wrapper
//! [`Metrics::instrument`], and the methods the reconcilers call). Gauges describing what is
//! loaded (catalog index size, pull-secret copies) are sampled at scrape time from the running
//! manager through [`Metrics::set_sampler`], so they cannot drift from the truth.

mod register;
mod rotations;

use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::time::Instant;

use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::failure::ReconcileFailure;
use crate::timing::elapsed;

/// The `controller` label values. Reconcilers pass one of these to [`Metrics::instrument`].
pub mod controllers {
    /// The CatalogSource reconciler.
    pub const CATALOG_SOURCE: &str = "catalogsource";
    /// The Subscription reconciler.
    pub const SUBSCRIPTION: &str = "subscription";
    /// The InstallPlan reconciler.
    pub const INSTALL_PLAN: &str = "installplan";
    /// The ClusterServiceVersion reconciler (the installer).
    pub const CSV: &str = "clusterserviceversion";
    /// The OperatorGroup controller (target namespaces in `status.namespaces`).
    pub const OPERATOR_GROUP: &str = "operatorgroup";
    /// The OperatorCondition status writer (`spec.conditions` observed into the status).
    pub const OPERATOR_CONDITION: &str = "operatorcondition";
    /// The copied-CSV reconciler (copies of a CSV in its target namespaces, OLMConfig status).
    pub const COPIED_CSV: &str = "copiedcsv";
    /// The Operator reconciler (one `operators.coreos.com/v1` Operator per install).
    pub const OPERATOR: &str = "operator";
    /// Every controller, so their series exist (at zero) from the start.
    pub const ALL: [&str; 8] = [
        CATALOG_SOURCE,
        SUBSCRIPTION,
        INSTALL_PLAN,
        CSV,
        OPERATOR_GROUP,
        OPERATOR_CONDITION,
        COPIED_CSV,
        OPERATOR,
    ];
}

pub use self::rotations::MAX_PENDING_ROTATIONS;
use self::rotations::PendingRotations;

/// The outcome of loading a catalog image, the `result` label of `opcat_catalog_pulls_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PullResult {
    /// Pulled from the registry, verified and unpacked.
    Pulled,
    /// The digest was already in the on-disk cache; nothing was downloaded.
    Cached,
    /// The pull failed (registry, credentials, digest verification, unpack).
    Failed,
}

impl PullResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pulled => "pulled",
            Self::Cached => "cached",
            Self::Failed => "failed",
        }
    }
}

/// What the running manager has loaded, read at scrape time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// CatalogSources whose catalog is loaded.
    pub catalogs: usize,
    /// Packages across the loaded catalogs.
    pub packages: usize,
    /// Bundles across the loaded catalogs.
    pub bundles: usize,
    /// Pull-secret copies opcat manages (label `opcat.dev/managed=true`).
    pub pull_secret_copies: usize,
}

type Sampler = Box<dyn Fn() -> Option<Sample> + Send + Sync>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: &'static str,
    error_kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PullLabels {
    result: &'static str,
}

fn reconcile_buckets() -> Histogram {
    // 5 ms .. ~82 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

/// The process's metrics. Cheap to share behind an `Arc`.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ControllerLabels, Counter>,
    reconcile_errors: Family<ErrorLabels, Counter>,
    reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    queue_depth: Family<ControllerLabels, Gauge>,
    catalog_pulls: Family<PullLabels, Counter>,
    catalog_pull_bytes: Counter,
    catalog_index_catalogs: Gauge,
    catalog_index_packages: Gauge,
    catalog_index_bundles: Gauge,
    leader: Gauge,
    pull_secret_copies: Gauge,
    pull_secret_copy_writes: Counter,
    pull_secret_rotations: Counter,
    pull_secret_rotations_pending: Gauge,
    pull_secret_propagation_lag: Histogram,
    pending_rotations: Mutex<PendingRotations>,
    sampler: Mutex<Option<Sampler>>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every series (names prefixed `opcat_`).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("opcat");
        let metrics = Self {
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_duration: Family::new_with_constructor(reconcile_buckets),
            queue_depth: Family::default(),
            catalog_pulls: Family::default(),
            catalog_pull_bytes: Counter::default(),
            catalog_index_catalogs: Gauge::default(),
            catalog_index_packages: Gauge::default(),
            catalog_index_bundles: Gauge::default(),
            leader: Gauge::default(),
            pull_secret_copies: Gauge::default(),
            pull_secret_copy_writes: Counter::default(),
            pull_secret_rotations: Counter::default(),
            pull_secret_rotations_pending: Gauge::default(),
            // 100 ms .. ~205 s.
            pull_secret_propagation_lag: Histogram::new(exponential_buckets(0.1, 2.0, 12)),
            pending_rotations: Mutex::new(PendingRotations::default()),
            sampler: Mutex::new(None),
            registry: Registry::default(),
        };
        register::series(&mut registry, &metrics);
        for controller in controllers::ALL {
            let labels = ControllerLabels { controller };
            // Creating the series is the point; the returned guards are not needed.
            let _ = metrics.reconciles.get_or_create(&labels);
            let _ = metrics.reconcile_duration.get_or_create(&labels);
            let _ = metrics.queue_depth.get_or_create(&labels);
        }
        for result in [PullResult::Pulled, PullResult::Cached, PullResult::Failed] {
            let _ = metrics.catalog_pulls.get_or_create(&PullLabels {
                result: result.as_str(),
            });
        }
        Self {
            registry,
            ..metrics
        }
    }

    /// Runs one reconcile and records it: duration, outcome (errors by `kind()`), and the
    /// in-flight count (decremented even when the reconcile is abandoned, i.e. dropped).
    /// `controller::wiring` wraps every controller's reconcile in it.
    pub async fn instrument<E, F>(
        &self,
        controller: &'static str,
        reconcile: F,
    ) -> Result<Action, E>
    where
        E: ReconcileFailure,
        F: Future<Output = Result<Action, E>>,
    {
        let labels = ControllerLabels { controller };
        let in_flight = InFlight::enter(self.queue_depth.get_or_create(&labels).clone());
        let started = Instant::now();
        let result = reconcile.await;
        drop(in_flight);
        self.reconcile_duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        self.reconciles.get_or_create(&labels).inc();
        if let Err(error) = &result {
            self.reconcile_errors
                .get_or_create(&ErrorLabels {
                    controller,
                    error_kind: error.kind(),
                })
                .inc();
        }
        result
    }

    /// Records a catalog image load. `bytes` is what was downloaded from the registry for it
    /// (0 for a cache hit; a failed pull counts what it downloaded before failing).
    pub fn catalog_pulled(&self, bytes: u64, result: PullResult) {
        self.catalog_pulls
            .get_or_create(&PullLabels {
                result: result.as_str(),
            })
            .inc();
        self.catalog_pull_bytes.inc_by(bytes);
    }

    /// Sets the leader gauge.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Whether the leader gauge says this replica leads.
    pub fn is_leader(&self) -> bool {
        self.leader.get() == 1
    }

    /// Records `count` pull-secret copies created or updated.
    pub fn copies_written(&self, count: u64) {
        self.pull_secret_copy_writes.inc_by(count);
    }

    /// A change of the source pull secret `namespace/name` was observed at `at` (the source
    /// watch saw a new resourceVersion). The first unpropagated change of a source is kept: the
    /// lag is measured from it.
    pub fn rotation_observed(&self, namespace: &str, name: &str, at: Timestamp) {
        if let Ok(mut pending) = self.pending_rotations.lock()
            && !pending.observed(namespace, name, at)
        {
            tracing::debug!(
                namespace,
                name,
                "too many pull-secret rotations in flight; not timing this one"
            );
        }
    }

    /// Every copy of the source pull secret `namespace/name` carries its current data as of
    /// `at`: records the propagation lag of the pending change, if one was observed.
    pub fn rotation_completed(&self, namespace: &str, name: &str, at: Timestamp) {
        let observed = match self.pending_rotations.lock() {
            Ok(mut pending) => pending.take(namespace, name),
            Err(_) => None,
        };
        if let Some(observed) = observed {
            self.pull_secret_rotations.inc();
            self.pull_secret_propagation_lag
                .observe(elapsed(observed, at).as_secs_f64());
        }
    }

    /// Forgets a pending change that will never propagate (the source was deleted, or nothing
    /// uses it any more).
    pub fn rotation_abandoned(&self, namespace: &str, name: &str) {
        if let Ok(mut pending) = self.pending_rotations.lock() {
            pending.take(namespace, name);
        }
    }

    /// Installs the function that reads the running manager's state at scrape time (returning
    /// `None` once that manager is gone). Replaces the previous one.
    pub fn set_sampler(&self, sampler: impl Fn() -> Option<Sample> + Send + Sync + 'static) {
        if let Ok(mut slot) = self.sampler.lock() {
            *slot = Some(Box::new(sampler));
        }
    }

    /// The current sample (zeros when no manager runs).
    fn sample(&self) -> Sample {
        self.sampler
            .lock()
            .ok()
            .and_then(|slot| slot.as_ref().and_then(|sampler| sampler()))
            .unwrap_or_default()
    }

    /// Every series in the OpenMetrics text format (what `/metrics` serves).
    pub fn encode(&self) -> String {
        let sample = self.sample();
        self.catalog_index_catalogs
            .set(gauge_value(sample.catalogs));
        self.catalog_index_packages
            .set(gauge_value(sample.packages));
        self.catalog_index_bundles.set(gauge_value(sample.bundles));
        self.pull_secret_copies
            .set(gauge_value(sample.pull_secret_copies));
        let pending = self.pending_rotations.lock().map_or(0, |p| p.count());
        self.pull_secret_rotations_pending.set(gauge_value(pending));
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            // Writing into a String cannot fail; a metric's encoder could, in theory.
            tracing::error!(%error, "cannot encode metrics");
        }
        text
    }
}

fn gauge_value(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// Increments a gauge for as long as it lives.
struct InFlight(Gauge);

impl InFlight {
    fn enter(gauge: Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests;
