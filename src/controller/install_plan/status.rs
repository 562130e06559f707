//! Pure: the InstallPlan status for each phase (no client). Shapes and names are OLM's
//! (`installplan_types.go`); `lastUpdateTime`/`lastTransitionTime` change only when a condition
//! changes, so repeating a phase writes nothing.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;

use crate::api::conditions::{DesiredCondition, Status, set_condition};
use crate::api::install_plan::{BundleLookup, BundleLookupCondition, InstallPlanStatus, Step};
use crate::api::install_plan_status::{
    BUNDLE_LOOKUP_FAILED, BUNDLE_LOOKUP_PENDING, CONDITION_INSTALLED, PHASE_COMPLETE, PHASE_FAILED,
    PHASE_INSTALLING, PHASE_REQUIRES_APPROVAL, REASON_INSTALL_COMPONENT_FAILED,
};
use crate::api::{CatalogSource, condition_status};

/// The bundle a plan looks up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup<'a> {
    /// Bundle image.
    pub image: &'a str,
    /// CSV name.
    pub csv: &'a str,
    /// The CSV it replaces, if any.
    pub replaces: &'a str,
    /// Namespace and name of the CatalogSource.
    pub catalog: (&'a str, &'a str),
}

/// Progress of a lookup: its condition type, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupProgress<'a> {
    pub type_: &'static str,
    pub reason: &'a str,
    pub message: &'a str,
}

impl<'a> LookupProgress<'a> {
    /// Still pulling (or retrying).
    pub fn pending(reason: &'a str, message: &'a str) -> Self {
        Self {
            type_: BUNDLE_LOOKUP_PENDING,
            reason,
            message,
        }
    }

    /// Given up.
    pub fn failed(reason: &'a str, message: &'a str) -> Self {
        Self {
            type_: BUNDLE_LOOKUP_FAILED,
            reason,
            message,
        }
    }
}

/// The status as stored, with the plan's CatalogSources listed once each.
fn base(current: Option<&InstallPlanStatus>, catalogs: &[&str]) -> InstallPlanStatus {
    let mut status = current.cloned().unwrap_or_default();
    status.catalog_sources = Vec::new();
    for catalog in catalogs {
        if !status
            .catalog_sources
            .iter()
            .any(|listed| listed == catalog)
        {
            status.catalog_sources.push((*catalog).to_owned());
        }
    }
    status
}

/// Waiting for `spec.approved: true`. `catalogs`: the names of the plan's CatalogSources.
pub fn requires_approval(
    current: Option<&InstallPlanStatus>,
    catalogs: &[&str],
) -> InstallPlanStatus {
    let mut status = base(current, catalogs);
    status.phase = PHASE_REQUIRES_APPROVAL.to_owned();
    status
}

/// Approved, pulling the bundles (`startTime` set on entry): one lookup per bundle, with its
/// progress; the message joins theirs.
pub fn installing(
    current: Option<&InstallPlanStatus>,
    lookups: &[(Lookup<'_>, LookupProgress<'_>)],
    now: &Time,
) -> InstallPlanStatus {
    let catalogs: Vec<&str> = lookups.iter().map(|(lookup, _)| lookup.catalog.1).collect();
    let mut status = base(current, &catalogs);
    status.phase = PHASE_INSTALLING.to_owned();
    if status.start_time.is_none() {
        status.start_time = Some(now.clone());
    }
    let previous = status.bundle_lookups.take().unwrap_or_default();
    status.bundle_lookups = Some(
        lookups
            .iter()
            .map(|(lookup, progress)| bundle_lookup(&previous, lookup, progress, now))
            .collect(),
    );
    let messages: Vec<&str> = lookups
        .iter()
        .map(|(_, progress)| progress.message)
        .filter(|message| !message.is_empty())
        .collect();
    status.message = (!messages.is_empty()).then(|| messages.join("; "));
    status
}

/// Every step done: the CSVs exist.
pub fn complete(
    current: Option<&InstallPlanStatus>,
    catalogs: &[&str],
    steps: Vec<Step>,
    now: &Time,
) -> InstallPlanStatus {
    let installed = DesiredCondition::new(CONDITION_INSTALLED, Status::True, "", "");
    steps_done(current, catalogs, PHASE_COMPLETE, steps, &installed, now)
}

/// The CSVs exist (`steps`): `phase`, no lookups, the `Installed` condition as `installed`
/// says, its message as the plan's.
pub(super) fn steps_done(
    current: Option<&InstallPlanStatus>,
    catalogs: &[&str],
    phase: &str,
    steps: Vec<Step>,
    installed: &DesiredCondition<'_>,
    now: &Time,
) -> InstallPlanStatus {
    let mut status = base(current, catalogs);
    status.phase = phase.to_owned();
    status.start_time.get_or_insert_with(|| now.clone());
    status.plan = Some(steps);
    status.bundle_lookups = None;
    status.message = Some(installed.message.to_owned()).filter(|message| !message.is_empty());
    let mut conditions = status.conditions.take().unwrap_or_default();
    set_condition(&mut conditions, installed, now);
    status.conditions = Some(conditions);
    status
}

/// Failed for good: `Installed=False` with reason `InstallComponentFailed` and the message; the
/// failed lookup when a bundle itself could not be read.
pub fn failed(
    current: Option<&InstallPlanStatus>,
    catalogs: &[&str],
    message: &str,
    unpack_failure: Option<(&Lookup<'_>, &LookupProgress<'_>)>,
    now: &Time,
) -> InstallPlanStatus {
    let mut status = base(current, catalogs);
    status.phase = PHASE_FAILED.to_owned();
    status.start_time.get_or_insert_with(|| now.clone());
    status.message = Some(message.to_owned());
    let previous = status.bundle_lookups.take().unwrap_or_default();
    status.bundle_lookups = unpack_failure
        .map(|(lookup, progress)| vec![bundle_lookup(&previous, lookup, progress, now)]);
    let mut conditions = status.conditions.take().unwrap_or_default();
    set_condition(
        &mut conditions,
        &DesiredCondition::new(
            CONDITION_INSTALLED,
            Status::False,
            REASON_INSTALL_COMPONENT_FAILED,
            message,
        ),
        now,
    );
    status.conditions = Some(conditions);
    status
}

fn bundle_lookup(
    previous: &[BundleLookup],
    lookup: &Lookup<'_>,
    progress: &LookupProgress<'_>,
    now: &Time,
) -> BundleLookup {
    let (catalog_namespace, catalog_name) = lookup.catalog;
    let old = previous
        .iter()
        .find(|old| old.identifier == lookup.csv)
        .and_then(|old| old.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == progress.type_));
    let condition = match old {
        Some(old)
            if old.status == condition_status::TRUE
                && old.reason.as_deref() == Some(progress.reason)
                && old.message.as_deref().unwrap_or_default() == progress.message =>
        {
            old.clone()
        }
        old => BundleLookupCondition {
            type_: progress.type_.to_owned(),
            status: condition_status::TRUE.to_owned(),
            reason: Some(progress.reason.to_owned()),
            message: (!progress.message.is_empty()).then(|| progress.message.to_owned()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(
                old.filter(|old| old.status == condition_status::TRUE)
                    .and_then(|old| old.last_transition_time.clone())
                    .unwrap_or_else(|| now.clone()),
            ),
        },
    };
    BundleLookup {
        path: lookup.image.to_owned(),
        identifier: lookup.csv.to_owned(),
        replaces: lookup.replaces.to_owned(),
        catalog_source_ref: ObjectReference {
            api_version: Some(CatalogSource::api_version(&()).into_owned()),
            kind: Some(CatalogSource::kind(&()).into_owned()),
            name: Some(catalog_name.to_owned()),
            namespace: Some(catalog_namespace.to_owned()),
            ..ObjectReference::default()
        },
        conditions: Some(vec![condition]),
        properties: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::conditions::find_condition;
    use crate::api::install_plan::StepResource;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    const LOOKUP: Lookup<'static> = Lookup {
        image: "registry.example.com/widget-bundle:v1",
        csv: "widget.v1",
        replaces: "",
        catalog: ("olm", "catalog"),
    };

    #[test]
    fn approval_then_installing_then_complete() {
        let waiting = requires_approval(None, &["catalog"]);
        assert_eq!(waiting.phase, "RequiresApproval");
        assert_eq!(waiting.catalog_sources, ["catalog"]);
        assert_eq!(requires_approval(Some(&waiting), &["catalog"]), waiting);

        let pulling = LookupProgress::pending("UnpackingInProgress", "pulling bundle image");
        let installing_ = installing(Some(&waiting), &[(LOOKUP, pulling.clone())], &at(10));
        assert_eq!(installing_.phase, "Installing");
        assert_eq!(installing_.start_time, Some(at(10)));
        let lookups = installing_.bundle_lookups.clone().unwrap();
        assert_eq!(lookups[0].path, LOOKUP.image);
        assert_eq!(lookups[0].identifier, "widget.v1");
        assert_eq!(
            lookups[0].catalog_source_ref.name.as_deref(),
            Some("catalog")
        );
        let again = installing(Some(&installing_), &[(LOOKUP, pulling)], &at(20));
        assert_eq!(again, installing_, "same progress, same status");

        let retry = LookupProgress::pending("BundlePullFailed", "401 Unauthorized");
        let failing = installing(Some(&installing_), &[(LOOKUP, retry)], &at(30));
        let condition = &failing.bundle_lookups.as_ref().unwrap()[0]
            .conditions
            .as_ref()
            .unwrap()[0];
        assert_eq!(condition.reason.as_deref(), Some("BundlePullFailed"));
        assert_eq!(condition.last_update_time, Some(at(30)));
        assert_eq!(condition.last_transition_time, Some(at(10)));
        assert_eq!(failing.message.as_deref(), Some("401 Unauthorized"));
        assert_eq!(failing.start_time, Some(at(10)));

        let step = Step {
            resolving: "widget.v1".into(),
            resource: StepResource::default(),
            optional: None,
            status: "Created".into(),
        };
        let done = complete(Some(&failing), &["catalog"], vec![step], &at(40));
        assert_eq!(done.phase, "Complete");
        assert_eq!(done.bundle_lookups, None);
        assert_eq!(done.message, None);
        assert_eq!(done.plan.as_ref().unwrap().len(), 1);
        let installed = find_condition(done.conditions.as_deref().unwrap(), "Installed").unwrap();
        assert_eq!(installed.status.as_deref(), Some("True"));
        assert_eq!(done.start_time, Some(at(10)));
    }

    #[test]
    fn failure_lists_the_problem_and_the_failed_lookup() {
        let unpack = LookupProgress::failed("BundleInvalid", "two CSVs");
        let status = failed(
            None,
            &["catalog"],
            "two CSVs",
            Some((&LOOKUP, &unpack)),
            &at(5),
        );
        assert_eq!(status.phase, "Failed");
        let installed = find_condition(status.conditions.as_deref().unwrap(), "Installed").unwrap();
        assert_eq!(installed.status.as_deref(), Some("False"));
        assert_eq!(installed.reason.as_deref(), Some("InstallComponentFailed"));
        assert_eq!(installed.message.as_deref(), Some("two CSVs"));
        let lookup = &status.bundle_lookups.as_ref().unwrap()[0];
        assert_eq!(
            lookup.conditions.as_ref().unwrap()[0].type_,
            "BundleLookupFailed"
        );

        let invalid_csv = failed(
            None,
            &["catalog"],
            "webhooks are not supported",
            None,
            &at(5),
        );
        assert_eq!(invalid_csv.bundle_lookups, None);
        assert_eq!(
            invalid_csv.message.as_deref(),
            Some("webhooks are not supported")
        );
    }

    #[test]
    fn a_plan_of_several_bundles_has_one_lookup_each_and_names_each_catalog_once() {
        let dependency = Lookup {
            image: "registry.example.com/etcd-bundle:v1",
            csv: "etcd.v1",
            replaces: "",
            catalog: ("olm", "private"),
        };
        let pulling = LookupProgress::pending("UnpackingInProgress", "pulling A");
        let denied = LookupProgress::pending("BundlePullFailed", "401 Unauthorized");
        let status = installing(None, &[(dependency, denied), (LOOKUP, pulling)], &at(10));
        assert_eq!(status.catalog_sources, ["private", "catalog"]);
        let lookups = status.bundle_lookups.as_ref().unwrap();
        assert_eq!(
            lookups
                .iter()
                .map(|l| l.identifier.as_str())
                .collect::<Vec<_>>(),
            ["etcd.v1", "widget.v1"]
        );
        assert_eq!(
            lookups[0].catalog_source_ref.name.as_deref(),
            Some("private")
        );
        assert_eq!(
            status.message.as_deref(),
            Some("401 Unauthorized; pulling A")
        );
        let done = complete(
            Some(&status),
            &["private", "catalog", "private"],
            vec![],
            &at(20),
        );
        assert_eq!(done.catalog_sources, ["private", "catalog"]);
    }
}
