//! Pure: a solved plan as the InstallPlan records it, and the Subscriptions it serves (no
//! client).
//!
//! Each bundle becomes a [`PlanEntry`]: where it comes from (catalog, digest, image), what it
//! replaces, the catalog's properties (so the CSV records its dependencies), and the
//! Subscription it belongs to: the resolving Subscription for its own bundle; for a dependency,
//! the namespace's Subscription to that package if there is one, else a new Subscription named
//! as OLM names it ([`super::dependency_subscriptions`]).

use std::sync::Arc;

use kube::ResourceExt;

use super::decide::SeenCatalog;
use super::dependency_subscriptions::build_dependency_subscription;
use crate::api::Subscription;
use crate::controller::plan_record::{PlanEntry, RequiredBy, recorded_properties};
use crate::dependency::{Plan, PlannedBundle};

/// What one resolution installs.
#[derive(Clone, Debug, PartialEq)]
pub struct Install {
    /// Every bundle, dependencies first, the Subscription's own last (when it is in the plan).
    pub entries: Vec<PlanEntry>,
    /// Subscriptions to create for dependencies first.
    pub new_subscriptions: Vec<Subscription>,
    /// Names of the namespace's existing Subscriptions the plan serves (besides the resolving
    /// one).
    pub existing_subscriptions: Vec<String>,
    /// The resolving Subscription's name.
    subscription: String,
}

impl Install {
    /// An install of `entries` for the Subscription `subscription`, serving no other
    /// Subscription.
    pub fn new(subscription: &str, entries: Vec<PlanEntry>) -> Self {
        Self {
            entries,
            new_subscriptions: Vec::new(),
            existing_subscriptions: Vec::new(),
            subscription: subscription.to_owned(),
        }
    }

    /// The CSV installed for the resolving Subscription, if the plan has one (a plan may only
    /// restore a dependency of its installed CSV).
    pub fn own_csv(&self) -> Option<&str> {
        self.entries
            .iter()
            .find(|entry| entry.subscription == self.subscription)
            .map(|entry| entry.name.as_str())
    }

    /// The CSVs installed for other Subscriptions.
    pub fn dependencies(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|entry| entry.subscription != self.subscription)
            .map(|entry| entry.name.as_str())
    }

    /// Every CSV, in install order.
    pub fn csvs(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|entry| entry.name.as_str())
    }
}

/// The [`Install`] of `plan`, solved for `subscription` from `catalogs`, given the
/// namespace's `subscriptions`.
pub fn install(
    subscription: &Subscription,
    plan: &Plan,
    catalogs: &[SeenCatalog<'_>],
    subscriptions: &[Arc<Subscription>],
) -> Install {
    let name = subscription.name_any();
    let mut install = Install::new(&name, Vec::with_capacity(plan.bundles.len()));
    for planned in &plan.bundles {
        let mut entry = entry(planned, catalogs);
        let own =
            planned.required_by.is_none() && planned.bundle.package == subscription.spec.package;
        entry.subscription = if own {
            name.clone()
        } else if let Some(existing) = subscription_for(subscriptions, &planned.bundle.package) {
            if existing != name && !install.existing_subscriptions.contains(&existing) {
                install.existing_subscriptions.push(existing.clone());
            }
            existing
        } else {
            let new = build_dependency_subscription(subscription, &entry);
            let new_name = new.name_any();
            if !install
                .new_subscriptions
                .iter()
                .any(|known| known.name_any() == new_name)
            {
                install.new_subscriptions.push(new);
            }
            new_name
        };
        install.entries.push(entry);
    }
    install
}

/// The record of one planned bundle (its Subscription is filled in by the caller).
fn entry(planned: &PlannedBundle, catalogs: &[SeenCatalog<'_>]) -> PlanEntry {
    let bundle = &planned.bundle;
    let seen = catalogs
        .iter()
        .find(|seen| seen.is(&planned.catalog.namespace, &planned.catalog.name));
    let loaded = seen.and_then(|seen| seen.loaded);
    let properties = loaded
        .and_then(|loaded| loaded.catalog.package(&bundle.package))
        .and_then(|package| package.bundle(&bundle.name))
        .map(|found| recorded_properties(&found.properties))
        .unwrap_or_default();
    PlanEntry {
        name: bundle.name.clone(),
        package: bundle.package.clone(),
        channel: bundle.channel.clone(),
        version: bundle.version.to_string(),
        image: bundle.image.clone(),
        catalog_namespace: planned.catalog.namespace.clone(),
        catalog_name: planned.catalog.name.clone(),
        catalog_digest: loaded
            .map(|loaded| loaded.digest.to_string())
            .unwrap_or_default(),
        replaces: bundle.replaces.clone(),
        subscription: String::new(),
        required_by: planned
            .required_by
            .as_ref()
            .map(|(csv, requirement)| RequiredBy {
                csv: csv.clone(),
                requirement: requirement.clone(),
            }),
        properties,
    }
}

/// The namespace's Subscription to `package` (not being deleted; the first by name).
fn subscription_for(subscriptions: &[Arc<Subscription>], package: &str) -> Option<String> {
    let mut names: Vec<String> = subscriptions
        .iter()
        .filter(|sub| sub.spec.package == package && sub.metadata.deletion_timestamp.is_none())
        .map(|sub| sub.name_any())
        .collect();
    names.sort();
    names.into_iter().next()
}
