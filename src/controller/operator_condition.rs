//! The OperatorCondition status writer: for each OperatorCondition opcat created (one per CSV,
//! label-selected watch), `spec.conditions` copied to `status.conditions` with
//! `observedGeneration` ([`crate::operator_conditions::observed_status`]; OLM
//! `operatorcondition_controller.go`, `syncOperatorConditionStatus`), written with a patch to
//! the status subresource only when it differs from the stored status (DESIGN invariants 5 and
//! 6: this is the one writer of that status, and a converged object gets no request).
//!
//! The rest of the object is the installer's: the CSV reconciler creates it, its Role and
//! RoleBinding before the Deployments, and reads it for the upgrade gate.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};

use super::apply::{ApplyError, apply_status_typed};
use super::context::Context;
use super::manager::Shutdown;
use super::stores::Reflectors;
use super::wiring;
use crate::api::OperatorCondition;
use crate::failure::ReconcileFailure;
use crate::operator_conditions::observed_status;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::OPERATOR_CONDITION;

/// A failed status write, retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum OperatorConditionError {
    /// Writing `status.conditions` failed.
    #[error("cannot write the status of OperatorCondition {namespace}/{name}")]
    Status {
        namespace: String,
        name: String,
        #[source]
        source: ApplyError,
    },
}

impl ReconcileFailure for OperatorConditionError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Status { source, .. } => source.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Status { source, .. } => source.is_transient(),
        }
    }
}

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let store = context.stores.operator_conditions.clone();
    let controller =
        Controller::for_shared_stream(reflectors.operator_conditions.subscribe(), store);
    wiring::run(
        CONTROLLER,
        controller,
        &context,
        shutdown,
        reconcile,
        context.clone(),
    )
    .for_each(|_| std::future::ready(()))
    .boxed()
}

/// Writes the observed status of one OperatorCondition, if it changed.
async fn reconcile(
    condition: Arc<OperatorCondition>,
    context: Arc<Context>,
) -> Result<Action, OperatorConditionError> {
    if condition.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = condition.namespace().unwrap_or_default();
    let name = condition.name_any();
    let now = Time(context.clock.now());
    let desired = observed_status(&condition, &now);
    let current = condition.status.clone().unwrap_or_default();
    let api: Api<OperatorCondition> = Api::namespaced(context.client.clone(), &namespace);
    let written = apply_status_typed(&api, &name, Some(&current), &desired)
        .await
        .map_err(|source| OperatorConditionError::Status {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    if written.is_some() {
        tracing::debug!(%namespace, %name, generation = ?condition.metadata.generation, "observed the operator's conditions");
    }
    Ok(Action::await_change())
}
