//! Writes one InstallPlan's status (only when it changes) and its events.

use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};

use super::error::InstallPlanError;
use super::status::{Lookup, LookupProgress, failed};
use crate::api::InstallPlan;
use crate::api::install_plan::InstallPlanStatus;
use crate::controller::apply;
use crate::controller::context::Context;
use crate::controller::own_writes::OwnWrites;

/// Event: the plan failed for good.
pub const EVENT_INSTALL_PLAN_FAILED: &str = "InstallPlanFailed";

/// Writes one plan's status (only when it changes) and its events, and records each write as
/// superseding the version it was made from.
pub struct StatusWriter<'a> {
    context: &'a Context,
    own_writes: &'a OwnWrites,
    plan: &'a InstallPlan,
    pub namespace: String,
    pub name: String,
    /// The plan's latest version: as read, then as last written.
    version: Mutex<Option<String>>,
}

impl<'a> StatusWriter<'a> {
    pub fn new(context: &'a Context, own_writes: &'a OwnWrites, plan: &'a InstallPlan) -> Self {
        Self {
            context,
            own_writes,
            plan,
            namespace: plan.namespace().unwrap_or_default(),
            name: plan.name_any(),
            version: Mutex::new(plan.meta().resource_version.clone()),
        }
    }

    /// Writes `status` over the stored one.
    pub async fn write(&self, status: InstallPlanStatus) -> Result<bool, InstallPlanError> {
        self.write_from(self.plan.status.as_ref(), status).await
    }

    /// Writes `status` unless it equals `current`. Returns whether it wrote.
    pub async fn write_from(
        &self,
        current: Option<&InstallPlanStatus>,
        status: InstallPlanStatus,
    ) -> Result<bool, InstallPlanError> {
        let api: Api<InstallPlan> = Api::namespaced(self.context.client.clone(), &self.namespace);
        let written = apply::apply_status_typed(&api, &self.name, current, &status)
            .await
            .map_err(|source| InstallPlanError::Status {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                source,
            })?;
        let Some(written) = written else {
            return Ok(false);
        };
        let new_version = written.meta().resource_version.clone();
        if let Ok(mut version) = self.version.lock() {
            self.own_writes.wrote(
                &self.plan.uid().unwrap_or_default(),
                version.as_deref(),
                new_version.as_deref(),
            );
            *version = new_version;
        }
        tracing::debug!(
            namespace = %self.namespace,
            name = %self.name,
            phase = %status.phase,
            "InstallPlan status updated"
        );
        Ok(true)
    }

    /// Fails the plan for good; `unpack` is the bundle that could not be read, if that is
    /// why.
    pub async fn fail(
        &self,
        current: Option<&InstallPlanStatus>,
        catalogs: &[&str],
        message: &str,
        unpack: Option<(&Lookup<'_>, &LookupProgress<'_>)>,
        now: &Time,
    ) -> Result<(), InstallPlanError> {
        let status = failed(current, catalogs, message, unpack, now);
        self.write_from(current, status).await?;
        tracing::warn!(
            namespace = %self.namespace,
            name = %self.name,
            csv = unpack.map(|(lookup, _)| lookup.csv).unwrap_or_default(),
            %message,
            "InstallPlan failed"
        );
        self.event(
            EventType::Warning,
            EVENT_INSTALL_PLAN_FAILED,
            message.to_owned(),
        )
        .await;
        Ok(())
    }

    pub async fn event(&self, type_: EventType, reason: &str, note: String) {
        self.context
            .event(
                &self.plan.object_ref(&()),
                type_,
                reason,
                "Install",
                Some(note),
            )
            .await;
    }
}
