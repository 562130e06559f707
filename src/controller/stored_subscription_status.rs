//! A Subscription's status as the shared watch stores it ([`super::stored_object`]): the same
//! fields, with the condition strings shared between Subscriptions and each catalog's reference
//! held once however many Subscriptions report its health. [`StoredSubscriptionStatus::load`]
//! gives the status back exactly as it was read.
//!
//! Why: the status was three quarters of a stored Subscription (3.2 kB of 4.4 kB at 10,000
//! namespaces, scripts/bench-scale.sh): five conditions of four `String`s each, whose type,
//! status, reason and usually message are the same in every namespace, and a catalog health
//! entry whose seven-string `ObjectReference` names the same CatalogSource everywhere.

use std::sync::{Arc, LazyLock};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::stored_object::Compacted;
use crate::api::subscription::{
    InstallPlanReference, SubscriptionCatalogHealth, SubscriptionCondition,
};
use crate::api::{Subscription, SubscriptionStatus};
use crate::interner::{Interner, Strings};

/// The catalog references of stored catalog health entries: one per catalog.
static CATALOG_REFERENCES: LazyLock<Interner<ObjectReference>> = LazyLock::new(Interner::default);

/// A stored Subscription's status (see the module docs). The fields readers of the store read
/// are public; the rest is read through [`StoredSubscriptionStatus::load`].
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSubscriptionStatus {
    pub current_csv: Option<String>,
    pub installed_csv: Option<String>,
    pub state: Option<String>,
    install_plan: Option<InstallPlanReference>,
    reason: Option<String>,
    install_plan_generation: Option<i64>,
    install_plan_ref: Option<ObjectReference>,
    catalog_health: Option<Box<[StoredHealth]>>,
    conditions: Option<Box<[StoredCondition]>>,
    last_updated: Time,
}

/// A catalog health entry, its reference shared ([`CATALOG_REFERENCES`]).
#[derive(Clone, Debug, PartialEq)]
struct StoredHealth {
    catalog_source_ref: Arc<ObjectReference>,
    last_updated: Time,
    healthy: bool,
}

/// A condition, its strings shared.
#[derive(Clone, Debug, PartialEq)]
struct StoredCondition {
    type_: Arc<str>,
    status: Arc<str>,
    reason: Option<Arc<str>>,
    message: Option<Arc<str>>,
    last_heartbeat_time: Option<Time>,
    last_transition_time: Option<Time>,
}

fn strings() -> &'static Strings {
    &<Subscription as Compacted>::tables().strings
}

impl StoredSubscriptionStatus {
    /// The stored form of `status`.
    pub fn store(status: SubscriptionStatus) -> Self {
        // Destructured without `..`: a field added to the status must be kept here too.
        let SubscriptionStatus {
            current_csv,
            installed_csv,
            install_plan,
            state,
            reason,
            install_plan_generation,
            install_plan_ref,
            catalog_health,
            conditions,
            last_updated,
        } = status;
        let strings = strings();
        let shared = |value: String| strings.get(&value);
        Self {
            current_csv,
            installed_csv,
            state,
            install_plan,
            reason,
            install_plan_generation,
            install_plan_ref,
            catalog_health: catalog_health.map(|entries| {
                entries
                    .into_iter()
                    .map(|entry| StoredHealth {
                        catalog_source_ref: CATALOG_REFERENCES
                            .intern(Arc::new(entry.catalog_source_ref)),
                        last_updated: entry.last_updated,
                        healthy: entry.healthy,
                    })
                    .collect()
            }),
            conditions: conditions.map(|conditions| {
                conditions
                    .into_iter()
                    .map(|condition| StoredCondition {
                        type_: shared(condition.type_),
                        status: shared(condition.status),
                        reason: condition.reason.map(shared),
                        message: condition.message.map(shared),
                        last_heartbeat_time: condition.last_heartbeat_time,
                        last_transition_time: condition.last_transition_time,
                    })
                    .collect()
            }),
            last_updated,
        }
    }

    /// The status as it was read.
    pub fn load(&self) -> SubscriptionStatus {
        let owned = |value: &Arc<str>| value.to_string();
        SubscriptionStatus {
            current_csv: self.current_csv.clone(),
            installed_csv: self.installed_csv.clone(),
            install_plan: self.install_plan.clone(),
            state: self.state.clone(),
            reason: self.reason.clone(),
            install_plan_generation: self.install_plan_generation,
            install_plan_ref: self.install_plan_ref.clone(),
            catalog_health: self.catalog_health.as_ref().map(|entries| {
                entries
                    .iter()
                    .map(|entry| SubscriptionCatalogHealth {
                        catalog_source_ref: ObjectReference::clone(&entry.catalog_source_ref),
                        last_updated: entry.last_updated.clone(),
                        healthy: entry.healthy,
                    })
                    .collect()
            }),
            conditions: self.conditions.as_ref().map(|conditions| {
                conditions
                    .iter()
                    .map(|condition| SubscriptionCondition {
                        type_: owned(&condition.type_),
                        status: owned(&condition.status),
                        reason: condition.reason.as_ref().map(owned),
                        message: condition.message.as_ref().map(owned),
                        last_heartbeat_time: condition.last_heartbeat_time.clone(),
                        last_transition_time: condition.last_transition_time.clone(),
                    })
                    .collect()
            }),
            last_updated: self.last_updated.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn catalog() -> ObjectReference {
        ObjectReference {
            api_version: Some("operators.coreos.com/v1alpha1".into()),
            kind: Some("CatalogSource".into()),
            name: Some("examples".into()),
            namespace: Some("olm".into()),
            uid: Some("catalog-uid".into()),
            ..ObjectReference::default()
        }
    }

    fn status(namespace: &str) -> SubscriptionStatus {
        SubscriptionStatus {
            current_csv: Some("widget.v2".into()),
            installed_csv: Some("widget.v1".into()),
            install_plan: Some(InstallPlanReference {
                api_version: "operators.coreos.com/v1alpha1".into(),
                kind: "InstallPlan".into(),
                name: "install-abcde".into(),
                uuid: "plan-uid".into(),
            }),
            state: Some("UpgradePending".into()),
            reason: Some("InstallPlanPending".into()),
            install_plan_generation: Some(2),
            install_plan_ref: Some(ObjectReference {
                name: Some("install-abcde".into()),
                namespace: Some(namespace.into()),
                ..ObjectReference::default()
            }),
            catalog_health: Some(vec![SubscriptionCatalogHealth {
                catalog_source_ref: catalog(),
                last_updated: time(10),
                healthy: true,
            }]),
            conditions: Some(vec![
                SubscriptionCondition {
                    type_: "CatalogSourcesUnhealthy".into(),
                    status: "False".into(),
                    reason: Some("AllCatalogSourcesHealthy".into()),
                    message: Some("all available catalogsources are healthy".into()),
                    last_heartbeat_time: None,
                    last_transition_time: Some(time(11)),
                },
                SubscriptionCondition {
                    type_: "PullSecretsNotPropagated".into(),
                    status: "False".into(),
                    reason: None,
                    message: Some(format!("copied into namespace {namespace}")),
                    last_heartbeat_time: Some(time(12)),
                    last_transition_time: None,
                },
            ]),
            last_updated: time(13),
        }
    }

    #[test]
    fn the_status_comes_back_as_it_was_read() {
        let stored = StoredSubscriptionStatus::store(status("team-a"));
        assert_eq!(stored.load(), status("team-a"));
        assert_eq!(stored.current_csv.as_deref(), Some("widget.v2"));
        assert_eq!(stored.installed_csv.as_deref(), Some("widget.v1"));

        // Empty and absent lists stay apart.
        let mut empty = status("team-a");
        empty.conditions = Some(Vec::new());
        empty.catalog_health = None;
        assert_eq!(StoredSubscriptionStatus::store(empty.clone()).load(), empty);
    }

    #[test]
    fn subscriptions_share_condition_strings_and_catalog_references() {
        let one = StoredSubscriptionStatus::store(status("team-a"));
        let two = StoredSubscriptionStatus::store(status("team-b"));
        let conditions = |stored: &StoredSubscriptionStatus| stored.conditions.clone().unwrap();
        let (first, second) = (conditions(&one), conditions(&two));
        assert!(Arc::ptr_eq(
            first[0].message.as_ref().unwrap(),
            second[0].message.as_ref().unwrap()
        ));
        assert!(Arc::ptr_eq(&first[1].type_, &second[1].type_));
        assert_ne!(first[1].message, second[1].message);
        let reference = |stored: &StoredSubscriptionStatus| {
            Arc::clone(&stored.catalog_health.as_ref().unwrap()[0].catalog_source_ref)
        };
        assert!(Arc::ptr_eq(&reference(&one), &reference(&two)));
    }
}
