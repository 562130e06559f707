//! The ClusterServiceVersion reconciler: the installer, with pull-secret propagation.
//!
//! For each CSV opcat manages (label `app.kubernetes.io/managed-by=opcat`, created by the
//! InstallPlan reconciler with the `controller::keys::csv` annotations and the finalizer):
//!
//! - `install`: phases Pending → InstallReady → Installing → Succeeded (or Failed with OLM's
//!   reasons); copies the catalog's pull secrets into the namespace and attaches them to every
//!   ServiceAccount the bundle uses and to its Deployments' pod templates, then applies the
//!   bundle's objects in order, sweeps what the bundle no longer has, runs the pull-credentials
//!   preflight and writes the report the Subscription mirrors; a CSV that a newer one replaces
//!   goes Replacing, then Deleting once the newer one succeeded; a CSV that replaces one whose
//!   OperatorCondition holds upgrades waits in Pending;
//! - `cleanup`: on deletion, removes what opcat added for the CSV (never CRDs) and lets go.
//!
//! Module map — sequencing: `install`, `converge`, `cleanup`; reads: `observe`, `bundle`;
//! pure: `requirements`, `propagation`, `status`, `report`, `triggers`; writes: `copies`,
//! `service_accounts`, `objects`, `operator_condition` (the CSV's OperatorCondition),
//! `csv_writes`, `events`, `certificates` (serving certificate Secrets), `webhooks` (webhook
//! configurations, APIServices, CRD conversions), `provided_api_roles` (the ClusterRoles of
//! the APIs the CSV provides, as OLM); registry: `preflight`.

mod attach;
mod bundle;
mod certificates;
mod clashes;
mod cleanup;
mod component_release;
mod converge;
mod copies;
mod csv_writes;
mod error;
mod events;
mod fast_path;
mod hold;
mod install;
mod labelled;
mod objects;
mod observe;
mod operator_condition;
mod preflight;
mod propagation;
mod provided_api_roles;
mod report;
mod requirements;
mod rotating;
mod rotations;
mod service_accounts;
mod status;
pub(in crate::controller) mod triggers;
mod webhooks;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;

pub use error::CsvError;
pub use objects::APPLIED_HASH_ANNOTATION;
pub use report::{decode as decode_report, encode as encode_report};

use super::context::Context;
use super::manager::Shutdown;
use super::own_writes::{Echoes, OwnWrites};
use super::stored_object::StoredCsv;
use super::stores::Reflectors;
use super::upgrade_gate;
use super::wiring::{self, backoff_key_of};
use crate::api::ClusterServiceVersion;
use crate::failure::ReconcileFailure;
use crate::pull_secrets::RestorePolicy;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::CSV;

/// The reconciler's state: the shared context plus what only this reconciler caches.
pub struct Csvs {
    context: Arc<Context>,
    bundles: bundle::BundleCache,
    preflight: preflight::PreflightCache,
    restore_policy: RestorePolicy,
    /// Copies this process updated in place, until their watch events arrive.
    echoes: Arc<Echoes>,
    /// Sources the rotation fast path is rotating now: their copies' new data is its to write.
    rotating: Arc<rotating::Rotating>,
    /// Copy names a create found held by a foreign Secret.
    clashes: clashes::NameClashes,
    /// Versions of CSVs this reconciler wrote over (annotation, then status, in one reconcile):
    /// a reconcile that reads one waits for the store instead of writing the status again.
    own_writes: OwnWrites,
}

impl Csvs {
    /// Records that this reconciler wrote `written` over `csv` as read (nothing when `None`).
    fn wrote(&self, csv: &ClusterServiceVersion, written: Option<&str>) {
        if let Some(written) = written {
            let uid = csv.uid().unwrap_or_default();
            self.own_writes
                .wrote(&uid, csv.resource_version().as_deref(), Some(written));
        }
    }
}

impl Csvs {
    fn new(context: Arc<Context>, echoes: Arc<Echoes>, rotating: Arc<rotating::Rotating>) -> Self {
        Self {
            context,
            echoes,
            rotating,
            bundles: bundle::BundleCache::default(),
            preflight: preflight::PreflightCache::default(),
            restore_policy: RestorePolicy::default(),
            clashes: clashes::NameClashes::default(),
            own_writes: OwnWrites::default(),
        }
    }
}

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let stores = context.stores.clone();
    let csvs = stores.namespaced.csvs.clone();
    let replaced = reflectors.csvs.subscribe();
    let catalogs = triggers::Changes::new(
        csvs.clone(),
        triggers::catalog_fingerprint,
        triggers::catalog,
    );
    let subscriptions = triggers::Changes::new(
        csvs.clone(),
        triggers::subscription_fingerprint,
        triggers::subscription,
    );
    // Source changes reach the CSVs through the rotation fast path, which first updates the
    // copies that only need the new data.
    let echoes = Arc::new(Echoes::default());
    let rotating = Arc::new(rotating::Rotating::default());
    let (handled, handled_sources) = futures::channel::mpsc::unbounded();
    let fast_path = fast_path::run(
        context.clone(),
        echoes.clone(),
        rotating.clone(),
        context.source_secrets.subscribe(),
        handled,
    );
    let source_changes = {
        let csvs = csvs.clone();
        let catalog_sources = stores.catalog_sources.clone();
        handled_sources.flat_map(move |key| {
            futures::stream::iter(triggers::source_secret(&csvs, &catalog_sources, &key))
        })
    };
    let (copy_echoes, deleted_echoes) = (echoes.clone(), echoes.clone());
    let (for_groups, for_copies, for_namespaces) = (csvs.clone(), csvs.clone(), csvs.clone());
    let (for_deleted_groups, for_deleted_copies, for_deleted_catalogs) =
        (csvs.clone(), csvs.clone(), csvs.clone());
    let (for_conditions, for_deleted_conditions) = (csvs.clone(), csvs.clone());
    let controller = Controller::for_shared_stream(reflectors.csvs.subscribe(), csvs.store())
        .watches_shared_stream(reflectors.deployments.subscribe(), |deployment| {
            triggers::deployment(&deployment.full_meta())
        })
        .watches_shared_stream(replaced, |csv| triggers::replaced(&csv))
        .watches_shared_stream(reflectors.operator_groups.subscribe(), move |group| {
            triggers::operator_group(&for_groups, &group)
        })
        .watches_shared_stream(reflectors.subscriptions.subscribe(), move |subscription| {
            subscriptions.map(&subscription)
        })
        .watches_shared_stream(reflectors.catalog_sources.subscribe(), move |catalog| {
            catalogs.map(&catalog)
        })
        .watches_shared_stream(reflectors.copies.subscribe(), move |copy| {
            // The echo of an in-place update opcat wrote: the namespace is as that write left it.
            if copy_echoes.is_echo(copy.uid().as_deref(), copy.resource_version().as_deref()) {
                return Vec::new();
            }
            triggers::copy(&for_copies, &copy)
        })
        .watches_shared_stream(reflectors.namespaces.subscribe(), move |namespace| {
            triggers::namespace(&for_namespaces, &namespace)
        })
        // Its own (kept as rendered, recreated when deleted) and the gate of its replacers.
        .watches_shared_stream(
            reflectors.operator_conditions.subscribe(),
            move |condition| upgrade_gate::csvs(&for_conditions, &condition),
        )
        // Deletions: the shared streams above only carry applied objects.
        .watches_shared_stream(reflectors.deployments.subscribe_deleted(), |deployment| {
            triggers::deployment(&deployment.full_meta())
        })
        .watches_shared_stream(reflectors.csvs.subscribe_deleted(), |csv| {
            triggers::replaced(&csv)
        })
        .watches_shared_stream(
            reflectors.operator_groups.subscribe_deleted(),
            move |group| triggers::operator_group(&for_deleted_groups, &group),
        )
        .watches_shared_stream(reflectors.copies.subscribe_deleted(), move |copy| {
            deleted_echoes.forget(copy.uid().as_deref());
            triggers::copy(&for_deleted_copies, &copy)
        })
        .watches_shared_stream(
            reflectors.operator_conditions.subscribe_deleted(),
            move |condition| upgrade_gate::csvs(&for_deleted_conditions, &condition),
        )
        .watches_shared_stream(
            reflectors.catalog_sources.subscribe_deleted(),
            move |catalog| {
                triggers::from_catalog(
                    &for_deleted_catalogs,
                    &catalog.namespace().unwrap_or_default(),
                    &catalog.name_any(),
                )
            },
        )
        .reconcile_on(source_changes);
    let controller = webhooks::watch(controller, &context.client, &context.settings.scope);
    // Rotation timing for the metrics and the fast path, beside the controller (they stop with
    // it).
    let rotations = rotations::track(
        context.clone(),
        context.source_secrets.subscribe(),
        reflectors.copies.subscribe(),
        reflectors.copies.subscribe_deleted(),
    );
    let state = Arc::new(Csvs::new(context.clone(), echoes, rotating));
    let run = wiring::run(CONTROLLER, controller, &context, shutdown, reconcile, state)
        .for_each(|_| std::future::ready(()));
    async move {
        let mut run = std::pin::pin!(run);
        tokio::select! {
            () = &mut run => {}
            // Their streams only end when the watches do; the controller still finishes.
            _ = futures::future::join(rotations, fast_path) => run.await,
        }
    }
    .boxed()
}

/// Reconciles one CSV.
async fn reconcile(stored: Arc<StoredCsv>, state: Arc<Csvs>) -> Result<Action, CsvError> {
    if !observe::is_managed(&stored) {
        return Ok(Action::await_change());
    }
    let version = stored.resource_version();
    if state
        .own_writes
        .is_stale(stored.uid().as_deref(), version.as_deref())
    {
        // The store still shows a version this reconciler wrote over (its report annotation
        // before its status): the watch event of the last write brings the next reconcile.
        return Ok(Action::requeue(state.context.settings.wait_requeue));
    }
    if !state.context.stores.is_ready() {
        // Decisions read many stores; wait until each has listed once (after a start).
        return Ok(Action::requeue(state.context.settings.wait_requeue));
    }
    let csv = Arc::new(stored.object());
    let result = if observe::is_deleting(csv.as_ref()) {
        cleanup::reconcile(&state, &csv).await
    } else {
        let result = install::reconcile(&state, &csv).await;
        if let Err(error) = &result {
            // Retried with backoff. Conflicts are routine between concurrent writers; anything
            // else (a registry or API outage, a kind not served yet) is worth telling users.
            if error.kind() != "conflict" {
                let note = format!("retrying: {}", crate::failure::error_chain(error));
                state
                    .context
                    .event(
                        &events::reference(csv.as_ref()),
                        EventType::Warning,
                        crate::api::csv_reasons::INSTALL_COMPONENT_FAILED,
                        "Install",
                        Some(note),
                    )
                    .await;
            }
        }
        result
    };
    if result.is_ok() {
        state
            .context
            .backoffs
            .succeeded(&backoff_key_of(CONTROLLER, csv.as_ref()));
    }
    result
}
