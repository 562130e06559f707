//! Uninstall: the CRDs an install owns are never deleted (DESIGN invariant 10), and may be
//! shared with installs in other namespaces, so they lose only this install's component label
//! (`operators.coreos.com/<package>.<namespace>`), as OLM's operator disowns its components.
//! Everything else opcat labelled for the install is deleted with it, label and all. Touches
//! the client.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::{Resource, ResourceExt};

use super::error::CsvError;
use super::observe;
use crate::api::ClusterServiceVersion;
use crate::controller::apply::patch_label;
use crate::controller::context::Context;

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";

/// Removes `csv`'s component label from the CRDs it owns, unless another CSV of the same
/// install remains in the namespace (an upgrade: the newer CSV keeps the install's label).
pub(super) async fn release(
    context: &Context,
    csv: &ClusterServiceVersion,
    namespace: &str,
) -> Result<(), CsvError> {
    let labels = observe::component_labels(csv);
    let Some(key) = labels.keys().next() else {
        return Ok(());
    };
    let name = csv.name_any();
    let same_install = context
        .stores
        .namespaced
        .csvs
        .in_namespace(namespace)
        .into_iter()
        .any(|other| {
            other.meta().name.as_deref() != Some(name.as_str())
                && other.meta().deletion_timestamp.is_none()
                && other.label(key).is_some()
        });
    if same_install {
        return Ok(());
    }
    let api: Api<CustomResourceDefinition> = Api::all(context.client.clone());
    for owned in csv.spec.owned_crds() {
        let labelled =
            context
                .stores
                .owned
                .has_label(CRD_API_VERSION, CRD_KIND, (None, &owned.name), key)
                == Some(true);
        if labelled {
            patch_label(&api, &owned.name, key, None).await?;
            tracing::info!(namespace, csv = %name, crd = %owned.name, label = %key, "released the install's component label");
        }
    }
    Ok(())
}
