//! Registry contact and restore (registry, disk and events; no status writes): runs the load step
//! when the poll decision says so, keeps `context.catalogs` and the tracked state in step,
//! publishes `CatalogLoaded` / `CatalogUpdated` / `CatalogLoadFailed` events and counts each
//! load in `opcat_catalog_pulls_total` / `opcat_catalog_pull_bytes_total`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::runtime::events::EventType;

use super::load::{self, LoadError};
use super::poll::{self, Decision, Look, Why, later};
use super::reconcile::{Reconciler, load_backoff_key};
use super::secrets::Sources;
use super::tracked::{Failure, Tracked};
use crate::api::CatalogSource;
use crate::api::catalog_source_status::READY_REASON_PULL_SECRET_INVALID;
use crate::controller::catalogs::{CatalogKey, LoadedCatalog};
use crate::metrics::PullResult;
use crate::registry::{ImageRef, Transfer};

/// Event: a catalog image was loaded for the first time (or for a new `spec.image`).
pub const EVENT_CATALOG_LOADED: &str = "CatalogLoaded";
/// Event: a poll found a new digest for the same image, and it was loaded.
pub const EVENT_CATALOG_UPDATED: &str = "CatalogUpdated";
/// Warning event: the catalog image could not be resolved, pulled or read.
pub const EVENT_CATALOG_LOAD_FAILED: &str = "CatalogLoadFailed";

/// The CatalogSource being reconciled and what the earlier steps found.
pub struct Target<'a> {
    pub catalog_source: &'a CatalogSource,
    pub key: &'a CatalogKey,
    /// `spec.image` as written.
    pub raw: &'a str,
    pub image: &'a ImageRef,
    pub sources: &'a Sources,
    pub now: Timestamp,
}

impl Target<'_> {
    fn uid(&self) -> Option<String> {
        self.catalog_source.meta().uid.clone()
    }
}

impl Reconciler {
    /// The image steps of a reconcile: restore after a restart, then contact the registry when
    /// the poll decision says so. Returns the tracked state and when to look again.
    pub(super) async fn image_step(
        &self,
        target: &Target<'_>,
        every: Option<Duration>,
    ) -> (Option<Tracked>, Look) {
        let fingerprint = &target.sources.fingerprint;
        let mut tracked = self.tracked.get(target.key);
        if tracked.is_none() {
            tracked = self.restore(target).await;
        }
        if let Decision::Contact(why) =
            poll::decide(tracked.as_ref(), target.raw, fingerprint, every, target.now)
        {
            tracked = Some(self.contact(target, tracked.as_ref(), why).await);
        }
        let next = poll::decide(tracked.as_ref(), target.raw, fingerprint, every, target.now);
        (tracked, next.into())
    }

    /// After a restart (nothing tracked), serves the catalog status says was loaded, straight
    /// from the disk cache: no network, no download. Returns the tracked state to continue
    /// from, or `None` when there is nothing to restore or the last contact had failed.
    async fn restore(&self, target: &Target<'_>) -> Option<Tracked> {
        let context = &self.context;
        let restore = poll::restorable(target.catalog_source.status.as_ref(), target.raw)?;
        let cache = context.registry.cache().clone();
        let pinned = target.image.digest().is_some();
        let loaded = load::from_cache(cache, target.raw, pinned, &restore.digest, target.now)
            .await?
            .inspect_err(|error| {
                tracing::info!(
                    namespace = %target.key.0,
                    name = %target.key.1,
                    digest = %restore.digest,
                    error = %error,
                    "cached catalog image not usable; contacting the registry"
                );
            })
            .ok()?;
        tracing::info!(
            namespace = %target.key.0,
            name = %target.key.1,
            image = %target.raw,
            digest = %loaded.digest,
            "catalog restored from the image cache"
        );
        context
            .catalogs
            .insert(&target.key.0, &target.key.1, Arc::new(loaded));
        context.metrics.catalog_pulled(0, PullResult::Cached);
        // An unhealthy last contact is retried at once (nothing tracked means a first load);
        // the restored catalog is served meanwhile and kept if that contact fails.
        if !restore.healthy {
            return None;
        }
        let tracked = Tracked {
            uid: target.uid(),
            source: target.raw.to_owned(),
            secrets: target.sources.fingerprint.clone(),
            last_connect: restore.last_connect.unwrap_or(target.now),
            last_poll: restore.last_poll,
            last_check: None,
            failure: None,
        };
        self.tracked.insert(target.key.clone(), tracked.clone());
        Some(tracked)
    }

    /// Resolves the image and loads it when its digest is new. Never fails: the outcome is the
    /// new tracked state (a failure with its retry time), shown in status by the caller.
    async fn contact(&self, target: &Target<'_>, previous: Option<&Tracked>, why: Why) -> Tracked {
        let context = &self.context;
        let (namespace, name) = (&target.key.0, &target.key.1);
        let keyring = &target.sources.keyring;
        let served = context.catalogs.get(namespace, name);
        tracing::debug!(%namespace, %name, image = %target.raw, why = why.as_str(), "contacting registry");

        let mut last_poll = previous.and_then(|p| p.last_poll);
        let transfer = Transfer::default();
        // Whether the image was loaded (not merely resolved to the digest already served).
        let mut loading = true;
        let outcome: Result<Option<LoadedCatalog>, LoadError> =
            match load::resolve(&context.registry, target.image, keyring).await {
                Err(error) => Err(error),
                Ok(digest) => {
                    last_poll = Some(target.now);
                    match &served {
                        Some(served) if served.digest == digest && served.image == target.raw => {
                            tracing::debug!(%namespace, %name, %digest, "catalog image unchanged");
                            loading = false;
                            Ok(None)
                        }
                        _ => load::fetch(
                            &context.registry,
                            target.image,
                            target.raw,
                            &digest,
                            keyring,
                            target.now,
                            &transfer,
                        )
                        .await
                        .map(Some),
                    }
                }
            };
        if loading {
            let result = pull_result(outcome.is_ok(), transfer.from_cache());
            context
                .metrics
                .catalog_pulled(transfer.downloaded(), result);
        }

        let backoff = load_backoff_key(namespace, name);
        let failure = match outcome {
            Ok(loaded) => {
                context.backoffs.succeeded(&backoff);
                if let Some(loaded) = loaded {
                    self.loaded(target, served.as_deref(), loaded).await;
                }
                None
            }
            Err(error) => {
                if served
                    .as_ref()
                    .is_some_and(|served| served.image != target.raw)
                {
                    // Never serve the catalog of an image the spec no longer names.
                    context.catalogs.remove(namespace, name);
                }
                let delay = context.backoffs.failed(&backoff, error.is_transient());
                let failure = Failure {
                    ready_reason: if error.is_auth() && target.sources.has_problems() {
                        READY_REASON_PULL_SECRET_INVALID
                    } else {
                        error.ready_reason()
                    },
                    kind: error.kind(),
                    message: error.to_string(),
                    retry_at: later(target.now, delay),
                };
                tracing::warn!(
                    %namespace,
                    %name,
                    image = %target.raw,
                    error_kind = failure.kind,
                    retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    error = %failure.message,
                    "catalog load failed"
                );
                let repeated = previous
                    .and_then(|p| p.failure.as_ref())
                    .is_some_and(|p| p.message == failure.message);
                if !repeated {
                    self.event(
                        target,
                        EventType::Warning,
                        EVENT_CATALOG_LOAD_FAILED,
                        failure.message.clone(),
                    )
                    .await;
                }
                Some(failure)
            }
        };
        let tracked = Tracked {
            uid: target.uid(),
            source: target.raw.to_owned(),
            secrets: target.sources.fingerprint.clone(),
            last_connect: target.now,
            last_poll,
            last_check: None,
            failure,
        };
        self.tracked.insert(target.key.clone(), tracked.clone());
        tracked
    }

    async fn loaded(
        &self,
        target: &Target<'_>,
        served: Option<&LoadedCatalog>,
        loaded: LoadedCatalog,
    ) {
        self.serve_loaded(
            target.catalog_source,
            target.key,
            served,
            loaded,
            "catalog image",
        )
        .await;
    }

    /// Serves a newly loaded catalog in place of `served`, with a `CatalogLoaded` or
    /// `CatalogUpdated` event; `what` names its kind of source ("catalog image").
    pub(super) async fn serve_loaded(
        &self,
        catalog_source: &CatalogSource,
        key: &CatalogKey,
        served: Option<&LoadedCatalog>,
        loaded: LoadedCatalog,
        what: &str,
    ) {
        let packages = loaded.catalog.packages().count();
        let (namespace, name) = (&key.0, &key.1);
        let (reason, note) = match served {
            Some(served) if served.image == loaded.image => (
                EVENT_CATALOG_UPDATED,
                format!(
                    "{what} {} changed from {} to {}: {packages} packages",
                    loaded.image, served.digest, loaded.digest
                ),
            ),
            _ => (
                EVENT_CATALOG_LOADED,
                format!(
                    "loaded {what} {} ({}): {packages} packages",
                    loaded.image, loaded.digest
                ),
            ),
        };
        tracing::info!(
            %namespace,
            %name,
            source = %loaded.image,
            digest = %loaded.digest,
            packages,
            "catalog loaded"
        );
        self.context
            .catalogs
            .insert(namespace, name, Arc::new(loaded));
        self.catalog_event(catalog_source, EventType::Normal, reason, note)
            .await;
    }

    async fn event(&self, target: &Target<'_>, type_: EventType, reason: &str, note: String) {
        self.catalog_event(target.catalog_source, type_, reason, note)
            .await;
    }

    /// Publishes an event about loading the catalog of `catalog_source`.
    pub(super) async fn catalog_event(
        &self,
        catalog_source: &CatalogSource,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let regarding = catalog_source.object_ref(&());
        self.context
            .event(&regarding, type_, reason, "Load", Some(note))
            .await;
    }
}

/// How a catalog load counts in `opcat_catalog_pulls_total`: any failure (resolve, pull, verify,
/// unpack, or a catalog that does not parse or validate) is `failed`; a success is `cached`
/// when the image came from the disk cache.
fn pull_result(succeeded: bool, from_cache: bool) -> PullResult {
    match (succeeded, from_cache) {
        (false, _) => PullResult::Failed,
        (true, true) => PullResult::Cached,
        (true, false) => PullResult::Pulled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_counts_as_failed_cached_or_pulled() {
        assert_eq!(pull_result(false, true), PullResult::Failed);
        assert_eq!(pull_result(false, false), PullResult::Failed);
        assert_eq!(pull_result(true, true), PullResult::Cached);
        assert_eq!(pull_result(true, false), PullResult::Pulled);
    }
}
