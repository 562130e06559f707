//! Pure: whether a Subscription's status write waits a moment for its install to settle.
//!
//! An install changes its InstallPlan and CSV several times within a second: the plan is
//! created, completes as it creates the CSV, and the CSV's first reconcile writes its
//! pull-secret report. Each change brought a Subscription reconcile and a status write (five
//! per install, scripts/bench-scale.sh). For [`SETTLE`] after their creation, a plan that has no
//! status yet and a CSV without its report are waited for: their next change (which triggers the
//! Subscription) brings one write with all of it, or the time runs out and the status says what
//! is there, as before.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::status::plan_for;
use crate::api::{ClusterServiceVersion, InstallPlan};
use crate::controller::keys::csv::PULL_SECRETS_REPORT;
use crate::timing::elapsed;

/// How long after their creation a plan's first status and a CSV's first report are awaited.
pub const SETTLE: Duration = Duration::from_secs(2);

/// How long to wait before writing the status of a Subscription moving to `current_csv`, if
/// its plan or CSV is that young and about to change (`now`: wall-clock time).
pub fn settling(
    current_csv: Option<&str>,
    plans: &[InstallPlan],
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
    now: Timestamp,
) -> Option<Duration> {
    let csv_name = current_csv?;
    let left = |created: Option<&Time>| {
        let age = elapsed(created?.0, now);
        SETTLE.checked_sub(age).filter(|left| !left.is_zero())
    };
    let plan_pending = plan_for(plans, csv_name)
        .filter(|plan| plan.status.is_none())
        .and_then(|plan| left(plan.metadata.creation_timestamp.as_ref()));
    let report_pending = csvs
        .get(csv_name)
        .filter(|csv| !csv.annotations().contains_key(PULL_SECRETS_REPORT))
        .and_then(|csv| left(csv.metadata.creation_timestamp.as_ref()));
    plan_pending.max(report_pending)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::api::install_plan::InstallPlanStatus;

    const CSV: &str = "widget-operator.v1.0.0";

    fn meta(name: &str, created: Timestamp) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            creation_timestamp: Some(Time(created)),
            ..ObjectMeta::default()
        }
    }

    fn plan(created: Timestamp, status: Option<InstallPlanStatus>) -> InstallPlan {
        let mut plan = InstallPlan {
            metadata: meta("install-1", created),
            spec: Default::default(),
            status,
        };
        plan.spec.cluster_service_version_names = vec![CSV.into()];
        plan
    }

    fn csvs(created: Timestamp, report: bool) -> BTreeMap<String, Arc<ClusterServiceVersion>> {
        let mut csv = ClusterServiceVersion::new(CSV, Default::default());
        csv.metadata = meta(CSV, created);
        if report {
            csv.annotations_mut()
                .insert(PULL_SECRETS_REPORT.into(), "[]".into());
        }
        BTreeMap::from([(CSV.to_owned(), Arc::new(csv))])
    }

    #[test]
    fn a_young_plan_without_status_or_csv_without_report_is_waited_for() {
        let created = Timestamp::now();
        let soon = created + SignedDuration::from_millis(500);
        let wait = Some(Duration::from_millis(1500));
        let plans = [plan(created, None)];
        assert_eq!(settling(Some(CSV), &plans, &BTreeMap::new(), soon), wait);
        let done = [plan(created, Some(InstallPlanStatus::default()))];
        assert_eq!(settling(Some(CSV), &done, &BTreeMap::new(), soon), None);
        assert_eq!(
            settling(Some(CSV), &done, &csvs(created, false), soon),
            wait
        );
        assert_eq!(settling(Some(CSV), &done, &csvs(created, true), soon), None);
        let late = created + SignedDuration::from_secs(3);
        assert_eq!(
            settling(Some(CSV), &plans, &csvs(created, false), late),
            None
        );
        assert_eq!(settling(None, &plans, &csvs(created, false), soon), None);
    }
}
