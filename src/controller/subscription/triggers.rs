//! Which Subscriptions to reconcile when something else changes (reads the Subscription store;
//! no API request).

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use crate::api::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription};
use crate::controller::keys;
use crate::controller::stores::Indexed;

/// A CatalogSource changed (a new digest may mean an upgrade; its health is in the status of
/// every Subscription that can see it): the Subscriptions naming it and those in its namespace.
pub fn for_catalog_source(
    subscriptions: &Indexed<Subscription>,
    catalog: &CatalogSource,
) -> Vec<ObjectRef<Subscription>> {
    let namespace = catalog.namespace().unwrap_or_default();
    let name = catalog.name_any();
    subscriptions
        .state()
        .iter()
        .filter(|sub| {
            (sub.spec.catalog_source_namespace == namespace && sub.spec.catalog_source == name)
                || sub.namespace().as_deref() == Some(namespace.as_str())
        })
        .map(|sub| ObjectRef::from_obj(sub.as_ref()))
        .collect()
}

/// An InstallPlan changed: the Subscription that created it.
pub fn for_install_plan(plan: &InstallPlan) -> Option<ObjectRef<Subscription>> {
    let name = plan.annotations().get(keys::install_plan::SUBSCRIPTION)?;
    let namespace = plan.namespace()?;
    Some(ObjectRef::new(name).within(&namespace))
}

/// A CSV changed: the Subscription named in its annotation, and any Subscription in its
/// namespace whose status names it.
pub fn for_csv(
    subscriptions: &Indexed<Subscription>,
    csv: &ClusterServiceVersion,
) -> Vec<ObjectRef<Subscription>> {
    let Some(namespace) = csv.namespace() else {
        return Vec::new();
    };
    let name = csv.name_any();
    let annotated = csv.annotations().get(keys::csv::SUBSCRIPTION);
    let mut refs: Vec<ObjectRef<Subscription>> = subscriptions
        .in_namespace(&namespace)
        .iter()
        .filter(|sub| {
            let status = sub.status.as_ref();
            Some(&sub.name_any()) == annotated
                || status.and_then(|s| s.current_csv.as_ref()) == Some(&name)
                || status.and_then(|s| s.installed_csv.as_ref()) == Some(&name)
        })
        .map(|sub| ObjectRef::from_obj(sub.as_ref()))
        .collect();
    if refs.is_empty()
        && let Some(annotated) = annotated
    {
        refs.push(ObjectRef::new(annotated).within(&namespace));
    }
    refs
}
