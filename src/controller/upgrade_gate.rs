//! The upgrade gate over the stores (no request): whether a CSV that replaces another may be
//! installed now, and which CSVs and InstallPlans must look again when an OperatorCondition
//! changes.
//!
//! As OLM (`olm/operator.go`, phase `Pending`: `isReplacing`, then `isOperatorUpgradeable`): the
//! CSV named in `spec.replaces` must exist in the namespace for anything to hold; its
//! OperatorCondition (same name) decides through [`upgrade_gate`]. The CSV reconciler keeps the
//! replacing CSV `Pending` with reason `OperatorConditionNotUpgradeable`; the InstallPlan
//! reconciler keeps the plan that created it `Installing` with the same reason on its
//! `Installed` condition, which the Subscription's `InstallPlanPending` condition shows. Both
//! look again on every change of the OperatorCondition (a watch, no polling).

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::plan_record;
use super::stored_object::{StoredCsv, StoredPlan};
use super::stores::{Indexed, Stores};
use crate::api::{InstallPlanStatus, OperatorCondition};
use crate::operator_conditions::{Held, upgrade_gate};

/// Why installing a CSV of `namespace` that replaces `replaces` must wait, if it must.
pub fn held(stores: &Stores, namespace: &str, replaces: Option<&str>) -> Option<Held> {
    let replaces = replaces.filter(|name| !name.is_empty())?;
    stores
        .csvs
        .get(&ObjectRef::<StoredCsv>::new(replaces).within(namespace))?;
    let condition = stores
        .operator_conditions
        .get(&ObjectRef::<OperatorCondition>::new(replaces).within(namespace));
    upgrade_gate(condition.as_deref()).err()
}

/// The CSVs an OperatorCondition event concerns: the CSV of its name (it keeps the object as
/// rendered, and recreates it when deleted) and the CSVs that replace that one (their gate).
pub fn csvs(csvs: &Indexed<StoredCsv>, condition: &OperatorCondition) -> Vec<ObjectRef<StoredCsv>> {
    let Some(namespace) = condition.namespace() else {
        return Vec::new();
    };
    let name = condition.name_any();
    let mut found = vec![ObjectRef::new(&name).within(&namespace)];
    found.extend(
        csvs.in_namespace(&namespace)
            .iter()
            .filter(|csv| csv.spec.replaces.as_deref() == Some(name.as_str()))
            .map(|csv| ObjectRef::from_obj(csv.as_ref())),
    );
    found
}

/// The unfinished InstallPlans an OperatorCondition event concerns: those installing a CSV that
/// replaces the condition's CSV.
pub fn plans(
    plans: &Indexed<StoredPlan>,
    condition: &OperatorCondition,
) -> Vec<ObjectRef<StoredPlan>> {
    let Some(namespace) = condition.namespace() else {
        return Vec::new();
    };
    let name = condition.name_any();
    plans
        .in_namespace(&namespace)
        .into_iter()
        .filter(|plan| {
            !plan
                .status
                .as_ref()
                .is_some_and(InstallPlanStatus::is_finished)
        })
        .filter(|plan| {
            plan_record::entries(&plan.object()).is_ok_and(|entries| {
                entries
                    .iter()
                    .any(|entry| entry.replaces.as_deref() == Some(name.as_str()))
            })
        })
        .map(|plan| ObjectRef::from_obj(plan.as_ref()))
        .collect()
}
