//! The bundle of a ClusterServiceVersion: pulled with the catalog's credentials
//! (`Registry::fetch`, digest-verified and cached on disk), loaded, and kept parsed in memory by
//! image reference; or, for a bundle without an image, read from the manifests its catalog
//! embeds (`controller::embedded_bundle`). Touches the registry (only on a cache miss of both caches: after a restart,
//! or for an image that is not digest-pinned).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::bundle::Bundle;
use crate::bundle::annotations::{MANIFESTS, METADATA};
use crate::bundle::load::{LoadError, MANIFESTS_DIR, METADATA_DIR};
use crate::controller::catalogs::CatalogIndex;
use crate::controller::embedded_bundle::{Embedded, embedded_bundle, embedded_key};
use crate::registry::{ImageRef, Keyring, Registry, RegistryError};

/// Parsed bundles kept in memory.
const MAX_BUNDLES: usize = 64;

/// Why a bundle is not available.
#[derive(Debug)]
pub enum BundleProblem {
    /// The image annotation is not an image reference (terminal).
    InvalidReference(String),
    /// The registry refused or failed (transient or not, see [`RegistryError::is_transient`]).
    Registry(RegistryError),
    /// The image is not a loadable registry+v1 bundle (terminal).
    Invalid(LoadError),
    /// The image's manifests/metadata label points outside the image (terminal).
    BadLayout(String),
    /// The loading task failed (transient).
    Task(String),
}

/// Parsed bundles by image reference.
#[derive(Default)]
pub struct BundleCache {
    bundles: Mutex<HashMap<String, Arc<Bundle>>>,
}

impl BundleCache {
    /// The bundle in `image`, from memory, the on-disk cache or the registry.
    pub async fn get(
        &self,
        registry: &Arc<Registry>,
        image: &str,
        keyring: &Keyring,
    ) -> Result<Arc<Bundle>, BundleProblem> {
        if let Some(bundle) = self.cached(image) {
            return Ok(bundle);
        }
        let reference: ImageRef =
            image
                .parse()
                .map_err(|error: crate::registry::reference::ReferenceError| {
                    BundleProblem::InvalidReference(error.to_string())
                })?;
        let unpacked = registry
            .fetch(&reference, keyring)
            .await
            .map_err(BundleProblem::Registry)?;
        // The label values are checked the way the cache checks any label path: nothing may
        // point outside the image.
        for (label, default) in [(MANIFESTS, MANIFESTS_DIR), (METADATA, METADATA_DIR)] {
            if unpacked.dir_from_label(label, Some(default)).is_none() {
                return Err(BundleProblem::BadLayout(format!(
                    "label {label} of bundle image {image} points outside the image"
                )));
            }
        }
        let manifests = label_or(&unpacked.labels, MANIFESTS, MANIFESTS_DIR);
        let metadata = label_or(&unpacked.labels, METADATA, METADATA_DIR);
        let root = unpacked.root.clone();
        let bundle =
            tokio::task::spawn_blocking(move || Bundle::load_layout(&root, &manifests, &metadata))
                .await
                .map_err(|error| BundleProblem::Task(error.to_string()))?
                .map_err(BundleProblem::Invalid)?;
        let bundle = Arc::new(bundle);
        self.keep(image.to_owned(), bundle.clone());
        Ok(bundle)
    }

    /// The bundle `name` (of `package`) that the catalog of CatalogSource `namespace/catalog`
    /// embeds (no image), kept parsed by content key. `Ok(None)`: the catalog is not loaded.
    pub fn get_embedded(
        &self,
        catalogs: &CatalogIndex,
        (namespace, catalog): (&str, &str),
        package: &str,
        name: &str,
    ) -> Result<Option<Arc<Bundle>>, Box<BundleProblem>> {
        if let Some(bundle) =
            embedded_key(catalogs, namespace, catalog, name).and_then(|key| self.cached(&key))
        {
            return Ok(Some(bundle));
        }
        match embedded_bundle(catalogs, namespace, catalog, package, name) {
            Embedded::CatalogNotLoaded { .. } => Ok(None),
            Embedded::Missing { message } => Err(Box::new(BundleProblem::BadLayout(message))),
            Embedded::Found { key, bundle } => {
                let bundle = Arc::new((*bundle).map_err(|e| Box::new(BundleProblem::Invalid(e)))?);
                self.keep(key, bundle.clone());
                Ok(Some(bundle))
            }
        }
    }

    fn keep(&self, key: String, bundle: Arc<Bundle>) {
        if let Ok(mut bundles) = self.bundles.lock() {
            if bundles.len() >= MAX_BUNDLES {
                bundles.clear();
            }
            bundles.insert(key, bundle);
        }
    }

    fn cached(&self, image: &str) -> Option<Arc<Bundle>> {
        self.bundles.lock().ok()?.get(image).cloned()
    }
}

fn label_or(
    labels: &std::collections::BTreeMap<String, String>,
    key: &str,
    default: &str,
) -> String {
    labels
        .get(key)
        .map(|value| value.trim_start_matches('/').to_owned())
        .unwrap_or_else(|| default.to_owned())
}
