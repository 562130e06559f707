//! Pure: the InstallPlan a Subscription creates for a resolved bundle, and how a Subscription
//! recognises its own plans (no client).
//!
//! One plan per Subscription and CSV. OLM resolves every Subscription of a namespace together and
//! makes the shared plan `Manual` when any of them is; opcat's plans belong to one Subscription,
//! so each plan follows its own Subscription's `installPlanApproval` (an `Automatic`
//! Subscription is never held back by an unrelated `Manual` one).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::api::{Approval, InstallPlan, InstallPlanSpec, Subscription};
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::controller::keys::install_plan as keys;
use crate::pull_secrets::names::label_value;
use crate::resolve::BundleRef;

/// Label on InstallPlans naming their Subscription (hashed when longer than 63 characters; the
/// full name is in the [`keys::SUBSCRIPTION`] annotation).
pub const SUBSCRIPTION_LABEL: &str = "opcat.dev/subscription";

/// Prefix of generated InstallPlan names (OLM's).
pub const GENERATE_NAME: &str = "install-";

/// What a new plan is made of.
pub struct PlanInputs<'a> {
    pub subscription: &'a Subscription,
    pub bundle: &'a BundleRef,
    /// Namespace and name of the CatalogSource.
    pub catalog: (&'a str, &'a str),
    /// Digest of the catalog image the resolution read.
    pub catalog_digest: &'a str,
    /// `spec.generation`: one more than the highest in the namespace.
    pub generation: i64,
}

/// The InstallPlan to create: `generateName: install-`, labelled so the shared watch sees it and
/// the Subscription finds it, owned (not controlled) by the Subscription so that deleting the
/// Subscription garbage-collects its plans and nothing else.
pub fn build_install_plan(inputs: &PlanInputs<'_>) -> InstallPlan {
    let subscription = inputs.subscription;
    let bundle = inputs.bundle;
    let name = subscription.name_any();
    let (catalog_namespace, catalog_name) = inputs.catalog;
    let approval = subscription.spec.approval();

    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (SUBSCRIPTION_LABEL.to_owned(), label_value(&name)),
    ]);
    let mut annotations = BTreeMap::from([
        (keys::BUNDLE_IMAGE.to_owned(), bundle.image.clone()),
        (keys::BUNDLE_NAME.to_owned(), bundle.name.clone()),
        (keys::PACKAGE.to_owned(), bundle.package.clone()),
        (keys::CHANNEL.to_owned(), bundle.channel.clone()),
        (
            keys::CATALOG.to_owned(),
            format!("{catalog_namespace}/{catalog_name}"),
        ),
        (
            keys::CATALOG_DIGEST.to_owned(),
            inputs.catalog_digest.to_owned(),
        ),
        (keys::SUBSCRIPTION.to_owned(), name.clone()),
    ]);
    if let Some(replaces) = &bundle.replaces {
        annotations.insert(keys::REPLACES.to_owned(), replaces.clone());
    }
    InstallPlan {
        metadata: ObjectMeta {
            generate_name: Some(GENERATE_NAME.to_owned()),
            namespace: subscription.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner_reference(subscription)]),
            ..ObjectMeta::default()
        },
        spec: InstallPlanSpec {
            source: Some(catalog_name.to_owned()),
            source_namespace: Some(catalog_namespace.to_owned()),
            cluster_service_version_names: vec![bundle.name.clone()],
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

/// Whether `plan` was created for `subscription`: it carries the Subscription's label and an
/// owner reference to this very Subscription (not an earlier one of the same name whose plans
/// the garbage collector has not removed yet).
pub fn is_plan_of(plan: &InstallPlan, subscription: &Subscription) -> bool {
    let Some(uid) = subscription.meta().uid.as_deref() else {
        return false;
    };
    plan.labels().get(SUBSCRIPTION_LABEL) == Some(&label_value(&subscription.name_any()))
        && plan
            .owner_references()
            .iter()
            .any(|owner| owner.uid == uid && owner.kind == Subscription::kind(&()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::SubscriptionSpec;

    fn subscription(approval: Option<Approval>) -> Subscription {
        let mut subscription = Subscription::new(
            "widgets",
            SubscriptionSpec {
                catalog_source: "catalog".into(),
                catalog_source_namespace: "olm".into(),
                package: "widget-operator".into(),
                install_plan_approval: approval,
                ..SubscriptionSpec::default()
            },
        );
        subscription.metadata.namespace = Some("ops".into());
        subscription.metadata.uid = Some("sub-uid".into());
        subscription
    }

    fn bundle(replaces: Option<&str>) -> BundleRef {
        BundleRef {
            package: "widget-operator".into(),
            channel: "stable".into(),
            name: "widget-operator.v1.2.0".into(),
            version: semver::Version::new(1, 2, 0),
            image: "registry.example.com/widget-bundle:v1.2.0".into(),
            replaces: replaces.map(str::to_owned),
        }
    }

    fn build(subscription: &Subscription, bundle: &BundleRef) -> InstallPlan {
        build_install_plan(&PlanInputs {
            subscription,
            bundle,
            catalog: ("olm", "catalog"),
            catalog_digest: "sha256:abc",
            generation: 3,
        })
    }

    #[test]
    fn automatic_plans_are_approved_and_carry_the_contract_annotations() {
        let subscription = subscription(None);
        let plan = build(&subscription, &bundle(Some("widget-operator.v1.0.0")));
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
        let annotations = plan.annotations();
        assert_eq!(
            annotations[keys::BUNDLE_IMAGE],
            "registry.example.com/widget-bundle:v1.2.0"
        );
        assert_eq!(annotations[keys::BUNDLE_NAME], "widget-operator.v1.2.0");
        assert_eq!(annotations[keys::PACKAGE], "widget-operator");
        assert_eq!(annotations[keys::CHANNEL], "stable");
        assert_eq!(annotations[keys::CATALOG], "olm/catalog");
        assert_eq!(annotations[keys::CATALOG_DIGEST], "sha256:abc");
        assert_eq!(annotations[keys::REPLACES], "widget-operator.v1.0.0");
        assert_eq!(annotations[keys::SUBSCRIPTION], "widgets");
        assert_eq!(plan.labels()[MANAGED_BY_LABEL], "opcat");
        let owner = &plan.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("Subscription", "sub-uid", Some(false))
        );
        assert!(is_plan_of(&plan, &subscription));
    }

    #[test]
    fn manual_plans_wait_and_first_installs_replace_nothing() {
        let plan = build(&subscription(Some(Approval::Manual)), &bundle(None));
        assert_eq!(plan.spec.approval, Approval::Manual);
        assert!(!plan.spec.approved);
        assert!(!plan.annotations().contains_key(keys::REPLACES));
    }

    #[test]
    fn plans_of_an_earlier_subscription_of_the_same_name_are_not_ours() {
        let earlier = subscription(None);
        let plan = build(&earlier, &bundle(None));
        let mut recreated = subscription(None);
        recreated.metadata.uid = Some("new-uid".into());
        assert!(!is_plan_of(&plan, &recreated));
        let mut other = subscription(None);
        other.metadata.name = Some("gadgets".into());
        assert!(!is_plan_of(&plan, &other));
    }

    #[test]
    fn long_subscription_names_are_hashed_in_the_label_only() {
        let mut subscription = subscription(None);
        let long = "s".repeat(120);
        subscription.metadata.name = Some(long.clone());
        let plan = build(&subscription, &bundle(None));
        assert!(plan.labels()[SUBSCRIPTION_LABEL].len() <= 63);
        assert_eq!(plan.annotations()[keys::SUBSCRIPTION], long);
        assert!(is_plan_of(&plan, &subscription));
    }
}
