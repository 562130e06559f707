//! Dereference: everything a Subscription reconcile reads, from the shared stores and the loaded
//! catalogs (reads only; no API request).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::created::CreatedPlans;
use super::decide::SeenCatalog;
use super::plan_builder::is_plan_of;
use crate::api::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription};
use crate::controller::catalogs::LoadedCatalog;
use crate::controller::context::Context;
use crate::controller::stored_object::StoredPlan;

/// What the stores say about a Subscription's world.
pub struct Observed {
    /// The catalogs the namespace sees (its own and the global catalog namespace's) and the one
    /// the Subscription names, each with its catalog as loaded by the CatalogSource reconciler.
    pub catalogs: Vec<(Arc<CatalogSource>, Option<Arc<LoadedCatalog>>)>,
    /// The InstallPlans that serve the Subscription, oldest first (including ones created but
    /// not yet in the store).
    pub plans: Vec<InstallPlan>,
    /// Every InstallPlan in the namespace, likewise.
    pub namespace_plans: Vec<InstallPlan>,
    /// The Subscriptions in the namespace.
    pub subscriptions: Vec<Arc<Subscription>>,
    /// opcat's CSVs in the namespace, by name.
    pub csvs: BTreeMap<String, Arc<ClusterServiceVersion>>,
    /// `spec.generation` for a new plan: one more than the highest in the namespace.
    pub next_generation: i64,
}

impl Observed {
    /// The catalogs as resolution sees them.
    pub fn seen(&self) -> Vec<SeenCatalog<'_>> {
        self.catalogs
            .iter()
            .map(|(source, loaded)| SeenCatalog {
                source,
                loaded: loaded.as_deref(),
            })
            .collect()
    }

    /// The CatalogSources whose health the Subscription reports.
    pub fn catalog_sources(&self) -> impl Iterator<Item = &CatalogSource> {
        self.catalogs.iter().map(|(source, _)| source.as_ref())
    }
}

/// Reads the stores for `subscription`.
pub fn observe(context: &Context, created: &CreatedPlans, subscription: &Subscription) -> Observed {
    let stores = &context.stores;
    let namespace = subscription.namespace().unwrap_or_default();
    let spec = &subscription.spec;
    let global = context.settings.global_catalog_namespace.as_str();

    let mut sources: Vec<Arc<CatalogSource>> =
        stores.namespaced.catalog_sources.in_namespace(&namespace);
    if global != namespace {
        sources.extend(stores.namespaced.catalog_sources.in_namespace(global));
    }
    let named = ObjectRef::<CatalogSource>::new(&spec.catalog_source)
        .within(&spec.catalog_source_namespace);
    if spec.catalog_source_namespace != namespace && spec.catalog_source_namespace != global {
        sources.extend(stores.catalog_sources.get(&named));
    }
    sources.sort_by_key(|catalog| (catalog.namespace(), catalog.name_any()));
    let catalogs = sources
        .into_iter()
        .map(|source| {
            let loaded = context
                .catalogs
                .get(&source.namespace().unwrap_or_default(), &source.name_any());
            (source, loaded)
        })
        .collect();

    let in_namespace: Vec<Arc<StoredPlan>> =
        stores.namespaced.install_plans.in_namespace(&namespace);
    let listed: Vec<String> = in_namespace.iter().filter_map(|plan| plan.uid()).collect();
    let unseen = created.unseen(&namespace, &listed);
    let mut namespace_plans: Vec<InstallPlan> = in_namespace
        .iter()
        .map(|plan| plan.object())
        .chain(unseen)
        .collect();
    namespace_plans.sort_by(|a, b| {
        (a.spec.generation, a.creation_timestamp(), a.name_any()).cmp(&(
            b.spec.generation,
            b.creation_timestamp(),
            b.name_any(),
        ))
    });
    let max_generation = namespace_plans
        .iter()
        .filter_map(|plan| plan.spec.generation)
        .max()
        .unwrap_or(0);
    let plans = namespace_plans
        .iter()
        .filter(|plan| is_plan_of(plan, subscription))
        .cloned()
        .collect();

    let subscriptions = stores.namespaced.subscriptions.in_namespace(&namespace);
    let csvs = stores
        .namespaced
        .csvs
        .in_namespace(&namespace)
        .into_iter()
        .map(|csv| (csv.name_any(), Arc::new(csv.object())))
        .collect();

    Observed {
        catalogs,
        plans,
        namespace_plans,
        subscriptions: subscriptions
            .iter()
            .map(|subscription| Arc::new(subscription.object()))
            .collect(),
        csvs,
        next_generation: max_generation.saturating_add(1),
    }
}
