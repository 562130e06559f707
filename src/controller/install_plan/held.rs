//! An upgrade the operator holds: the plan created its CSVs, but one of them replaces a CSV whose
//! OperatorCondition says `Upgradeable=False` (or an admin's override does; see
//! [`crate::controller::upgrade_gate`]). The plan then stays `Installing` with its steps and
//! `Installed=False`, reason `OperatorConditionNotUpgradeable`, the gate's message (which the
//! Subscription's `InstallPlanPending` condition shows), until the gate opens: the next
//! OperatorCondition event completes it without pulling anything again. OLM completes the plan
//! at once and says nothing of the hold there; opcat says it where `kubectl operator` and the
//! console look first.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::ObjectRef;

use super::status::steps_done;
use crate::api::conditions::{DesiredCondition, Status};
use crate::api::csv_reasons::OPERATOR_CONDITION_NOT_UPGRADEABLE;
use crate::api::install_plan::{InstallPlanStatus, Step};
use crate::api::install_plan_status::{CONDITION_INSTALLED, PHASE_INSTALLING};
use crate::controller::plan_record::PlanEntry;
use crate::controller::stored_object::StoredCsv;
use crate::controller::stores::Stores;
use crate::controller::upgrade_gate;

/// Why the plan's CSVs may not be installed yet, if anything holds them (the messages of every
/// held CSV, joined).
pub fn message(stores: &Stores, namespace: &str, entries: &[PlanEntry]) -> Option<String> {
    let messages: Vec<String> = entries
        .iter()
        .filter_map(|entry| upgrade_gate::held(stores, namespace, entry.replaces.as_deref()))
        .map(|held| held.message)
        .collect();
    (!messages.is_empty()).then(|| messages.join("; "))
}

/// The steps of a plan that is held: `Installing` with its steps written, and every CSV it
/// created still there. `None` for any other plan (it takes the whole way).
pub fn recorded_steps<'a>(
    stores: &Stores,
    namespace: &str,
    status: Option<&'a InstallPlanStatus>,
    csvs: &[String],
) -> Option<&'a [Step]> {
    let status = status.filter(|status| status.phase == PHASE_INSTALLING)?;
    let steps = status.plan.as_deref()?;
    csvs.iter()
        .all(|csv| {
            stores
                .csvs
                .get(&ObjectRef::<StoredCsv>::new(csv).within(namespace))
                .is_some()
        })
        .then_some(steps)
}

/// The status of a held plan: `Installing`, the steps done, `Installed=False` saying why.
pub fn status(
    current: Option<&InstallPlanStatus>,
    catalogs: &[&str],
    steps: Vec<Step>,
    message: &str,
    now: &Time,
) -> InstallPlanStatus {
    let installed = DesiredCondition::new(
        CONDITION_INSTALLED,
        Status::False,
        OPERATOR_CONDITION_NOT_UPGRADEABLE,
        message,
    );
    steps_done(current, catalogs, PHASE_INSTALLING, steps, &installed, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::conditions::find_condition;
    use crate::api::install_plan::StepResource;
    use crate::controller::install_plan::status::complete;

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).unwrap())
    }

    #[test]
    fn a_held_plan_says_why_and_completes_with_the_same_steps() {
        let step = Step {
            resolving: "widget.v2".into(),
            resource: StepResource::default(),
            optional: None,
            status: "Created".into(),
        };
        let message = "operator is not upgradeable: The operator is not upgradeable: migrating";
        let held = status(None, &["catalog"], vec![step.clone()], message, &at(10));
        assert_eq!(held.phase, "Installing");
        assert_eq!(held.message.as_deref(), Some(message));
        let installed = find_condition(held.conditions.as_deref().unwrap(), "Installed").unwrap();
        assert_eq!(installed.status.as_deref(), Some("False"));
        assert_eq!(
            installed.reason.as_deref(),
            Some("OperatorConditionNotUpgradeable")
        );
        assert_eq!(installed.message.as_deref(), Some(message));
        assert_eq!(
            status(
                Some(&held),
                &["catalog"],
                vec![step.clone()],
                message,
                &at(20)
            ),
            held,
            "holding on writes nothing"
        );

        let done = complete(Some(&held), &["catalog"], vec![step], &at(30));
        assert_eq!(done.phase, "Complete");
        assert_eq!(done.message, None);
        let installed = find_condition(done.conditions.as_deref().unwrap(), "Installed").unwrap();
        assert_eq!(installed.status.as_deref(), Some("True"));
    }
}
