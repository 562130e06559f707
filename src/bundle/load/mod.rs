//! Loading a registry+v1 bundle directory (`manifests/` + `metadata/`) into a [`Bundle`]. This is
//! the only I/O of the `bundle` module: it reads files, and everything after it is pure.
//!
//! The rules follow `opm` (`operator-registry: pkg/registry/parse.go`, `decode.go`):
//! `manifests/` is read flat (sub-directories and dot-files are skipped), one object per file
//! (a file with several YAML documents contributes its first one; the rest are ignored with a
//! warning), YAML or JSON. On top of that opcat refuses what it cannot install: no or several
//! ClusterServiceVersions, kinds outside the registry+v1 list, and `apiextensions.k8s.io/v1beta1`
//! CRDs (no longer served by Kubernetes). Every problem found is reported at once.

mod loader;
mod problems;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube::api::DynamicObject;
use serde_json::Value;

use super::kinds::CUSTOM_RESOURCE_DEFINITION;
use crate::api::ClusterServiceVersion;
use loader::{Loader, display_path, list_files};

pub use problems::{LoadError, LoadWarning, ManifestProblem};

/// Directory of the manifests inside a bundle.
pub const MANIFESTS_DIR: &str = "manifests";
/// Directory of the metadata inside a bundle.
pub const METADATA_DIR: &str = "metadata";

/// A registry+v1 bundle read from disk: its ClusterServiceVersion, the other manifests and the
/// metadata files other than the annotations.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// Directory the bundle was read from (for messages).
    pub dir: PathBuf,
    /// File name (inside `manifests/`) of the ClusterServiceVersion.
    pub csv_file: String,
    /// The ClusterServiceVersion.
    pub csv: ClusterServiceVersion,
    /// Every other manifest, by file name.
    pub objects: Vec<BundleObject>,
    /// Files of `metadata/` other than the annotations file (`dependencies.yaml`,
    /// `properties.yaml`, ...), by file name, as parsed JSON. The annotations are read by
    /// `bundle::annotations`.
    pub metadata: BTreeMap<String, Value>,
    /// What was accepted but deserves a mention.
    pub warnings: Vec<LoadWarning>,
}

/// One manifest of the bundle other than the ClusterServiceVersion.
#[derive(Clone, Debug)]
pub struct BundleObject {
    /// File name inside `manifests/`.
    pub file: String,
    /// The object; `types` is always set.
    pub object: DynamicObject,
}

impl BundleObject {
    /// `kind` of the object.
    pub fn kind(&self) -> &str {
        self.object.types.as_ref().map_or("", |t| t.kind.as_str())
    }

    /// `apiVersion` of the object.
    pub fn api_version(&self) -> &str {
        self.object
            .types
            .as_ref()
            .map_or("", |t| t.api_version.as_str())
    }

    /// `metadata.name` of the object (empty when unset, which loading refuses).
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }
}

/// A bundle directory read without stopping at the first refusal: for `opcat bundle validate`,
/// which reports every problem at once.
#[derive(Debug)]
pub struct LoadReport {
    /// The bundle, when exactly one ClusterServiceVersion could be read; its `objects` are the
    /// manifests that were accepted (refused ones are in `problems`).
    pub bundle: Option<Bundle>,
    /// Every problem found (empty: [`Bundle::load`] would succeed).
    pub problems: Vec<ManifestProblem>,
    /// CustomResourceDefinitions refused for their API version (in `problems` too), which the
    /// bundle still ships.
    pub refused_crds: Vec<BundleObject>,
}

impl Bundle {
    /// Reads the bundle in `dir` like [`Bundle::load_layout`], but keeps what could be read
    /// along with every problem.
    pub fn load_report(dir: &Path, manifests: &str, metadata: &str) -> LoadReport {
        let manifests_dir = dir.join(manifests);
        let files = match list_files(&manifests_dir) {
            Ok(files) => files,
            Err(error) => {
                return LoadReport {
                    bundle: None,
                    problems: vec![ManifestProblem::Read {
                        file: display_path(manifests, ""),
                        error,
                    }],
                    refused_crds: Vec::new(),
                };
            }
        };
        Self::loader(dir, manifests, metadata, files).finish_report(dir)
    }

    /// Reads the bundle in `dir` (`manifests/` and, when present, `metadata/`).
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        Self::load_layout(dir, MANIFESTS_DIR, METADATA_DIR)
    }

    /// Reads a bundle whose manifests and metadata live in the given sub-directories of `dir`
    /// (as named by the bundle's `manifests.v1`/`metadata.v1` annotations; `""` is `dir`
    /// itself). A missing metadata directory is not an error here: the annotations are checked
    /// by `bundle::annotations`.
    pub fn load_layout(dir: &Path, manifests: &str, metadata: &str) -> Result<Self, LoadError> {
        let manifests_dir = dir.join(manifests);
        let files = list_files(&manifests_dir).map_err(|source| LoadError::ManifestsDir {
            dir: dir.to_path_buf(),
            path: manifests_dir.clone(),
            source,
        })?;
        Self::loader(dir, manifests, metadata, files).finish(dir)
    }

    /// A loader that has read the manifest `files` and the metadata directory.
    fn loader(
        dir: &Path,
        manifests: &str,
        metadata: &str,
        files: Vec<(String, PathBuf)>,
    ) -> Loader {
        let mut loader = Loader::new(manifests);
        for (name, path) in files {
            loader.manifest(&display_path(manifests, &name), name, &path);
        }
        let metadata_dir = dir.join(metadata);
        if metadata_dir.is_dir() {
            match list_files(&metadata_dir) {
                Ok(files) => {
                    for (name, path) in files {
                        loader.metadata(&display_path(metadata, &name), name, &path);
                    }
                }
                Err(error) => loader.problems.push(ManifestProblem::Read {
                    file: metadata.to_owned(),
                    error,
                }),
            }
        }
        loader
    }

    /// A bundle from manifests a catalog embeds (`olm.bundle.object`, or a registry server's
    /// `Bundle.object`), checked like the files of `manifests/`: `source` names where they come
    /// from in messages, each manifest is named `<index>.json`. Such a bundle has no metadata
    /// files (its properties and dependencies are the catalog's).
    pub fn from_manifests(source: &str, manifests: Vec<Value>) -> Result<Self, LoadError> {
        let mut loader = Loader::new("");
        for (index, manifest) in manifests.into_iter().enumerate() {
            let name = format!("{index}.json");
            loader.document(&name, name.clone(), manifest);
        }
        loader.finish(Path::new(source))
    }

    /// `metadata.name` of the ClusterServiceVersion: the bundle's name.
    pub fn name(&self) -> &str {
        self.csv.metadata.name.as_deref().unwrap_or_default()
    }

    /// The bundle's CustomResourceDefinition manifests.
    pub fn crds(&self) -> impl Iterator<Item = &BundleObject> {
        self.objects
            .iter()
            .filter(|object| object.kind() == CUSTOM_RESOURCE_DEFINITION)
    }

    /// Every entry of the `dependencies` lists of the metadata files (`dependencies.yaml`).
    pub fn dependencies(&self) -> Vec<&Value> {
        self.metadata_list("dependencies")
    }

    /// Every entry of the `properties` lists of the metadata files (`properties.yaml`).
    pub fn properties(&self) -> Vec<&Value> {
        self.metadata_list("properties")
    }

    fn metadata_list(&self, key: &str) -> Vec<&Value> {
        self.metadata
            .values()
            .filter_map(|document| document.get(key)?.as_array())
            .flatten()
            .collect()
    }
}
