//! Pure: whether a Subscription's status write waits a moment for the install it started.
//!
//! An install passes through three reconcilers within moments: the InstallPlan's completes the
//! plan as it creates the CSV, then the CSV's first pass reports on its pull secrets (the
//! report the Subscription mirrors). Each step's watch event triggers the Subscription, which
//! wrote what each step showed: three or four status writes per install under load, one of
//! them only to drop `InstallPlanPending` again (scripts/bench-scale.sh, issue 12).
//!
//! So while the install's next step has not run yet the status waits: the plan has no status
//! (its reconcile is queued), or it completed and its CSV is not in the store yet, or the CSV
//! has neither a status nor a report (its first pass is queued). That step's event brings one
//! write with its outcome. A step that ran and stopped short still ends the wait: a plan that
//! waits for approval or shows its pulls in progress, a CSV whose requirements are not met.
//! The wait is bounded: [`SETTLE`] after the plan's creation the status says what is there.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::decide::{Decision, Step};
use super::report::has_report;
use super::status::plan_for;
use crate::api::install_plan_status::PHASE_COMPLETE;
use crate::api::{ClusterServiceVersion, InstallPlan, Subscription};
use crate::timing::left_of;

/// How long after a plan's creation its install's steps are awaited. Alone, an install's steps
/// take a second or two; in a burst they queue (of 1,000 Subscriptions created at once on the
/// bench machine, 90 % had their CSV's report within 13 s of the plan, all within 15 s). An
/// install that takes longer writes what it has then, and again when the steps ran.
pub const SETTLE: Duration = Duration::from_secs(15);

/// How long to wait before writing the status of a Subscription moving to `current_csv`
/// (`csvs`: the namespace's CSVs by name; `now`: wall-clock time), if its install is young and
/// its next step has not run.
pub fn settling(
    current_csv: Option<&str>,
    plans: &[InstallPlan],
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
    now: Timestamp,
) -> Option<Duration> {
    let name = current_csv?;
    let plan = plan_for(plans, name)?;
    if !next_step_pending(plan, csvs.get(name).map(Arc::as_ref)) {
        return None;
    }
    left_of(SETTLE, plan.metadata.creation_timestamp.as_ref()?.0, now)
}

/// Whether the install of `plan` (whose CSV is `csv`, if it exists) waits for a reconcile that
/// has not run yet.
fn next_step_pending(plan: &InstallPlan, csv: Option<&ClusterServiceVersion>) -> bool {
    let Some(status) = &plan.status else {
        return true;
    };
    if status.phase != PHASE_COMPLETE {
        return false;
    }
    match csv {
        None => true,
        Some(csv) => csv.status.is_none() && !has_report(csv),
    }
}

/// Whether `decision` plans an upgrade from an installed CSV that the status of
/// `subscription` does not show as installed yet. Waiting for an install's steps means the CSV
/// may have succeeded, and an upgrade be due, before the first write: the status then records
/// the installed CSV first, so readers see each installed version at latest known before it is
/// replaced.
pub fn records_installed_first(subscription: &Subscription, decision: &Decision) -> bool {
    let recorded = subscription
        .status
        .as_ref()
        .and_then(|status| status.installed_csv.as_deref());
    matches!(decision.step, Step::Install(_))
        && decision.installed.is_some()
        && decision.installed.as_deref() != recorded
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::api::ClusterServiceVersionStatus;
    use crate::api::install_plan::InstallPlanStatus;
    use crate::api::install_plan_status::{PHASE_FAILED, PHASE_REQUIRES_APPROVAL};
    use crate::controller::keys::csv::PULL_SECRETS_REPORT;

    const CSV: &str = "widget-operator.v1.0.0";

    fn plan(created: Timestamp, phase: Option<&str>) -> InstallPlan {
        let mut plan = InstallPlan {
            metadata: ObjectMeta {
                name: Some("install-1".into()),
                namespace: Some("ns".into()),
                creation_timestamp: Some(Time(created)),
                ..ObjectMeta::default()
            },
            spec: Default::default(),
            status: phase.map(|phase| InstallPlanStatus {
                phase: phase.to_owned(),
                ..InstallPlanStatus::default()
            }),
        };
        plan.spec.cluster_service_version_names = vec![CSV.into()];
        plan
    }

    fn csvs(
        status: Option<ClusterServiceVersionStatus>,
        report: Option<&str>,
    ) -> BTreeMap<String, Arc<ClusterServiceVersion>> {
        let mut csv = ClusterServiceVersion::new(CSV, Default::default());
        csv.status = status;
        csv.metadata.annotations =
            report.map(|text| BTreeMap::from([(PULL_SECRETS_REPORT.to_owned(), text.to_owned())]));
        BTreeMap::from([(CSV.to_owned(), Arc::new(csv))])
    }

    #[test]
    fn a_young_install_waits_for_each_step_that_has_not_run() {
        let created = Timestamp::now();
        let soon = created + SignedDuration::from_secs(5);
        let left = Some(Duration::from_secs(10));
        let none = BTreeMap::new();
        // The plan's reconcile is queued.
        assert_eq!(
            settling(Some(CSV), &[plan(created, None)], &none, soon),
            left
        );
        // The plan completed; its CSV is not in the store yet.
        let complete = [plan(created, Some(PHASE_COMPLETE))];
        assert_eq!(settling(Some(CSV), &complete, &none, soon), left);
        // The CSV exists; its first pass is queued.
        assert_eq!(
            settling(Some(CSV), &complete, &csvs(None, None), soon),
            left
        );
    }

    #[test]
    fn a_step_that_ran_ends_the_wait() {
        let created = Timestamp::now();
        let soon = created + SignedDuration::from_secs(5);
        let none = BTreeMap::new();
        for phase in [PHASE_REQUIRES_APPROVAL, "Installing", PHASE_FAILED] {
            let plans = [plan(created, Some(phase))];
            assert_eq!(settling(Some(CSV), &plans, &none, soon), None, "{phase}");
        }
        let complete = [plan(created, Some(PHASE_COMPLETE))];
        let reported = csvs(None, Some("[]"));
        assert_eq!(settling(Some(CSV), &complete, &reported, soon), None);
        let pending = csvs(Some(ClusterServiceVersionStatus::default()), None);
        assert_eq!(settling(Some(CSV), &complete, &pending, soon), None);
    }

    #[test]
    fn the_wait_is_bounded_and_only_for_the_csv_being_installed() {
        let created = Timestamp::now();
        let late = created + SignedDuration::from_secs(16);
        let pending = [plan(created, None)];
        let none = BTreeMap::new();
        assert_eq!(settling(Some(CSV), &pending, &none, late), None);
        let soon = created + SignedDuration::from_secs(1);
        assert_eq!(settling(None, &pending, &none, soon), None);
        assert_eq!(settling(Some("other.v1"), &pending, &none, soon), None);
    }
    #[test]
    fn an_upgrade_waits_until_the_status_shows_the_csv_it_replaces() {
        use crate::api::subscription::SubscriptionStatus;
        use crate::controller::subscription::install::Install;

        let mut subscription = Subscription::new("widgets", Default::default());
        let upgrade = |installed: Option<&str>| Decision {
            installed: installed.map(str::to_owned),
            step: Step::Install(Install::new("widgets", Vec::new())),
        };
        // The installed CSV succeeded before any status write: record it first.
        assert!(records_installed_first(&subscription, &upgrade(Some(CSV))));
        let mut status = SubscriptionStatus::new(Time(Timestamp::now()));
        status.installed_csv = Some(CSV.to_owned());
        subscription.status = Some(status);
        // Recorded: the upgrade is planned.
        assert!(!records_installed_first(&subscription, &upgrade(Some(CSV))));
        // A newer installed CSV than the one recorded is recorded first too.
        assert!(records_installed_first(
            &subscription,
            &upgrade(Some("widget-operator.v1.2.0"))
        ));
        // A first install has nothing to record; other steps plan nothing.
        subscription.status = None;
        assert!(!records_installed_first(&subscription, &upgrade(None)));
        let at_latest = Decision {
            installed: Some(CSV.to_owned()),
            step: Step::AtLatest,
        };
        assert!(!records_installed_first(&subscription, &at_latest));
    }
}
