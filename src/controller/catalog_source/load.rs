//! Load step (registry and disk; no Kubernetes client): resolve the catalog image's digest, fetch
//! it by that digest (the registry module verifies every blob and caches the unpacked image on
//! disk, so a known digest needs no download), find its file-based catalog and parse and
//! validate it off the async runtime.

use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;

use crate::api::catalog_source_status::{READY_REASON_CATALOG_INVALID, READY_REASON_PULL_FAILED};
use crate::controller::catalogs::LoadedCatalog;
use crate::fbc::{Catalog, CatalogError, LoadError as FbcLoadError};
use crate::pull_secrets::vocabulary::{MAX_MESSAGE_LEN, bounded_list};
use crate::registry::push::{CONFIGS_LABEL, DEFAULT_CONFIGS_DIR};
use crate::registry::{
    Digest, ImageCache, ImageRef, Keyring, Registry, RegistryError, Transfer, UnpackedImage,
};

/// How many catalog problems a status message lists before "and N more".
const LISTED_PROBLEMS: usize = 5;

/// Why a catalog image could not be loaded. Messages name the image and digest and never
/// contain secret data.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Resolving or pulling failed (the registry module names image, registry, and the secrets
    /// tried).
    #[error(transparent)]
    Registry(Box<RegistryError>),
    /// The image holds no file-based catalog where its label (or the default) says.
    #[error("catalog image {image} ({digest}) has no file-based catalog: {detail}")]
    NoCatalogDir {
        image: String,
        digest: Digest,
        detail: String,
        pinned: bool,
    },
    /// The file-based catalog cannot be read or breaks `opm validate` rules.
    #[error("catalog image {image} ({digest}) is not a valid file-based catalog: {summary}")]
    Invalid {
        image: String,
        digest: Digest,
        summary: String,
        kind: &'static str,
        pinned: bool,
    },
    /// The parsing task died.
    #[error("reading catalog image {image} ({digest}) failed: {detail}")]
    Task {
        image: String,
        digest: Digest,
        detail: String,
    },
}

impl From<RegistryError> for LoadError {
    fn from(error: RegistryError) -> Self {
        LoadError::Registry(Box::new(error))
    }
}

impl LoadError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::Registry(error) => error.kind(),
            LoadError::NoCatalogDir { .. } => "no_catalog_dir",
            LoadError::Invalid { kind, .. } => kind,
            LoadError::Task { .. } => "internal",
        }
    }

    /// Whether trying again without a spec change can succeed: registry failures usually can
    /// (network, rotated credentials); bad content can only under a tag that may be re-pushed,
    /// never for a digest-pinned image (DESIGN invariant 7).
    pub fn is_transient(&self) -> bool {
        match self {
            LoadError::Registry(error) => error.is_transient(),
            LoadError::NoCatalogDir { pinned, .. } | LoadError::Invalid { pinned, .. } => !pinned,
            LoadError::Task { .. } => true,
        }
    }

    /// Whether the registry refused the credentials (401/403).
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            LoadError::Registry(error)
                if matches!(**error, RegistryError::Unauthorized { .. } | RegistryError::Forbidden { .. })
        )
    }

    /// Reason of the `Ready` condition.
    pub fn ready_reason(&self) -> &'static str {
        match self {
            LoadError::Registry(_) | LoadError::Task { .. } => READY_REASON_PULL_FAILED,
            LoadError::NoCatalogDir { .. } | LoadError::Invalid { .. } => {
                READY_REASON_CATALOG_INVALID
            }
        }
    }
}

/// Resolves `image` to a digest with the catalog's credentials (one HEAD request).
pub async fn resolve(
    registry: &Registry,
    image: &ImageRef,
    keyring: &Keyring,
) -> Result<Digest, LoadError> {
    Ok(registry.resolve_digest(image, keyring).await?)
}

/// Fetches `image` pinned to `digest` (from the disk cache when present), then parses and
/// validates its catalog. `raw` is `spec.image` as written; `transfer` records what was
/// downloaded.
pub async fn fetch(
    registry: &Registry,
    image: &ImageRef,
    raw: &str,
    digest: &Digest,
    keyring: &Keyring,
    now: Timestamp,
    transfer: &Transfer,
) -> Result<LoadedCatalog, LoadError> {
    let unpacked = registry
        .fetch_tracked(&image.with_digest(digest), keyring, transfer)
        .await?;
    parse(unpacked, raw, image.digest().is_some(), now).await
}

/// The catalog of `digest` from the disk cache, without any network: `None` when the cache does
/// not hold the image.
pub async fn from_cache(
    cache: ImageCache,
    raw: &str,
    pinned: bool,
    digest: &Digest,
    now: Timestamp,
) -> Option<Result<LoadedCatalog, LoadError>> {
    let lookup = digest.clone();
    let unpacked = tokio::task::spawn_blocking(move || cache.get(&lookup))
        .await
        .ok()
        .flatten()?;
    Some(parse(unpacked, raw, pinned, now).await)
}

async fn parse(
    unpacked: UnpackedImage,
    raw: &str,
    pinned: bool,
    now: Timestamp,
) -> Result<LoadedCatalog, LoadError> {
    let image = raw.to_owned();
    let digest = unpacked.digest.clone();
    let task = {
        let (image, digest) = (image.clone(), digest.clone());
        tokio::task::spawn_blocking(move || {
            let dir = catalog_dir(&unpacked).map_err(|detail| LoadError::NoCatalogDir {
                image: image.clone(),
                digest: digest.clone(),
                detail,
                pinned,
            })?;
            Catalog::load(&dir).map_err(|error| LoadError::Invalid {
                kind: error.kind(),
                summary: summarize(&error, &unpacked.root),
                image,
                digest,
                pinned,
            })
        })
    };
    let catalog = match task.await {
        Ok(result) => result?,
        Err(error) => {
            return Err(LoadError::Task {
                image,
                digest,
                detail: error.to_string(),
            });
        }
    };
    Ok(LoadedCatalog {
        digest,
        image,
        catalog,
        loaded_at: now,
    })
}

/// The directory the configs label names (default `/configs`), or why there is none.
fn catalog_dir(unpacked: &UnpackedImage) -> Result<PathBuf, String> {
    let label = unpacked.labels.get(CONFIGS_LABEL);
    let described = match label {
        Some(value) => format!("label {CONFIGS_LABEL}={value:?} names"),
        None => format!("the image has no label {CONFIGS_LABEL} and"),
    };
    let Some(dir) = unpacked.dir_from_label(CONFIGS_LABEL, Some(DEFAULT_CONFIGS_DIR)) else {
        return Err(format!("{described} a path outside the image"));
    };
    let shown = label.map_or(DEFAULT_CONFIGS_DIR, String::as_str);
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(format!("{described} {shown}, which is not a directory")),
        Err(_) if label.is_some() => Err(format!("{described} {shown}, which does not exist")),
        Err(_) => Err(format!("{described} no {DEFAULT_CONFIGS_DIR} directory")),
    }
}

/// The first few problems and a count, with paths shown as inside the image.
fn summarize(error: &CatalogError, root: &Path) -> String {
    let problems: Vec<String> = match error {
        CatalogError::Invalid(invalid) => invalid.leaves(),
        CatalogError::Load(FbcLoadError::Documents(documents)) => {
            documents.iter().map(ToString::to_string).collect()
        }
        CatalogError::Load(other) => vec![crate::failure::error_chain(other)],
    };
    let root = root.display().to_string();
    summary(
        problems
            .into_iter()
            .map(|problem| problem.replace(&root, ""))
            .collect(),
    )
}

/// The first few of `problems` and a count of the rest, bounded for a status message.
pub(super) fn summary(problems: Vec<String>) -> String {
    let lead = match problems.len() {
        1 => String::new(),
        n => format!("{n} problems: "),
    };
    let shown = &problems[..problems.len().min(LISTED_PROBLEMS)];
    let mut summary = bounded_list(&lead, shown, MAX_MESSAGE_LEN);
    if problems.len() > shown.len() {
        summary.push_str(&format!("; and {} more", problems.len() - shown.len()));
    }
    summary
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn unpacked(root: &Path, label: Option<&str>) -> UnpackedImage {
        let digest: Digest = format!("sha256:{}", "b".repeat(64)).parse().unwrap();
        UnpackedImage {
            root: root.to_owned(),
            manifest_digest: digest.clone(),
            digest,
            labels: label
                .map(|value| BTreeMap::from([(CONFIGS_LABEL.to_owned(), value.to_owned())]))
                .unwrap_or_default(),
            reference: "registry.example.com/catalog:v1".to_owned(),
        }
    }

    #[test]
    fn the_label_names_the_catalog_directory_and_configs_is_the_default() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("configs")).unwrap();
        std::fs::create_dir_all(root.path().join("fbc")).unwrap();
        assert_eq!(
            catalog_dir(&unpacked(root.path(), None)).unwrap(),
            root.path().join("configs")
        );
        assert_eq!(
            catalog_dir(&unpacked(root.path(), Some("/fbc"))).unwrap(),
            root.path().join("fbc")
        );
    }

    #[test]
    fn a_missing_catalog_directory_says_what_was_looked_for() {
        let root = tempfile::tempdir().unwrap();
        let none = catalog_dir(&unpacked(root.path(), None)).unwrap_err();
        assert_eq!(
            none,
            "the image has no label operators.operatorframework.io.index.configs.v1 and no \
             /configs directory"
        );
        let labelled = catalog_dir(&unpacked(root.path(), Some("/catalog"))).unwrap_err();
        assert_eq!(
            labelled,
            "label operators.operatorframework.io.index.configs.v1=\"/catalog\" names /catalog, \
             which does not exist"
        );
        let outside = catalog_dir(&unpacked(root.path(), Some("../etc"))).unwrap_err();
        assert!(outside.ends_with("a path outside the image"), "{outside}");
    }

    #[test]
    fn invalid_catalogs_list_the_first_problems_and_count_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let configs = root.path().join("configs");
        std::fs::create_dir_all(&configs).unwrap();
        let packages: String = (0..7)
            .map(|i| format!("---\nschema: olm.package\nname: p{i}\ndefaultChannel: missing\n"))
            .collect();
        std::fs::write(configs.join("catalog.yaml"), packages).unwrap();
        let error = Catalog::load(&configs).unwrap_err();
        let summary = summarize(&error, root.path());
        assert!(summary.starts_with("7 problems: "), "{summary}");
        assert!(summary.ends_with("; and 2 more"), "{summary}");
        assert!(summary.contains("p0"), "{summary}");
        assert!(
            !summary.contains(&root.path().display().to_string()),
            "paths are shown as inside the image: {summary}"
        );
    }
}
