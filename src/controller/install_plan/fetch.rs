//! Fetching a bundle: the catalog's pull credentials (from the source-Secret watches), the
//! registry pull (digest-verified, cached by digest) and the bundle load (file reads on a
//! blocking thread). Talks to the registry, never to the Kubernetes API.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kube::ResourceExt;

use crate::api::CatalogSource;
use crate::bundle::Bundle;
use crate::bundle::annotations::{MANIFESTS, MEDIATYPE, METADATA, PACKAGE};
use crate::bundle::load::{LoadError, MANIFESTS_DIR, METADATA_DIR};
use crate::clearing_cache::ClearingCache;
use crate::controller::context::Context;
use crate::controller::source_secrets::SourceState;
use crate::registry::{
    ImageRef, Keyring, PullSecret, RegistryError, UnpackedImage, reference::ReferenceError,
};

/// The only bundle format opcat installs.
pub const REGISTRY_V1: &str = "registry+v1";

/// The catalog's credentials, or why they are not known yet.
pub enum Credentials {
    /// A keyring from every source Secret that exists (possibly empty: public registries).
    Ready(Keyring),
    /// The by-name watch of this Secret has not listed yet.
    Waiting { namespace: String, secret: String },
}

/// Builds the keyring of `catalog`'s `spec.secrets` (none without a catalog). Missing or unusable
/// Secrets are left out; the registry's error then names the secrets that were tried.
pub fn credentials(context: &Context, catalog: Option<&CatalogSource>) -> Credentials {
    let Some(catalog) = catalog else {
        return Credentials::Ready(Keyring::empty());
    };
    let namespace = catalog.namespace().unwrap_or_default();
    let mut secrets = Vec::new();
    for name in catalog.spec.secret_names() {
        match context.source_secrets.get(&namespace, name) {
            SourceState::Present(secret) => secrets.push(PullSecret::from(secret.as_ref())),
            SourceState::Missing => {}
            SourceState::Unknown => {
                return Credentials::Waiting {
                    namespace,
                    secret: name.to_owned(),
                };
            }
        }
    }
    let (keyring, unusable) = Keyring::from_secrets(&secrets);
    for error in unusable {
        tracing::debug!(%namespace, %error, "pull secret skipped for bundle pulls");
    }
    Credentials::Ready(keyring)
}

/// A bundle pulled and read.
pub struct Fetched {
    pub bundle: Arc<Bundle>,
    /// The bundle image pinned to the digest it resolved to (empty for a bundle the catalog
    /// embeds).
    pub pinned: String,
}

/// Why a bundle could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The InstallPlan names no bundle image (the catalog has none for it).
    #[error("bundle {bundle} has no image in the catalog")]
    NoImage { bundle: String },
    /// The reference is not an image reference.
    #[error("bundle image reference of {bundle} is invalid")]
    Reference {
        bundle: String,
        #[source]
        source: ReferenceError,
    },
    /// Pulling failed (the registry module names image, registry and secrets tried).
    #[error(transparent)]
    Pull(#[from] RegistryError),
    /// The image is not a registry+v1 bundle for this package.
    #[error("bundle image {image} {problem}")]
    NotABundle { image: String, problem: String },
    /// The bundle's content is invalid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Reading the bundle crashed.
    #[error("reading bundle image {image} was interrupted")]
    Interrupted {
        image: String,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl FetchError {
    /// Whether a later retry may succeed without a change to the plan (registry outages,
    /// credentials that can be fixed).
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Pull(error) => error.is_transient(),
            _ => false,
        }
    }

    /// Whether the image was reached but its content is not an installable bundle (OLM's
    /// bundle-unpack failures).
    pub fn is_unpack_failure(&self) -> bool {
        !self.is_transient()
    }

    /// CamelCase reason for conditions.
    pub fn reason(&self) -> &'static str {
        match self {
            FetchError::NoImage { .. } | FetchError::Reference { .. } => "InvalidBundleReference",
            FetchError::Pull(error) if error.is_transient() => "BundlePullFailed",
            FetchError::Pull(_) => "BundleUnpackFailed",
            FetchError::NotABundle { .. } | FetchError::Load(_) => "BundleInvalid",
            FetchError::Interrupted { .. } => "BundleUnreadable",
        }
    }

    /// Bounded label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::NoImage { .. } => "no_image",
            FetchError::Reference { source, .. } => source.kind(),
            FetchError::Pull(error) => error.kind(),
            FetchError::NotABundle { .. } => "not_a_bundle",
            FetchError::Load(error) => error.kind(),
            FetchError::Interrupted { .. } => "interrupted",
        }
    }
}

/// Parsed bundles kept in memory.
const MAX_LOADED: usize = 64;

/// Bundles read from the image cache, by image digest and layout: every plan that installs the
/// same bundle image (one per namespace) shares one parsed bundle instead of reading and parsing
/// its files again (the YAML parse was a tenth of the controller's CPU at 1,000 installs,
/// scripts/bench-scale.sh). The pull itself still happens per plan, with that plan's
/// credentials.
pub struct LoadedBundles {
    bundles: ClearingCache<(String, String, String), Arc<Bundle>>,
}

impl Default for LoadedBundles {
    fn default() -> Self {
        Self {
            bundles: ClearingCache::new(MAX_LOADED),
        }
    }
}

impl LoadedBundles {
    /// A bundle embedded in a catalog, by its content key (`embedded_bundle::embedded_key`).
    pub fn embedded(&self, key: &str) -> Option<Arc<Bundle>> {
        self.bundles
            .get(&(key.to_owned(), String::new(), String::new()))
    }

    /// Keeps a bundle embedded in a catalog under its content key.
    pub fn keep_embedded(&self, key: String, bundle: Bundle) -> Arc<Bundle> {
        self.bundles
            .insert_or_keep((key, String::new(), String::new()), Arc::new(bundle))
    }
}

/// Pulls `image` with `keyring` and reads it as a registry+v1 bundle of `package` (when given).
pub async fn fetch(
    context: &Context,
    loaded: &LoadedBundles,
    bundle_name: &str,
    image: &str,
    package: Option<&str>,
    keyring: &Keyring,
) -> Result<Fetched, FetchError> {
    if image.is_empty() {
        return Err(FetchError::NoImage {
            bundle: bundle_name.to_owned(),
        });
    }
    let reference: ImageRef = image.parse().map_err(|source| FetchError::Reference {
        bundle: bundle_name.to_owned(),
        source,
    })?;
    let unpacked = context
        .registry
        .fetch_reusing(&reference, keyring, context.settings.bundle_tag_ttl)
        .await?;
    let pinned = reference.with_digest(&unpacked.digest).to_string();
    tracing::info!(%image, digest = %unpacked.digest, "bundle image ready");
    let (manifests, metadata) =
        layout(&unpacked, package).map_err(|problem| FetchError::NotABundle {
            image: image.to_owned(),
            problem,
        })?;
    let key = (unpacked.digest.to_string(), manifests, metadata);
    if let Some(bundle) = loaded.bundles.get(&key) {
        return Ok(Fetched { bundle, pinned });
    }
    let root = unpacked.root.clone();
    let (manifests, metadata) = (key.1.clone(), key.2.clone());
    let bundle =
        tokio::task::spawn_blocking(move || Bundle::load_layout(&root, &manifests, &metadata))
            .await
            .map_err(|source| FetchError::Interrupted {
                image: image.to_owned(),
                source,
            })??;
    let bundle = loaded.bundles.insert_or_keep(key, Arc::new(bundle));
    Ok(Fetched { bundle, pinned })
}

/// The manifests and metadata directories named by the image labels (relative to the image
/// root), after checking the media type and package labels when the image has them. The error
/// says what is wrong with the image.
fn layout(unpacked: &UnpackedImage, package: Option<&str>) -> Result<(String, String), String> {
    if let Some(media_type) = unpacked.labels.get(MEDIATYPE)
        && media_type != REGISTRY_V1
    {
        return Err(format!(
            "has media type {media_type:?} (label {MEDIATYPE}); opcat installs {REGISTRY_V1} bundles"
        ));
    }
    if let (Some(found), Some(expected)) = (unpacked.labels.get(PACKAGE), package)
        && found != expected
    {
        return Err(format!(
            "belongs to package {found:?} (label {PACKAGE}), not {expected:?}"
        ));
    }
    let relative = |label: &str, default: &str| -> Result<String, String> {
        let dir = unpacked
            .dir_from_label(label, Some(default))
            .ok_or_else(|| format!("label {label} points outside the image"))?;
        Ok(relative_to(&unpacked.root, &dir))
    };
    Ok((
        relative(MANIFESTS, MANIFESTS_DIR)?,
        relative(METADATA, METADATA_DIR)?,
    ))
}

fn relative_to(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .map(PathBuf::from)
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}
