//! Apply: one ClusterRole opcat derives itself (the provided-API and OperatorGroup roles of
//! [`crate::operator_group_roles`]), behind the drift check. Touches the client.
//!
//! The roles carry `app.kubernetes.io/managed-by=opcat`, so the metadata watch of opcat's
//! objects ([`super::owned_objects`]) holds them, and the annotation [`APPLIED_HASH`] (a hash of
//! the role as built, as every object opcat applies): a role that watch shows unchanged since
//! opcat last saw it in line, with the desired metadata (so the desired hash), is converged
//! without a request (DESIGN invariant 5). A role opcat's watch does not hold, or holds as
//! opcat last applied it, is applied without a read. The aggregation controller filling an
//! aggregating role's `rules` is not a change by someone else ([`super::field_owners`]): the
//! group roles are not read after each write. One someone else changed is read by name and
//! compared first; `aggregationRule` and, where opcat sets them, `rules` must be equal, not
//! merely contained, so that a provided API leaving a group leaves its aggregation too.

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DynamicObject, Patch, TypeMeta};
use kube::{Resource, ResourceExt};

use super::apply::{ApplyError, Outcome, apply_params};
use super::context::Context;
use super::drift;
use super::keys::APPLIED_HASH;
use crate::pull_secrets::names::short_hash;

pub(super) const API_VERSION: &str = "rbac.authorization.k8s.io/v1";
pub(super) const KIND: &str = "ClusterRole";

/// Writes `desired` unless the live role already is as desired.
pub async fn ensure(context: &Context, desired: &ClusterRole) -> Result<Outcome, ApplyError> {
    let desired = &with_applied_hash(desired);
    let name = desired.name_any();
    let owned = &context.stores.owned;
    let cached = owned.get(API_VERSION, KIND, None, &name);
    if let Some(cached) = &cached
        && cached.verified
        && metadata_contains(&cached.meta, &desired.metadata)
    {
        return Ok(Outcome::Unchanged);
    }
    let api: Api<ClusterRole> = Api::all(context.client.clone());
    // Read it only when someone else may have changed it since opcat last saw it. A role the
    // watch holds as opcat last applied it differs from `desired` by its hash: it is applied.
    // A role the listed watch does not hold is not opcat's yet: absent (the usual case, a first
    // install), or made by someone else under OLM's name (OLM itself, before a migration), which
    // OLM would overwrite too: it is applied.
    // The version the watch shows now: what opcat reads or writes next is newer.
    let seen = cached
        .as_ref()
        .and_then(|cached| cached.meta.resource_version.clone());
    let unknown_change = match &cached {
        Some(cached) => !cached.verified,
        None => !owned.is_listed(),
    };
    let live = if unknown_change {
        api.get_opt(&name)
            .await
            .map_err(|source| ApplyError::new("read", KIND, name.clone(), source))?
    } else {
        None
    };
    if let Some(live) = &live
        && converged(live, desired)
    {
        owned.verified_since(seen.as_deref(), &as_dynamic(live));
        return Ok(Outcome::Unchanged);
    }
    let mut body = serde_json::to_value(desired)
        .map_err(|e| ApplyError::new("encode", KIND, name.clone(), kube::Error::SerdeError(e)))?;
    if let Some(object) = body.as_object_mut() {
        object.insert("apiVersion".into(), ClusterRole::api_version(&()).into());
        object.insert("kind".into(), KIND.into());
    }
    let written = api
        .patch(&name, &apply_params(), &Patch::Apply(&body))
        .await
        .map_err(|source| ApplyError::new("apply", KIND, name.clone(), source))?;
    owned.verified_since(seen.as_deref(), &as_dynamic(&written));
    tracing::info!(cluster_role = %name, "ClusterRole applied");
    Ok(Outcome::Applied)
}

/// `role` with [`APPLIED_HASH`] set to the hash of its content as built.
fn with_applied_hash(role: &ClusterRole) -> ClusterRole {
    let mut role = role.clone();
    // Built from plain data, a role always serialises; an empty text still hashes.
    let built = serde_json::to_string(&role).unwrap_or_default();
    role.metadata
        .annotations
        .get_or_insert_default()
        .insert(APPLIED_HASH.to_owned(), short_hash(&[&built]));
    role
}

/// Whether `live` holds `desired`: metadata and rules contained, `aggregationRule` equal, and
/// `rules` equal where `desired` sets them.
pub fn converged(live: &ClusterRole, desired: &ClusterRole) -> bool {
    let rules_equal = desired
        .rules
        .as_ref()
        .is_none_or(|rules| live.rules.as_deref().unwrap_or_default() == rules.as_slice());
    rules_equal
        && live.aggregation_rule == desired.aggregation_rule
        && metadata_contains(&live.metadata, &desired.metadata)
}

fn metadata_contains(
    live: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    desired: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> bool {
    match (serde_json::to_value(live), serde_json::to_value(desired)) {
        (Ok(live), Ok(desired)) => drift::contains(&live, &desired),
        _ => false,
    }
}

/// The role's metadata as the watch cache records it.
fn as_dynamic(role: &ClusterRole) -> DynamicObject {
    DynamicObject {
        types: Some(TypeMeta {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
        }),
        metadata: role.metadata.clone(),
        data: serde_json::Value::Object(serde_json::Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::converged;
    use crate::operator_group_roles::{ApiKey, group_roles};

    fn api(kind: &str) -> ApiKey {
        ApiKey {
            group: "example.opcat.dev".into(),
            version: "v1".into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn an_api_leaving_the_group_is_drift_even_though_the_rest_is_contained() {
        let both: BTreeSet<ApiKey> = [api("Widget"), api("Gadget")].into();
        let one: BTreeSet<ApiKey> = [api("Widget")].into();
        let mut live = group_roles("ns", "group", &both).remove(0);
        // What the aggregation controller adds does not matter.
        live.rules = Some(vec![Default::default()]);
        assert!(converged(&live, &group_roles("ns", "group", &both)[0]));
        assert!(!converged(&live, &group_roles("ns", "group", &one)[0]));
        // The last API gone: the aggregated rules must go too.
        let none = &group_roles("ns", "group", &BTreeSet::new())[0];
        assert!(!converged(&live, none));
        live.aggregation_rule = None;
        live.rules = None;
        assert!(converged(&live, none));
    }
}
