//! What loading reports: warnings for what it accepted, errors for what it refused.

use std::fmt;
use std::path::PathBuf;

use super::MANIFESTS_DIR;
use crate::bundle::kinds::{self, CRD_API_VERSION, CRD_API_VERSION_V1BETA1};

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
