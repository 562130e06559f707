use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::ObjectMeta;

use super::*;
use crate::api::install_plan::{BundleLookup, BundleLookupCondition, InstallPlanStatus};
use crate::api::{Approval, InstallPlanSpec};
use crate::controller::plan_record::PlanEntry;
use crate::controller::subscription::catalog_health::HealthCondition;
use crate::controller::subscription::install::Install;

fn at(seconds: i64) -> Time {
    Time(jiff::Timestamp::from_second(seconds).unwrap())
}

fn healthy() -> CatalogHealth {
    CatalogHealth {
        entries: vec![],
        condition: HealthCondition {
            status: Status::False,
            reason: "AllCatalogSourcesHealthy",
            message: "all available catalogsources are healthy".into(),
        },
    }
}

fn plan(csv: &str, phase: Option<&str>) -> InstallPlan {
    InstallPlan {
        metadata: ObjectMeta {
            name: Some("install-abcde".into()),
            namespace: Some("ops".into()),
            uid: Some("plan-uid".into()),
            ..ObjectMeta::default()
        },
        spec: InstallPlanSpec {
            cluster_service_version_names: vec![csv.into()],
            approval: Approval::Automatic,
            approved: true,
            generation: Some(2),
            ..InstallPlanSpec::default()
        },
        status: phase.map(|phase| InstallPlanStatus {
            phase: phase.into(),
            ..InstallPlanStatus::default()
        }),
    }
}

fn bundle(name: &str) -> Install {
    Install::new(
        "demo",
        vec![PlanEntry {
            package: "demo".into(),
            channel: "stable".into(),
            name: name.into(),
            image: "registry.example.com/demo:v1".into(),
            subscription: "demo".into(),
            ..PlanEntry::default()
        }],
    )
}

fn csvs(names: &[&str]) -> BTreeMap<String, Arc<ClusterServiceVersion>> {
    names
        .iter()
        .map(|name| {
            (
                (*name).to_owned(),
                Arc::new(ClusterServiceVersion::new(name, Default::default())),
            )
        })
        .collect()
}

fn compute(
    current: Option<&SubscriptionStatus>,
    plans: &[InstallPlan],
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
    decision: &Decision,
    now: i64,
) -> SubscriptionStatus {
    desired_status(&StatusInputs {
        subscription: "demo",
        current,
        plans,
        csvs,
        decision,
        health: &healthy(),
        report: &Report::Absent,
        now: &at(now),
    })
}

fn condition<'a>(status: &'a SubscriptionStatus, type_: &str) -> Option<&'a SubscriptionCondition> {
    find_condition(status.conditions.as_deref().unwrap_or_default(), type_)
}

#[test]
fn a_new_plan_makes_the_subscription_upgrade_pending() {
    let plans = [plan("demo.v1", None)];
    let decision = Decision {
        installed: None,
        step: Step::Install(bundle("demo.v1")),
    };
    let status = compute(None, &plans, &csvs(&[]), &decision, 10);
    assert_eq!(status.current_csv.as_deref(), Some("demo.v1"));
    assert_eq!(status.installed_csv, None);
    assert_eq!(status.state.as_deref(), Some("UpgradePending"));
    let reference = status.install_plan_ref.as_ref().unwrap();
    assert_eq!(reference.name.as_deref(), Some("install-abcde"));
    assert_eq!(reference.kind.as_deref(), Some("InstallPlan"));
    let deprecated = status.install_plan.as_ref().unwrap();
    assert_eq!(deprecated.uuid, "plan-uid");
    assert_eq!(status.install_plan_generation, Some(2));
    let pending = condition(&status, "InstallPlanPending").unwrap();
    assert_eq!(pending.status, "True");
    assert_eq!(
        pending.reason.as_deref(),
        Some("InstallPlanNotYetReconciled")
    );
    let health = condition(&status, "CatalogSourcesUnhealthy").unwrap();
    assert_eq!(health.status, "False");
    assert_eq!(status.last_updated, at(10));
}

#[test]
fn a_manual_plan_asks_for_approval() {
    let plans = [plan("demo.v1", Some("RequiresApproval"))];
    let decision = Decision {
        installed: None,
        step: Step::PlanInFlight,
    };
    let status = compute(None, &plans, &csvs(&[]), &decision, 10);
    let pending = condition(&status, "InstallPlanPending").unwrap();
    assert_eq!(pending.reason.as_deref(), Some("RequiresApproval"));
    assert_eq!(
        pending.message.as_deref(),
        Some("InstallPlan ops/install-abcde waits for approval: set its spec.approved to true")
    );
}

#[test]
fn an_installed_csv_is_at_latest_known_and_pending_conditions_go() {
    let plans = [plan("demo.v1", Some("Installing"))];
    let pending = compute(
        None,
        &plans,
        &csvs(&[]),
        &Decision {
            installed: None,
            step: Step::PlanInFlight,
        },
        10,
    );
    assert!(condition(&pending, "InstallPlanPending").is_some());

    let plans = [plan("demo.v1", Some("Complete"))];
    let decision = Decision {
        installed: Some("demo.v1".into()),
        step: Step::AtLatest,
    };
    let installed = compute(Some(&pending), &plans, &csvs(&["demo.v1"]), &decision, 20);
    assert_eq!(installed.state.as_deref(), Some("AtLatestKnown"));
    assert_eq!(installed.installed_csv.as_deref(), Some("demo.v1"));
    assert_eq!(installed.current_csv.as_deref(), Some("demo.v1"));
    assert!(condition(&installed, "InstallPlanPending").is_none());
    assert_eq!(installed.last_updated, at(20));

    let again = compute(Some(&installed), &plans, &csvs(&["demo.v1"]), &decision, 30);
    assert_eq!(
        again, installed,
        "a converged status does not change, lastUpdated included"
    );
}

#[test]
fn a_failed_plan_shows_why_and_whether_the_bundle_was_unreadable() {
    let mut failed = plan("demo.v1", Some("Failed"));
    let status = failed.status.as_mut().unwrap();
    status.conditions = Some(vec![InstallPlanCondition {
        type_: Some("Installed".into()),
        status: Some("False".into()),
        reason: Some("InstallComponentFailed".into()),
        message: Some("bundle has two CSVs".into()),
        ..InstallPlanCondition::default()
    }]);
    status.bundle_lookups = Some(vec![BundleLookup {
        path: "registry.example.com/demo:v1".into(),
        identifier: "demo.v1".into(),
        conditions: Some(vec![BundleLookupCondition {
            type_: "BundleLookupFailed".into(),
            status: "True".into(),
            reason: Some("BundleInvalid".into()),
            message: Some("bundle has two CSVs".into()),
            ..BundleLookupCondition::default()
        }]),
        ..BundleLookup::default()
    }]);
    let decision = Decision {
        installed: None,
        step: Step::PlanInFlight,
    };
    let status = compute(None, &[failed], &csvs(&[]), &decision, 10);
    assert_eq!(status.state.as_deref(), Some("UpgradePending"));
    let plan_failed = condition(&status, "InstallPlanFailed").unwrap();
    assert_eq!(
        plan_failed.reason.as_deref(),
        Some("InstallComponentFailed")
    );
    assert_eq!(plan_failed.message.as_deref(), Some("bundle has two CSVs"));
    let unpack = condition(&status, "BundleUnpackFailed").unwrap();
    assert_eq!(unpack.reason.as_deref(), Some("BundleUnpackFailed"));
    assert_eq!(
        unpack.message.as_deref(),
        Some("bundle unpacking failed. Reason: BundleInvalid, and Message: bundle has two CSVs")
    );
    assert!(condition(&status, "InstallPlanPending").is_none());
}

#[test]
fn resolution_failed_is_set_cleared_by_a_resolution_and_kept_otherwise() {
    let failed = Decision {
        installed: None,
        step: Step::ResolutionFailed {
            reason: "ConstraintsNotSatisfiable",
            message: "no operators found".into(),
        },
    };
    let status = compute(None, &[], &csvs(&[]), &failed, 10);
    let condition_ = condition(&status, "ResolutionFailed").unwrap();
    assert_eq!(condition_.status, "True");
    assert_eq!(status.state, None);
    assert_eq!(status.current_csv, None);

    let waiting = Decision {
        installed: None,
        step: Step::CatalogNotLoaded { quiet: false },
    };
    let kept = compute(Some(&status), &[], &csvs(&[]), &waiting, 20);
    assert!(condition(&kept, "ResolutionFailed").is_some());

    let plans = [plan("demo.v1", None)];
    let resolved = Decision {
        installed: None,
        step: Step::Install(bundle("demo.v1")),
    };
    let cleared = compute(Some(&kept), &plans, &csvs(&[]), &resolved, 30);
    assert!(condition(&cleared, "ResolutionFailed").is_none());
}

#[test]
fn the_pull_secret_report_is_mirrored() {
    let report = Report::Conditions(vec![super::super::report::ReportedCondition {
        type_: "PullCredentialsReady".into(),
        status: "False".into(),
        reason: Some("Unauthorized".into()),
        message: Some("registry.example.com answered 401".into()),
    }]);
    let plans = [plan("demo.v1", Some("Complete"))];
    let decision = Decision {
        installed: Some("demo.v1".into()),
        step: Step::AtLatest,
    };
    let status = desired_status(&StatusInputs {
        subscription: "demo",
        current: None,
        plans: &plans,
        csvs: &csvs(&["demo.v1"]),
        decision: &decision,
        health: &healthy(),
        report: &report,
        now: &at(1),
    });
    let ready = condition(&status, "PullCredentialsReady").unwrap();
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("Unauthorized"));
}

#[test]
fn a_status_read_back_from_the_api_is_unchanged() {
    // Times are serialized with second precision: a status stamped at a fractional time must
    // still equal itself once it went through the API, or every reconcile would write.
    let now = crate::controller::clock::status_time(
        jiff::Timestamp::from_second(100).unwrap() + jiff::SignedDuration::from_millis(750),
    );
    let plans = [plan("demo.v1", Some("Installing"))];
    let decision = Decision {
        installed: None,
        step: Step::PlanInFlight,
    };
    let desired = desired_status(&StatusInputs {
        subscription: "demo",
        current: None,
        plans: &plans,
        csvs: &csvs(&[]),
        decision: &decision,
        health: &healthy(),
        report: &Report::Absent,
        now: &now,
    });
    let read_back: SubscriptionStatus =
        serde_json::from_value(serde_json::to_value(&desired).unwrap()).unwrap();
    assert_eq!(read_back, desired);
    let again = desired_status(&StatusInputs {
        subscription: "demo",
        current: Some(&read_back),
        plans: &plans,
        csvs: &csvs(&[]),
        decision: &decision,
        health: &healthy(),
        report: &Report::Absent,
        now: &at(200),
    });
    assert_eq!(again, read_back);
}
