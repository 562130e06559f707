//! The OperatorGroup's part of OLM's provided-API RBAC ([`crate::operator_group_roles`]): its
//! `olm.og.<group>.{admin,edit,view}-<hash>` ClusterRoles, aggregating the roles of every API
//! its CSVs provide, and its `olm.providedAPIs` annotation. Reads the CSV store; writes the
//! roles and the annotation, each only when it differs (DESIGN invariant 5).
//!
//! The CSVs counted are the group's namespace's, but not copies of CSVs installed elsewhere
//! (label `olm.copiedFrom`, as OLM's `providedAPIsFromCSVs`) nor CSVs being deleted (an
//! uninstall takes its APIs out of the group at once; an upgrade's new CSV provides them).

use std::collections::BTreeSet;

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};

use super::super::super::apply::{ApplyError, is_not_found};
use super::super::super::cluster_roles;
use super::super::super::context::Context;
use crate::api::OperatorGroup;
use crate::api::olm_keys::COPIED_FROM;
use crate::operator_group_roles::{
    ApiKey, PROVIDED_APIS_ANNOTATION, desired_annotation, group_roles, provided_apis,
};

/// What [`ensure`] wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// The group as the annotation write returned it.
    pub group: Option<OperatorGroup>,
}

/// The APIs the CSVs of `namespace` provide.
pub fn group_apis(context: &Context, namespace: &str) -> BTreeSet<ApiKey> {
    context
        .stores
        .namespaced
        .csvs
        .in_namespace(namespace)
        .iter()
        .filter(|csv| csv.label(COPIED_FROM).is_none() && csv.meta().deletion_timestamp.is_none())
        // A CRD name OLM cannot parse provides nothing (the CSV reconciler reports it).
        .filter_map(|csv| provided_apis(&csv.spec).ok())
        .flatten()
        .map(|api| api.key)
        .collect()
}

/// Ensures the group's roles and annotation.
pub async fn ensure(context: &Context, group: &OperatorGroup) -> Result<Written, ApplyError> {
    let namespace = group.namespace().unwrap_or_default();
    let name = group.name_any();
    let apis = group_apis(context, &namespace);
    let mut written = Written::default();
    for role in group_roles(&namespace, &name, &apis) {
        cluster_roles::ensure(context, &role).await?;
    }
    let current = group.annotations().get(PROVIDED_APIS_ANNOTATION);
    if let Some(desired) = desired_annotation(current.map(String::as_str), &apis)
        && current != Some(&desired)
    {
        // A merge patch, not an apply: an apply creates what is missing, so one racing the
        // group's deletion brought it back with an empty spec (a group of all namespaces). The
        // uid keeps a group created again under the name from taking this write.
        let body = serde_json::json!({
            "metadata": {"uid": group.uid(), "annotations": {PROVIDED_APIS_ANNOTATION: desired}},
        });
        let api: Api<OperatorGroup> = Api::namespaced(context.client.clone(), &namespace);
        let group = match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(group) => group,
            // Deleted meanwhile: there is nothing to annotate.
            Err(error) if is_not_found(&error) => return Ok(written),
            Err(source) => {
                return Err(ApplyError::new(
                    "annotate",
                    "OperatorGroup",
                    format!("{namespace}/{name}"),
                    source,
                ));
            }
        };
        tracing::info!(%namespace, %name, provided_apis = %desired, "OperatorGroup provided APIs updated");
        written.group = Some(group);
    }
    Ok(written)
}
