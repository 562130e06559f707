//! Writes of whole typed objects by name: replace (PUT), delete, one annotation. Used where
//! server-side apply does not fit: the copied CSVs, whose every label and annotation must follow
//! the original (a replace), and which must never be taken over from a CSV that is not a copy
//! (a create, guarded replace and guarded delete instead of a forced apply).

use std::fmt::Debug;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ApplyError, display_name, is_not_found};

/// Creates `desired` or replaces the object of its name with it (a PUT: labels, annotations and
/// spec become exactly `desired`'s; a status subresource is left as it is). With
/// `metadata.resourceVersion` set, the replace only happens over that version (409 otherwise).
pub async fn replace_typed<K>(api: &Api<K>, desired: &K) -> Result<K, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired.name_any();
    let object = display_name(desired.namespace().as_deref(), &name);
    api.replace(&name, &PostParams::default(), desired)
        .await
        .map_err(|source| ApplyError::new("replace", &K::kind(&()), object, source))
}

/// Deletes `name`, treating "already gone" as success; with `uid`, only if it is still that
/// object.
pub async fn delete_typed<K>(
    api: &Api<K>,
    name: &str,
    uid: Option<String>,
) -> Result<(), ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    let params = DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new(
            "delete",
            &K::kind(&()),
            name.to_owned(),
            source,
        )),
    }
}

/// Sets (`Some`) or removes (`None`) one annotation of `name` with a JSON merge patch, which
/// leaves every other annotation as it is. An object that is gone is not an error.
pub async fn patch_annotation<K>(
    api: &Api<K>,
    name: &str,
    key: &str,
    value: Option<&str>,
) -> Result<(), ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    let patch = serde_json::json!({"metadata": {"annotations": {key: value}}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new(
            "annotate",
            &K::kind(&()),
            name.to_owned(),
            source,
        )),
    }
}
