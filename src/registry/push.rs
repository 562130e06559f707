//! Building catalog and bundle images from directories, and pushing them.
//!
//! A catalog image has the label `operators.operatorframework.io.index.configs.v1=/configs` and
//! the catalog under `/configs`; a bundle image has the bundle annotations as labels and
//! `/manifests` + `/metadata`. Both have one reproducible layer, a config with fixed times, and
//! an OCI manifest, so the same directory always yields the same digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::client::Registry;
use super::digest::Digest;
use super::error::{Operation, RegistryError};
use super::failure::classify;
use super::keyring::Keyring;
use super::layer::{Layer, LayerBuilder, LayerError};
use super::manifest::{Descriptor, OCI_CONFIG, OCI_LAYER_GZIP, OCI_MANIFEST};
use super::reference::ImageRef;
use crate::bundle::annotations::{AnnotationsError, BundleAnnotations};

/// Label naming the directory that holds a catalog image's file-based catalog.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
/// Where catalogs live in images opcat builds (and the default when the label is missing).
pub const DEFAULT_CONFIGS_DIR: &str = "/configs";

const EPOCH: &str = "1970-01-01T00:00:00Z";

/// An image ready to push: blobs and manifest, all digested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// The single layer.
    pub layer: Layer,
    /// The config JSON.
    pub config: Vec<u8>,
    /// The manifest JSON.
    pub manifest: Vec<u8>,
    /// Digest of `manifest`: the image digest.
    pub digest: Digest,
    /// The labels in the config.
    pub labels: BTreeMap<String, String>,
}

/// Why an image cannot be built from a directory.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Not a directory.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A bundle directory without `manifests/` or `metadata/`.
    #[error("bundle directory {path} has no {missing}/ directory")]
    MissingBundleDir {
        /// The bundle directory.
        path: PathBuf,
        /// `manifests` or `metadata`.
        missing: &'static str,
    },
    /// `metadata/annotations.yaml` is missing or invalid.
    #[error(transparent)]
    Annotations(#[from] AnnotationsError),
    /// The layer could not be built.
    #[error(transparent)]
    Layer(#[from] LayerError),
}

impl BuildError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            BuildError::NotADirectory { .. } | BuildError::MissingBundleDir { .. } => {
                "invalid_directory"
            }
            BuildError::Annotations(e) => e.kind(),
            BuildError::Layer(e) => e.kind(),
        }
    }
}

/// Builds a catalog image: `dir`'s contents under `/configs`, with the configs label.
pub fn build_catalog_image(dir: &Path) -> Result<BuiltImage, BuildError> {
    require_dir(dir)?;
    let mut layer = LayerBuilder::new();
    layer.add_tree(dir, DEFAULT_CONFIGS_DIR)?;
    let labels = BTreeMap::from([(CONFIGS_LABEL.to_owned(), DEFAULT_CONFIGS_DIR.to_owned())]);
    Ok(assemble(layer.build()?, labels))
}

/// Builds a registry+v1 bundle image: `manifests/` and `metadata/` at the root, labelled with
/// the annotations of `metadata/annotations.yaml` (which include the six
/// `operators.operatorframework.io.bundle.*` labels), as `opm` does.
pub fn build_bundle_image(dir: &Path) -> Result<BuiltImage, BuildError> {
    require_dir(dir)?;
    for missing in ["manifests", "metadata"] {
        if !dir.join(missing).is_dir() {
            return Err(BuildError::MissingBundleDir {
                path: dir.to_owned(),
                missing,
            });
        }
    }
    let annotations = BundleAnnotations::read(dir)?;
    let mut layer = LayerBuilder::new();
    layer.add_tree(&dir.join("manifests"), "manifests")?;
    layer.add_tree(&dir.join("metadata"), "metadata")?;
    Ok(assemble(layer.build()?, annotations.all.clone()))
}

fn require_dir(dir: &Path) -> Result<(), BuildError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(BuildError::NotADirectory {
            path: dir.to_owned(),
        })
    }
}

#[derive(Serialize)]
struct ImageConfig<'a> {
    architecture: &'static str,
    config: RuntimeConfig<'a>,
    created: &'static str,
    history: [History; 1],
    os: &'static str,
    rootfs: RootFs<'a>,
}

#[derive(Serialize)]
struct RuntimeConfig<'a> {
    #[serde(rename = "Labels")]
    labels: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
struct History {
    created: &'static str,
    created_by: &'static str,
}

#[derive(Serialize)]
struct RootFs<'a> {
    #[serde(rename = "type")]
    type_: &'static str,
    diff_ids: [&'a Digest; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestDoc<'a> {
    schema_version: u32,
    media_type: &'static str,
    config: &'a Descriptor,
    layers: [&'a Descriptor; 1],
}

fn assemble(layer: Layer, labels: BTreeMap<String, String>) -> BuiltImage {
    let config = ImageConfig {
        architecture: "amd64",
        config: RuntimeConfig { labels: &labels },
        created: EPOCH,
        history: [History {
            created: EPOCH,
            created_by: "opcat",
        }],
        os: "linux",
        rootfs: RootFs {
            type_: "layers",
            diff_ids: [&layer.diff_id],
        },
    };
    // Serialising plain structs of strings and maps cannot fail.
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let config_descriptor = Descriptor {
        media_type: OCI_CONFIG.to_owned(),
        digest: Digest::sha256_of(&config),
        size: config.len() as u64,
        platform: None,
    };
    let layer_descriptor = Descriptor {
        media_type: OCI_LAYER_GZIP.to_owned(),
        digest: layer.digest.clone(),
        size: layer.bytes.len() as u64,
        platform: None,
    };
    let manifest = serde_json::to_vec(&ManifestDoc {
        schema_version: 2,
        media_type: OCI_MANIFEST,
        config: &config_descriptor,
        layers: [&layer_descriptor],
    })
    .unwrap_or_default();
    BuiltImage {
        digest: Digest::sha256_of(&manifest),
        layer,
        config,
        manifest,
        labels,
    }
}

impl Registry {
    /// Pushes a built image to `image` (a tag, or a digest that must equal the built one) with
    /// the credentials the keyring has for it. Blobs already present are not uploaded again.
    pub async fn push(
        &self,
        image: &ImageRef,
        built: &BuiltImage,
        keyring: &Keyring,
    ) -> Result<Digest, RegistryError> {
        if let Some(pinned) = image.digest()
            && pinned != built.digest
        {
            return Err(RegistryError::DigestMismatch {
                operation: Operation::Push,
                image: image.to_string(),
                what: "built manifest".to_owned(),
                expected: pinned.to_string(),
                actual: built.digest.to_string(),
            });
        }
        let reference = image.as_oci().clone();
        let config_digest = Digest::sha256_of(&built.config).to_string();
        let (authorized, config_present) = self
            .authorize(image, keyring, Operation::Push, |client| {
                let reference = reference.clone();
                let digest = config_digest.clone();
                async move {
                    client
                        .blob_exists(&reference, &digest)
                        .await
                        .map_err(classify)
                }
            })
            .await?;
        let client = &authorized.client;
        let fail = |e| authorized.error(classify(e), Operation::Push, image, keyring);
        let layer_digest = built.layer.digest.to_string();
        if !client
            .blob_exists(&reference, &layer_digest)
            .await
            .map_err(fail)?
        {
            client
                .push_blob(&reference, built.layer.bytes.clone(), &layer_digest)
                .await
                .map_err(fail)?;
        }
        if !config_present {
            client
                .push_blob(&reference, built.config.clone(), &config_digest)
                .await
                .map_err(fail)?;
        }
        client
            .push_manifest_raw(
                &reference,
                built.manifest.clone(),
                http::HeaderValue::from_static(OCI_MANIFEST),
            )
            .await
            .map_err(fail)?;
        tracing::info!(%image, digest = %built.digest, "pushed image");
        Ok(built.digest.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_image_is_reproducible_and_labelled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(
            dir.path().join("pkg/catalog.yaml"),
            "schema: olm.package\nname: p\n",
        )
        .unwrap();
        let first = build_catalog_image(dir.path()).unwrap();
        let second = build_catalog_image(dir.path()).unwrap();
        assert_eq!(first.digest, second.digest);
        let config: serde_json::Value = serde_json::from_slice(&first.config).unwrap();
        assert_eq!(config["config"]["Labels"][CONFIGS_LABEL], "/configs");
        assert_eq!(
            config["rootfs"]["diff_ids"][0],
            first.layer.diff_id.to_string()
        );
        let manifest: serde_json::Value = serde_json::from_slice(&first.manifest).unwrap();
        assert_eq!(manifest["mediaType"], OCI_MANIFEST);
        assert_eq!(
            manifest["layers"][0]["digest"],
            first.layer.digest.to_string()
        );
    }

    #[test]
    fn bundle_image_needs_manifests_and_metadata() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("manifests")).unwrap();
        let err = build_bundle_image(dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "bundle directory {} has no metadata/ directory",
                dir.path().display()
            )
        );
    }
}
