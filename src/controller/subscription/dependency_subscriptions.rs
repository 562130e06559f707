//! Pure: the Subscription OLM creates for each dependency it installs (no client).
//!
//! OLM v0 installs a dependency with a Subscription of its own in the same namespace, named
//! `<package>-<channel>-<catalog>-<catalogNamespace>` (`resolver/steps.go`,
//! `NewSubscriptionStepResource`), starting at the CSV the resolution chose. That Subscription
//! then upgrades the dependency on its own, and outlives the operator that needed it:
//! uninstalling that operator leaves the dependency installed. A Subscription for the package
//! that already exists in the namespace is used instead of a new one.
//!
//! Differences: the new Subscription takes the `installPlanApproval` of the Subscription whose
//! resolution created it (OLM writes `Automatic`, and makes the shared plan `Manual` when any
//! Subscription is), so a `Manual` operator's dependency also waits for a person; and it carries
//! the annotation [`REQUIRED_BY_ANNOTATION`] saying why it exists.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use crate::api::{Subscription, SubscriptionSpec};
use crate::controller::plan_record::PlanEntry;
use crate::pull_secrets::names::{MAX_NAME_LEN, is_dns1123_subdomain, short_hash};

/// Annotation on a Subscription opcat created for a dependency: which CSV required it, and how.
pub const REQUIRED_BY_ANNOTATION: &str = "opcat.dev/required-by";

/// OLM's name for the Subscription of a dependency, made a valid object name when the parts are
/// not (upper case or other characters become `-`; too long, it is cut and a hash of the parts
/// appended).
pub fn dependency_subscription_name(
    package: &str,
    channel: &str,
    catalog_name: &str,
    catalog_namespace: &str,
) -> String {
    let name = [package, channel, catalog_name, catalog_namespace].join("-");
    if is_dns1123_subdomain(&name) {
        return name;
    }
    let hash = short_hash(&[package, channel, catalog_name, catalog_namespace]);
    let readable: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(MAX_NAME_LEN - 1 - hash.len())
        .collect();
    let readable = readable.trim_matches('-');
    if readable.is_empty() {
        hash
    } else {
        format!("{readable}-{hash}")
    }
}

/// The Subscription to create for the dependency `entry`, in `parent`'s namespace.
pub fn build_dependency_subscription(parent: &Subscription, entry: &PlanEntry) -> Subscription {
    let name = dependency_subscription_name(
        &entry.package,
        &entry.channel,
        &entry.catalog_name,
        &entry.catalog_namespace,
    );
    let annotations = entry.required_by.as_ref().map(|required| {
        BTreeMap::from([(
            REQUIRED_BY_ANNOTATION.to_owned(),
            format!("{} {}", required.csv, required.requirement),
        )])
    });
    Subscription {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: parent.namespace(),
            annotations,
            ..ObjectMeta::default()
        },
        spec: SubscriptionSpec {
            catalog_source: entry.catalog_name.clone(),
            catalog_source_namespace: entry.catalog_namespace.clone(),
            package: entry.package.clone(),
            channel: Some(entry.channel.clone()).filter(|channel| !channel.is_empty()),
            starting_csv: Some(entry.name.clone()),
            install_plan_approval: Some(parent.spec.approval()),
            config: None,
        },
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Approval;
    use crate::controller::plan_record::RequiredBy;

    fn parent(approval: Option<Approval>) -> Subscription {
        let mut parent = Subscription::new(
            "widgets",
            SubscriptionSpec {
                catalog_source: "examples".into(),
                catalog_source_namespace: "olm".into(),
                package: "widget".into(),
                install_plan_approval: approval,
                ..SubscriptionSpec::default()
            },
        );
        parent.metadata.namespace = Some("ops".into());
        parent
    }

    fn dependency() -> PlanEntry {
        PlanEntry {
            name: "etcdoperator.v0.9.4".into(),
            package: "etcd".into(),
            channel: "singlenamespace-alpha".into(),
            catalog_namespace: "olm".into(),
            catalog_name: "private".into(),
            required_by: Some(RequiredBy {
                csv: "widget.v1".into(),
                requirement: "requires package etcd >=0.9.0".into(),
            }),
            ..PlanEntry::default()
        }
    }

    #[test]
    fn named_and_specified_as_olm_does_with_the_parent_s_approval() {
        let sub = build_dependency_subscription(&parent(Some(Approval::Manual)), &dependency());
        assert_eq!(sub.name_any(), "etcd-singlenamespace-alpha-private-olm");
        assert_eq!(sub.namespace().as_deref(), Some("ops"));
        assert_eq!(sub.spec.package, "etcd");
        assert_eq!(sub.spec.channel.as_deref(), Some("singlenamespace-alpha"));
        assert_eq!(sub.spec.catalog_source, "private");
        assert_eq!(sub.spec.catalog_source_namespace, "olm");
        assert_eq!(
            sub.spec.starting_csv.as_deref(),
            Some("etcdoperator.v0.9.4")
        );
        assert_eq!(sub.spec.install_plan_approval, Some(Approval::Manual));
        assert_eq!(
            sub.annotations()[REQUIRED_BY_ANNOTATION],
            "widget.v1 requires package etcd >=0.9.0"
        );
        let automatic = build_dependency_subscription(&parent(None), &dependency());
        assert_eq!(
            automatic.spec.install_plan_approval,
            Some(Approval::Automatic)
        );
    }

    #[test]
    fn names_that_are_not_object_names_are_made_valid_and_stay_distinct() {
        let upper = dependency_subscription_name("etcd", "Stable_V1", "private", "olm");
        assert!(is_dns1123_subdomain(&upper), "{upper}");
        assert!(upper.starts_with("etcd-stable-v1-private-olm-"), "{upper}");
        let other = dependency_subscription_name("etcd", "stable_v1", "private", "olm");
        assert_ne!(upper, other);
        let long = dependency_subscription_name(&"p".repeat(200), "c", &"x".repeat(100), "olm");
        assert!(
            long.len() <= MAX_NAME_LEN && is_dns1123_subdomain(&long),
            "{long}"
        );
    }
}
