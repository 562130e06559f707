//! Apply: the ClusterRoles of the APIs a CSV provides ([`crate::operator_group_roles`]), once
//! its CRDs and API services exist. Touches the client.
//!
//! As OLM (`ensureClusterRolesForCSV`, run for a CSV that succeeded): each role is owned,
//! non-blocking, by the CRD or APIService serving its API, and carries no label of the CSV; so
//! an uninstall leaves it with the CRD (which opcat never deletes), and it goes with the API.
//! Two CSVs providing the same API (an upgrade, or installs in several namespaces) render the
//! same roles.

use kube::ResourceExt;

use super::error::CsvError;
use crate::api::ClusterServiceVersion;
use crate::controller::apply::{Outcome, dynamic_api};
use crate::controller::cluster_roles;
use crate::controller::context::Context;
use crate::operator_group_roles::{ApiOwner, api_roles, provided_apis};

/// Ensures the roles of every API `csv` owns whose CRD or APIService exists; returns how many
/// roles were written.
pub(super) async fn ensure(
    context: &Context,
    csv: &ClusterServiceVersion,
) -> Result<usize, CsvError> {
    let apis = match provided_apis(&csv.spec) {
        Ok(apis) => apis,
        Err(error) => {
            // The install itself reports a CRD it cannot apply; no role names one it cannot parse.
            tracing::warn!(
                namespace = csv.namespace().unwrap_or_default(),
                csv = %csv.name_any(),
                %error,
                "no provided-API roles"
            );
            return Ok(0);
        }
    };
    let mut written = 0;
    for api in &apis {
        let Some(uid) = owner_uid(context, &api.owner).await? else {
            // Not served yet: the next reconcile, once it is, writes them.
            continue;
        };
        for role in api_roles(api, &uid) {
            if cluster_roles::ensure(context, &role).await? == Outcome::Applied {
                written += 1;
            }
        }
    }
    Ok(written)
}

/// The uid of the CRD or APIService `owner`: from the watch of opcat's objects (it applied
/// them), else read by name. `None` when it does not exist.
async fn owner_uid(context: &Context, owner: &ApiOwner) -> Result<Option<String>, CsvError> {
    if let Some(cached) = context
        .stores
        .owned
        .get(owner.api_version, owner.kind, None, &owner.name)
        && let Some(uid) = cached.meta.uid
    {
        return Ok(Some(uid));
    }
    let resource = context
        .resources
        .resolve(owner.api_version, owner.kind)
        .await?;
    let live = dynamic_api(&context.client, &resource, None)
        .get_opt(&owner.name)
        .await
        .map_err(|source| CsvError::read(format!("{} {}", owner.kind, owner.name), source))?;
    Ok(live.and_then(|object| object.uid()))
}
