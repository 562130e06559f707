//! Pure: the Subscription's `catalogHealth` list and its `CatalogSourcesUnhealthy` condition (no
//! client).
//!
//! OLM lists every catalog in the Subscription's namespace and in the global catalog namespace;
//! so does opcat (every catalog takes part in dependency resolution), plus the one the
//! Subscription names wherever it lives, sorted by namespace and name. A catalog is healthy when opcat's CatalogSource
//! reconciler last read it (`connectionState.lastObservedState: READY`) and its spec is valid.
//! Messages follow OLM's (`subscription/state.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Resource, ResourceExt};

use crate::api::CatalogSource;
use crate::api::catalog_source_status::{REASON_SPEC_INVALID, STATE_READY};
use crate::api::conditions::Status;
use crate::api::subscription::SubscriptionCatalogHealth;
use crate::api::subscription_status::{
    REASON_ALL_CATALOG_SOURCES_HEALTHY, REASON_UNHEALTHY_CATALOG_SOURCE_FOUND,
};

/// Whether opcat can resolve from `catalog` (as its status says).
pub fn is_healthy(catalog: &CatalogSource) -> bool {
    let Some(status) = catalog.status.as_ref() else {
        return false;
    };
    status.reason.as_deref() != Some(REASON_SPEC_INVALID)
        && status
            .connection_state
            .as_ref()
            .is_some_and(|state| state.last_observed_state == STATE_READY)
}

/// The `CatalogSourcesUnhealthy` condition to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCondition {
    pub status: Status,
    pub reason: &'static str,
    pub message: String,
}

/// The health of the catalogs a Subscription can see.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogHealth {
    /// `status.catalogHealth`.
    pub entries: Vec<SubscriptionCatalogHealth>,
    /// `CatalogSourcesUnhealthy`.
    pub condition: HealthCondition,
}

/// Computes `catalogHealth` for a Subscription targeting `target` (`namespace/name`, `found` when
/// it exists) that sees `catalogs`. An entry keeps its `lastUpdated` from `previous` while its
/// health does not change.
pub fn catalog_health<'a>(
    target: (&str, &str),
    catalogs: impl IntoIterator<Item = &'a CatalogSource>,
    previous: &[SubscriptionCatalogHealth],
    now: &Time,
) -> CatalogHealth {
    let mut seen: Vec<&CatalogSource> = catalogs.into_iter().collect();
    seen.sort_by_key(|catalog| (catalog.namespace(), catalog.name_any()));
    seen.dedup_by_key(|catalog| (catalog.namespace(), catalog.name_any()));

    let entries: Vec<SubscriptionCatalogHealth> = seen
        .iter()
        .map(|catalog| entry(catalog, previous, now))
        .collect();

    let (target_namespace, target_name) = target;
    let targeted = seen.iter().find(|catalog| {
        catalog.namespace().as_deref() == Some(target_namespace)
            && catalog.name_any() == target_name
    });
    let unhealthy: Vec<String> = seen
        .iter()
        .filter(|catalog| !is_healthy(catalog))
        .map(|catalog| {
            format!(
                "{}/{}",
                catalog.namespace().unwrap_or_default(),
                catalog.name_any()
            )
        })
        .collect();
    let condition = match targeted {
        None => unhealthy_condition(format!(
            "targeted catalogsource {target_namespace}/{target_name} missing"
        )),
        Some(catalog) if !is_healthy(catalog) => unhealthy_condition(format!(
            "targeted catalogsource {target_namespace}/{target_name} unhealthy"
        )),
        Some(_) if !unhealthy.is_empty() => {
            unhealthy_condition(format!("catalogsource {} unhealthy", unhealthy.join(", ")))
        }
        Some(_) => HealthCondition {
            status: Status::False,
            reason: REASON_ALL_CATALOG_SOURCES_HEALTHY,
            message: "all available catalogsources are healthy".to_owned(),
        },
    };
    CatalogHealth { entries, condition }
}

fn unhealthy_condition(message: String) -> HealthCondition {
    HealthCondition {
        status: Status::True,
        reason: REASON_UNHEALTHY_CATALOG_SOURCE_FOUND,
        message,
    }
}

fn entry(
    catalog: &CatalogSource,
    previous: &[SubscriptionCatalogHealth],
    now: &Time,
) -> SubscriptionCatalogHealth {
    let healthy = is_healthy(catalog);
    // Not the resourceVersion: it changes with every poll, and the entry would with it.
    let reference = ObjectReference {
        api_version: Some(CatalogSource::api_version(&()).into_owned()),
        kind: Some(CatalogSource::kind(&()).into_owned()),
        name: Some(catalog.name_any()),
        namespace: catalog.namespace(),
        uid: catalog.uid(),
        ..ObjectReference::default()
    };
    let last_updated = previous
        .iter()
        .find(|old| {
            old.catalog_source_ref.namespace == reference.namespace
                && old.catalog_source_ref.name == reference.name
                && old.catalog_source_ref.uid == reference.uid
                && old.healthy == healthy
        })
        .map_or_else(|| now.clone(), |old| old.last_updated.clone());
    SubscriptionCatalogHealth {
        catalog_source_ref: reference,
        last_updated,
        healthy,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::api::catalog_source::{CatalogSourceStatus, GrpcConnectionState};

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn catalog(namespace: &str, name: &str, state: Option<&str>) -> CatalogSource {
        CatalogSource {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                uid: Some(format!("uid-{namespace}-{name}")),
                ..ObjectMeta::default()
            },
            spec: Default::default(),
            status: state.map(|state| CatalogSourceStatus {
                connection_state: Some(GrpcConnectionState {
                    last_observed_state: state.into(),
                    ..GrpcConnectionState::default()
                }),
                ..CatalogSourceStatus::default()
            }),
        }
    }

    #[test]
    fn healthy_means_ready_and_a_valid_spec() {
        assert!(is_healthy(&catalog("a", "b", Some("READY"))));
        assert!(!is_healthy(&catalog("a", "b", Some("TRANSIENT_FAILURE"))));
        assert!(!is_healthy(&catalog("a", "b", None)));
        let mut invalid = catalog("a", "b", Some("READY"));
        invalid.status.as_mut().unwrap().reason = Some(REASON_SPEC_INVALID.into());
        assert!(!is_healthy(&invalid));
    }

    #[test]
    fn all_healthy_catalogs_sorted_and_deduplicated() {
        let target = catalog("ops", "main", Some("READY"));
        let other = catalog("ops", "extra", Some("READY"));
        let health = catalog_health(("ops", "main"), [&target, &other, &target], &[], &at(5));
        let names: Vec<_> = health
            .entries
            .iter()
            .map(|e| e.catalog_source_ref.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["extra", "main"]);
        assert!(
            health
                .entries
                .iter()
                .all(|e| e.healthy && e.last_updated == at(5))
        );
        assert_eq!(health.condition.status, Status::False);
        assert_eq!(health.condition.reason, "AllCatalogSourcesHealthy");
        assert_eq!(
            health.condition.message,
            "all available catalogsources are healthy"
        );
        let ref_ = &health.entries[1].catalog_source_ref;
        assert_eq!(ref_.kind.as_deref(), Some("CatalogSource"));
        assert_eq!(ref_.uid.as_deref(), Some("uid-ops-main"));
        assert_eq!(ref_.resource_version, None);
    }

    #[test]
    fn missing_and_unhealthy_targets_are_named() {
        let other = catalog("ops", "extra", Some("READY"));
        let missing = catalog_health(("olm", "main"), [&other], &[], &at(1));
        assert_eq!(missing.condition.status, Status::True);
        assert_eq!(missing.condition.reason, "UnhealthyCatalogSourceFound");
        assert_eq!(
            missing.condition.message,
            "targeted catalogsource olm/main missing"
        );
        let sick = catalog("olm", "main", Some("TRANSIENT_FAILURE"));
        let unhealthy = catalog_health(("olm", "main"), [&other, &sick], &[], &at(1));
        assert_eq!(
            unhealthy.condition.message,
            "targeted catalogsource olm/main unhealthy"
        );
        let target = catalog("olm", "main", Some("READY"));
        let sick_other = catalog("ops", "extra", None);
        let neighbour = catalog_health(("olm", "main"), [&target, &sick_other], &[], &at(1));
        assert_eq!(neighbour.condition.status, Status::True);
        assert_eq!(
            neighbour.condition.message,
            "catalogsource ops/extra unhealthy"
        );
    }

    #[test]
    fn last_updated_changes_only_with_health() {
        let target = catalog("ops", "main", Some("READY"));
        let first = catalog_health(("ops", "main"), [&target], &[], &at(1));
        let again = catalog_health(("ops", "main"), [&target], &first.entries, &at(9));
        assert_eq!(again, first);
        let sick = catalog("ops", "main", Some("TRANSIENT_FAILURE"));
        let changed = catalog_health(("ops", "main"), [&sick], &first.entries, &at(9));
        assert_eq!(changed.entries[0].last_updated, at(9));
        assert!(!changed.entries[0].healthy);
    }
}
