//! Apply: writes to the pull-secret copies, as `pull_secrets::plan` decided them. Touches the
//! client.
//!
//! - create: `POST`, without reading first; on 409 `AlreadyExists` one GET tells opcat's own
//!   copy the cache had not seen yet (taken as written) from a foreign Secret (never
//!   overwritten: its name is remembered, the reconcile is retried and its plan reports the
//!   conflict; see `clashes`);
//! - update: `PUT` of the existing object with its `resourceVersion` (in place: same name, same
//!   uid; a rotation never opens a window without the Secret, DESIGN invariant 4);
//! - recreate (type change, immutable copy): `DELETE` with uid and `resourceVersion`
//!   preconditions (only our own copy, as read), then `POST`;
//! - delete: `DELETE` with the same preconditions, once no ServiceAccount lists the copy.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::{Client, ResourceExt};

use super::Csvs;
use super::clashes::NameClashes;
use crate::api::FIELD_MANAGER;
use crate::controller::apply::{ApplyError, is_not_found};
use crate::pull_secrets::copy::is_ours_to_write;
use crate::pull_secrets::{CopyAction, CopyDeletion, CopyWrite};

const KIND: &str = "Secret";

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

fn preconditioned(uid: Option<String>, resource_version: Option<String>) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version,
        }),
        ..DeleteParams::default()
    }
}

/// Performs the plan's copy writes in order, counting each in
/// `opcat_pull_secret_copy_writes_total` once it succeeded. In-place updates are recorded in
/// `echoes`: their watch events need not reconcile the namespace's CSVs again.
pub async fn write_all(
    state: &Csvs,
    namespace: &str,
    writes: &[CopyWrite],
) -> Result<(), ApplyError> {
    let (context, echoes) = (&state.context, &state.echoes);
    for one in writes {
        let written = write(&context.client, &state.clashes, namespace, one).await?;
        context.metrics.copies_written(1);
        if let (CopyAction::Update { .. }, Some(written)) = (&one.action, written) {
            echoes.wrote(
                written.uid().as_deref(),
                written.resource_version().as_deref(),
            );
        }
    }
    Ok(())
}

/// Performs one copy write; returns the Secret as written (none for a plan entry that writes
/// nothing).
pub async fn write(
    client: &Client,
    clashes: &NameClashes,
    namespace: &str,
    write: &CopyWrite,
) -> Result<Option<Secret>, ApplyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let object = |secret: &Secret| format!("{namespace}/{}", secret.name_any());
    match &write.action {
        CopyAction::Create(secret) => match api.create(&post_params(), secret).await {
            Ok(created) => Ok(Some(created)),
            Err(error) if is_already_exists(&error) => taken(&api, clashes, secret, error)
                .await
                .map(Some)
                .map_err(|source| ApplyError::new("create", KIND, object(secret), source)),
            Err(source) => Err(ApplyError::new("create", KIND, object(secret), source)),
        },
        CopyAction::Update { secret, .. } => replace(&api, secret)
            .await
            .map(Some)
            .map_err(|source| ApplyError::new("update", KIND, object(secret), source)),
        CopyAction::Recreate {
            uid,
            resource_version,
            secret,
        } => {
            let params = preconditioned(uid.clone(), resource_version.clone());
            match api.delete(&secret.name_any(), &params).await {
                Ok(_) => {}
                Err(error) if is_not_found(&error) => {}
                Err(source) => {
                    return Err(ApplyError::new("delete", KIND, object(secret), source));
                }
            }
            api.create(&post_params(), secret)
                .await
                .map(Some)
                .map_err(|source| ApplyError::new("recreate", KIND, object(secret), source))
        }
        // The plan never lists these as writes.
        CopyAction::Conflict(_) | CopyAction::InSync => Ok(None),
    }
}

fn is_already_exists(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists")
}

/// A create of `desired` found its name taken (`refused`): opcat's own copy of the same source
/// is taken as written; anything else is a foreign Secret, whose name is remembered so that the
/// next reconcile reads it and reports the conflict (DESIGN invariant 3), and the 409 stands.
async fn taken(
    api: &Api<Secret>,
    clashes: &NameClashes,
    desired: &Secret,
    refused: kube::Error,
) -> Result<Secret, kube::Error> {
    let name = desired.name_any();
    match api.get_opt(&name).await? {
        Some(existing) if is_ours_to_write(&existing, desired) => Ok(existing),
        Some(existing) => {
            let namespace = existing.namespace().unwrap_or_default();
            tracing::info!(%namespace, copy = %name, "a foreign Secret holds the copy's name");
            clashes.record(&namespace, &name);
            Err(refused)
        }
        // Deleted since: the retry creates it.
        None => Err(refused),
    }
}

/// Replaces `secret` in place, under its `resourceVersion` (a 409 when it changed since read).
pub async fn replace(api: &Api<Secret>, secret: &Secret) -> Result<Secret, kube::Error> {
    api.replace(&secret.name_any(), &post_params(), secret)
        .await
}

/// Deletes one copy, if it is still the object the plan read.
pub async fn delete(
    client: &Client,
    namespace: &str,
    deletion: &CopyDeletion,
) -> Result<(), ApplyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let params = preconditioned(deletion.uid.clone(), deletion.resource_version.clone());
    match api.delete(&deletion.name, &params).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new(
            "delete",
            KIND,
            format!("{namespace}/{}", deletion.name),
            source,
        )),
    }
}
