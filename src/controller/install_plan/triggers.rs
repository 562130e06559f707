//! Which InstallPlans to reconcile when a catalog or one of its pull secrets changes: the plans
//! still installing a bundle from that catalog (a fixed Secret retries a failed pull at once). Reads the
//! stores; no API request.

use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::api::CatalogSource;
use crate::api::install_plan::InstallPlanStatus;
use crate::controller::plan_record;
use crate::controller::source_secrets::SecretKey;
use crate::controller::stored_object::StoredPlan;

/// Whether a plan with `status` is a record (never changed again).
pub fn is_finished(status: Option<&InstallPlanStatus>) -> bool {
    status.is_some_and(InstallPlanStatus::is_finished)
}

/// Unfinished plans installing a bundle from `namespace/name`.
fn unfinished_from(
    plans: &Store<StoredPlan>,
    namespace: &str,
    name: &str,
) -> Vec<ObjectRef<StoredPlan>> {
    plans
        .state()
        .iter()
        .filter(|plan| !is_finished(plan.status.as_ref()))
        .filter(|plan| {
            plan_record::catalogs(&plan.object())
                .iter()
                .any(|(ns, n)| ns == namespace && n == name)
        })
        .map(|plan| ObjectRef::from_obj(plan.as_ref()))
        .collect()
}

/// A CatalogSource changed (for example its `spec.secrets`).
pub fn for_catalog_source(
    plans: &Store<StoredPlan>,
    catalog: &CatalogSource,
) -> Vec<ObjectRef<StoredPlan>> {
    unfinished_from(
        plans,
        &catalog.namespace().unwrap_or_default(),
        &catalog.name_any(),
    )
}

/// A source Secret changed: the unfinished plans of every catalog that lists it.
pub fn for_source_secret(
    plans: &Store<StoredPlan>,
    catalogs: &Store<CatalogSource>,
    secret: &SecretKey,
) -> Vec<ObjectRef<StoredPlan>> {
    let (namespace, name) = secret;
    catalogs
        .state()
        .iter()
        .filter(|catalog| catalog.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|catalog| catalog.spec.secret_names().any(|secret| secret == name))
        .flat_map(|catalog| for_catalog_source(plans, catalog))
        .collect()
}
