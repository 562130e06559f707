//! Pure: what a Subscription should do next (no client). Given its InstallPlans, the CSVs in
//! its namespace and its catalog, either wait, report a resolution failure, stay, or install a
//! bundle (olm-api.md §6.2 through [`crate::resolve`]).
//!
//! Rules (OLM v0's, `catalog/operator.go`):
//! - While the CSV of the Subscription's latest InstallPlan does not exist — the plan waits for
//!   approval, is installing, failed, or its CSV was deleted — nothing is resolved (OLM skips a
//!   Subscription whose InstallPlan is referenced and whose state is `UpgradePending`). A failed
//!   plan is retried by deleting it; deleting the CSV uninstalls the operator and the
//!   Subscription does not reinstall it.
//! - Upgrades are looked for only from an installed CSV whose phase is `Succeeded`: upgrades are
//!   never chained while one is in flight.
//! - At most one InstallPlan per CSV: the caller creates a plan only when
//!   [`Step::Install`] names a CSV none of the Subscription's plans lists.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::api::{ClusterServiceVersion, ClusterServiceVersionPhase, InstallPlan, Subscription};
use crate::fbc::Catalog;
use crate::resolve::{BundleRef, Resolution, ResolveError, ResolveRequest, resolve};

/// `ResolutionFailed` reason when the catalog cannot satisfy the Subscription (OLM's).
pub const REASON_CONSTRAINTS_NOT_SATISFIABLE: &str = "ConstraintsNotSatisfiable";
/// `ResolutionFailed` reason for other resolution errors (OLM's).
pub const REASON_ERROR_PREVENTED_RESOLUTION: &str = "ErrorPreventedResolution";

/// What the Subscription's catalog looks like right now.
#[derive(Clone, Copy, Debug)]
pub enum CatalogState<'a> {
    /// No CatalogSource of that name.
    Missing,
    /// The CatalogSource exists but its catalog is not in memory; `ready` when its status says
    /// READY (the CatalogSource reconciler is about to load it, e.g. after a restart).
    NotLoaded { ready: bool },
    /// The catalog as loaded.
    Loaded(&'a Catalog),
}

/// The next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The latest InstallPlan's CSV does not exist (yet): nothing is resolved.
    PlanInFlight,
    /// The installed CSV has not succeeded yet: no upgrade is looked for.
    InstalledNotSucceeded,
    /// The catalog is not in memory; `quiet` when it is about to be (no status write).
    CatalogNotLoaded { quiet: bool },
    /// Nothing can be resolved.
    ResolutionFailed {
        reason: &'static str,
        message: String,
    },
    /// The installed CSV is the latest the channel offers.
    AtLatest,
    /// Install or upgrade to this bundle.
    Install(BundleRef),
}

impl Step {
    /// Whether a resolution ran (and succeeded): `ResolutionFailed` is then cleared.
    pub fn resolved(&self) -> bool {
        matches!(self, Step::AtLatest | Step::Install(_))
    }
}

/// The decision and what it was based on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The installed CSV (it exists), if any.
    pub installed: Option<String>,
    /// The next step.
    pub step: Step,
}

/// Inputs read from the stores.
pub struct Inputs<'a> {
    pub subscription: &'a Subscription,
    /// The Subscription's InstallPlans, oldest first.
    pub plans: &'a [InstallPlan],
    /// CSVs in the Subscription's namespace, by name.
    pub csvs: &'a BTreeMap<String, Arc<ClusterServiceVersion>>,
    pub catalog: CatalogState<'a>,
}

/// The CSV an InstallPlan installs (opcat's plans name exactly one).
pub fn plan_csv(plan: &InstallPlan) -> Option<&str> {
    plan.spec
        .cluster_service_version_names
        .first()
        .map(String::as_str)
}

/// The installed CSV: the latest plan's CSV when it exists, else `status.installedCSV` when that
/// exists.
pub fn installed_csv<'a>(inputs: &Inputs<'a>) -> Option<&'a ClusterServiceVersion> {
    let latest = inputs.plans.last().and_then(plan_csv);
    let recorded = inputs
        .subscription
        .status
        .as_ref()
        .and_then(|status| status.installed_csv.as_deref());
    latest
        .and_then(|name| inputs.csvs.get(name))
        .or_else(|| recorded.and_then(|name| inputs.csvs.get(name)))
        .map(Arc::as_ref)
}

/// Decides the next step.
pub fn decide(inputs: &Inputs<'_>) -> Decision {
    let installed = installed_csv(inputs);
    let installed_name = installed.and_then(|csv| csv.metadata.name.clone());
    let step = next_step(inputs, installed);
    Decision {
        installed: installed_name,
        step,
    }
}

fn next_step(inputs: &Inputs<'_>, installed: Option<&ClusterServiceVersion>) -> Step {
    if let Some(latest) = inputs.plans.last().and_then(plan_csv)
        && !inputs.csvs.contains_key(latest)
    {
        return Step::PlanInFlight;
    }
    if let Some(csv) = installed
        && csv.status.as_ref().and_then(|s| s.phase) != Some(ClusterServiceVersionPhase::Succeeded)
    {
        return Step::InstalledNotSucceeded;
    }
    let subscription = inputs.subscription;
    let name = subscription.metadata.name.as_deref().unwrap_or_default();
    let catalog = match inputs.catalog {
        CatalogState::Loaded(catalog) => catalog,
        CatalogState::NotLoaded { ready } => return Step::CatalogNotLoaded { quiet: ready },
        CatalogState::Missing => {
            return Step::ResolutionFailed {
                reason: REASON_CONSTRAINTS_NOT_SATISFIABLE,
                message: not_satisfiable(
                    &format!(
                        "no operators found from catalog {} in namespace {}",
                        subscription.spec.catalog_source,
                        subscription.spec.catalog_source_namespace
                    ),
                    name,
                ),
            };
        }
    };
    let request = ResolveRequest {
        package: subscription.spec.package.clone(),
        channel: subscription.spec.channel().map(str::to_owned),
        installed: installed.and_then(|csv| csv.metadata.name.clone()),
        installed_version: installed
            .and_then(|csv| csv.spec.version.as_deref())
            .and_then(|version| semver::Version::parse(version.trim_start_matches('v')).ok()),
        starting_csv: subscription.spec.starting_csv.clone(),
    };
    match resolve(catalog, &request) {
        Ok(Resolution::Install(bundle)) => Step::Install(bundle),
        Ok(Resolution::AtLatest { .. }) => Step::AtLatest,
        Err(error @ ResolveError::MissingBundle { .. }) => Step::ResolutionFailed {
            reason: REASON_ERROR_PREVENTED_RESOLUTION,
            message: error.to_string(),
        },
        Err(error) => Step::ResolutionFailed {
            reason: REASON_CONSTRAINTS_NOT_SATISFIABLE,
            message: not_satisfiable(&error.to_string(), name),
        },
    }
}

/// OLM's wording: `constraints not satisfiable: <what> referenced by subscription <name>,
/// subscription <name> exists`.
fn not_satisfiable(what: &str, subscription: &str) -> String {
    format!(
        "constraints not satisfiable: {what} referenced by subscription {subscription}, \
         subscription {subscription} exists"
    )
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
