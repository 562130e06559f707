//! Apply: the CSV's OperatorCondition, before its Deployments (which name it in
//! `OPERATOR_CONDITION_NAME`; DESIGN invariant 14), from the render
//! ([`RenderedBundle::operator_condition`](crate::bundle::render::RenderedBundle)). Touches the
//! client.
//!
//! Server-side apply with opcat's field manager sets only what opcat renders (labels, owner,
//! `spec.deployments`, `spec.serviceAccounts`): `spec.conditions` (the operator's),
//! `spec.overrides` (an admin's) and the status (the status writer's) are other managers' fields
//! and stay as they are. An OperatorCondition of that name that opcat did not create (an admin
//! wrote one ahead, with overrides) is taken over the same way, as OLM's generator does. The
//! drift check reads the label-selected watch of OperatorConditions: a converged one costs no
//! request (DESIGN invariant 5).

use kube::ResourceExt;
use kube::api::{Api, ApiResource, ListParams};
use kube::runtime::reflector::ObjectRef;

use super::error::CsvError;
use crate::api::OperatorCondition;
use crate::bundle::ownership::csv_selector;
use crate::controller::apply::{Outcome, apply_typed, delete_dynamic};
use crate::controller::context::Context;
use crate::controller::resources::ResolvedResource;

/// Creates or updates `desired` unless the watched object already holds it.
pub(super) async fn ensure(context: &Context, desired: &OperatorCondition) -> Result<(), CsvError> {
    let namespace = desired.namespace().unwrap_or_default();
    let name = desired.name_any();
    let live = context
        .stores
        .operator_conditions
        .get(&ObjectRef::new(&name).within(&namespace));
    let api: Api<OperatorCondition> = Api::namespaced(context.client.clone(), &namespace);
    if apply_typed(&api, desired, live.as_deref()).await? == Outcome::Applied {
        tracing::info!(%namespace, %name, created = live.is_none(), "applied OperatorCondition");
    }
    Ok(())
}

/// Uninstall, once the CSV's Deployments are gone: deletes its OperatorCondition, listed by the
/// CSV's labels (a watch event still on its way must not hide it). Returns what it deleted.
pub(super) async fn delete(
    context: &Context,
    csv: &str,
    namespace: &str,
) -> Result<Vec<String>, CsvError> {
    let api: Api<OperatorCondition> = Api::namespaced(context.client.clone(), namespace);
    let params = ListParams::default().labels(&csv_selector(csv, namespace));
    let listed = api.list_metadata(&params).await.map_err(|source| {
        CsvError::read(
            format!("OperatorConditions of ClusterServiceVersion {namespace}/{csv}"),
            source,
        )
    })?;
    let resource = ResolvedResource {
        resource: ApiResource::erase::<OperatorCondition>(&()),
        namespaced: true,
    };
    let mut deleted = Vec::new();
    for condition in listed.items {
        if condition.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = condition.name_any();
        delete_dynamic(
            &context.client,
            &resource,
            Some(namespace),
            &name,
            condition.uid(),
        )
        .await?;
        deleted.push(name);
    }
    Ok(deleted)
}
