//! Every image a bundle runs or names, for the pull-credentials preflight: the containers and
//! init containers of its Deployments, and `spec.relatedImages` (images the operator starts
//! itself, for operands).

use std::collections::BTreeSet;

use super::load::Bundle;

/// Every container and init-container image of the bundle's Deployments plus every
/// `spec.relatedImages[].image`, sorted, without empty references.
pub fn images(bundle: &Bundle) -> BTreeSet<String> {
    let spec = &bundle.csv.spec;
    let pod_images = spec
        .install
        .deployments()
        .iter()
        .filter_map(|deployment| deployment.spec.template.spec.as_ref())
        .flat_map(|pod| {
            pod.containers
                .iter()
                .chain(pod.init_containers.iter().flatten())
        })
        .filter_map(|container| container.image.as_deref());
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
