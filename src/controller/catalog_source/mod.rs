//! The CatalogSource reconciler: pulls each catalog image with the pull secrets named in
//! `spec.secrets`, or reads the catalog of the registry server named by `spec.address`, keeps the
//! validated file-based catalog in memory (`context.catalogs`) and reports OLM's status.
//!
//! Steps, one file each: [`secrets`] and the stores (dereference), [`validate`], [`poll`] (the
//! decision to contact the registry), [`load`] and [`contact`] (registry and disk), [`server`]
//! (the decision, health check and read of a registry server), [`status`] (pure) and
//! [`reconcile`] (the orchestration and the one status write). [`triggers`] maps source Secret
//! changes to CatalogSources.
//!
//! Triggers: CatalogSource changes; changes of a source Secret (watched by name in
//! [`crate::controller::source_secrets`]); requeues at the next poll or retry. Deleted
//! CatalogSources are dropped from memory by a sweep of the store (the shared watch stream
//! carries no deletions).

pub mod contact;
pub mod load;
pub mod poll;
pub mod reconcile;
pub mod secrets;
pub mod server;
pub mod status;
pub mod tracked;
pub mod triggers;
pub mod validate;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::Controller;
use kube::runtime::controller::Error as ControllerError;

use self::reconcile::{CONTROLLER, Reconciler};
use super::context::Context;
use super::manager::Shutdown;
use super::stores::Reflectors;
use super::wiring;

/// How often deleted CatalogSources are looked for (an in-memory walk of the tracked keys).
const DELETION_SWEEP: Duration = Duration::from_secs(2);

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let reconciler = Arc::new(Reconciler::new(context.clone()));
    let store = context.stores.catalog_sources.clone();
    let secret_changes = {
        let store = store.clone();
        context
            .source_secrets
            .subscribe()
            .flat_map(move |(namespace, secret)| {
                let state = store.state();
                futures::stream::iter(triggers::catalogs_using(&state, &namespace, &secret))
            })
    };
    let controller =
        Controller::for_shared_stream(reflectors.catalog_sources.subscribe(), store.clone())
            .reconcile_on(secret_changes);
    let run = wiring::run(
        CONTROLLER,
        controller,
        &context,
        shutdown,
        reconcile::reconcile,
        reconciler.clone(),
    )
    .for_each({
        let reconciler = reconciler.clone();
        move |result| {
            if let Err(ControllerError::ObjectNotFound(reference)) = &result
                && let Some(namespace) = &reference.namespace
            {
                reconciler.forget(&(namespace.clone(), reference.name.clone()));
            }
            std::future::ready(())
        }
    });
    let sweep = async move {
        if reconciler.context.stores.wait_until_ready().await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(DELETION_SWEEP).await;
            reconciler.forget_deleted();
        }
    };
    async move {
        tokio::select! {
            () = run => {}
            () = sweep => {}
        }
    }
    .boxed()
}
