//! Pure: whether a first install's `Installing` status is held back for a moment.
//!
//! The first reconcile of a new CSV applies everything, and its Deployments are not available
//! yet at that moment; they usually are within a second. Writing `Installing` then `Succeeded`
//! made two status writes per install (and two Subscription reconciles). For
//! [`HOLD_INSTALLING`] after the CSV's creation that write is held back: the Deployments'
//! watch events bring the next reconcile, which writes `Succeeded` with the whole phase history
//! (every phase passed through is kept), or, once the time is up, `Installing` as before.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::status::PhaseUpdate;
use crate::api::{ClusterServiceVersionPhase as Phase, csv_reasons};
use crate::timing::left_of;

/// How long after its creation a CSV's first `Installing` may wait for the Deployments.
pub const HOLD_INSTALLING: Duration = Duration::from_secs(2);

/// How long to wait before writing `update`, if it is the first `Installing` of a CSV created
/// at `created` whose phase is still `current` (`InstallReady`, staged or stored).
pub fn held_back(
    created: Option<Timestamp>,
    current: Option<Phase>,
    update: &PhaseUpdate,
    now: Timestamp,
) -> Option<Duration> {
    let first_installing = current == Some(Phase::InstallReady)
        && update.phase == Phase::Installing
        && update.reason == csv_reasons::INSTALL_SUCCEEDED;
    if !first_installing {
        return None;
    }
    left_of(HOLD_INSTALLING, created?, now)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::controller::csv::status::MESSAGE_WAITING_FOR_HEALTH;

    fn installing() -> PhaseUpdate {
        PhaseUpdate::new(
            Phase::Installing,
            csv_reasons::INSTALL_SUCCEEDED,
            MESSAGE_WAITING_FOR_HEALTH,
        )
    }

    #[test]
    fn only_a_young_csvs_first_installing_waits() {
        let created = Timestamp::now();
        let soon = created + SignedDuration::from_millis(500);
        assert_eq!(
            held_back(
                Some(created),
                Some(Phase::InstallReady),
                &installing(),
                soon
            ),
            Some(Duration::from_millis(1500))
        );
        let late = created + SignedDuration::from_secs(3);
        assert_eq!(
            held_back(
                Some(created),
                Some(Phase::InstallReady),
                &installing(),
                late
            ),
            None,
            "time is up"
        );
        assert_eq!(
            held_back(Some(created), Some(Phase::Installing), &installing(), soon),
            None,
            "already installing"
        );
        let succeeded = PhaseUpdate::new(Phase::Succeeded, csv_reasons::INSTALL_SUCCEEDED, "");
        assert_eq!(
            held_back(Some(created), Some(Phase::InstallReady), &succeeded, soon),
            None
        );
        assert_eq!(
            held_back(None, Some(Phase::InstallReady), &installing(), soon),
            None
        );
    }
}
