//! Dereference: everything a Subscription reconcile reads, from the shared stores and the loaded
//! catalogs (reads only; no API request).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::catalog_health::is_healthy;
use super::created::CreatedPlans;
use super::decide::CatalogState;
use super::plan_builder::is_plan_of;
use crate::api::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription};
use crate::controller::catalogs::LoadedCatalog;
use crate::controller::context::Context;

/// What the stores say about a Subscription's world.
pub struct Observed {
    /// The CatalogSource the Subscription names.
    pub catalog_source: Option<Arc<CatalogSource>>,
    /// Its catalog, as loaded by the CatalogSource reconciler.
    pub loaded: Option<Arc<LoadedCatalog>>,
    /// The catalogs whose health the Subscription reports: those in its namespace and its own.
    pub visible_catalogs: Vec<Arc<CatalogSource>>,
    /// The Subscription's InstallPlans, oldest first (including ones created but not yet in
    /// the store).
    pub plans: Vec<InstallPlan>,
    /// opcat's CSVs in the namespace, by name.
    pub csvs: BTreeMap<String, Arc<ClusterServiceVersion>>,
    /// `spec.generation` for a new plan: one more than the highest in the namespace.
    pub next_generation: i64,
}

impl Observed {
    /// The catalog as resolution sees it.
    pub fn catalog_state(&self) -> CatalogState<'_> {
        match (&self.catalog_source, &self.loaded) {
            (None, _) => CatalogState::Missing,
            (Some(_), Some(loaded)) => CatalogState::Loaded(&loaded.catalog),
            (Some(source), None) => CatalogState::NotLoaded {
                ready: is_healthy(source),
            },
        }
    }
}

/// Reads the stores for `subscription`.
pub fn observe(context: &Context, created: &CreatedPlans, subscription: &Subscription) -> Observed {
    let stores = &context.stores;
    let namespace = subscription.namespace().unwrap_or_default();
    let spec = &subscription.spec;

    let catalog_ref = ObjectRef::<CatalogSource>::new(&spec.catalog_source)
        .within(&spec.catalog_source_namespace);
    let catalog_source = stores.catalog_sources.get(&catalog_ref);
    let loaded = catalog_source.as_ref().and_then(|_| {
        context
            .catalogs
            .get(&spec.catalog_source_namespace, &spec.catalog_source)
    });
    let mut visible_catalogs: Vec<Arc<CatalogSource>> =
        stores.namespaced.catalog_sources.in_namespace(&namespace);
    visible_catalogs.extend(catalog_source.clone());

    let in_namespace: Vec<Arc<InstallPlan>> =
        stores.namespaced.install_plans.in_namespace(&namespace);
    let listed: Vec<String> = in_namespace.iter().filter_map(|plan| plan.uid()).collect();
    let uid = subscription.uid().unwrap_or_default();
    let unseen = created.unseen(&uid, &listed);
    let max_generation = in_namespace
        .iter()
        .map(Arc::as_ref)
        .chain(unseen.iter())
        .filter_map(|plan| plan.spec.generation)
        .max()
        .unwrap_or(0);
    let mut plans: Vec<InstallPlan> = in_namespace
        .iter()
        .filter(|plan| is_plan_of(plan, subscription))
        .map(|plan| plan.as_ref().clone())
        .chain(unseen)
        .collect();
    plans.sort_by(|a, b| {
        (a.spec.generation, a.creation_timestamp(), a.name_any()).cmp(&(
            b.spec.generation,
            b.creation_timestamp(),
            b.name_any(),
        ))
    });

    let csvs = stores
        .namespaced
        .csvs
        .in_namespace(&namespace)
        .into_iter()
        .map(|csv| (csv.name_any(), csv))
        .collect();

    Observed {
        catalog_source,
        loaded,
        visible_catalogs,
        plans,
        csvs,
        next_generation: max_generation.saturating_add(1),
    }
}
