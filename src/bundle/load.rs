//! Loading a registry+v1 bundle directory (`manifests/` + `metadata/`) into a [`Bundle`]. This is
//! the only I/O of the `bundle` module: it reads files, and everything after it is pure.
//!
//! The rules follow `opm` (`operator-registry: pkg/registry/parse.go`, `decode.go`):
//! `manifests/` is read flat (sub-directories and dot-files are skipped), one object per file
//! (a file with several YAML documents contributes its first one; the rest are ignored with a
//! warning), YAML or JSON. On top of that opcat refuses what it cannot install: no or several
//! ClusterServiceVersions, kinds outside the registry+v1 list, and `apiextensions.k8s.io/v1beta1`
//! CRDs (no longer served by Kubernetes). Every problem found is reported at once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use kube::api::DynamicObject;
use serde_json::Value;

use super::document::{first_document, quantities_to_strings};
use super::kinds::{
    self, CLUSTER_SERVICE_VERSION, CRD_API_VERSION, CRD_API_VERSION_V1BETA1,
    CUSTOM_RESOURCE_DEFINITION,
};
use crate::api::ClusterServiceVersion;

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

/// Something loading accepted but reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadWarning {
    /// A manifest file held more than one YAML document; only the first was used.
    ExtraDocuments {
        /// File name inside `manifests/`.
        file: String,
        /// How many documents were ignored.
        ignored: usize,
    },
    /// A manifest had no `apiVersion`; the one OLM uses for its kind was filled in.
    DefaultedApiVersion {
        /// File name inside `manifests/`.
        file: String,
        /// The object's kind.
        kind: String,
        /// The API version filled in.
        api_version: &'static str,
    },
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DefaultedApiVersion {
                file,
                kind,
                api_version,
            } => write!(
                f,
                "manifests/{file} has no apiVersion; using {api_version}, as OLM does for {kind}"
            ),
            Self::ExtraDocuments { file, ignored } => write!(
                f,
                "manifests/{file} holds {} YAML documents; only the first is used, as opm does",
                ignored + 1
            ),
        }
    }
}

/// Why a bundle directory cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The manifests directory cannot be listed.
    #[error("bundle {}: cannot list {}", dir.display(), path.display())]
    ManifestsDir {
        /// The bundle directory.
        dir: PathBuf,
        /// The manifests directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The bundle's content is not a registry+v1 bundle opcat can install.
    #[error("bundle {} is not a valid registry+v1 bundle: {}", dir.display(), join(problems))]
    Invalid {
        /// The bundle directory.
        dir: PathBuf,
        /// Every problem found, in file order.
        problems: Vec<ManifestProblem>,
    },
}

impl LoadError {
    /// The content problems (empty when the directory could not be read at all).
    pub fn problems(&self) -> &[ManifestProblem] {
        match self {
            Self::ManifestsDir { .. } => &[],
            Self::Invalid { problems, .. } => problems,
        }
    }

    /// A short CamelCase name of the error, for metric labels and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ManifestsDir { .. } => "BundleUnreadable",
            Self::Invalid { .. } => "BundleInvalid",
        }
    }
}

/// One problem in a bundle's files. File names are relative to the bundle directory.
#[derive(Debug, thiserror::Error)]
pub enum ManifestProblem {
    /// A file cannot be read.
    #[error("cannot read {file}: {error}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error (shown in the message; this list is the error's content).
        error: std::io::Error,
    },
    /// A file is neither YAML nor JSON.
    #[error("{file} is not valid YAML or JSON: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A manifest holds no object.
    #[error("{file} holds no object")]
    Empty {
        /// The file.
        file: String,
    },
    /// A manifest is not a Kubernetes object (no `apiVersion`/`kind`/`metadata.name`, or
    /// metadata of the wrong shape).
    #[error("{file} is not a Kubernetes object: {message}")]
    NotAnObject {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The bundle has no ClusterServiceVersion.
    #[error("no ClusterServiceVersion in {MANIFESTS_DIR}/")]
    NoCsv,
    /// The bundle has more than one ClusterServiceVersion.
    #[error("more than one ClusterServiceVersion: {}", files.join(", "))]
    SeveralCsvs {
        /// The files holding one.
        files: Vec<String>,
    },
    /// The ClusterServiceVersion does not match the ClusterServiceVersion schema.
    #[error("ClusterServiceVersion in {file} is invalid: {message}")]
    InvalidCsv {
        /// The file.
        file: String,
        /// The field and what is wrong with it.
        message: String,
    },
    /// A kind registry+v1 bundles may not contain.
    #[error(
        "{file}: kind {kind} ({api_version}) is not allowed in a registry+v1 bundle; allowed kinds: {}",
        kinds::allowed_list()
    )]
    UnsupportedKind {
        /// The file.
        file: String,
        /// Its kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// A CustomResourceDefinition of the removed `v1beta1` API.
    #[error(
        "{file}: CustomResourceDefinition {name} uses {CRD_API_VERSION_V1BETA1}, which Kubernetes \
         no longer serves (since 1.22); the bundle must ship {CRD_API_VERSION} CRDs"
    )]
    CrdV1beta1 {
        /// The file.
        file: String,
        /// The CRD's name.
        name: String,
    },
    /// A CustomResourceDefinition of an API version other than `apiextensions.k8s.io/v1`.
    #[error(
        "{file}: CustomResourceDefinition {name} has apiVersion {api_version}; expected {CRD_API_VERSION}"
    )]
    CrdApiVersion {
        /// The file.
        file: String,
        /// The CRD's name.
        name: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// Two manifests describe the same object.
    #[error("{kind} {name} is defined twice: {}", files.join(", "))]
    Duplicate {
        /// Kind of the object.
        kind: String,
        /// Name of the object.
        name: String,
        /// The files.
        files: Vec<String>,
    },
}

impl ManifestProblem {
    /// A short CamelCase name of the problem, for metric labels and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Read { .. } => "Unreadable",
            Self::Syntax { .. } => "Syntax",
            Self::Empty { .. } => "Empty",
            Self::NotAnObject { .. } => "NotAnObject",
            Self::NoCsv => "NoClusterServiceVersion",
            Self::SeveralCsvs { .. } => "SeveralClusterServiceVersions",
            Self::InvalidCsv { .. } => "InvalidClusterServiceVersion",
            Self::UnsupportedKind { .. } => "UnsupportedKind",
            Self::CrdV1beta1 { .. } => "CrdV1beta1",
            Self::CrdApiVersion { .. } => "CrdApiVersion",
            Self::Duplicate { .. } => "Duplicate",
        }
    }
}

fn join(problems: &[ManifestProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Bundle {
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
        let mut loader = Loader {
            manifests: manifests.to_owned(),
            ..Loader::default()
        };
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
        loader.finish(dir)
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

/// Collects the manifests and problems of one bundle.
#[derive(Default)]
struct Loader {
    /// The manifests directory, relative to the bundle directory.
    manifests: String,
    /// (shown path, file name, document) of each ClusterServiceVersion.
    csvs: Vec<(String, String, Value)>,
    objects: Vec<BundleObject>,
    metadata: BTreeMap<String, Value>,
    warnings: Vec<LoadWarning>,
    problems: Vec<ManifestProblem>,
}

impl Loader {
    fn manifest(&mut self, shown: &str, name: String, path: &Path) {
        let Some(mut value) = self.read_document(shown, &name, path) else {
            return;
        };
        self.default_api_version(&name, &mut value);
        let object: DynamicObject = match serde_path_to_error::deserialize(&value) {
            Ok(object) => object,
            Err(error) => {
                return self.problems.push(ManifestProblem::NotAnObject {
                    file: shown.to_owned(),
                    message: error.to_string(),
                });
            }
        };
        let (api_version, kind) = match &object.types {
            Some(types) if !types.kind.is_empty() && !types.api_version.is_empty() => {
                (types.api_version.clone(), types.kind.clone())
            }
            _ => {
                return self.problems.push(ManifestProblem::NotAnObject {
                    file: shown.to_owned(),
                    message: "apiVersion and kind are required".to_owned(),
                });
            }
        };
        let object_name = object.metadata.name.clone().unwrap_or_default();
        if object_name.is_empty() {
            return self.problems.push(ManifestProblem::NotAnObject {
                file: shown.to_owned(),
                message: format!("{kind} has no metadata.name"),
            });
        }
        if kind == CLUSTER_SERVICE_VERSION {
            return self.csvs.push((shown.to_owned(), name, value));
        }
        if !kinds::is_allowed(&kind) {
            return self.problems.push(ManifestProblem::UnsupportedKind {
                file: shown.to_owned(),
                kind,
                api_version,
            });
        }
        if kind == CUSTOM_RESOURCE_DEFINITION && api_version != CRD_API_VERSION {
            let file = shown.to_owned();
            return self
                .problems
                .push(if api_version == CRD_API_VERSION_V1BETA1 {
                    ManifestProblem::CrdV1beta1 {
                        file,
                        name: object_name,
                    }
                } else {
                    ManifestProblem::CrdApiVersion {
                        file,
                        name: object_name,
                        api_version,
                    }
                });
        }
        self.objects.push(BundleObject { file: name, object });
    }

    /// Fills in a missing `apiVersion` for the kinds OLM creates with typed clients.
    fn default_api_version(&mut self, name: &str, value: &mut Value) {
        let Value::Object(fields) = value else {
            return;
        };
        if fields.get("apiVersion").is_some_and(|v| !v.is_null()) {
            return;
        }
        let Some(kind) = fields
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        if let Some(api_version) = kinds::typed_client_api_version(&kind) {
            fields.insert("apiVersion".to_owned(), Value::from(api_version));
            self.warnings.push(LoadWarning::DefaultedApiVersion {
                file: name.to_owned(),
                kind,
                api_version,
            });
        }
    }

    fn metadata(&mut self, shown: &str, name: String, path: &Path) {
        let Some(value) = self.read_document(shown, &name, path) else {
            return;
        };
        // The annotations file (whatever its name) is `bundle::annotations`' business.
        if value.get("annotations").is_none() {
            self.metadata.insert(name, value);
        }
    }

    /// The first document of a file; problems and warnings are recorded.
    fn read_document(&mut self, shown: &str, name: &str, path: &Path) -> Option<Value> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                self.problems.push(ManifestProblem::Read {
                    file: shown.to_owned(),
                    error,
                });
                return None;
            }
        };
        match first_document(&text) {
            Ok(document) => {
                if document.ignored > 0 {
                    self.warnings.push(LoadWarning::ExtraDocuments {
                        file: name.to_owned(),
                        ignored: document.ignored,
                    });
                }
                if document.value.is_none() {
                    self.problems.push(ManifestProblem::Empty {
                        file: shown.to_owned(),
                    });
                }
                document.value
            }
            Err(message) => {
                self.problems.push(ManifestProblem::Syntax {
                    file: shown.to_owned(),
                    message,
                });
                None
            }
        }
    }

    fn finish(mut self, dir: &Path) -> Result<Bundle, LoadError> {
        self.check_duplicates();
        let csv = match self.csvs.len() {
            0 => {
                self.problems.push(ManifestProblem::NoCsv);
                None
            }
            1 => self.csvs.pop().and_then(|(shown, name, value)| {
                let csv = parse_csv(&shown, value)
                    .map_err(|problem| self.problems.push(problem))
                    .ok()?;
                Some((name, csv))
            }),
            _ => {
                self.problems.push(ManifestProblem::SeveralCsvs {
                    files: self.csvs.iter().map(|(shown, ..)| shown.clone()).collect(),
                });
                None
            }
        };
        match csv {
            Some((csv_file, csv)) if self.problems.is_empty() => Ok(Bundle {
                dir: dir.to_path_buf(),
                csv_file,
                csv,
                objects: self.objects,
                metadata: self.metadata,
                warnings: self.warnings,
            }),
            _ => Err(LoadError::Invalid {
                dir: dir.to_path_buf(),
                problems: self.problems,
            }),
        }
    }

    fn check_duplicates(&mut self) {
        let mut seen: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
        for object in &self.objects {
            seen.entry((object.kind(), object.name()))
                .or_default()
                .push(display_path(&self.manifests, &object.file));
        }
        let duplicates = seen
            .into_iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|((kind, name), files)| ManifestProblem::Duplicate {
                kind: kind.to_owned(),
                name: name.to_owned(),
                files,
            })
            .collect::<Vec<_>>();
        self.problems.extend(duplicates);
    }
}

fn parse_csv(file: &str, mut value: Value) -> Result<ClusterServiceVersion, ManifestProblem> {
    quantities_to_strings(&mut value);
    serde_path_to_error::deserialize(value).map_err(|error| ManifestProblem::InvalidCsv {
        file: file.to_owned(),
        message: error.to_string(),
    })
}

/// Regular files of `dir` (following links), sorted by name; sub-directories and dot-files are
/// skipped, as opm does.
fn list_files(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || path.is_dir() {
            continue;
        }
        files.push((name, path));
    }
    files.sort();
    Ok(files)
}

/// `manifests/<name>` for messages (`<name>` when the directory is the bundle root).
fn display_path(dir: &str, name: &str) -> String {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() || dir == "." {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}
