//! Pure: what a Subscription should do next (no client). Given its InstallPlans, the CSVs and
//! Subscriptions of its namespace and the catalogs the namespace sees, either wait, report a
//! resolution failure, stay, or install a set of bundles: its own and the operators it depends
//! on ([`crate::dependency::solve`], olm-api.md §6.2).
//!
//! Rules (OLM v0's, `catalog/operator.go`):
//! - While the CSV the Subscription's latest InstallPlan installs for it does not exist — the
//!   plan waits for approval, is installing, failed, or its CSV was deleted — nothing is
//!   resolved (OLM skips a Subscription whose InstallPlan is referenced and whose state is
//!   `UpgradePending`). A failed plan is retried by deleting it; deleting the CSV uninstalls the
//!   operator and the Subscription does not reinstall it.
//! - Upgrades are looked for only from an installed CSV whose phase is `Succeeded`: upgrades are
//!   never chained while one is in flight.
//! - Every catalog the namespace sees takes part: one still loading is waited for (an expected
//!   wait, DESIGN invariant 7); one that failed to load is left out (its health is in the
//!   status) and named if resolution fails.
//! - At most one InstallPlan per CSV: the caller creates a plan only when none of the
//!   Subscription's plans lists the CSVs of [`Step::Install`], and a dependency another plan is
//!   installing right now is waited for ([`Step::DependencyInFlight`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;

use super::catalog_health::is_healthy;
use super::install::{Install, install};
use super::problem::problem;
use crate::api::install_plan::InstallPlanStatus;
use crate::api::{
    CatalogSource, ClusterServiceVersion, ClusterServiceVersionPhase, InstallPlan, Subscription,
};
use crate::controller::catalogs::LoadedCatalog;
use crate::controller::plan_record::csv_for;
use crate::dependency::{Outcome, SolveError, solve};
use crate::resolve::ResolveError;

/// `ResolutionFailed` reason when the catalogs cannot satisfy the Subscription (OLM's).
pub const REASON_CONSTRAINTS_NOT_SATISFIABLE: &str = "ConstraintsNotSatisfiable";
/// `ResolutionFailed` reason for other resolution errors (OLM's).
pub const REASON_ERROR_PREVENTED_RESOLUTION: &str = "ErrorPreventedResolution";

/// A CatalogSource the namespace sees, and its catalog if loaded.
#[derive(Clone, Copy, Debug)]
pub struct SeenCatalog<'a> {
    pub source: &'a CatalogSource,
    pub loaded: Option<&'a LoadedCatalog>,
}

impl SeenCatalog<'_> {
    /// Whether this is the CatalogSource `namespace/name`.
    pub fn is(&self, namespace: &str, name: &str) -> bool {
        self.source.namespace().as_deref() == Some(namespace) && self.source.name_any() == name
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.source.namespace().unwrap_or_default(),
            self.source.name_any()
        )
    }
}

/// The next step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The latest InstallPlan's CSV does not exist (yet): nothing is resolved.
    PlanInFlight,
    /// The installed CSV has not succeeded yet: no upgrade is looked for.
    InstalledNotSucceeded,
    /// A catalog the namespace sees is not in memory yet; `quiet` when each such catalog is
    /// READY (about to be loaded, e.g. after a restart: no status write).
    CatalogNotLoaded { quiet: bool },
    /// Another InstallPlan is installing a dependency this resolution needs: wait for it.
    DependencyInFlight { csv: String, plan: String },
    /// Nothing can be resolved.
    ResolutionFailed {
        reason: &'static str,
        message: String,
    },
    /// The installed CSV is the latest the channel offers, and every dependency is met.
    AtLatest,
    /// Install these bundles.
    Install(Install),
}

impl Step {
    /// Whether a resolution ran (and succeeded): `ResolutionFailed` is then cleared.
    pub fn resolved(&self) -> bool {
        matches!(self, Step::AtLatest | Step::Install(_))
    }
}

/// The decision and what it was based on.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The installed CSV (it exists), if any.
    pub installed: Option<String>,
    /// The next step.
    pub step: Step,
}

/// Inputs read from the stores.
pub struct Inputs<'a> {
    pub subscription: &'a Subscription,
    /// The InstallPlans that serve the Subscription, oldest first.
    pub plans: &'a [InstallPlan],
    /// Every InstallPlan in the namespace.
    pub namespace_plans: &'a [InstallPlan],
    /// CSVs in the Subscription's namespace, by name.
    pub csvs: &'a BTreeMap<String, Arc<ClusterServiceVersion>>,
    /// The catalogs the namespace sees, and the one the Subscription names.
    pub catalogs: &'a [SeenCatalog<'a>],
    /// The Subscriptions of the namespace.
    pub subscriptions: &'a [Arc<Subscription>],
}

/// The CSV the latest of `plans` that installs one for `subscription` installs.
pub fn latest_csv(plans: &[InstallPlan], subscription: &str) -> Option<String> {
    plans
        .iter()
        .rev()
        .find_map(|plan| csv_for(plan, subscription))
}

/// Whether a plan may still change (it is neither complete nor failed).
pub fn is_unfinished(plan: &InstallPlan) -> bool {
    !plan
        .status
        .as_ref()
        .is_some_and(InstallPlanStatus::is_finished)
}

/// The installed CSV: the latest plan's CSV when it exists, else `status.installedCSV` when that
/// exists.
pub fn installed_csv<'a>(inputs: &Inputs<'a>) -> Option<&'a ClusterServiceVersion> {
    let name = inputs.subscription.name_any();
    let latest = latest_csv(inputs.plans, &name);
    let recorded = inputs
        .subscription
        .status
        .as_ref()
        .and_then(|status| status.installed_csv.as_deref());
    latest
        .and_then(|name| inputs.csvs.get(&name))
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
    let subscription = inputs.subscription;
    let name = subscription.name_any();
    if let Some(latest) = latest_csv(inputs.plans, &name)
        && !inputs.csvs.contains_key(&latest)
    {
        return Step::PlanInFlight;
    }
    // A plan this Subscription's resolution created for a dependency alone (its own CSV was
    // already installed) is in flight too while it runs.
    if inputs
        .plans
        .iter()
        .any(|plan| csv_for(plan, &name).is_none() && is_unfinished(plan))
    {
        return Step::PlanInFlight;
    }
    if let Some(csv) = installed
        && csv.status.as_ref().and_then(|s| s.phase) != Some(ClusterServiceVersionPhase::Succeeded)
    {
        return Step::InstalledNotSucceeded;
    }
    let spec = &subscription.spec;
    let Some(own) = inputs
        .catalogs
        .iter()
        .find(|seen| seen.is(&spec.catalog_source_namespace, &spec.catalog_source))
    else {
        return Step::ResolutionFailed {
            reason: REASON_CONSTRAINTS_NOT_SATISFIABLE,
            message: not_satisfiable(
                &format!(
                    "no operators found from catalog {} in namespace {}",
                    spec.catalog_source, spec.catalog_source_namespace
                ),
                &name,
            ),
        };
    };
    // Loading (no status yet, or READY but not in memory after a restart): wait. Failed: left
    // out of this resolution.
    let loading: Vec<&SeenCatalog<'_>> = inputs
        .catalogs
        .iter()
        .filter(|seen| seen.loaded.is_none())
        .filter(|seen| seen.source.status.is_none() || is_healthy(seen.source))
        .collect();
    if own.loaded.is_none() {
        return Step::CatalogNotLoaded {
            quiet: is_healthy(own.source),
        };
    }
    if !loading.is_empty() {
        return Step::CatalogNotLoaded {
            quiet: loading.iter().all(|seen| is_healthy(seen.source)),
        };
    }
    let problem = problem(inputs, installed);
    match solve(&problem) {
        Ok(Outcome::AtLatest { .. }) => Step::AtLatest,
        Ok(Outcome::Install(plan)) if plan.bundles.is_empty() => Step::AtLatest,
        Ok(Outcome::Install(plan)) => {
            let install = install(subscription, &plan, inputs.catalogs, inputs.subscriptions);
            match dependency_in_flight(&install, inputs.namespace_plans, inputs.csvs) {
                Some((csv, plan)) => Step::DependencyInFlight { csv, plan },
                None => Step::Install(install),
            }
        }
        Err(SolveError::Unsatisfiable { message }) => Step::ResolutionFailed {
            reason: REASON_CONSTRAINTS_NOT_SATISFIABLE,
            message: format!(
                "constraints not satisfiable: {message}{}",
                left_out(inputs.catalogs)
            ),
        },
        Err(SolveError::Resolve(error @ ResolveError::MissingBundle { .. })) => {
            Step::ResolutionFailed {
                reason: REASON_ERROR_PREVENTED_RESOLUTION,
                message: error.to_string(),
            }
        }
        Err(SolveError::Resolve(error)) => Step::ResolutionFailed {
            reason: REASON_CONSTRAINTS_NOT_SATISFIABLE,
            message: not_satisfiable(&error.to_string(), &name),
        },
        Err(SolveError::InvalidDependency(error)) => Step::ResolutionFailed {
            reason: REASON_ERROR_PREVENTED_RESOLUTION,
            message: error.to_string(),
        },
    }
}

/// A dependency of `install` that an unfinished plan of the namespace already installs, and
/// that plan.
fn dependency_in_flight(
    install: &Install,
    plans: &[InstallPlan],
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
) -> Option<(String, String)> {
    install
        .dependencies()
        .filter(|csv| !csvs.contains_key(*csv))
        .find_map(|csv| {
            plans
                .iter()
                .find(|plan| {
                    is_unfinished(plan)
                        && plan
                            .spec
                            .cluster_service_version_names
                            .iter()
                            .any(|listed| listed == csv)
                })
                .map(|plan| (csv.to_owned(), plan.name_any()))
        })
}

/// The catalogs that failed to load and were left out, for a failure message.
fn left_out(catalogs: &[SeenCatalog<'_>]) -> String {
    let failed: Vec<String> = catalogs
        .iter()
        .filter(|seen| seen.loaded.is_none())
        .map(SeenCatalog::key)
        .collect();
    if failed.is_empty() {
        String::new()
    } else {
        format!(
            " (catalog sources {} could not be read and were not searched)",
            failed.join(", ")
        )
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
#[path = "decide_dependency_tests.rs"]
mod dependency_tests;
#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
