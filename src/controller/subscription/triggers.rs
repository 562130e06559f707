//! Which Subscriptions to reconcile when something else changes (reads the Subscription store;
//! no API request).

use std::collections::HashMap;
use std::sync::Mutex;

use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::catalog_health::is_healthy;
use crate::api::{CatalogSource, Subscription};
use crate::controller::keys;
use crate::controller::stored_object::{StoredCsv, StoredPlan, StoredSubscription};
use crate::controller::stores::Indexed;

type Refs = Vec<ObjectRef<StoredSubscription>>;

/// A CatalogSource changed (a new digest may mean an upgrade or a dependency now available; its
/// health is in the status of every Subscription that can see it): the Subscriptions naming it
/// and those in its namespace; for a catalog of the global catalog namespace, every
/// Subscription, but only when [`GlobalCatalogs`] says something resolution reads changed.
pub struct CatalogTriggers {
    subscriptions: Indexed<StoredSubscription>,
    global: String,
    seen: GlobalCatalogs,
}

impl CatalogTriggers {
    pub fn new(subscriptions: Indexed<StoredSubscription>, global: String) -> Self {
        Self {
            subscriptions,
            global,
            seen: GlobalCatalogs::default(),
        }
    }

    /// The Subscriptions to reconcile for an event of `catalog` (`deleted`: it is gone).
    pub fn map(&self, catalog: &CatalogSource, deleted: bool) -> Refs {
        let namespace = catalog.namespace().unwrap_or_default();
        let name = catalog.name_any();
        let everyone = namespace == self.global && self.seen.changed(catalog, deleted);
        self.subscriptions
            .state()
            .iter()
            .filter(|sub| {
                everyone
                    || (sub.spec.catalog_source_namespace == namespace
                        && sub.spec.catalog_source == name)
                    || sub.namespace().as_deref() == Some(namespace.as_str())
            })
            .map(|sub| ObjectRef::from_obj(sub.as_ref()))
            .collect()
    }
}

/// What resolution reads of each catalog in the global catalog namespace: the catalog served
/// (digest), whether it is healthy, and `spec.priority`. Every poll rewrites a catalog's status;
/// only a change of these reaches the Subscriptions of every namespace.
#[derive(Debug, Default)]
pub struct GlobalCatalogs {
    seen: Mutex<HashMap<(String, String), String>>,
}

impl GlobalCatalogs {
    /// Whether `catalog` changed in a way resolution sees since its last event (or is new, or
    /// was `deleted`).
    pub fn changed(&self, catalog: &CatalogSource, deleted: bool) -> bool {
        let key = (catalog.namespace().unwrap_or_default(), catalog.name_any());
        let Ok(mut seen) = self.seen.lock() else {
            return true;
        };
        if deleted {
            seen.remove(&key);
            return true;
        }
        let digest = catalog
            .status
            .as_ref()
            .and_then(|status| status.resolved_image_digest.as_deref());
        let fingerprint = serde_json::json!([
            catalog.meta().uid,
            digest,
            is_healthy(catalog),
            catalog.spec.priority
        ])
        .to_string();
        seen.insert(key, fingerprint.clone()) != Some(fingerprint)
    }
}

/// An InstallPlan changed: every Subscription it serves (its owners).
pub fn for_install_plan(plan: &StoredPlan) -> Refs {
    let Some(namespace) = plan.namespace() else {
        return Vec::new();
    };
    let kind = Subscription::kind(&());
    let mut refs: Refs = plan
        .owner_references()
        .iter()
        .filter(|owner| owner.kind == kind)
        .map(|owner| ObjectRef::new(&owner.name).within(&namespace))
        .collect();
    if refs.is_empty()
        && let Some(name) = plan.annotation(keys::install_plan::SUBSCRIPTION)
    {
        refs.push(ObjectRef::new(name).within(&namespace));
    }
    refs
}

/// A CSV changed: the Subscription named in its annotation, and any Subscription in its
/// namespace whose status names it.
pub fn for_csv(subscriptions: &Indexed<StoredSubscription>, csv: &StoredCsv) -> Refs {
    let Some(namespace) = csv.namespace() else {
        return Vec::new();
    };
    let name = csv.name_any();
    let annotated = csv.annotation(keys::csv::SUBSCRIPTION);
    let mut refs: Refs = subscriptions
        .in_namespace(&namespace)
        .iter()
        .filter(|sub| {
            let status = sub.status.as_ref();
            Some(sub.name_any().as_str()) == annotated
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
