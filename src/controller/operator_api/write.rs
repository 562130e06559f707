//! Apply: the only writes of the Operator reconciler. The Operator is created by server-side
//! apply (name and an empty spec), its status written by a patch to the status subresource
//! (DESIGN invariant 6: this reconciler is its only writer), and it is deleted with a
//! plain delete (it holds nothing). A Subscription (or a CSV an older opcat created) gets the
//! component label once, by a merge patch of that one label, as OLM's adoption controller
//! labels it. Touches the client.

use kube::api::{Api, DeleteParams};

use super::OperatorApiError;
use crate::api::operator::OperatorSpec;
use crate::api::{Operator, OperatorStatus};
use crate::controller::apply::{self, ApplyError, is_not_found};
use crate::controller::context::Context;

/// Creates the Operator `name` (an apply: one that appeared meanwhile is left as it is).
pub async fn create(context: &Context, name: &str) -> Result<(), OperatorApiError> {
    let api: Api<Operator> = Api::all(context.client.clone());
    let operator = Operator::new(name, OperatorSpec {});
    apply::apply_typed(&api, &operator, None).await?;
    tracing::info!(operator = name, "created the Operator of an install");
    Ok(())
}

/// Writes `status` to the Operator `name`.
pub async fn status(
    context: &Context,
    name: &str,
    status: &OperatorStatus,
) -> Result<(), OperatorApiError> {
    let api: Api<Operator> = Api::all(context.client.clone());
    apply::apply_status_typed(&api, name, None, status).await?;
    Ok(())
}

/// Deletes the Operator `name` (gone already is fine).
pub async fn delete(context: &Context, name: &str) -> Result<(), OperatorApiError> {
    let api: Api<Operator> = Api::all(context.client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(
                operator = name,
                "deleted the Operator of an install without components"
            );
            Ok(())
        }
        Err(error) if is_not_found(&error) => Ok(()),
        Err(source) => Err(ApplyError::new("delete", "Operator", name.to_owned(), source).into()),
    }
}

/// Labels the object `namespace/name` of kind `K` with `key` (value `""`): one merge patch of
/// that label.
pub async fn label<K>(
    context: &Context,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<(), OperatorApiError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(context.client.clone(), namespace);
    apply::patch_label(&api, name, key, Some("")).await?;
    Ok(())
}

/// Labels the CustomResourceDefinition `name` with `key` (value `""`): one merge patch of that
/// label, which the CRD's applies leave alone.
pub async fn label_crd(context: &Context, name: &str, key: &str) -> Result<(), OperatorApiError> {
    let api: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(context.client.clone());
    apply::patch_label(&api, name, key, Some("")).await?;
    Ok(())
}
