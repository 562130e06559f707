//! The Subscription reconciler (and, in `operator_group`, the small OperatorGroup controller
//! whose `status.namespaces` the CSV reconciler reads).
//!
//! A Subscription names a package in a catalog. The reconciler resolves the bundle to install
//! (channel head, `startingCSV`, or the upgrade from the installed CSV, olm-api.md §6.2)
//! together with the operators it depends on, from every catalog the namespace sees
//! ([`crate::dependency`]); creates a Subscription for each new dependency and one InstallPlan
//! for all of them (the InstallPlan reconciler installs it); and reports progress in the
//! Subscription's status with OLM's fields, states and conditions, including the pull-secret
//! conditions the CSV reconciler reports on the CSV.
//!
//! Steps, one file each: `observe` (stores) → `decide` (pure; `problem` builds what the
//! solver reads, `install` turns its plan into plan entries and Subscriptions,
//! `dependency_subscriptions` names and builds those) → `plan_builder` (pure) and the creates →
//! `catalog_health`, `report`, `status` (pure) and the status write, in `reconcile`.
//!
//! Behaviour worth knowing (OLM's unless noted):
//! - Deleting a Subscription stops upgrades and nothing else: no finalizer; its InstallPlans are
//!   garbage-collected through their owner references once no Subscription they serve is left;
//!   the CSV keeps running.
//! - While the CSV the latest InstallPlan installs for the Subscription does not exist (approval
//!   pending, installing, failed, or the CSV was deleted) nothing new is resolved. Delete a
//!   failed InstallPlan to retry.
//! - Upgrades are looked for only from a `Succeeded` CSV.
//! - The catalogs seen are those in the Subscription's namespace and in the global catalog
//!   namespace (`--global-catalog-namespace`), plus the one it names. The Subscription's own
//!   package comes from its own catalog only; dependencies from any of them.
//! - A dependency gets a Subscription of its own, named as OLM names it, unless the namespace
//!   has a Subscription to that package; it outlives the operator that needed it.
//! - A plan is `Manual` when any Subscription it serves is (OLM applies this to every
//!   Subscription of the namespace; opcat to those in the plan, so an unrelated `Manual`
//!   Subscription does not hold an `Automatic` one back).
//! - A namespace's Subscriptions resolve one at a time (`created::NamespaceLocks`).
//!
//! Triggers: Subscriptions; CatalogSources, when what resolution reads of them changed (uid,
//! status present, digest, health, priority) or they were deleted: the Subscriptions naming
//! them or in their namespace, and for the global catalog namespace every Subscription;
//! InstallPlans (every Subscription they serve); CSVs (their Subscription). Shared watch
//! streams carry no other deletions: waits requeue after `wait_requeue`, converged
//! Subscriptions after `resync`.

mod catalog_health;
mod created;
mod decide;
pub mod dependency_subscriptions;
mod error;
mod install;
mod observe;
pub mod operator_group;
mod plan_builder;
mod problem;
mod reconcile;
mod report;
mod settle;
mod status;
mod triggers;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::Controller;

use super::context::Context;
use super::manager::Shutdown;
use super::own_writes::OwnWrites;
use super::stored_object::{StoredCsv, StoredPlan};
use super::stores::Reflectors;
use super::wiring;
use crate::api::CatalogSource;
use created::{CreatedPlans, NamespaceLocks};
use reconcile::reconcile;

pub use error::SubscriptionError;
pub use plan_builder::{SUBSCRIPTION_LABEL, is_plan_of};
pub use report::MIRRORED_TYPES;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::SUBSCRIPTION;

/// The reconciler's context: the shared one, plus the plans it created and the status writes it
/// made that the stores may not show yet, and the namespaces' resolution locks.
pub struct SubscriptionContext {
    pub context: Arc<Context>,
    created: CreatedPlans,
    locks: NamespaceLocks,
    own_writes: OwnWrites,
}

/// Builds the Subscription and OperatorGroup controllers; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let operator_groups = operator_group::controller(context.clone(), reflectors, shutdown.clone());
    let subscriptions = context.stores.namespaced.subscriptions.clone();
    let catalog_triggers = Arc::new(triggers::CatalogTriggers::new(
        subscriptions.clone(),
        context.settings.global_catalog_namespace.clone(),
    ));
    let for_catalog = {
        let triggers = catalog_triggers.clone();
        move |catalog: Arc<CatalogSource>| triggers.map(&catalog, false)
    };
    let for_deleted_catalog =
        move |catalog: Arc<CatalogSource>| catalog_triggers.map(&catalog, true);
    let for_csv = {
        let subscriptions = subscriptions.clone();
        move |csv: Arc<StoredCsv>| triggers::for_csv(&subscriptions, &csv)
    };
    let controller =
        Controller::for_shared_stream(reflectors.subscriptions.subscribe(), subscriptions.store())
            .watches_shared_stream(reflectors.catalog_sources.subscribe(), for_catalog)
            .watches_shared_stream(
                reflectors.catalog_sources.subscribe_deleted(),
                for_deleted_catalog,
            )
            .watches_shared_stream(
                reflectors.install_plans.subscribe(),
                |plan: Arc<StoredPlan>| triggers::for_install_plan(&plan),
            )
            .watches_shared_stream(reflectors.csvs.subscribe(), for_csv);
    let state = Arc::new(SubscriptionContext {
        context: context.clone(),
        created: CreatedPlans::default(),
        locks: NamespaceLocks::default(),
        own_writes: OwnWrites::default(),
    });
    let subscription_controller =
        wiring::run(CONTROLLER, controller, &context, shutdown, reconcile, state)
            .for_each(|_| std::future::ready(()));
    futures::future::join(subscription_controller, operator_groups)
        .map(|_| ())
        .boxed()
}
