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

/// A CatalogSource changed in a way resolution reads ([`CatalogFingerprints`]: a new digest may
/// mean an upgrade or a dependency now available; its health is in the status of every
/// Subscription that can see it): the Subscriptions naming it and those in its namespace; for a
/// catalog of the global catalog namespace, every Subscription. Every other event (a poll
/// rewriting `lastConnect`, a `spec` change resolution does not read) reaches none: with 10,000
/// Subscriptions naming one catalog, each such event would otherwise resolve all of them again.
pub struct CatalogTriggers {
    subscriptions: Indexed<StoredSubscription>,
    global: String,
    seen: CatalogFingerprints,
}

impl CatalogTriggers {
    pub fn new(subscriptions: Indexed<StoredSubscription>, global: String) -> Self {
        Self {
            subscriptions,
            global,
            seen: CatalogFingerprints::default(),
        }
    }

    /// The Subscriptions to reconcile for an event of `catalog` (`deleted`: it is gone).
    pub fn map(&self, catalog: &CatalogSource, deleted: bool) -> Refs {
        if !self.seen.changed(catalog, deleted) {
            return Vec::new();
        }
        let namespace = catalog.namespace().unwrap_or_default();
        let name = catalog.name_any();
        let everyone = namespace == self.global;
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

/// What resolution reads of each catalog: which catalog it is (uid), whether it has a status
/// yet, the catalog served (digest), whether it is healthy, and `spec.priority`. Every poll
/// rewrites a catalog's status; only a change of these reaches Subscriptions.
#[derive(Debug, Default)]
pub struct CatalogFingerprints {
    seen: Mutex<HashMap<(String, String), String>>,
}

impl CatalogFingerprints {
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
            catalog.status.is_some(),
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

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::api::catalog_source::{CatalogSourceStatus, GrpcConnectionState};
    use crate::api::catalog_source_status::{STATE_READY, STATE_TRANSIENT_FAILURE};
    use crate::api::{CatalogSourceSpec, SubscriptionSpec};
    use crate::controller::namespace_index::sorted_names as names;

    fn subscription(namespace: &str, name: &str, catalog: (&str, &str)) -> StoredSubscription {
        let mut subscription = Subscription::new(
            name,
            SubscriptionSpec {
                catalog_source_namespace: catalog.0.to_owned(),
                catalog_source: catalog.1.to_owned(),
                package: "widget".to_owned(),
                ..SubscriptionSpec::default()
            },
        );
        subscription.metadata.namespace = Some(namespace.to_owned());
        StoredSubscription::from(subscription)
    }

    /// A catalog as its reconciler writes it after a poll at second `polled`.
    fn catalog(key: (&str, &str), digest: &str, state: &str, polled: i64) -> CatalogSource {
        let at = Time(k8s_openapi::jiff::Timestamp::from_second(polled).unwrap());
        let mut catalog = CatalogSource::new(key.1, CatalogSourceSpec::default());
        catalog.metadata.namespace = Some(key.0.to_owned());
        catalog.metadata.uid = Some(format!("{}-{}", key.0, key.1));
        catalog.status = Some(CatalogSourceStatus {
            latest_image_registry_poll: Some(at.clone()),
            connection_state: Some(GrpcConnectionState {
                last_observed_state: state.to_owned(),
                last_connect: Some(at),
                ..GrpcConnectionState::default()
            }),
            resolved_image_digest: Some(digest.to_owned()),
            ..CatalogSourceStatus::default()
        });
        catalog
    }

    fn triggers() -> CatalogTriggers {
        CatalogTriggers::new(
            Indexed::of([
                subscription("team-a", "widgets", ("shared", "private")),
                subscription("team-b", "widgets", ("shared", "private")),
                // In the catalog's namespace, naming another catalog: it sees this one too.
                subscription("shared", "local", ("elsewhere", "other")),
                subscription("team-c", "gadgets", ("shared", "other")),
            ]),
            "olm".to_owned(),
        )
    }

    const PRIVATE: (&str, &str) = ("shared", "private");
    const SEEING_PRIVATE: [&str; 3] = ["shared/local", "team-a/widgets", "team-b/widgets"];

    #[test]
    fn a_poll_that_changed_nothing_resolution_reads_reaches_no_subscription() {
        let triggers = triggers();
        let first = catalog(PRIVATE, "sha256:1", STATE_READY, 1);
        assert_eq!(names(triggers.map(&first, false)), SEEING_PRIVATE);
        // The next poll found the same digest: only lastConnect and the poll time moved.
        let polled = catalog(PRIVATE, "sha256:1", STATE_READY, 2);
        assert_eq!(names(triggers.map(&polled, false)), [] as [&str; 0]);
    }

    #[test]
    fn what_resolution_reads_reaches_the_subscriptions_that_see_the_catalog() {
        let triggers = triggers();
        let first = catalog(PRIVATE, "sha256:1", STATE_READY, 1);
        triggers.map(&first, false);
        let updated = catalog(PRIVATE, "sha256:2", STATE_READY, 2);
        assert_eq!(names(triggers.map(&updated, false)), SEEING_PRIVATE);
        let failing = catalog(PRIVATE, "sha256:2", STATE_TRANSIENT_FAILURE, 3);
        assert_eq!(names(triggers.map(&failing, false)), SEEING_PRIVATE);
        let mut preferred = failing.clone();
        preferred.spec.priority = Some(10);
        assert_eq!(names(triggers.map(&preferred, false)), SEEING_PRIVATE);
        let mut recreated = preferred.clone();
        recreated.metadata.uid = Some("another".to_owned());
        assert_eq!(names(triggers.map(&recreated, false)), SEEING_PRIVATE);
        assert_eq!(names(triggers.map(&recreated, true)), SEEING_PRIVATE);
    }

    #[test]
    fn a_first_status_reaches_them_even_when_it_is_a_failure() {
        let triggers = triggers();
        let mut created = catalog(PRIVATE, "sha256:1", STATE_TRANSIENT_FAILURE, 1);
        created.status = None;
        assert_eq!(names(triggers.map(&created, false)), SEEING_PRIVATE);
        // Resolution waits for a catalog without status and skips an unhealthy one.
        let mut failed = catalog(PRIVATE, "sha256:1", STATE_TRANSIENT_FAILURE, 2);
        failed.status.as_mut().unwrap().resolved_image_digest = None;
        assert_eq!(names(triggers.map(&failed, false)), SEEING_PRIVATE);
    }

    #[test]
    fn a_global_catalog_reaches_every_subscription_but_only_when_it_changed() {
        let triggers = triggers();
        let global = ("olm", "community");
        let first = catalog(global, "sha256:1", STATE_READY, 1);
        assert_eq!(
            names(triggers.map(&first, false)),
            [
                "shared/local",
                "team-a/widgets",
                "team-b/widgets",
                "team-c/gadgets"
            ]
        );
        let polled = catalog(global, "sha256:1", STATE_READY, 2);
        assert_eq!(names(triggers.map(&polled, false)), [] as [&str; 0]);
    }
}
