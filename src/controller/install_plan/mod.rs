//! The InstallPlan reconciler: installs what a Subscription resolved: its own bundle and the
//! operators it depends on, in one plan.
//!
//! - The plan's bundles come from its record (`controller::plan_record`: annotation
//!   `opcat.dev/bundles`, or the single-bundle annotations of older plans).
//! - `approved: false` → `phase: RequiresApproval` and nothing else: approval holds every bundle
//!   of the plan (a person sets `spec.approved: true`; that change triggers the next reconcile).
//! - Approved → `phase: Installing`, one `bundleLookups` entry per bundle → pull each bundle
//!   image with the pull secrets of its own catalog, verified and cached by digest → read it as
//!   a registry+v1 bundle → check that opcat can install its CSV, and that what its
//!   `metadata/dependencies.yaml` declares is met by the plan or the namespace → create the CSVs,
//!   dependencies first (digest-pinned bundle image, its own catalog annotation so the CSV
//!   reconciler propagates that catalog's pull secrets, the bundle's properties, finalizer set;
//!   an existing CSV of that name is left alone) → `phase: Complete` with the plan's steps.
//! - Registry failures that a retry can fix (authentication, network, 5xx) keep the plan
//!   `Installing` with the error in its status and retry with backoff; a change of the catalog's
//!   pull Secret retries at once. Invalid content fails the plan for good (`phase: Failed`,
//!   `Installed=False` / `InstallComponentFailed` with every problem); the Subscription shows it.
//! - A CSV of the plan that replaces one whose OperatorCondition holds upgrades keeps the plan
//!   `Installing` with `Installed=False` / `OperatorConditionNotUpgradeable` until the gate opens
//!   (`held`); an OperatorCondition change looks again.
//! - Complete and Failed plans are records and are never changed again. To retry a failed plan,
//!   delete it: the Subscription creates a new one.
//!
//! Steps, one file each: `bundles` and `fetch` (registry) → `csv_builder`, `properties`,
//! `declared` (pure) → `status` (pure) and `status_writer`, run by `reconcile`.

mod bundles;
mod csv_builder;
mod declared;
mod error;
mod fetch;
mod held;
mod properties;
mod reconcile;
mod status;
mod status_writer;
mod triggers;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::Controller;

use super::context::Context;
use super::manager::Shutdown;
use super::own_writes::OwnWrites;
use super::stores::Reflectors;
use super::{upgrade_gate, wiring};
use crate::api::{CatalogSource, OperatorCondition};
use reconcile::reconcile;

pub use error::InstallPlanError;
pub use fetch::FetchError;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::INSTALL_PLAN;

/// The reconciler's context: the shared one and the status writes the store may not show yet.
pub struct InstallPlanContext {
    pub context: Arc<Context>,
    own_writes: OwnWrites,
    /// Parsed bundles shared by the plans that install them.
    loaded: fetch::LoadedBundles,
}

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let plans = context.stores.install_plans.clone();
    let for_catalog = {
        let plans = plans.clone();
        move |catalog: Arc<CatalogSource>| triggers::for_catalog_source(&plans, &catalog)
    };
    let for_secret = {
        let plans = plans.clone();
        let catalogs = context.stores.catalog_sources.clone();
        context.source_secrets.subscribe().flat_map(move |secret| {
            futures::stream::iter(triggers::for_source_secret(&plans, &catalogs, &secret))
        })
    };
    let for_condition = {
        let plans = context.stores.namespaced.install_plans.clone();
        move |condition: Arc<OperatorCondition>| upgrade_gate::plans(&plans, &condition)
    };
    let for_deleted_condition = for_condition.clone();
    let controller = Controller::for_shared_stream(reflectors.install_plans.subscribe(), plans)
        .watches_shared_stream(reflectors.catalog_sources.subscribe(), for_catalog)
        .watches_shared_stream(reflectors.operator_conditions.subscribe(), for_condition)
        .watches_shared_stream(
            reflectors.operator_conditions.subscribe_deleted(),
            for_deleted_condition,
        )
        .reconcile_on(for_secret);
    let state = Arc::new(InstallPlanContext {
        context: context.clone(),
        own_writes: OwnWrites::default(),
        loaded: fetch::LoadedBundles::default(),
    });
    wiring::run(CONTROLLER, controller, &context, shutdown, reconcile, state)
        .for_each(|_| std::future::ready(()))
        .boxed()
}
