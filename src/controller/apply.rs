//! The apply step's primitives: server-side apply with opcat's field manager, preceded by the
//! drift check so that a converged object is never written again (DESIGN invariant 5).

use std::fmt::Debug;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::drift;

mod replace;
use super::resources::ResolvedResource;
use crate::api::FIELD_MANAGER;
pub use replace::{delete_typed, patch_annotation, replace_typed};

/// What an apply did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The live object already had everything; no request was made.
    Unchanged,
    /// The object was created or changed.
    Applied,
}

/// A write to the API failed.
#[derive(Debug, thiserror::Error)]
#[error("failed to {action} {kind} {object}")]
pub struct ApplyError {
    pub action: &'static str,
    pub kind: String,
    /// `namespace/name` or `name`.
    pub object: String,
    #[source]
    pub source: kube::Error,
}

impl ApplyError {
    pub fn new(action: &'static str, kind: &str, object: String, source: kube::Error) -> Self {
        Self {
            action,
            kind: kind.to_owned(),
            object,
            source,
        }
    }

    /// Bounded label: the API's reason class, never the message.
    pub fn kind(&self) -> &'static str {
        api_error_kind(&self.source)
    }

    /// Whether a retry can succeed without a change to the object's spec.
    pub fn is_transient(&self) -> bool {
        is_transient(&self.source)
    }
}

/// Bounded classification of a kube error for metrics, events and retry decisions.
pub fn api_error_kind(error: &kube::Error) -> &'static str {
    match error {
        kube::Error::Api(status) => match status.code {
            400 => "bad_request",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not_found",
            409 => "conflict",
            410 => "gone",
            422 => "invalid",
            429 => "throttled",
            500..=599 => "server_error",
            _ => "api_error",
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => "connection",
        kube::Error::SerdeError(_) => "decode",
        _ => "client_error",
    }
}

/// Conflicts, throttling, server errors and connection problems may succeed on retry.
pub fn is_transient(error: &kube::Error) -> bool {
    matches!(
        api_error_kind(error),
        "conflict" | "throttled" | "server_error" | "connection" | "gone"
    )
}

/// True iff the error is a 404.
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Server-side apply parameters: opcat's field manager, forcing conflicts (a controller owns its
/// fields; kubernetes.io/docs/reference/using-api/server-side-apply/#using-server-side-apply-in-a-controller).
pub fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

fn display_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// Applies a typed object unless `live` already contains it.
pub async fn apply_typed<K>(
    api: &Api<K>,
    desired: &K,
    live: Option<&K>,
) -> Result<Outcome, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired.name_any();
    let object = display_name(desired.namespace().as_deref(), &name);
    let kind = K::kind(&()).into_owned();
    if let Some(live) = live
        && is_contained(live, desired)
    {
        return Ok(Outcome::Unchanged);
    }
    let mut body = serde_json::to_value(desired).map_err(|e| {
        ApplyError::new("encode", &kind, object.clone(), kube::Error::SerdeError(e))
    })?;
    set_type_meta(&mut body, &K::api_version(&()), &kind);
    api.patch(&name, &apply_params(), &Patch::Apply(&body))
        .await
        .map_err(|source| ApplyError::new("apply", &kind, object, source))?;
    Ok(Outcome::Applied)
}

/// Applies a dynamic object (rendered from a bundle) unless `live` already contains it.
pub async fn apply_dynamic(
    client: &Client,
    resource: &ResolvedResource,
    desired: &DynamicObject,
    live: Option<&DynamicObject>,
) -> Result<Outcome, ApplyError> {
    Ok(
        match apply_dynamic_returning(client, resource, desired, live).await? {
            Some(_) => Outcome::Applied,
            None => Outcome::Unchanged,
        },
    )
}

/// [`apply_dynamic`], returning the object as the server wrote it (`None`: no request).
pub async fn apply_dynamic_returning(
    client: &Client,
    resource: &ResolvedResource,
    desired: &DynamicObject,
    live: Option<&DynamicObject>,
) -> Result<Option<DynamicObject>, ApplyError> {
    let name = desired.name_any();
    let namespace = desired.namespace();
    let object = display_name(namespace.as_deref(), &name);
    let kind = resource.resource.kind.clone();
    if let Some(live) = live
        && is_contained(live, desired)
    {
        return Ok(None);
    }
    let api = dynamic_api(client, resource, namespace.as_deref());
    let mut body = serde_json::to_value(desired).map_err(|e| {
        ApplyError::new("encode", &kind, object.clone(), kube::Error::SerdeError(e))
    })?;
    set_type_meta(&mut body, &resource.resource.api_version, &kind);
    api.patch(&name, &apply_params(), &Patch::Apply(&body))
        .await
        .map(Some)
        .map_err(|source| ApplyError::new("apply", &kind, object, source))
}

/// An `Api<DynamicObject>` for a resolved resource, namespaced when the resource is.
pub fn dynamic_api(
    client: &Client,
    resource: &ResolvedResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match (resource.namespaced, namespace) {
        (true, Some(namespace)) => {
            Api::namespaced_with(client.clone(), namespace, &resource.resource)
        }
        _ => Api::all_with(client.clone(), &resource.resource),
    }
}

/// Deletes an object, treating "already gone" as success. With `uid`, the delete only happens if
/// the object is still the one we looked at.
pub async fn delete_dynamic(
    client: &Client,
    resource: &ResolvedResource,
    namespace: Option<&str>,
    name: &str,
    uid: Option<String>,
) -> Result<(), ApplyError> {
    let api = dynamic_api(client, resource, namespace);
    let params = DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        // Let the garbage collector remove dependents (ReplicaSets, Pods) in the background.
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new(
            "delete",
            &resource.resource.kind,
            display_name(namespace, name),
            source,
        )),
    }
}

/// Creates an object (for objects with generated names, which cannot be applied).
pub async fn create_typed<K>(api: &Api<K>, desired: &K) -> Result<K, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired
        .meta()
        .name
        .clone()
        .or_else(|| desired.meta().generate_name.clone())
        .unwrap_or_default();
    let object = display_name(desired.namespace().as_deref(), &name);
    api.create(&PostParams::default(), desired)
        .await
        .map_err(|source| ApplyError::new("create", &K::kind(&()), object, source))
}

fn is_contained<L: Serialize, D: Serialize>(live: &L, desired: &D) -> bool {
    match (serde_json::to_value(live), serde_json::to_value(desired)) {
        (Ok(live), Ok(desired)) => drift::contains(&live, &desired),
        // Unencodable objects cannot be compared; applying is the safe answer.
        _ => false,
    }
}

fn set_type_meta(body: &mut serde_json::Value, api_version: &str, kind: &str) {
    if let Some(object) = body.as_object_mut() {
        object.insert("apiVersion".into(), api_version.into());
        object.insert("kind".into(), kind.into());
        // Server-side apply refuses bodies that carry server-managed fields.
        if let Some(metadata) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            for field in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                metadata.remove(field);
            }
        }
    }
}

/// Writes `status` to the status subresource of `namespace/name` with server-side apply (so
/// fields opcat stops setting are removed), unless `current` already equals it. Status has one
/// writer per object (DESIGN invariant 6): only the object's own reconciler calls this.
pub async fn apply_status<K>(
    api: &Api<K>,
    name: &str,
    current: Option<&serde_json::Value>,
    status: &serde_json::Value,
) -> Result<Outcome, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    if current == Some(status) {
        return Ok(Outcome::Unchanged);
    }
    log_status_write::<K>(name, current, status);
    patch_status(api, name, status).await?;
    Ok(Outcome::Applied)
}

async fn patch_status<K>(
    api: &Api<K>,
    name: &str,
    status: &serde_json::Value,
) -> Result<K, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    let kind = K::kind(&()).into_owned();
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": kind,
        "status": status,
    });
    api.patch_status(name, &apply_params(), &Patch::Apply(&body))
        .await
        .map_err(|source| ApplyError::new("update status of", &kind, name.to_owned(), source))
}

/// [`apply_status`] for a typed status: writes `desired` unless it equals `current` (the status
/// as stored), so a converged object gets no request. Returns the object as written, `None` when
/// nothing was written.
pub async fn apply_status_typed<K, S>(
    api: &Api<K>,
    name: &str,
    current: Option<&S>,
    desired: &S,
) -> Result<Option<K>, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
    S: Serialize + PartialEq,
{
    if current == Some(desired) {
        return Ok(None);
    }
    let status = serde_json::to_value(desired).map_err(|e| {
        ApplyError::new(
            "encode status of",
            &K::kind(&()),
            name.to_owned(),
            kube::Error::SerdeError(e),
        )
    })?;
    if tracing::enabled!(tracing::Level::DEBUG) {
        let before = current.and_then(|current| serde_json::to_value(current).ok());
        log_status_write::<K>(name, before.as_ref(), &status);
    }
    patch_status(api, name, &status).await.map(Some)
}

/// Logs (debug) which status fields a write changes.
fn log_status_write<K: Resource<DynamicType = ()>>(
    name: &str,
    current: Option<&serde_json::Value>,
    desired: &serde_json::Value,
) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let changed = super::status_diff::changed_fields(current, desired);
        tracing::debug!(kind = %K::kind(&()), name, ?changed, "status write");
    }
}

/// Sets (`Some`) or removes (`None`) one label of `name` with a JSON merge patch, which leaves
/// every other label as it is. An object that is gone is not an error.
pub async fn patch_label<K>(
    api: &Api<K>,
    name: &str,
    key: &str,
    value: Option<&str>,
) -> Result<(), ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    let patch = serde_json::json!({"metadata": {"labels": {key: value}}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new(
            "label",
            &K::kind(&()),
            name.to_owned(),
            source,
        )),
    }
}
