//! Apply: ServiceAccounts. Touches the client.
//!
//! Two kinds of writes, never mixed (DESIGN invariant 1):
//! - the ServiceAccounts opcat creates are server-side applied from the render, which never
//!   carries `imagePullSecrets`; `default` and ServiceAccounts that existed without opcat's labels
//!   are never applied ([`may_apply`]);
//! - `imagePullSecrets` (`listType=atomic`) is edited by read-modify-write: a JSON patch whose
//!   first operations `test` the `resourceVersion` and the list as read. When another writer got
//!   there first (409, or 422 from a failed `test`), the ServiceAccount is read again, the edit
//!   recomputed, and the patch retried, a bounded number of times.

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};

use super::error::CsvError;
use super::observe;
use super::propagation::may_apply;
use crate::api::FIELD_MANAGER;
use crate::controller::apply::{self, ApplyError};
use crate::controller::resources::{self, ResolvedResource};
use crate::pull_secrets::ServiceAccountEdit;

/// Attempts per ServiceAccount edit before giving up until the next reconcile.
pub const MAX_EDIT_ATTEMPTS: u32 = 5;

fn service_account_resource() -> Option<ResolvedResource> {
    resources::known(&resources::gvk("v1", "ServiceAccount"))
}

/// Applies the rendered ServiceAccounts opcat creates, skipping any that exists without
/// opcat's labels. `read` holds the ServiceAccounts as read. Returns those written, as the
/// server returned them (so they need not be read again).
pub async fn apply_created(
    client: &Client,
    rendered: &[DynamicObject],
    read: &[ServiceAccount],
) -> Result<Vec<ServiceAccount>, CsvError> {
    let Some(resource) = service_account_resource() else {
        return Ok(Vec::new());
    };
    let mut written = Vec::new();
    for desired in rendered {
        let name = desired.name_any();
        let existing = read.iter().find(|sa| sa.name_any() == name);
        if !may_apply(existing) {
            tracing::debug!(
                namespace = desired.namespace().unwrap_or_default(),
                service_account = %name,
                "service account exists without opcat's labels; only its imagePullSecrets are edited"
            );
            continue;
        }
        let live: Option<DynamicObject> = existing.and_then(|sa| {
            serde_json::to_value(sa)
                .ok()
                .and_then(|value| serde_json::from_value(value).ok())
        });
        let desired = super::objects::with_applied_hash(desired);
        if let Some(applied) =
            apply::apply_dynamic_returning(client, &resource, &desired, live.as_ref()).await?
        {
            // The server's answer is a ServiceAccount; one that does not decode is read again.
            if let Ok(sa) = serde_json::to_value(applied).and_then(serde_json::from_value) {
                written.push(sa);
            }
        }
    }
    Ok(written)
}

/// What happened to one edit.
#[derive(Debug)]
pub struct EditOutcome {
    /// The edit that was finally written, if any (recomputed after conflicts).
    pub written: Option<ServiceAccountEdit>,
}

/// Writes `edit`; on a conflict re-reads the ServiceAccount, recomputes the edit with
/// `recompute` and retries.
pub async fn write_edit(
    client: &Client,
    namespace: &str,
    edit: ServiceAccountEdit,
    recompute: impl Fn(&ServiceAccount) -> Option<ServiceAccountEdit>,
) -> Result<EditOutcome, CsvError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let name = edit.name.clone();
    let mut edit = edit;
    for attempt in 1..=MAX_EDIT_ATTEMPTS {
        let patch: Patch<()> = match serde_json::from_value(edit.json_patch()) {
            Ok(ops) => Patch::Json(ops),
            Err(error) => {
                return Err(ApplyError::new(
                    "encode",
                    "ServiceAccount",
                    format!("{namespace}/{name}"),
                    kube::Error::SerdeError(error),
                )
                .into());
            }
        };
        match api.patch(&name, &params, &patch).await {
            Ok(_) => {
                return Ok(EditOutcome {
                    written: Some(edit),
                });
            }
            Err(kube::Error::Api(status)) if matches!(status.code, 409 | 422) => {
                tracing::debug!(
                    namespace,
                    service_account = %name,
                    attempt,
                    "service account changed under the edit; reading it again"
                );
            }
            Err(error) if apply::is_not_found(&error) => {
                return Ok(EditOutcome { written: None });
            }
            Err(source) => {
                return Err(ApplyError::new(
                    "patch imagePullSecrets of",
                    "ServiceAccount",
                    format!("{namespace}/{name}"),
                    source,
                )
                .into());
            }
        }
        let Some(fresh) = observe::service_account(client, namespace, &name).await? else {
            return Ok(EditOutcome { written: None });
        };
        match recompute(&fresh) {
            Some(next) => edit = next,
            None => return Ok(EditOutcome { written: None }),
        }
    }
    Err(CsvError::ServiceAccountContention {
        namespace: namespace.to_owned(),
        name,
        attempts: MAX_EDIT_ATTEMPTS,
    })
}
