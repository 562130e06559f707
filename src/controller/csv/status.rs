//! The ClusterServiceVersion's status (pure): OLM's phases and reasons, the phase history in
//! `status.conditions` as OLM's `SetPhase` keeps it, and the Deployments' health.
//!
//! Phases move as in OLM: `Pending` (`RequirementsUnknown`) → `InstallReady`
//! (`AllRequirementsMet`) → `Installing` (`InstallSucceeded`, then `InstallWaiting` while a
//! Deployment is not available) → `Succeeded`; `Failed` with a reason when a requirement is not
//! met; `Replacing` (`BeingReplaced`) and `Deleting` (`Replaced`) during an upgrade. A status
//! that would not change is not written (DESIGN invariant 5): the times only move when the
//! phase, reason or message does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::csv_reasons;
use crate::api::csv_status::ClusterServiceVersionCondition;
use crate::api::{ClusterServiceVersionPhase as Phase, ClusterServiceVersionStatus};
use crate::bundle::ownership::{CSV_LABEL, csv_label_value};
use crate::controller::deployment_rollout::DeploymentRollout;

/// Entries kept in `status.conditions` (OLM's `ConditionsLimit`).
pub const MAX_HISTORY: usize = 20;

/// OLM's message for `Pending`/`RequirementsUnknown`.
pub const MESSAGE_REQUIREMENTS_UNKNOWN: &str = "requirements not yet checked";
/// OLM's message for `InstallReady`/`AllRequirementsMet`.
pub const MESSAGE_REQUIREMENTS_MET: &str = "all requirements found, attempting install";
/// OLM's message for `Installing`/`InstallSucceeded`.
pub const MESSAGE_WAITING_FOR_HEALTH: &str = "waiting for install components to report healthy";
/// OLM's message for `Succeeded`/`InstallSucceeded`.
pub const MESSAGE_SUCCEEDED: &str = "install strategy completed with no errors";
/// OLM's message for `Deleting`/`Replaced`.
pub const MESSAGE_REPLACED: &str =
    "has been replaced by a newer ClusterServiceVersion that has successfully installed.";

/// The phase, reason and message a reconcile decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseUpdate {
    pub phase: Phase,
    pub reason: &'static str,
    pub message: String,
}

impl PhaseUpdate {
    pub fn new(phase: Phase, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            phase,
            reason,
            message: message.into(),
        }
    }

    /// `Pending`: the requirements have not been checked yet.
    pub fn pending() -> Self {
        Self::new(
            Phase::Pending,
            csv_reasons::REQUIREMENTS_UNKNOWN,
            MESSAGE_REQUIREMENTS_UNKNOWN,
        )
    }

    /// `InstallReady`: every requirement is met.
    pub fn install_ready() -> Self {
        Self::new(
            Phase::InstallReady,
            csv_reasons::ALL_REQUIREMENTS_MET,
            MESSAGE_REQUIREMENTS_MET,
        )
    }

    /// `Replacing`: `replacer` replaces this CSV.
    pub fn replacing(namespace: &str, replacer: &str) -> Self {
        Self::new(
            Phase::Replacing,
            csv_reasons::BEING_REPLACED,
            format!("being replaced by csv: {namespace}/{replacer}"),
        )
    }

    /// `Deleting`: the replacement succeeded.
    pub fn replaced() -> Self {
        Self::new(Phase::Deleting, csv_reasons::REPLACED, MESSAGE_REPLACED)
    }
}

/// The phase of `status`, if any.
pub fn phase(status: Option<&ClusterServiceVersionStatus>) -> Option<Phase> {
    status.and_then(|status| status.phase)
}

/// The reason of `status`, if any.
pub fn reason(status: Option<&ClusterServiceVersionStatus>) -> Option<&str> {
    status.and_then(|status| status.reason.as_deref())
}

/// The status after `update`, or `None` when phase, reason and message are already those
/// (nothing to write). Follows OLM's `SetPhase`: `lastUpdateTime` is now, `lastTransitionTime`
/// moves with the phase, and a history entry is appended when the phase or the reason changes
/// (the newest [`MAX_HISTORY`] are kept).
pub fn set_phase(
    current: Option<&ClusterServiceVersionStatus>,
    update: &PhaseUpdate,
    now: &Time,
) -> Option<ClusterServiceVersionStatus> {
    let mut status = current.cloned().unwrap_or_default();
    if status.phase == Some(update.phase)
        && status.reason.as_deref() == Some(update.reason)
        && status.message.as_deref() == Some(update.message.as_str())
    {
        return None;
    }
    status.last_update_time = Some(now.clone());
    if status.phase != Some(update.phase) {
        status.phase = Some(update.phase);
        status.last_transition_time = Some(now.clone());
    }
    status.reason = Some(update.reason.to_owned());
    status.message = Some(update.message.clone());
    let history = status.conditions.get_or_insert_default();
    let appended = history.last().is_none_or(|last| {
        last.phase != Some(update.phase) || last.reason.as_deref() != Some(update.reason)
    });
    if appended {
        history.push(ClusterServiceVersionCondition {
            phase: Some(update.phase),
            message: Some(update.message.clone()),
            reason: Some(update.reason.to_owned()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now.clone()),
        });
        if history.len() > MAX_HISTORY {
            let excess = history.len() - MAX_HISTORY;
            history.drain(..excess);
        }
    }
    Some(status)
}

/// Whether the operator's Deployments are up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Every Deployment is available at its current generation.
    Ready,
    /// The first Deployment that is not, and why.
    NotReady(String),
}

/// The health of the Deployments named `names` (as rendered for `csv`), from `live`. A
/// Deployment still labelled for another CSV (an upgrade whose apply the watch has not shown
/// yet) is not ready.
pub fn health<'a>(
    csv: &str,
    names: impl IntoIterator<Item = &'a str>,
    live: impl Fn(&str) -> Option<std::sync::Arc<DeploymentRollout>>,
) -> Health {
    let label = csv_label_value(csv);
    for name in names {
        let Some(deployment) = live(name) else {
            return Health::NotReady(format!("deployment {name} not found"));
        };
        let labelled = deployment.label(CSV_LABEL).map(|value| &**value) == Some(label.as_str());
        if !labelled {
            return Health::NotReady(format!("deployment {name} is not updated yet"));
        }
        if let Some(problem) = deployment_problem(&deployment) {
            return Health::NotReady(format!(
                "waiting for deployment {name} to become ready: {problem}"
            ));
        }
    }
    Health::Ready
}

/// Why a Deployment is not available at its generation, as `kubectl rollout status` says it.
fn deployment_problem(deployment: &DeploymentRollout) -> Option<String> {
    let name = deployment.name();
    let Some(status) = &deployment.status else {
        return Some(format!("deployment {name:?} has no status yet"));
    };
    let generation = deployment.generation().unwrap_or(0);
    if status.observed_generation.unwrap_or(0) < generation {
        return Some(format!(
            "deployment {name:?} waiting for the latest generation {generation} to be observed"
        ));
    }
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.replicas)
        .unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    if updated < wanted {
        return Some(format!(
            "deployment {name:?} has {updated} of {wanted} replicas updated"
        ));
    }
    let available = status
        .conditions
        .iter()
        .flatten()
        .find(|condition| condition.type_ == "Available");
    match available {
        Some(condition) if condition.status == "True" => None,
        Some(condition) => Some(format!(
            "deployment {name:?} not available: {}",
            condition.message.as_deref().unwrap_or("no message")
        )),
        None => Some(format!("deployment {name:?} not available yet")),
    }
}

/// The phase after an apply, given the Deployments' health and the phase before.
pub fn after_install(
    current: Option<Phase>,
    current_reason: Option<&str>,
    health: &Health,
) -> PhaseUpdate {
    match health {
        Health::Ready => PhaseUpdate::new(
            Phase::Succeeded,
            csv_reasons::INSTALL_SUCCEEDED,
            MESSAGE_SUCCEEDED,
        ),
        Health::NotReady(problem) => {
            let was_healthy = current == Some(Phase::Succeeded)
                || (current == Some(Phase::Failed)
                    && current_reason == Some(csv_reasons::COMPONENT_UNHEALTHY));
            if was_healthy {
                PhaseUpdate::new(
                    Phase::Failed,
                    csv_reasons::COMPONENT_UNHEALTHY,
                    format!("installing: {problem}"),
                )
            } else if current == Some(Phase::Installing) {
                PhaseUpdate::new(
                    Phase::Installing,
                    csv_reasons::INSTALL_WAITING,
                    format!("installing: {problem}"),
                )
            } else {
                PhaseUpdate::new(
                    Phase::Installing,
                    csv_reasons::INSTALL_SUCCEEDED,
                    MESSAGE_WAITING_FOR_HEALTH,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::controller::deployment_rollout::{RolloutCondition, RolloutSpec, RolloutStatus};

    fn time(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn a_phase_change_appends_history_and_moves_the_times() {
        let pending = set_phase(None, &PhaseUpdate::pending(), &time(1)).unwrap();
        assert_eq!(pending.phase, Some(Phase::Pending));
        assert_eq!(pending.reason.as_deref(), Some("RequirementsUnknown"));
        assert_eq!(pending.conditions.as_ref().unwrap().len(), 1);

        let ready = set_phase(Some(&pending), &PhaseUpdate::install_ready(), &time(2)).unwrap();
        assert_eq!(ready.last_transition_time, Some(time(2)));
        let history: Vec<_> = ready
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.phase.unwrap(), c.reason.clone().unwrap()))
            .collect();
        assert_eq!(
            history,
            [
                (Phase::Pending, "RequirementsUnknown".to_owned()),
                (Phase::InstallReady, "AllRequirementsMet".to_owned())
            ]
        );
    }

    #[test]
    fn the_same_phase_reason_and_message_is_not_written_again() {
        let pending = set_phase(None, &PhaseUpdate::pending(), &time(1)).unwrap();
        assert_eq!(
            set_phase(Some(&pending), &PhaseUpdate::pending(), &time(9)),
            None
        );
    }

    #[test]
    fn a_new_message_updates_the_status_but_not_the_history() {
        let waiting = PhaseUpdate::new(Phase::Installing, "InstallWaiting", "a");
        let first = set_phase(None, &waiting, &time(1)).unwrap();
        let second = set_phase(
            Some(&first),
            &PhaseUpdate::new(Phase::Installing, "InstallWaiting", "b"),
            &time(2),
        )
        .unwrap();
        assert_eq!(second.message.as_deref(), Some("b"));
        assert_eq!(second.last_transition_time, Some(time(1)));
        assert_eq!(second.last_update_time, Some(time(2)));
        assert_eq!(second.conditions.unwrap().len(), 1);
    }

    #[test]
    fn history_is_bounded_to_the_newest_entries() {
        let mut status = None;
        for i in 0..30 {
            let phase = if i % 2 == 0 {
                Phase::Installing
            } else {
                Phase::Failed
            };
            let update = PhaseUpdate::new(phase, "X", format!("{i}"));
            status = set_phase(status.as_ref(), &update, &time(i)).or(status);
        }
        let history = status.unwrap().conditions.unwrap();
        assert_eq!(history.len(), MAX_HISTORY);
        assert_eq!(history.last().unwrap().message.as_deref(), Some("29"));
    }

    fn deployment(csv: &str, generation: i64, observed: i64, available: bool) -> DeploymentRollout {
        DeploymentRollout::new(
            ObjectMeta {
                name: Some("op".to_owned()),
                generation: Some(generation),
                labels: Some(BTreeMap::from([(
                    CSV_LABEL.to_owned(),
                    csv_label_value(csv),
                )])),
                ..ObjectMeta::default()
            },
            Some(RolloutSpec { replicas: Some(1) }),
            Some(RolloutStatus {
                observed_generation: Some(observed),
                updated_replicas: Some(1),
                conditions: Some(vec![RolloutCondition {
                    type_: "Available".to_owned(),
                    status: if available { "True" } else { "False" }.to_owned(),
                    message: Some("Deployment does not have minimum availability.".to_owned()),
                    ..RolloutCondition::default()
                }]),
            }),
        )
    }

    #[test]
    fn health_needs_every_deployment_available_at_its_generation_and_relabelled() {
        let check =
            |d: DeploymentRollout| health("op.v1", ["op"], move |_| Some(Arc::new(d.clone())));
        assert_eq!(check(deployment("op.v1", 2, 2, true)), Health::Ready);
        assert!(
            matches!(check(deployment("op.v1", 2, 1, true)), Health::NotReady(m) if m.contains("generation 2"))
        );
        assert!(
            matches!(check(deployment("op.v1", 1, 1, false)), Health::NotReady(m) if m.contains("minimum availability"))
        );
        assert!(
            matches!(check(deployment("op.v0", 1, 1, true)), Health::NotReady(m) if m.contains("not updated"))
        );
        assert!(
            matches!(health("op.v1", ["op"], |_| None), Health::NotReady(m) if m.contains("not found"))
        );
    }

    #[test]
    fn phases_after_an_install_follow_olm() {
        let waiting = Health::NotReady("waiting for deployment op".to_owned());
        let first = after_install(Some(Phase::InstallReady), None, &waiting);
        assert_eq!(
            (first.phase, first.reason, first.message.as_str()),
            (
                Phase::Installing,
                "InstallSucceeded",
                MESSAGE_WAITING_FOR_HEALTH
            )
        );
        let next = after_install(Some(Phase::Installing), Some("InstallSucceeded"), &waiting);
        assert_eq!(
            (next.phase, next.reason),
            (Phase::Installing, "InstallWaiting")
        );
        let done = after_install(Some(Phase::Installing), None, &Health::Ready);
        assert_eq!(
            (done.phase, done.reason),
            (Phase::Succeeded, "InstallSucceeded")
        );
        let broken = after_install(Some(Phase::Succeeded), None, &waiting);
        assert_eq!(
            (broken.phase, broken.reason),
            (Phase::Failed, "ComponentUnhealthy")
        );
    }
}
