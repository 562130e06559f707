//! The serving label on opcat's pods: the leader's own pod carries
//! [`SERVING_LABEL`](super::SERVING_LABEL) while it serves the package API, and no other pod
//! does (a former leader that could not remove its own label before it lost the lease is
//! cleaned up by the next one). Writes only when the watch of labelled pods shows a
//! difference.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use super::{SERVING_LABEL, SERVING_LABEL_VALUE};
use crate::controller::apply::patch_label;

/// Labels `own` and unlabels every other pod in `labelled`; returns whether `own` carries the
/// label.
pub async fn converge(
    client: &kube::Client,
    namespace: &str,
    own: &str,
    labelled: &[String],
) -> bool {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut carries = labelled.iter().any(|pod| pod == own);
    if !carries {
        match patch_label(&api, own, SERVING_LABEL, Some(SERVING_LABEL_VALUE)).await {
            Ok(()) => {
                carries = true;
                tracing::info!(
                    pod = own,
                    "package API: serving; this pod joins the package API Service"
                );
            }
            Err(error) => tracing::warn!(
                pod = own,
                error = %crate::failure::error_chain(&error),
                "package API: cannot label this pod; the package API Service does not reach it"
            ),
        }
    }
    for other in labelled.iter().filter(|pod| *pod != own) {
        unlabel(client, namespace, other).await;
    }
    carries
}

/// Removes the label from `pod` (best effort: logged).
pub async fn unlabel(client: &kube::Client, namespace: &str, pod: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    match patch_label(&api, pod, SERVING_LABEL, None).await {
        Ok(()) => tracing::info!(pod, "package API: pod left the package API Service"),
        Err(error) => tracing::warn!(
            pod,
            error = %crate::failure::error_chain(&error),
            "package API: cannot remove the serving label"
        ),
    }
}
