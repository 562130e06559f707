//! Pure: the Subscription status opcat writes (no client). Field names, states, condition
//! types, reasons and messages follow OLM v0 (`catalog/operator.go`, `subscription/state.go`).
//!
//! - `currentCSV`: the CSV being installed, or installed; `installedCSV`: set once that CSV
//!   exists (kept when it disappears, as OLM does).
//! - `state`: `AtLatestKnown` when the CSV named by `currentCSV` exists, else `UpgradePending`.
//! - `installPlanRef` (and the deprecated `installplan`), `installPlanGeneration`: the latest
//!   plan for `currentCSV`.
//! - Conditions: `CatalogSourcesUnhealthy`; `ResolutionFailed` (set on failure, removed after a
//!   successful resolution, left alone when nothing was resolved); `InstallPlanPending`,
//!   `InstallPlanFailed`, `BundleUnpackFailed` from the plan; the pull-secret report.
//! - `lastUpdated` moves only when something else changes, so a converged Subscription's status
//!   is never rewritten (DESIGN invariant 5).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Resource, ResourceExt};

use super::catalog_health::CatalogHealth;
use super::decide::{Decision, Step, latest_csv};
use super::report::{Report, mirror};
use crate::api::conditions::{
    DesiredCondition, Status, find_condition, remove_condition, set_condition,
};
use crate::api::install_plan::InstallPlanCondition;
use crate::api::install_plan_status::{
    BUNDLE_LOOKUP_FAILED, BUNDLE_LOOKUP_PENDING, CONDITION_INSTALLED, PHASE_COMPLETE, PHASE_FAILED,
};
use crate::api::subscription::{InstallPlanReference, SubscriptionCondition};
use crate::api::subscription_status::{
    BUNDLE_UNPACK_FAILED, CATALOG_SOURCES_UNHEALTHY, INSTALL_PLAN_FAILED, INSTALL_PLAN_MISSING,
    INSTALL_PLAN_PENDING, REASON_INSTALL_PLAN_FAILED, REASON_INSTALL_PLAN_NOT_YET_RECONCILED,
    RESOLUTION_FAILED, STATE_AT_LATEST_KNOWN, STATE_UPGRADE_PENDING,
};
use crate::api::{ClusterServiceVersion, InstallPlan, SubscriptionStatus, condition_status};

/// `BundleUnpackFailed` reason (OLM's).
pub const REASON_BUNDLE_UNPACK_FAILED: &str = "BundleUnpackFailed";
/// `InstallPlanPending` reason while a Manual plan waits.
pub const REASON_REQUIRES_APPROVAL: &str = "RequiresApproval";

/// Everything the status is computed from.
pub struct StatusInputs<'a> {
    /// The Subscription's name.
    pub subscription: &'a str,
    /// The status as stored.
    pub current: Option<&'a SubscriptionStatus>,
    /// The Subscription's InstallPlans, oldest first (including one just created).
    pub plans: &'a [InstallPlan],
    /// CSVs in the namespace, by name.
    pub csvs: &'a BTreeMap<String, Arc<ClusterServiceVersion>>,
    pub decision: &'a Decision,
    pub health: &'a CatalogHealth,
    /// The pull-secret report of the current (or installed) CSV.
    pub report: &'a Report,
    pub now: &'a Time,
}

/// The CSV the Subscription `subscription` is moving to (or has): the one being installed, else
/// the installed one, else the latest plan's, else what the status said.
pub fn current_csv(
    decision: &Decision,
    plans: &[InstallPlan],
    current: Option<&SubscriptionStatus>,
    subscription: &str,
) -> Option<String> {
    let latest = latest_csv(plans, subscription);
    match &decision.step {
        Step::Install(install) => install
            .own_csv()
            .map(str::to_owned)
            .or_else(|| decision.installed.clone()),
        Step::PlanInFlight => latest.or_else(|| decision.installed.clone()),
        _ => decision
            .installed
            .clone()
            .or(latest)
            .or_else(|| current.and_then(|s| s.current_csv.clone())),
    }
}

/// The CSV whose pull-secret report the Subscription mirrors: the current one when it exists,
/// else the installed one.
pub fn report_source<'a>(
    current_csv: Option<&str>,
    decision: &Decision,
    csvs: &'a BTreeMap<String, Arc<ClusterServiceVersion>>,
) -> Option<&'a ClusterServiceVersion> {
    current_csv
        .and_then(|name| csvs.get(name))
        .or_else(|| {
            decision
                .installed
                .as_deref()
                .and_then(|name| csvs.get(name))
        })
        .map(Arc::as_ref)
}

/// The latest plan that installs `csv`.
pub fn plan_for<'a>(plans: &'a [InstallPlan], csv: &str) -> Option<&'a InstallPlan> {
    plans.iter().rev().find(|plan| {
        plan.spec
            .cluster_service_version_names
            .iter()
            .any(|listed| listed == csv)
    })
}

/// The latest plan that installs every one of `csvs`.
pub fn plan_listing<'a, 'c>(
    plans: &'a [InstallPlan],
    csvs: impl IntoIterator<Item = &'c str>,
) -> Option<&'a InstallPlan> {
    let csvs: Vec<&str> = csvs.into_iter().collect();
    plans.iter().rev().find(|plan| {
        let listed = &plan.spec.cluster_service_version_names;
        csvs.iter().all(|csv| listed.iter().any(|name| name == csv))
    })
}

/// Computes the status to write.
pub fn desired_status(inputs: &StatusInputs<'_>) -> SubscriptionStatus {
    let now = inputs.now;
    let mut status = inputs
        .current
        .cloned()
        .unwrap_or_else(|| SubscriptionStatus::new(now.clone()));

    let current = current_csv(
        inputs.decision,
        inputs.plans,
        inputs.current,
        inputs.subscription,
    );
    let plan = current
        .as_deref()
        .and_then(|csv| plan_for(inputs.plans, csv));
    status.state = current.as_ref().map(|csv| {
        if inputs.csvs.contains_key(csv) {
            STATE_AT_LATEST_KNOWN.to_owned()
        } else {
            STATE_UPGRADE_PENDING.to_owned()
        }
    });
    status.current_csv = current;
    if let Some(installed) = &inputs.decision.installed {
        status.installed_csv = Some(installed.clone());
    }
    status.install_plan_ref = plan.map(plan_reference);
    status.install_plan = plan.map(deprecated_reference);
    status.install_plan_generation = plan.and_then(|plan| plan.spec.generation);
    status.catalog_health = Some(inputs.health.entries.clone());

    let mut conditions = status.conditions.take().unwrap_or_default();
    let health = &inputs.health.condition;
    set_condition(
        &mut conditions,
        &DesiredCondition::new(
            CATALOG_SOURCES_UNHEALTHY,
            health.status,
            health.reason,
            &health.message,
        ),
        now,
    );
    match &inputs.decision.step {
        Step::ResolutionFailed { reason, message } => {
            set_condition(
                &mut conditions,
                &DesiredCondition::new(RESOLUTION_FAILED, Status::True, reason, message),
                now,
            );
        }
        step if step.resolved() => {
            remove_condition(&mut conditions, RESOLUTION_FAILED);
        }
        _ => {}
    }
    plan_conditions(&mut conditions, plan, now);
    mirror(&mut conditions, inputs.report, now);
    status.conditions = (!conditions.is_empty()).then_some(conditions);

    match inputs.current {
        Some(previous) if same_except_last_updated(previous, &status) => {
            status.last_updated = previous.last_updated.clone();
        }
        _ => status.last_updated = now.clone(),
    }
    status
}

fn same_except_last_updated(previous: &SubscriptionStatus, next: &SubscriptionStatus) -> bool {
    let mut next = next.clone();
    next.last_updated = previous.last_updated.clone();
    // Compare as JSON: times are stored with second precision.
    serde_json::to_value(previous).ok() == serde_json::to_value(&next).ok()
}

fn plan_reference(plan: &InstallPlan) -> ObjectReference {
    // Not the resourceVersion: it changes with every status write of the plan.
    ObjectReference {
        api_version: Some(InstallPlan::api_version(&()).into_owned()),
        kind: Some(InstallPlan::kind(&()).into_owned()),
        name: Some(plan.name_any()),
        namespace: plan.namespace(),
        uid: plan.uid(),
        ..ObjectReference::default()
    }
}

fn deprecated_reference(plan: &InstallPlan) -> InstallPlanReference {
    InstallPlanReference {
        api_version: InstallPlan::api_version(&()).into_owned(),
        kind: InstallPlan::kind(&()).into_owned(),
        name: plan.name_any(),
        uuid: plan.uid().unwrap_or_default(),
    }
}

/// `InstallPlanPending` / `InstallPlanFailed` / `BundleUnpackFailed` from the plan's phase, as
/// OLM's `CheckInstallPlanStatus` does.
fn plan_conditions(
    conditions: &mut Vec<SubscriptionCondition>,
    plan: Option<&InstallPlan>,
    now: &Time,
) {
    remove_condition(conditions, INSTALL_PLAN_MISSING);
    let Some(plan) = plan else {
        for type_ in [
            INSTALL_PLAN_PENDING,
            INSTALL_PLAN_FAILED,
            BUNDLE_UNPACK_FAILED,
        ] {
            remove_condition(conditions, type_);
        }
        return;
    };
    let status = plan.status.as_ref();
    let phase = status.map_or("", |status| status.phase.as_str());
    let plan_conditions = status
        .and_then(|status| status.conditions.as_deref())
        .unwrap_or_default();
    match phase {
        PHASE_COMPLETE => {
            for type_ in [
                INSTALL_PLAN_PENDING,
                INSTALL_PLAN_FAILED,
                BUNDLE_UNPACK_FAILED,
            ] {
                remove_condition(conditions, type_);
            }
        }
        PHASE_FAILED => {
            remove_condition(conditions, INSTALL_PLAN_PENDING);
            let installed = find_condition(plan_conditions, CONDITION_INSTALLED)
                .filter(|c| c.status.as_deref() == Some(condition_status::FALSE));
            let reason = installed
                .and_then(|c| c.reason.as_deref())
                .unwrap_or(REASON_INSTALL_PLAN_FAILED);
            let message = extract_message(plan);
            set_condition(
                conditions,
                &DesiredCondition::new(INSTALL_PLAN_FAILED, Status::True, reason, &message),
                now,
            );
            match failed_lookup(plan) {
                Some((reason, message)) => {
                    let message = format!(
                        "bundle unpacking failed. Reason: {reason}, and Message: {message}"
                    );
                    set_condition(
                        conditions,
                        &DesiredCondition::new(
                            BUNDLE_UNPACK_FAILED,
                            Status::True,
                            REASON_BUNDLE_UNPACK_FAILED,
                            &message,
                        ),
                        now,
                    );
                }
                None => {
                    remove_condition(conditions, BUNDLE_UNPACK_FAILED);
                }
            }
        }
        _ => {
            remove_condition(conditions, INSTALL_PLAN_FAILED);
            remove_condition(conditions, BUNDLE_UNPACK_FAILED);
            let reason = if phase.is_empty() {
                REASON_INSTALL_PLAN_NOT_YET_RECONCILED
            } else {
                phase
            };
            let mut message = extract_message(plan);
            if message.is_empty() && phase == REASON_REQUIRES_APPROVAL {
                message = format!(
                    "InstallPlan {}/{} waits for approval: set its spec.approved to true",
                    plan.namespace().unwrap_or_default(),
                    plan.name_any()
                );
            }
            set_condition(
                conditions,
                &DesiredCondition::new(INSTALL_PLAN_PENDING, Status::True, reason, &message),
                now,
            );
        }
    }
}

/// OLM's `extractMessage`: the `Installed` condition's message, else the messages of pending
/// bundle lookups.
fn extract_message(plan: &InstallPlan) -> String {
    let Some(status) = plan.status.as_ref() else {
        return String::new();
    };
    let installed: Option<&InstallPlanCondition> = status
        .conditions
        .as_deref()
        .and_then(|conditions| find_condition(conditions, CONDITION_INSTALLED));
    if let Some(message) = installed
        .filter(|c| c.status.as_deref() != Some(condition_status::UNKNOWN))
        .and_then(|c| c.message.as_deref())
        .filter(|m| !m.is_empty())
    {
        return message.to_owned();
    }
    status
        .bundle_lookups
        .iter()
        .flatten()
        .filter_map(|lookup| {
            lookup
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == BUNDLE_LOOKUP_PENDING && c.status != condition_status::UNKNOWN)
                .and_then(|c| c.message.as_deref())
                .filter(|m| !m.is_empty())
                .map(|m| format!("{m}."))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reason and message of a failed bundle lookup, if the plan has one.
fn failed_lookup(plan: &InstallPlan) -> Option<(String, String)> {
    plan.status
        .as_ref()?
        .bundle_lookups
        .iter()
        .flatten()
        .flat_map(|lookup| lookup.conditions.iter().flatten())
        .find(|c| c.type_ == BUNDLE_LOOKUP_FAILED && c.status == condition_status::TRUE)
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
