//! Pure: the InstallPlan a Subscription creates for a resolution, and how a Subscription
//! recognises the plans that serve it (no client).
//!
//! One plan per resolution: it lists every CSV to install, dependencies first and the
//! Subscription's own last, records each bundle ([`plan_record`]), and is owned (not
//! controlled) by every Subscription it serves: the resolving one and the Subscription of each
//! dependency. Deleting one of them leaves the plan to the others; the garbage collector removes
//! it with the last.
//!
//! Approval: `Manual` when any of those Subscriptions is `Manual` (OLM's rule for the namespace's
//! plan, applied to the Subscriptions the plan serves: an `Automatic` Subscription is never held
//! back by an unrelated `Manual` one). Approving the plan installs every bundle in it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::api::operator::component_labels;
use crate::api::{Approval, InstallPlan, InstallPlanSpec, Subscription};
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::controller::keys::install_plan as keys;
use crate::controller::plan_record::{self, PlanEntry};
use crate::pull_secrets::names::label_value;

/// Label on InstallPlans naming the Subscription whose resolution created them (hashed when
/// longer than 63 characters; the full name is in the [`keys::SUBSCRIPTION`] annotation).
pub const SUBSCRIPTION_LABEL: &str = "opcat.dev/subscription";

/// Prefix of generated InstallPlan names (OLM's).
pub const GENERATE_NAME: &str = "install-";

/// What a new plan is made of.
pub struct PlanInputs<'a> {
    /// The Subscription whose resolution this is.
    pub subscription: &'a Subscription,
    /// Every bundle, dependencies first, the Subscription's own last.
    pub entries: &'a [PlanEntry],
    /// Every Subscription the plan serves, the resolving one included.
    pub owners: &'a [&'a Subscription],
    /// `spec.generation`: one more than the highest in the namespace.
    pub generation: i64,
}

/// The InstallPlan to create: `generateName: install-`, labelled so the shared watch sees it,
/// owned (not controlled) by every Subscription it serves.
pub fn build_install_plan(inputs: &PlanInputs<'_>) -> InstallPlan {
    let subscription = inputs.subscription;
    let name = subscription.name_any();
    let approval = if inputs
        .owners
        .iter()
        .any(|owner| owner.spec.approval() == Approval::Manual)
    {
        Approval::Manual
    } else {
        subscription.spec.approval()
    };

    let mut labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (SUBSCRIPTION_LABEL.to_owned(), label_value(&name)),
    ]);
    // A component of the install of every Subscription it serves (OLM's adoption controller
    // labels each Subscription's plan).
    let namespace = subscription.namespace().unwrap_or_default();
    for owner in inputs.owners.iter().copied().chain([subscription]) {
        labels.extend(component_labels(&owner.spec.package, &namespace));
    }
    let annotations = BTreeMap::from([
        (
            keys::BUNDLES.to_owned(),
            plan_record::encode(inputs.entries),
        ),
        (keys::SUBSCRIPTION.to_owned(), name.clone()),
    ]);
    let mut owners: Vec<OwnerReference> = Vec::new();
    for owner in inputs.owners.iter().copied().chain([subscription]) {
        let reference = owner_reference(owner);
        if !owners.iter().any(|known| known.uid == reference.uid) {
            owners.push(reference);
        }
    }
    InstallPlan {
        metadata: ObjectMeta {
            generate_name: Some(GENERATE_NAME.to_owned()),
            namespace: subscription.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        spec: InstallPlanSpec {
            source: Some(subscription.spec.catalog_source.clone()),
            source_namespace: Some(subscription.spec.catalog_source_namespace.clone()),
            cluster_service_version_names: inputs
                .entries
                .iter()
                .map(|entry| entry.name.clone())
                .collect(),
            approval,
            approved: approval == Approval::Automatic,
            generation: Some(inputs.generation),
        },
        status: None,
    }
}

/// A non-controller, non-blocking reference to the Subscription (OLM's `AddNonBlockingOwner`).
fn owner_reference(subscription: &Subscription) -> OwnerReference {
    OwnerReference {
        api_version: Subscription::api_version(&()).into_owned(),
        kind: Subscription::kind(&()).into_owned(),
        name: subscription.name_any(),
        uid: subscription.uid().unwrap_or_default(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    }
}

/// Whether `plan` serves `subscription`: it has an owner reference to this very Subscription
/// (not an earlier one of the same name whose plans the garbage collector has not removed yet).
pub fn is_plan_of(plan: &InstallPlan, subscription: &Subscription) -> bool {
    let Some(uid) = subscription.meta().uid.as_deref() else {
        return false;
    };
    let name = subscription.name_any();
    plan.owner_references().iter().any(|owner| {
        owner.uid == uid && owner.name == name && owner.kind == Subscription::kind(&())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::SubscriptionSpec;

    fn subscription(name: &str, package: &str, approval: Option<Approval>) -> Subscription {
        let mut subscription = Subscription::new(
            name,
            SubscriptionSpec {
                catalog_source: "catalog".into(),
                catalog_source_namespace: "olm".into(),
                package: package.into(),
                install_plan_approval: approval,
                ..SubscriptionSpec::default()
            },
        );
        subscription.metadata.namespace = Some("ops".into());
        subscription.metadata.uid = Some(format!("{name}-uid"));
        subscription
    }

    fn entry(name: &str, subscription: &str) -> PlanEntry {
        PlanEntry {
            name: name.into(),
            package: "widget-operator".into(),
            channel: "stable".into(),
            image: format!("registry.example.com/{name}"),
            catalog_namespace: "olm".into(),
            catalog_name: "catalog".into(),
            subscription: subscription.into(),
            ..PlanEntry::default()
        }
    }

    fn build(
        subscription: &Subscription,
        entries: &[PlanEntry],
        owners: &[&Subscription],
    ) -> InstallPlan {
        build_install_plan(&PlanInputs {
            subscription,
            entries,
            owners,
            generation: 3,
        })
    }

    #[test]
    fn automatic_plans_are_approved_and_carry_the_record() {
        let subscription = subscription("widgets", "widget-operator", None);
        let entries = [entry("widget-operator.v1.2.0", "widgets")];
        let plan = build(&subscription, &entries, &[&subscription]);
        assert_eq!(plan.metadata.generate_name.as_deref(), Some("install-"));
        assert_eq!(plan.metadata.name, None);
        assert_eq!(plan.namespace().as_deref(), Some("ops"));
        assert_eq!(plan.spec.approval, Approval::Automatic);
        assert!(plan.spec.approved);
        assert_eq!(
            plan.spec.cluster_service_version_names,
            ["widget-operator.v1.2.0"]
        );
        assert_eq!(plan.spec.source.as_deref(), Some("catalog"));
        assert_eq!(plan.spec.source_namespace.as_deref(), Some("olm"));
        assert_eq!(plan.spec.generation, Some(3));
        assert_eq!(plan_record::entries(&plan).unwrap(), entries);
        assert_eq!(plan.annotations()[keys::SUBSCRIPTION], "widgets");
        assert_eq!(plan.labels()[MANAGED_BY_LABEL], "opcat");
        let owner = &plan.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("Subscription", "widgets-uid", Some(false))
        );
        assert!(is_plan_of(&plan, &subscription));
    }

    #[test]
    fn a_plan_with_dependencies_is_owned_by_each_subscription_and_manual_if_one_is() {
        let main = subscription("widgets", "widget-operator", None);
        let dependency = subscription("etcd-stable-catalog-olm", "etcd", Some(Approval::Manual));
        let entries = [
            entry("etcd.v0.9.4", "etcd-stable-catalog-olm"),
            entry("widget-operator.v1.2.0", "widgets"),
        ];
        let plan = build(&main, &entries, &[&dependency, &main]);
        assert_eq!(
            plan.spec.cluster_service_version_names,
            ["etcd.v0.9.4", "widget-operator.v1.2.0"]
        );
        assert_eq!(plan.spec.approval, Approval::Manual);
        assert!(!plan.spec.approved);
        assert_eq!(plan.owner_references().len(), 2);
        assert!(is_plan_of(&plan, &main));
        assert!(is_plan_of(&plan, &dependency));
        assert_eq!(
            plan_record::csv_for(&plan, "etcd-stable-catalog-olm").as_deref(),
            Some("etcd.v0.9.4")
        );
    }

    #[test]
    fn plans_of_an_earlier_subscription_of_the_same_name_are_not_ours() {
        let earlier = subscription("widgets", "widget-operator", None);
        let plan = build(&earlier, &[entry("w.v1", "widgets")], &[&earlier]);
        let mut recreated = subscription("widgets", "widget-operator", None);
        recreated.metadata.uid = Some("new-uid".into());
        assert!(!is_plan_of(&plan, &recreated));
        let mut other = earlier.clone();
        other.metadata.name = Some("gadgets".into());
        assert!(!is_plan_of(&plan, &other));
    }

    #[test]
    fn long_subscription_names_are_hashed_in_the_label_only() {
        let long = "s".repeat(120);
        let subscription = subscription(&long, "widget-operator", None);
        let plan = build(&subscription, &[entry("w.v1", &long)], &[&subscription]);
        assert!(plan.labels()[SUBSCRIPTION_LABEL].len() <= 63);
        assert_eq!(plan.annotations()[keys::SUBSCRIPTION], long);
        assert!(is_plan_of(&plan, &subscription));
    }
}
