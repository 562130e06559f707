//! The Subscription reconciler (and, in `operator_group`, the small OperatorGroup controller
//! whose `status.namespaces` the CSV reconciler reads).
//!
//! A Subscription names a package in a catalog. The reconciler resolves the bundle to install
//! (channel head, `startingCSV`, or the upgrade from the installed CSV, olm-api.md §6.2), creates
//! one InstallPlan per resolved CSV (the InstallPlan reconciler installs it), and reports
//! progress in the Subscription's status with OLM's fields, states and conditions, including the
//! pull-secret conditions the CSV reconciler reports on the CSV.
//!
//! Steps, one file each: `observe` (stores) → `decide` (pure) → `plan_builder` (pure) and
//! the create → `catalog_health`, `report`, `status` (pure) and the status write, in
//! `reconcile`.
//!
//! Behaviour worth knowing (OLM's unless noted):
//! - Deleting a Subscription stops upgrades and nothing else: no finalizer; its InstallPlans are
//!   garbage-collected through their owner reference; the CSV keeps running.
//! - While the latest InstallPlan's CSV does not exist (approval pending, installing, failed,
//!   or the CSV was deleted) nothing new is resolved. Delete a failed InstallPlan to retry.
//! - Upgrades are looked for only from a `Succeeded` CSV.
//! - Each plan follows its own Subscription's approval (opcat: plans are per Subscription, so
//!   OLM's "any Manual Subscription in the namespace makes the plan Manual" does not apply).
//!
//! Triggers: Subscriptions; CatalogSources (the Subscriptions naming them or in their
//! namespace); InstallPlans (their Subscription); CSVs (their Subscription). Shared watch
//! streams carry no deletions: waits requeue after `wait_requeue`, converged Subscriptions
//! after `resync`.

mod catalog_health;
mod created;
mod decide;
mod error;
mod observe;
pub mod operator_group;
mod plan_builder;
mod reconcile;
mod report;
mod status;
mod triggers;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::Controller;

use super::context::Context;
use super::manager::Shutdown;
use super::own_writes::OwnWrites;
use super::stores::Reflectors;
use super::wiring;
use crate::api::{CatalogSource, ClusterServiceVersion, InstallPlan};
use created::CreatedPlans;
use reconcile::reconcile;

pub use error::SubscriptionError;
pub use plan_builder::{SUBSCRIPTION_LABEL, is_plan_of};
pub use report::MIRRORED_TYPES;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::SUBSCRIPTION;

/// The reconciler's context: the shared one, plus the plans it created and the status writes it
/// made that the stores may not show yet.
pub struct SubscriptionContext {
    pub context: Arc<Context>,
    created: CreatedPlans,
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
    let for_catalog = {
        let subscriptions = subscriptions.clone();
        move |catalog: Arc<CatalogSource>| triggers::for_catalog_source(&subscriptions, &catalog)
    };
    let for_csv = {
        let subscriptions = subscriptions.clone();
        move |csv: Arc<ClusterServiceVersion>| triggers::for_csv(&subscriptions, &csv)
    };
    let controller =
        Controller::for_shared_stream(reflectors.subscriptions.subscribe(), subscriptions.store())
            .watches_shared_stream(reflectors.catalog_sources.subscribe(), for_catalog)
            .watches_shared_stream(
                reflectors.install_plans.subscribe(),
                |plan: Arc<InstallPlan>| triggers::for_install_plan(&plan),
            )
            .watches_shared_stream(reflectors.csvs.subscribe(), for_csv);
    let state = Arc::new(SubscriptionContext {
        context: context.clone(),
        created: CreatedPlans::default(),
        own_writes: OwnWrites::default(),
    });
    let subscription_controller =
        wiring::run(CONTROLLER, controller, &context, shutdown, reconcile, state)
            .for_each(|_| std::future::ready(()));
    futures::future::join(subscription_controller, operator_groups)
        .map(|_| ())
        .boxed()
}
