//! What every reconciler shares: the client, the registry, the loaded catalogs, the watch stores,
//! the clock, settings, the event publisher and failure counters.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::EventType;

use super::backoff::Backoffs;
use super::catalogs::CatalogIndex;
use super::clock::Clock;
use super::events::{EventPublisher, EventSpec};
use super::resources::Resources;
use super::source_secrets::SourceSecrets;
use super::stores::{Scope, Stores};
use crate::metrics::Metrics;
use crate::registry::Registry;

/// Name under which opcat reports events.
pub const REPORTER: &str = "opcat";

/// The global catalog namespace when none is configured (OLM's `--namespace` default).
pub const DEFAULT_GLOBAL_CATALOG_NAMESPACE: &str = "olm";

/// Tunables of the controller manager.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Which namespaces to watch.
    pub scope: Scope,
    /// Poll interval for CatalogSources whose `registryPoll.interval` is invalid (OLM: 15m).
    pub invalid_poll_interval: Duration,
    /// Poll interval for CatalogSources that set no `registryPoll` (`opcat run
    /// --poll-default`); `None`, as in OLM, means such catalogs are not polled.
    pub default_poll_interval: Option<Duration>,
    /// The namespace whose CatalogSources every namespace sees (`opcat run
    /// --global-catalog-namespace`; OLM's global catalog namespace).
    pub global_catalog_namespace: String,
    /// Fixed requeue for expected waits (catalog not ready yet, Deployments becoming
    /// available, approval pending): DESIGN invariant 7.
    pub wait_requeue: Duration,
    /// How often a converged object is looked at again without any event.
    pub resync: Duration,
    /// Maximum parallel reconciles per controller.
    pub concurrency: u16,
    /// How long a bundle image tag resolved with one set of catalog credentials is reused by
    /// other InstallPlans pulling it with the same credentials (`opcat run --bundle-tag-ttl`);
    /// zero asks the registry at every plan.
    pub bundle_tag_ttl: Duration,
    /// Pod name, for events (`reportingInstance`).
    pub instance: Option<String>,
    /// How often the registry server of a `spec.address` CatalogSource is health-checked, and
    /// the fixed delay before a server that failed is tried again (`opcat run
    /// --catalog-server-check`).
    pub catalog_server_check: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            scope: Scope::Cluster,
            invalid_poll_interval: Duration::from_secs(15 * 60),
            default_poll_interval: None,
            global_catalog_namespace: DEFAULT_GLOBAL_CATALOG_NAMESPACE.to_owned(),
            wait_requeue: Duration::from_secs(10),
            resync: Duration::from_secs(10 * 60),
            concurrency: 8,
            bundle_tag_ttl: DEFAULT_BUNDLE_TAG_TTL,
            instance: None,
            catalog_server_check: DEFAULT_CATALOG_SERVER_CHECK,
        }
    }
}

/// Default of [`Settings::bundle_tag_ttl`]: a burst of installs of one bundle asks the registry
/// about once a minute, and a tag moved in the registry is seen by new plans within a minute.
pub const DEFAULT_BUNDLE_TAG_TTL: Duration = Duration::from_secs(60);

/// Default of [`Settings::catalog_server_check`]: a registry server that goes away shows as
/// `TRANSIENT_FAILURE` within this time, and one that comes back is read again within it.
pub const DEFAULT_CATALOG_SERVER_CHECK: Duration = Duration::from_secs(10);

/// Shared state of the reconcilers.
pub struct Context {
    pub client: Client,
    pub registry: Arc<Registry>,
    pub catalogs: CatalogIndex,
    pub resources: Resources,
    pub stores: Stores,
    pub source_secrets: SourceSecrets,
    pub clock: Arc<dyn Clock>,
    pub settings: Settings,
    pub events: EventPublisher,
    pub backoffs: Backoffs,
    /// The process's metrics (shared by every leadership term).
    pub metrics: Arc<Metrics>,
}

impl Context {
    pub fn new(
        client: Client,
        registry: Arc<Registry>,
        stores: Stores,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> Self {
        let instance = settings
            .instance
            .clone()
            .unwrap_or_else(|| REPORTER.to_owned());
        Self {
            events: EventPublisher::new(client.clone(), REPORTER.to_owned(), instance),
            resources: Resources::new(client.clone()),
            client,
            registry,
            catalogs: CatalogIndex::default(),
            stores,
            source_secrets: SourceSecrets::default(),
            clock,
            settings,
            backoffs: Backoffs::default(),
            metrics: Arc::new(Metrics::new()),
        }
    }

    /// The same context reporting into `metrics` (the process-wide registry).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Publishes an event about `regarding`. A failure to publish is logged, never fatal:
    /// events are for humans, the object's status is the contract.
    pub async fn event(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) {
        let event = EventSpec {
            regarding,
            type_,
            reason,
            action,
            note: note.map(|note| truncate(note, 1024)),
        };
        if let Err(error) = self.events.publish(&event).await {
            tracing::warn!(
                reason,
                object = regarding.name.as_deref().unwrap_or_default(),
                error = %crate::failure::error_chain(&error),
                "cannot publish event"
            );
        }
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary.
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
