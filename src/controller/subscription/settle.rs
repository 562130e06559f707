//! Pure: whether a Subscription's status write waits a moment for its new InstallPlan.
//!
//! An install's plan is created, then completes as it creates the CSV, within a moment. The
//! plan's creation brought a Subscription reconcile that wrote the plan as not yet reconciled,
//! and its completion another write (scripts/bench-scale.sh). For [`SETTLE`] after its creation,
//! a plan that has no status yet is waited for: its first status (which triggers the
//! Subscription) brings one write, or the time runs out and the status says what is there, as
//! before. The CSV's pull-secret report is not waited for: the Subscription shows the CSV it
//! installed as soon as it exists (before the CSV can succeed and an upgrade be planned).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::status::plan_for;
use crate::api::InstallPlan;
use crate::timing::left_of;

/// How long after its creation a plan's first status is awaited.
pub const SETTLE: Duration = Duration::from_secs(2);

/// How long to wait before writing the status of a Subscription moving to `current_csv`, if
/// its plan is that young and has no status yet (`now`: wall-clock time).
pub fn settling(
    current_csv: Option<&str>,
    plans: &[InstallPlan],
    now: Timestamp,
) -> Option<Duration> {
    let plan = plan_for(plans, current_csv?)?;
    if plan.status.is_some() {
        return None;
    }
    left_of(SETTLE, plan.metadata.creation_timestamp.as_ref()?.0, now)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::api::install_plan::InstallPlanStatus;

    const CSV: &str = "widget-operator.v1.0.0";

    fn plan(created: Timestamp, status: Option<InstallPlanStatus>) -> InstallPlan {
        let mut plan = InstallPlan {
            metadata: ObjectMeta {
                name: Some("install-1".into()),
                namespace: Some("ns".into()),
                creation_timestamp: Some(Time(created)),
                ..ObjectMeta::default()
            },
            spec: Default::default(),
            status,
        };
        plan.spec.cluster_service_version_names = vec![CSV.into()];
        plan
    }

    #[test]
    fn only_a_young_plan_without_status_is_waited_for() {
        let created = Timestamp::now();
        let soon = created + SignedDuration::from_millis(500);
        let pending = [plan(created, None)];
        assert_eq!(
            settling(Some(CSV), &pending, soon),
            Some(Duration::from_millis(1500))
        );
        let done = [plan(created, Some(InstallPlanStatus::default()))];
        assert_eq!(settling(Some(CSV), &done, soon), None);
        let late = created + SignedDuration::from_secs(3);
        assert_eq!(settling(Some(CSV), &pending, late), None);
        assert_eq!(settling(None, &pending, soon), None);
        assert_eq!(settling(Some("other.v1"), &pending, soon), None);
    }
}
