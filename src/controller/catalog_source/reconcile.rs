//! One reconcile of a CatalogSource: dereference (stores and memory) → validate (pure) → poll
//! decision (pure) → load (registry or registry server, only when due) → status (one write,
//! only when changed). Images and registry servers (`spec.address`) each have their own
//! decision and load steps ([`super::contact`], [`super::server`]); the rest is shared.
//!
//! Failures to load the catalog are not reconcile errors: they are shown in status and retried
//! on their own back-off (kept in the tracked state, so the reconcile that our own status write
//! triggers does not retry hot). Only Kubernetes API failures reach the error policy.

use std::sync::Arc;
use std::time::Duration;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::contact::Target;
use super::poll::Look;
use super::secrets::{self, Gathered};
use super::server::{ServerConnections, ServerTarget};
use super::status::{self, Observed};
use super::tracked::TrackedMap;
use super::validate::{self, SpecCheck};
use crate::api::CatalogSource;
use crate::controller::apply::{self, ApplyError, Outcome};
use crate::controller::catalogs::CatalogKey;
use crate::controller::context::Context;
use crate::controller::wiring;
use crate::failure::ReconcileFailure;
use crate::metrics::controllers;

/// Name of this controller in logs and metrics.
pub const CONTROLLER: &str = controllers::CATALOG_SOURCE;

/// The reconciler's shared state: the context and what it remembers per CatalogSource.
pub struct Reconciler {
    pub context: Arc<Context>,
    pub tracked: TrackedMap,
    /// Connections to the registry servers of address catalogs.
    pub servers: ServerConnections,
}

/// Why a reconcile failed (the catalog's own problems are status, not errors).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("CatalogSource {name} has no namespace")]
    NoNamespace { name: String },
    #[error("cannot encode the status of CatalogSource {object}")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Status(#[from] ApplyError),
}

impl ReconcileFailure for Error {
    fn kind(&self) -> &'static str {
        match self {
            Error::NoNamespace { .. } => "no_namespace",
            Error::Encode { .. } => "encode",
            Error::Status(error) => error.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Error::NoNamespace { .. } | Error::Encode { .. } => false,
            Error::Status(error) => error.is_transient(),
        }
    }
}

/// Key of a CatalogSource in the shared failure counters (API failures; the error policy's
/// key).
pub fn backoff_key(namespace: &str, name: &str) -> String {
    wiring::backoff_key(CONTROLLER, namespace, name)
}

/// Key of a CatalogSource's registry failures in the shared failure counters: separate from
/// [`backoff_key`], because a reconcile that reports a load failure in status succeeds and must
/// not reset the registry back-off.
pub fn load_backoff_key(namespace: &str, name: &str) -> String {
    format!("{}#load", backoff_key(namespace, name))
}

impl Reconciler {
    pub fn new(context: Arc<Context>) -> Self {
        Self {
            context,
            tracked: TrackedMap::default(),
            servers: ServerConnections::default(),
        }
    }

    /// Drops everything held for `namespace/name` (deleted, recreated, or no longer servable).
    pub fn forget(&self, key: &CatalogKey) {
        self.tracked.remove(key);
        self.servers.remove(key);
        self.context.catalogs.remove(&key.0, &key.1);
        self.context
            .backoffs
            .succeeded(&backoff_key(&key.0, &key.1));
        self.context
            .backoffs
            .succeeded(&load_backoff_key(&key.0, &key.1));
    }

    /// Forgets CatalogSources that are no longer in the store (deleted while nothing was
    /// scheduled for them). No finalizer is needed: nothing outside memory belongs to one
    /// CatalogSource (the disk cache is shared by digest).
    pub fn forget_deleted(&self) {
        let store = &self.context.stores.catalog_sources;
        for key in self.tracked.keys() {
            let reference = kube::runtime::reflector::ObjectRef::new(&key.1).within(&key.0);
            if store.get(&reference).is_none() {
                tracing::info!(namespace = %key.0, name = %key.1, "CatalogSource deleted; catalog dropped");
                self.forget(&key);
            }
        }
    }
}

/// Reconciles one CatalogSource.
pub async fn reconcile(
    catalog_source: Arc<CatalogSource>,
    reconciler: Arc<Reconciler>,
) -> Result<Action, Error> {
    let context = &reconciler.context;
    let name = catalog_source.name_any();
    let namespace = catalog_source
        .namespace()
        .ok_or_else(|| Error::NoNamespace { name: name.clone() })?;
    let key: CatalogKey = (namespace.clone(), name.clone());
    let now = context.clock.now();
    let settings = &context.settings;

    // A CatalogSource deleted and created again under the same name starts afresh.
    if let Some(tracked) = reconciler.tracked.get(&key)
        && tracked.uid != catalog_source.meta().uid
    {
        reconciler.forget(&key);
    }

    // Validate.
    let spec = validate::check_source(&catalog_source.spec);
    let interval = validate::check_interval(
        catalog_source.spec.poll_interval(),
        settings.invalid_poll_interval,
    );
    if let SpecCheck::Unsupported { message } | SpecCheck::NoSource { message } = &spec {
        reconciler.forget(&key);
        let observed = Observed {
            spec: &spec,
            interval: &interval,
            secrets: None,
            tracked: None,
            served: None,
            generation: catalog_source.meta().generation,
            now,
        };
        let written = write_status(context, &catalog_source, &namespace, &observed).await?;
        // Nothing to load (yet): the package API need not wait for this catalog.
        context.catalogs.mark_settled(&namespace, &name);
        if written == Outcome::Applied {
            tracing::info!(%namespace, %name, reason = message.as_str(), "CatalogSource not servable");
        }
        // Only a spec change can end this (DESIGN invariant 7: never retried hot).
        return Ok(Action::await_change());
    }

    // Dereference the source secrets (image pulls; bundle pulls of both kinds).
    let sources = match secrets::gather(catalog_source.spec.secret_names(), |secret| {
        context.source_secrets.get(&namespace, secret)
    }) {
        Gathered::Known(sources) => sources,
        Gathered::Waiting { secret } => {
            tracing::debug!(%namespace, %name, %secret, "waiting for the source secret watch to list");
            return Ok(Action::requeue(settings.wait_requeue));
        }
    };

    // Contact the registry, or the registry server, when due.
    let every = interval.every_or(settings.default_poll_interval);
    let (tracked, next) = match &spec {
        SpecCheck::Image { raw, image } => {
            let target = Target {
                catalog_source: &catalog_source,
                key: &key,
                raw,
                image,
                sources: &sources,
                now,
            };
            reconciler.image_step(&target, every).await
        }
        SpecCheck::Address { raw } => {
            let target = ServerTarget {
                catalog_source: &catalog_source,
                key: &key,
                address: raw,
                now,
            };
            reconciler.server_step(&target, every).await
        }
        SpecCheck::Unsupported { .. } | SpecCheck::NoSource { .. } => {
            return Ok(Action::await_change());
        }
    };

    // Status.
    let served = context.catalogs.get(&namespace, &name);
    let secret_condition = sources.condition(&namespace);
    let observed = Observed {
        spec: &spec,
        interval: &interval,
        secrets: Some(&secret_condition),
        tracked: tracked.as_ref(),
        served: served.as_deref(),
        generation: catalog_source.meta().generation,
        now,
    };
    write_status(context, &catalog_source, &namespace, &observed).await?;
    context.backoffs.succeeded(&backoff_key(&namespace, &name));
    context.catalogs.mark_settled(&namespace, &name);

    // Look again when the next poll, check or retry is due.
    let requeue = match next {
        Look::At(until) => crate::timing::elapsed(now, until).min(settings.resync),
        Look::Resync => settings.resync,
        // Only reachable if the clock went backwards; never spin.
        Look::Soon => settings.wait_requeue,
    };
    Ok(Action::requeue(requeue.max(Duration::from_millis(100))))
}

/// Writes the desired status when it differs from the current one (the only write a
/// reconcile makes).
async fn write_status(
    context: &Context,
    catalog_source: &CatalogSource,
    namespace: &str,
    observed: &Observed<'_>,
) -> Result<Outcome, Error> {
    let name = catalog_source.name_any();
    let encode = |source| Error::Encode {
        object: format!("{namespace}/{name}"),
        source,
    };
    let desired = status::desired(catalog_source.status.as_ref(), observed);
    let desired = serde_json::to_value(&desired).map_err(encode)?;
    let current = catalog_source
        .status
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(encode)?;
    let api: Api<CatalogSource> = Api::namespaced(context.client.clone(), namespace);
    Ok(apply::apply_status(&api, &name, current.as_ref(), &desired).await?)
}
