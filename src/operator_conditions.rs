//! Pure: what an OperatorCondition means to the installer (no client).
//!
//! - [`observed_status`]: the status opcat writes, `spec.conditions` copied to
//!   `status.conditions` with `observedGeneration` (OLM `operatorcondition_controller.go`,
//!   `syncOperatorConditionStatus`, with `meta.SetStatusCondition`'s rules: `lastTransitionTime`
//!   moves only when `status` changes). One deliberate difference: a condition the operator
//!   removed from `spec.conditions` leaves the status too. OLM keeps it there with its old
//!   generation, and its own gate then reads it as outdated and holds every upgrade for good.
//! - [`upgrade_gate`]: whether the operator of a CSV may be replaced (OLM
//!   `olm/operatorconditions.go`, `isOperatorUpgradeable`): no OperatorCondition → yes; an
//!   `Upgradeable` override decides (`True` yes, anything else no); else the observed
//!   `Upgradeable` condition holds the upgrade when it is outdated (its `observedGeneration` is
//!   not the object's generation) or `False`. The messages are OLM's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::condition_status;
use crate::api::operator_condition::{
    OperatorCondition, OperatorConditionEntry, OperatorConditionStatus, UPGRADEABLE,
};

/// Why an upgrade waits: the message the replacing CSV, its InstallPlan and the Subscription
/// show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// OLM's message, e.g. `operator is not upgradeable: The operator is not upgradeable: ...`.
    pub message: String,
}

/// The status `condition` should have: its `spec.conditions`, each observed at the object's
/// generation. `now` stamps a condition that carries no `lastTransitionTime`.
pub fn observed_status(condition: &OperatorCondition, now: &Time) -> OperatorConditionStatus {
    let generation = condition.metadata.generation;
    let previous = condition.status.as_ref();
    let conditions: Vec<OperatorConditionEntry> = condition
        .spec
        .conditions
        .iter()
        .flatten()
        .map(|wanted| {
            let before = previous.and_then(|status| status.condition(&wanted.type_));
            let last_transition_time = match before {
                // `status` unchanged: the transition happened earlier.
                Some(before) if before.status == wanted.status => {
                    before.last_transition_time.clone()
                }
                _ => None,
            }
            .or_else(|| wanted.last_transition_time.clone())
            .unwrap_or_else(|| now.clone());
            OperatorConditionEntry {
                observed_generation: generation,
                last_transition_time: Some(last_transition_time),
                ..wanted.clone()
            }
        })
        .collect();
    OperatorConditionStatus {
        conditions: (!conditions.is_empty()).then_some(conditions),
    }
}

/// Whether the operator whose OperatorCondition is `condition` may be upgraded; `None`: it has
/// none (as OLM: upgradeable).
pub fn upgrade_gate(condition: Option<&OperatorCondition>) -> Result<(), Held> {
    let Some(condition) = condition else {
        return Ok(());
    };
    let held = |reason: String| {
        Err(Held {
            message: format!("operator is not upgradeable: {reason}"),
        })
    };
    if let Some(admin) = condition.spec.override_of(UPGRADEABLE) {
        if admin.status == condition_status::TRUE {
            return Ok(());
        }
        return held(format!(
            "The operator is not upgradeable: {}",
            admin.message
        ));
    }
    let observed = condition
        .status
        .as_ref()
        .and_then(|status| status.condition(UPGRADEABLE));
    if let Some(observed) = observed {
        if observed.observed_generation != condition.metadata.generation {
            return held(format!(
                "The operatorcondition status \"{}\"=\"{}\" is outdated",
                observed.type_, observed.status
            ));
        }
        if observed.status == condition_status::FALSE {
            return held(format!(
                "The operator is not upgradeable: {}",
                observed.message
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::OperatorConditionSpec;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    fn entry(status: &str, message: &str, time: Option<i64>) -> OperatorConditionEntry {
        OperatorConditionEntry {
            type_: UPGRADEABLE.to_owned(),
            status: status.to_owned(),
            reason: "Test".to_owned(),
            message: message.to_owned(),
            last_transition_time: time.map(at),
            observed_generation: None,
        }
    }

    fn condition(
        generation: i64,
        conditions: Vec<OperatorConditionEntry>,
        overrides: Vec<OperatorConditionEntry>,
    ) -> OperatorCondition {
        let mut condition = OperatorCondition::new(
            "op.v1",
            OperatorConditionSpec {
                conditions: Some(conditions),
                overrides: Some(overrides),
                ..OperatorConditionSpec::default()
            },
        );
        condition.metadata.generation = Some(generation);
        condition
    }

    /// `condition` with its status observed.
    fn observed(mut condition: OperatorCondition) -> OperatorCondition {
        condition.status = Some(observed_status(&condition, &at(100)));
        condition
    }

    #[test]
    fn the_status_mirrors_the_spec_at_the_objects_generation() {
        let mut condition = condition(3, vec![entry("False", "migrating", Some(10))], vec![]);
        let status = observed_status(&condition, &at(100));
        let upgradeable = status.condition(UPGRADEABLE).unwrap();
        assert_eq!(upgradeable.observed_generation, Some(3));
        assert_eq!(upgradeable.message, "migrating");
        assert_eq!(upgradeable.last_transition_time, Some(at(10)));
        condition.status = Some(status.clone());
        assert_eq!(
            observed_status(&condition, &at(200)),
            status,
            "observing twice changes nothing"
        );

        // The operator changes only the message: same transition time, new generation.
        condition.spec.conditions = Some(vec![entry("False", "still migrating", Some(50))]);
        condition.metadata.generation = Some(4);
        let next = observed_status(&condition, &at(200));
        let upgradeable = next.condition(UPGRADEABLE).unwrap();
        assert_eq!(upgradeable.observed_generation, Some(4));
        assert_eq!(upgradeable.last_transition_time, Some(at(10)));

        // Removed from the spec: removed from the status.
        condition.spec.conditions = None;
        assert_eq!(observed_status(&condition, &at(300)).conditions, None);
    }

    #[test]
    fn a_condition_without_a_transition_time_is_stamped_now() {
        let condition = condition(1, vec![entry("True", "", None)], vec![]);
        let status = observed_status(&condition, &at(100));
        assert_eq!(
            status.condition(UPGRADEABLE).unwrap().last_transition_time,
            Some(at(100))
        );
    }

    #[test]
    fn no_operator_condition_or_no_upgradeable_condition_lets_the_upgrade_proceed() {
        assert_eq!(upgrade_gate(None), Ok(()));
        assert_eq!(
            upgrade_gate(Some(&observed(condition(1, vec![], vec![])))),
            Ok(())
        );
        assert_eq!(
            upgrade_gate(Some(&observed(condition(
                1,
                vec![entry("True", "", Some(1))],
                vec![]
            )))),
            Ok(())
        );
    }

    #[test]
    fn upgradeable_false_holds_with_olms_message() {
        let held = upgrade_gate(Some(&observed(condition(
            2,
            vec![entry("False", "a migration is running", Some(1))],
            vec![],
        ))));
        assert_eq!(
            held.unwrap_err().message,
            "operator is not upgradeable: The operator is not upgradeable: a migration is running"
        );
    }

    #[test]
    fn a_status_behind_the_generation_holds_until_observed() {
        let mut condition = observed(condition(2, vec![entry("True", "", Some(1))], vec![]));
        condition.metadata.generation = Some(3);
        let held = upgrade_gate(Some(&condition)).unwrap_err();
        assert!(held.message.contains("is outdated"), "{held:?}");
    }

    #[test]
    fn an_admin_override_wins_either_way() {
        let forced = observed(condition(
            1,
            vec![entry("False", "busy", Some(1))],
            vec![entry("True", "the admin accepts the risk", None)],
        ));
        assert_eq!(upgrade_gate(Some(&forced)), Ok(()));
        let frozen = observed(condition(
            1,
            vec![entry("True", "", Some(1))],
            vec![entry("False", "change freeze", None)],
        ));
        assert_eq!(
            upgrade_gate(Some(&frozen)).unwrap_err().message,
            "operator is not upgradeable: The operator is not upgradeable: change freeze"
        );
    }
}
