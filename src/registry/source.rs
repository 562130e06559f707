//! `SOURCE` arguments of the CLI: a path that exists is a path; an argument that looks like an
//! image ([`looks_like_image`]: a registry host, a tag or a digest) is an image; anything else is
//! a path that does not exist, reported as such instead of being pulled from Docker Hub.
//!
//! An image source is pulled (verified, unpacked, cached) and its catalog directory is the one
//! named by the label `operators.operatorframework.io.index.configs.v1`, or `/configs` when the
//! image has no such label.

use std::path::{Path, PathBuf};

use super::cache::UnpackedImage;
use super::client::Registry;
use super::error::RegistryError;
use super::keyring::Keyring;
use super::push::{CONFIGS_LABEL, DEFAULT_CONFIGS_DIR};
use super::reference::{ImageRef, ReferenceError};

/// Where a catalog comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local file or directory.
    Path(PathBuf),
    /// An image reference.
    Image(ImageRef),
}

/// A catalog ready to be read from disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCatalog {
    /// The catalog root (a directory, or a file given by the user).
    pub path: PathBuf,
    /// The image it came from, if any.
    pub image: Option<UnpackedImage>,
}

/// Why a source cannot be turned into a local catalog.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Neither an existing path nor something that looks like an image: a missing path.
    #[error("no such {what}: {path}", what = if looks_like_file(path) { "file" } else { "directory" })]
    NoSuchPath {
        /// What the user typed.
        path: String,
    },
    /// Looks like an image, but is not a valid image reference.
    #[error("SOURCE {text:?} is neither an existing path nor a valid image reference")]
    Neither {
        /// What the user typed.
        text: String,
        /// Why it is not an image reference.
        #[source]
        source: ReferenceError,
    },
    /// Pulling the image failed.
    #[error(transparent)]
    Registry(Box<RegistryError>),
    /// The image has no catalog where its label (or the default) says.
    #[error("image {image} ({digest}) has no {label} label and no {DEFAULT_CONFIGS_DIR} directory: it is not a catalog image", label = CONFIGS_LABEL)]
    NoConfigs {
        /// The image.
        image: String,
        /// Its digest.
        digest: String,
    },
    /// The label names a directory that is missing or outside the image.
    #[error(
        "image {image} ({digest}) has label {CONFIGS_LABEL}={value:?}, but that directory does not exist in the image"
    )]
    LabelledDirMissing {
        /// The image.
        image: String,
        /// Its digest.
        digest: String,
        /// The label value.
        value: String,
    },
}

impl From<RegistryError> for SourceError {
    fn from(error: RegistryError) -> Self {
        SourceError::Registry(Box::new(error))
    }
}

impl SourceError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            SourceError::Neither { .. } => "invalid_reference",
            SourceError::NoSuchPath { .. } => "no_such_path",
            SourceError::Registry(e) => e.kind(),
            SourceError::NoConfigs { .. } | SourceError::LabelledDirMissing { .. } => {
                "not_a_catalog_image"
            }
        }
    }
}

impl Source {
    /// Classifies `text`: an existing path wins; then what [`looks_like_image`] is an image
    /// (and must parse as one); anything else is a missing path.
    pub fn parse(text: &str) -> Result<Source, SourceError> {
        if Path::new(text).exists() {
            return Ok(Source::Path(PathBuf::from(text)));
        }
        if !looks_like_image(text) {
            return Err(SourceError::NoSuchPath {
                path: text.to_owned(),
            });
        }
        text.parse::<ImageRef>()
            .map(Source::Image)
            .map_err(|source| SourceError::Neither {
                text: text.to_owned(),
                source,
            })
    }
}

/// Whether an argument that is not an existing path names an image: it does not start or end
/// like a path (`/`, `./`, `../`, `~`, a trailing `/`, a `.yaml`/`.yml`/`.json` file name), and
/// it has a registry host (a first component with a `.` or `:`, or `localhost`, before a `/`),
/// a tag (`:` in its last component) or a digest (`@`). So `quay.io/org/catalog`,
/// `localhost:5000/catalog`, `catalog:v1` and `org/catalog@sha256:...` are images;
/// `catalgo`, `org/catalog`, `./catalog` and `catalog/` are paths.
pub fn looks_like_image(text: &str) -> bool {
    let path_like = text.starts_with('/')
        || text.starts_with("./")
        || text.starts_with("../")
        || text.starts_with('~')
        || text.ends_with('/')
        || text == "."
        || text == ".."
        || looks_like_file(text);
    if path_like {
        return false;
    }
    if text.contains('@') {
        return true;
    }
    let host = text
        .split_once('/')
        .map(|(first, _)| first.contains('.') || first.contains(':') || first == "localhost");
    let last = text.rsplit('/').next().unwrap_or(text);
    host == Some(true) || last.contains(':')
}

/// Whether the argument ends like a catalog file name (`.yaml`, `.yml`, `.json`).
fn looks_like_file(text: &str) -> bool {
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|extension| text.ends_with(extension))
}

/// Turns a source into a catalog on disk, pulling it if it is an image.
pub async fn local_catalog(
    source: &Source,
    registry: &Registry,
    keyring: &Keyring,
) -> Result<LocalCatalog, SourceError> {
    match source {
        Source::Path(path) => Ok(LocalCatalog {
            path: path.clone(),
            image: None,
        }),
        Source::Image(image) => {
            let unpacked = registry.fetch(image, keyring).await?;
            let path = catalog_dir(image, &unpacked)?;
            Ok(LocalCatalog {
                path,
                image: Some(unpacked),
            })
        }
    }
}

/// The catalog directory of an unpacked catalog image.
pub fn catalog_dir(image: &ImageRef, unpacked: &UnpackedImage) -> Result<PathBuf, SourceError> {
    match unpacked.labels.get(CONFIGS_LABEL) {
        Some(value) => unpacked
            .dir_from_label(CONFIGS_LABEL, None)
            .filter(|dir| dir.is_dir())
            .ok_or_else(|| SourceError::LabelledDirMissing {
                image: image.to_string(),
                digest: unpacked.digest.to_string(),
                value: value.clone(),
            }),
        None => unpacked
            .dir_from_label(CONFIGS_LABEL, Some(DEFAULT_CONFIGS_DIR))
            .filter(|dir| dir.is_dir())
            .ok_or_else(|| SourceError::NoConfigs {
                image: image.to_string(),
                digest: unpacked.digest.to_string(),
            }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::registry::digest::Digest;

    #[test]
    fn existing_paths_win_over_image_syntax() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().display().to_string();
        assert_eq!(
            Source::parse(&text).unwrap(),
            Source::Path(dir.path().to_owned())
        );
        assert!(matches!(
            Source::parse("quay.io/org/catalog:v1").unwrap(),
            Source::Image(_)
        ));
        let err = Source::parse("./no/such dir").unwrap_err();
        assert_eq!(err.to_string(), "no such directory: ./no/such dir");
        let err = Source::parse("quay.io/Org/Bad Name:v1").unwrap_err();
        assert!(err.to_string().starts_with(
            "SOURCE \"quay.io/Org/Bad Name:v1\" is neither an existing path nor a valid image reference"
        ));
    }

    #[test]
    fn an_image_must_look_like_one() {
        for image in [
            "quay.io/org/catalog",
            "localhost:5000/catalog",
            "localhost/catalog",
            "catalog:v1",
            "org/catalog:v1",
            "org/catalog@sha256:0000",
        ] {
            assert!(looks_like_image(image), "{image}");
        }
        for path in [
            "catalgo",
            "org/catalog",
            "./catalog",
            "../catalog",
            "/srv/catalog",
            "catalog/",
            "~/catalog",
            "catalog.yaml",
            "dir/index.json",
            ".",
        ] {
            assert!(!looks_like_image(path), "{path}");
        }
        assert_eq!(
            Source::parse("catalog.yaml").unwrap_err().to_string(),
            "no such file: catalog.yaml"
        );
    }

    fn unpacked(root: &Path, labels: &[(&str, &str)]) -> UnpackedImage {
        UnpackedImage {
            root: root.to_owned(),
            digest: Digest::sha256_of(b"m"),
            manifest_digest: Digest::sha256_of(b"m"),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            reference: "r.io/c:v1".to_owned(),
        }
    }

    #[test]
    fn catalog_dir_follows_the_label_or_defaults_to_configs() {
        let root = tempfile::tempdir().unwrap();
        let image: ImageRef = "r.io/c:v1".parse().unwrap();
        std::fs::create_dir_all(root.path().join("other/place")).unwrap();
        let labelled = unpacked(root.path(), &[(CONFIGS_LABEL, "/other/place")]);
        assert_eq!(
            catalog_dir(&image, &labelled).unwrap(),
            root.path().join("other/place")
        );
        let plain = unpacked(root.path(), &[]);
        let err = catalog_dir(&image, &plain).unwrap_err().to_string();
        assert!(err.contains("has no operators.operatorframework.io.index.configs.v1 label and no /configs directory"), "{err}");
        std::fs::create_dir(root.path().join("configs")).unwrap();
        assert_eq!(
            catalog_dir(&image, &plain).unwrap(),
            root.path().join("configs")
        );
        let wrong = unpacked(root.path(), &[(CONFIGS_LABEL, "/missing")]);
        let err = catalog_dir(&image, &wrong).unwrap_err().to_string();
        assert!(
            err.contains("=\"/missing\", but that directory does not exist"),
            "{err}"
        );
    }
}
