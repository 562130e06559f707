//! `metadata/annotations.yaml` of a registry+v1 bundle: the six
//! `operators.operatorframework.io.bundle.*` annotations that also label the bundle image.
//!
//! ```yaml
//! annotations:
//!   operators.operatorframework.io.bundle.mediatype.v1: registry+v1
//!   operators.operatorframework.io.bundle.manifests.v1: manifests/
//!   operators.operatorframework.io.bundle.metadata.v1: metadata/
//!   operators.operatorframework.io.bundle.package.v1: my-operator
//!   operators.operatorframework.io.bundle.channels.v1: stable,fast
//!   operators.operatorframework.io.bundle.channel.default.v1: stable
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `registry+v1` (or `helm`, `plain`).
pub const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// Directory of the manifests, e.g. `manifests/`.
pub const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";
/// Directory of the metadata, e.g. `metadata/`.
pub const METADATA: &str = "operators.operatorframework.io.bundle.metadata.v1";
/// Package name.
pub const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
/// Comma-separated channels.
pub const CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
/// Default channel (optional).
pub const CHANNEL_DEFAULT: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// Path of the annotations file inside a bundle.
pub const ANNOTATIONS_FILE: &str = "metadata/annotations.yaml";

/// The parsed bundle annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleAnnotations {
    /// `mediatype.v1`, e.g. `registry+v1`.
    pub media_type: String,
    /// `manifests.v1`, e.g. `manifests/`.
    pub manifests_dir: String,
    /// `metadata.v1`, e.g. `metadata/`.
    pub metadata_dir: String,
    /// `package.v1`.
    pub package: String,
    /// `channels.v1`, split at commas, trimmed, empty items dropped.
    pub channels: Vec<String>,
    /// `channel.default.v1`, if set and non-empty.
    pub default_channel: Option<String>,
    /// Every annotation in the file (the six above and any others, e.g. metrics/test ones).
    pub all: BTreeMap<String, String>,
}

/// Why the annotations cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum AnnotationsError {
    /// The file cannot be read.
    #[error("cannot read bundle annotations {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Not YAML of the expected shape.
    #[error(
        "bundle annotations {path} are not a YAML map with an \"annotations\" map of strings: {detail}"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The parser's description (annotations are not secret).
        detail: String,
    },
    /// A required annotation is missing or empty.
    #[error("bundle annotations {path} lack {key:?}")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The missing key.
        key: &'static str,
    },
}

impl AnnotationsError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            AnnotationsError::Read { .. } => "io",
            AnnotationsError::Malformed { .. } | AnnotationsError::Missing { .. } => {
                "invalid_bundle"
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct File {
    annotations: BTreeMap<String, serde_json::Value>,
}

/// Scalars become their text (real bundles carry `com.redhat.delivery.operator.bundle: true`);
/// lists and maps are not annotations.
fn scalar_text(value: serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(text) => Some(text),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Null => Some(String::new()),
        _ => None,
    }
}

impl BundleAnnotations {
    /// Reads `metadata/annotations.yaml` of the bundle directory `bundle_dir`.
    pub fn read(bundle_dir: &Path) -> Result<BundleAnnotations, AnnotationsError> {
        let path = bundle_dir.join(ANNOTATIONS_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| AnnotationsError::Read {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path)
    }

    /// Parses the file's text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<BundleAnnotations, AnnotationsError> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| AnnotationsError::Malformed {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        let mut all = BTreeMap::new();
        for (key, value) in file.annotations {
            let text = scalar_text(value).ok_or_else(|| AnnotationsError::Malformed {
                path: path.to_owned(),
                detail: format!("annotation {key:?} is not a scalar"),
            })?;
            all.insert(key, text);
        }
        let required = |key: &'static str| {
            all.get(key)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| AnnotationsError::Missing {
                    path: path.to_owned(),
                    key,
                })
        };
        let channels = required(CHANNELS)?
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(BundleAnnotations {
            media_type: required(MEDIATYPE)?,
            manifests_dir: required(MANIFESTS)?,
            metadata_dir: required(METADATA)?,
            package: required(PACKAGE)?,
            channels,
            default_channel: required(CHANNEL_DEFAULT).ok(),
            all,
        })
    }

    /// The six `operators.operatorframework.io.bundle.*` labels (the default channel only when
    /// set), as they appear on a bundle image.
    pub fn bundle_labels(&self) -> BTreeMap<String, String> {
        [
            MEDIATYPE,
            MANIFESTS,
            METADATA,
            PACKAGE,
            CHANNELS,
            CHANNEL_DEFAULT,
        ]
        .into_iter()
        .filter_map(|key| self.all.get(key).map(|v| (key.to_owned(), v.clone())))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "annotations:\n  \
        operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
        operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
        operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
        operators.operatorframework.io.bundle.package.v1: widgets\n  \
        operators.operatorframework.io.bundle.channels.v1: stable, fast\n  \
        operators.operatorframework.io.bundle.channel.default.v1: stable\n  \
        operators.operatorframework.io.metrics.builder: operator-sdk-v1\n  \
        com.redhat.delivery.operator.bundle: true\n";

    #[test]
    fn parses_the_six_labels() {
        let parsed = BundleAnnotations::parse(GOOD, Path::new("a.yaml")).unwrap();
        assert_eq!(parsed.package, "widgets");
        assert_eq!(parsed.channels, ["stable", "fast"]);
        assert_eq!(parsed.default_channel.as_deref(), Some("stable"));
        assert_eq!(parsed.bundle_labels().len(), 6);
        assert_eq!(parsed.all.len(), 8);
        assert_eq!(parsed.all["com.redhat.delivery.operator.bundle"], "true");
    }

    #[test]
    fn default_channel_is_optional() {
        let text = GOOD.replace(
            "  operators.operatorframework.io.bundle.channel.default.v1: stable\n",
            "",
        );
        let parsed = BundleAnnotations::parse(&text, Path::new("a.yaml")).unwrap();
        assert_eq!(parsed.default_channel, None);
        assert_eq!(parsed.bundle_labels().len(), 5);
    }

    #[test]
    fn missing_package_is_named() {
        let text = GOOD.replace("package.v1: widgets", "package.v1: \"\"");
        let err =
            BundleAnnotations::parse(&text, Path::new("b/metadata/annotations.yaml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bundle annotations b/metadata/annotations.yaml lack \
             \"operators.operatorframework.io.bundle.package.v1\""
        );
    }

    #[test]
    fn wrong_shape_is_malformed() {
        let err =
            BundleAnnotations::parse("annotations: [a, b]\n", Path::new("a.yaml")).unwrap_err();
        assert!(matches!(err, AnnotationsError::Malformed { .. }), "{err}");
    }
}
