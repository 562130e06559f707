//! The status of the OLMConfig `cluster`: OLM's `DisabledCopiedCSVs` condition
//! (`olm/operator.go` `syncOLMConfig`, `getCopiedCSVsCondition`), computed from the stores and
//! written (a patch to `/status`) only when its status, reason or message changes.

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;

use super::error::CopyError;
use super::reconcile::{copies_disabled, group_targets};
use crate::api::conditions::{DesiredCondition, Status, set_condition};
use crate::api::olm_config::{
    CLUSTER, CONDITION_DISABLED_COPIED_CSVS, REASON_COPIED_CSVS_DISABLED,
    REASON_COPIED_CSVS_ENABLED,
};
use crate::api::{OLMConfig, OLMConfigStatus};
use crate::controller::apply;
use crate::controller::context::Context;
use crate::copied_csv::{self, Reach};

/// What the copies of AllNamespaces installs look like against the switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// Every copy that should exist exists, and none that should not.
    AsConfigured,
    /// Enabled, and an AllNamespaces install lacks a copy somewhere.
    Missing,
    /// Disabled, and an AllNamespaces install still has copies.
    Unexpected,
}

/// OLM's condition for the switch and what was observed.
pub fn condition(enabled: bool, observed: Observed) -> (Status, &'static str, &'static str) {
    match (enabled, observed) {
        (true, Observed::Missing) => (
            Status::False,
            REASON_COPIED_CSVS_ENABLED,
            "Copied CSVs are enabled and at least one copied CSVs is missing",
        ),
        (true, _) => (
            Status::False,
            REASON_COPIED_CSVS_ENABLED,
            "Copied CSVs are enabled and present across the cluster",
        ),
        (false, Observed::Unexpected) => (
            Status::False,
            REASON_COPIED_CSVS_DISABLED,
            "Copied CSVs are disabled and at least one unexpected copied CSV was found for an \
             operator installed in AllNamespace mode",
        ),
        (false, _) => (
            Status::True,
            REASON_COPIED_CSVS_DISABLED,
            "Copied CSVs are disabled and no unexpected copied CSVs were found for operators \
             installed in AllNamespace mode",
        ),
    }
}

/// Looks at the copies of every AllNamespaces install.
fn observe(context: &Context, enabled: bool) -> Observed {
    let stores = &context.stores;
    let live = stores
        .namespaces
        .state()
        .iter()
        .filter(|namespace| !namespace.is_terminating())
        .count();
    for group in stores.operator_groups.state() {
        let namespace = group.metadata.namespace.as_deref().unwrap_or_default();
        let all = group_targets(context, namespace)
            .is_some_and(|targets| Reach::of(&targets) == Reach::AllNamespaces);
        if !all {
            continue;
        }
        for csv in stores.namespaced.csvs.in_namespace(namespace) {
            let name = csv.name_any();
            let copies = stores.copied_csvs.count_of(namespace, &name);
            if !enabled && copies > 0 {
                return Observed::Unexpected;
            }
            let copiable = !copied_csv::is_uncopiable(csv.status.as_ref());
            if enabled && copiable && copies + 1 < live {
                return Observed::Missing;
            }
        }
    }
    Observed::AsConfigured
}

/// Writes the condition on the OLMConfig `cluster` if it exists and the condition changed.
pub fn write_status(context: &Context) -> BoxFuture<'_, Result<(), CopyError>> {
    async move { write_status_now(context).await }.boxed()
}

async fn write_status_now(context: &Context) -> Result<(), CopyError> {
    let Some(config) = context
        .stores
        .olm_configs
        .get(&ObjectRef::<OLMConfig>::new(CLUSTER))
    else {
        return Ok(());
    };
    let enabled = !copies_disabled(context);
    let (status, reason, message) = condition(enabled, observe(context, enabled));
    let current = config.status.clone().unwrap_or_default();
    let mut conditions = current.conditions.clone().unwrap_or_default();
    let unchanged = conditions.iter().any(|existing| {
        existing.type_ == CONDITION_DISABLED_COPIED_CSVS
            && existing.status == status.as_str()
            && existing.reason == reason
            && existing.message == message
    });
    if unchanged {
        return Ok(());
    }
    set_condition(
        &mut conditions,
        &DesiredCondition::new(CONDITION_DISABLED_COPIED_CSVS, status, reason, message),
        &Time(context.clock.now()),
    );
    let desired = OLMConfigStatus {
        conditions: Some(conditions),
    };
    let api: Api<OLMConfig> = Api::all(context.client.clone());
    apply::apply_status_typed(&api, CLUSTER, Some(&current), &desired)
        .await
        .map_err(|error| CopyError::OlmConfigStatus(Box::new(error)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_is_true_only_when_copies_are_disabled_and_gone() {
        assert_eq!(condition(false, Observed::AsConfigured).0, Status::True);
        assert_eq!(condition(false, Observed::Unexpected).0, Status::False);
        assert_eq!(condition(true, Observed::AsConfigured).0, Status::False);
        assert_eq!(
            condition(true, Observed::Missing).2,
            "Copied CSVs are enabled and at least one copied CSVs is missing"
        );
        assert_eq!(
            condition(true, Observed::AsConfigured).1,
            "CopiedCSVsEnabled"
        );
        assert_eq!(
            condition(false, Observed::AsConfigured).1,
            "CopiedCSVsDisabled"
        );
    }
}
