//! Every image a bundle runs or names, for the pull-credentials preflight: the containers and
//! init containers of its Deployments, and `spec.relatedImages` (images the operator starts
//! itself, for operands).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Container;

use super::load::Bundle;
use crate::api::ClusterServiceVersion;
use crate::api::cluster_service_version::ClusterServiceVersionSpec;

/// Every container and init-container image of the bundle's Deployments plus every
/// `spec.relatedImages[].image`, sorted, without empty references.
pub fn images(bundle: &Bundle) -> BTreeSet<String> {
    csv_images(&bundle.csv)
}

/// [`images`] of a ClusterServiceVersion (a bundle's, or one opcat installed from it).
pub fn csv_images(csv: &ClusterServiceVersion) -> BTreeSet<String> {
    spec_images(&csv.spec)
}

/// [`images`] of a ClusterServiceVersion's spec.
pub fn spec_images(spec: &ClusterServiceVersionSpec) -> BTreeSet<String> {
    let pod_images = containers(spec).filter_map(|container| container.image.as_deref());
    let related = spec
        .related_images
        .iter()
        .flatten()
        .map(|related| related.image.as_str());
    pod_images
        .chain(related)
        .filter(|image| !image.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every container and init container of the Deployments of a ClusterServiceVersion's spec.
pub fn containers(spec: &ClusterServiceVersionSpec) -> impl Iterator<Item = &Container> {
    spec.install
        .deployments()
        .iter()
        .filter_map(|deployment| deployment.spec.template.spec.as_ref())
        .flat_map(|pod| {
            pod.containers
                .iter()
                .chain(pod.init_containers.iter().flatten())
        })
}
