//! Writes to the ClusterServiceVersion itself: its status (status subresource, only when it
//! changes), the pull-secret report annotation (metadata merge patch, only when it changes),
//! the finalizer (JSON patch with a `test` of the list as read), and the delete of a replaced
//! CSV. Touches the client.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::status::{PhaseUpdate, set_phase};
use crate::api::{ClusterServiceVersion, ClusterServiceVersionStatus, FIELD_MANAGER, FINALIZER};
use crate::controller::apply::{ApplyError, Outcome, apply_status_typed};
use crate::controller::keys::csv::PULL_SECRETS_REPORT;

const KIND: &str = "ClusterServiceVersion";

fn api(client: &Client, csv: &ClusterServiceVersion) -> Api<ClusterServiceVersion> {
    Api::namespaced(client.clone(), &csv.namespace().unwrap_or_default())
}

fn object(csv: &ClusterServiceVersion) -> String {
    format!("{}/{}", csv.namespace().unwrap_or_default(), csv.name_any())
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

async fn json_patch(
    client: &Client,
    csv: &ClusterServiceVersion,
    action: &'static str,
    ops: Value,
) -> Result<(), ApplyError> {
    let patch: Patch<()> = Patch::Json(serde_json::from_value(ops).map_err(|error| {
        ApplyError::new("encode", KIND, object(csv), kube::Error::SerdeError(error))
    })?);
    api(client, csv)
        .patch(&csv.name_any(), &params(), &patch)
        .await
        .map_err(|source| ApplyError::new(action, KIND, object(csv), source))?;
    Ok(())
}

/// Sets the phase, unless the status already says it. Returns the `resourceVersion` it wrote,
/// if it wrote.
pub async fn set_status(
    client: &Client,
    csv: &ClusterServiceVersion,
    update: &PhaseUpdate,
    now: &Time,
) -> Result<Option<String>, ApplyError> {
    let Some(status) = set_phase(csv.status.as_ref(), update, now) else {
        return Ok(None);
    };
    tracing::info!(
        namespace = csv.namespace().unwrap_or_default(),
        csv = %csv.name_any(),
        phase = update.phase.as_str(),
        reason = update.reason,
        message = %update.message,
        "phase"
    );
    write_status(client, csv, &status).await
}

/// Writes `status` over the stored one of `csv` (unless equal). Returns the `resourceVersion`
/// it wrote, if it wrote.
pub async fn write_status(
    client: &Client,
    csv: &ClusterServiceVersion,
    status: &ClusterServiceVersionStatus,
) -> Result<Option<String>, ApplyError> {
    let written = apply_status_typed(
        &api(client, csv),
        &csv.name_any(),
        csv.status.as_ref(),
        status,
    )
    .await?;
    Ok(written.and_then(|csv| csv.metadata.resource_version))
}

/// Writes the pull-secret report annotation when it differs. Returns the `resourceVersion` it
/// wrote, if it wrote.
pub async fn set_report(
    client: &Client,
    csv: &ClusterServiceVersion,
    report: &str,
) -> Result<Option<String>, ApplyError> {
    if csv
        .annotations()
        .get(PULL_SECRETS_REPORT)
        .map(String::as_str)
        == Some(report)
    {
        return Ok(None);
    }
    let patch = json!({"metadata": {"annotations": {PULL_SECRETS_REPORT: report}}});
    let written = api(client, csv)
        .patch(&csv.name_any(), &params(), &Patch::Merge(&patch))
        .await
        .map_err(|source| ApplyError::new("annotate", KIND, object(csv), source))?;
    // An empty version still says that it wrote.
    Ok(Some(written.metadata.resource_version.unwrap_or_default()))
}

fn finalizers(csv: &ClusterServiceVersion) -> Option<&Vec<String>> {
    csv.metadata.finalizers.as_ref()
}

/// Whether the CSV carries opcat's finalizer.
pub fn has_finalizer(csv: &ClusterServiceVersion) -> bool {
    finalizers(csv).is_some_and(|list| list.iter().any(|f| f == FINALIZER))
}

/// Adds opcat's finalizer if missing (the InstallPlan reconciler creates CSVs with it; this
/// restores it if someone removed it).
pub async fn ensure_finalizer(
    client: &Client,
    csv: &ClusterServiceVersion,
) -> Result<Outcome, ApplyError> {
    if has_finalizer(csv) {
        return Ok(Outcome::Unchanged);
    }
    let ops = match finalizers(csv) {
        None => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ]),
        Some(list) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": list},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ]),
    };
    json_patch(client, csv, "add finalizer to", ops).await?;
    Ok(Outcome::Applied)
}

/// Removes opcat's finalizer, if the list is still the one read.
pub async fn remove_finalizer(
    client: &Client,
    csv: &ClusterServiceVersion,
) -> Result<(), ApplyError> {
    let Some(list) = finalizers(csv) else {
        return Ok(());
    };
    let rest: Vec<&String> = list.iter().filter(|f| *f != FINALIZER).collect();
    let ops = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": list},
        {"op": "replace", "path": "/metadata/finalizers", "value": rest},
    ]);
    match json_patch(client, csv, "remove finalizer from", ops).await {
        // Already deleted (a second reconcile of the same deletion read a cache that had not
        // seen the first one finish): its finalizers went with it, there is nothing left to do.
        Err(error) if crate::controller::apply::is_not_found(&error.source) => Ok(()),
        done => done,
    }
}

/// Deletes a CSV that a newer one replaced, if it is still the object read.
pub async fn delete(client: &Client, csv: &ClusterServiceVersion) -> Result<(), ApplyError> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: csv.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api(client, csv).delete(&csv.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(error) if crate::controller::apply::is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new("delete", KIND, object(csv), source)),
    }
}
