//! OCI and Docker schema 2 manifests, indexes and image configs: the subset opcat reads.
//!
//! The top-level `mediaType` field is optional (umoci omits it), so a manifest without one is
//! recognised by its shape: `manifests` makes an index, `config` + `layers` an image manifest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::digest::Digest;

/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker schema 2 manifest.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker schema 2 manifest list.
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// OCI image config.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// Gzip-compressed OCI layer.
pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// Every manifest type opcat accepts, for the `Accept` header (distribution answers 404 to a
/// manifest GET whose `Accept` does not list the stored type).
pub const ACCEPTED_MANIFEST_TYPES: [&str; 4] = [
    OCI_MANIFEST,
    OCI_INDEX,
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
];

/// Largest manifest or config document opcat reads (the registry's own limit is 4 MiB).
pub const MAX_DOCUMENT_BYTES: u64 = 4 << 20;

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type of the referenced content.
    pub media_type: String,
    /// Its digest.
    pub digest: Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Platform, on index entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// Platform of an index entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// e.g. `amd64`.
    pub architecture: String,
    /// e.g. `linux`.
    pub os: String,
}

/// An image manifest (OCI or Docker schema 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageManifest {
    /// The config blob.
    pub config: Descriptor,
    /// The layers, lowest first.
    pub layers: Vec<Descriptor>,
}

/// A parsed manifest document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// A single-platform image.
    Image(ImageManifest),
    /// An index / manifest list.
    Index(Vec<Descriptor>),
}

/// Why a manifest, index or config cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    /// Not the JSON we expect.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// Which document.
        what: &'static str,
        /// serde's description (manifests are public data).
        detail: String,
    },
    /// `schemaVersion` is not 2.
    #[error("unsupported manifest schemaVersion {0} (only 2 is supported)")]
    SchemaVersion(i64),
    /// A media type opcat does not read.
    #[error("unsupported {what} media type {media_type:?}")]
    UnsupportedMediaType {
        /// Which document or blob.
        what: &'static str,
        /// The media type.
        media_type: String,
    },
    /// An index with no linux/amd64 entry and more than one entry.
    #[error("image index has no linux/amd64 entry (it has: {available})")]
    NoPlatform {
        /// The platforms offered.
        available: String,
    },
    /// An index without entries.
    #[error("image index is empty")]
    EmptyIndex,
}

impl ManifestError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            ManifestError::UnsupportedMediaType { .. } | ManifestError::SchemaVersion(_) => {
                "unsupported"
            }
            _ => "invalid_manifest",
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest {
    schema_version: i64,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
}

/// Parses a manifest or index document.
pub fn parse_manifest(bytes: &[u8]) -> Result<Manifest, ManifestError> {
    let raw: RawManifest = serde_json::from_slice(bytes).map_err(|e| ManifestError::Malformed {
        what: "manifest",
        detail: e.to_string(),
    })?;
    if raw.schema_version != 2 {
        return Err(ManifestError::SchemaVersion(raw.schema_version));
    }
    let is_index = match raw.media_type.as_deref() {
        Some(OCI_INDEX | DOCKER_MANIFEST_LIST) => true,
        Some(OCI_MANIFEST | DOCKER_MANIFEST) => false,
        Some(other) => {
            return Err(ManifestError::UnsupportedMediaType {
                what: "manifest",
                media_type: other.to_owned(),
            });
        }
        None => raw.manifests.is_some(),
    };
    let missing = |field: &str| ManifestError::Malformed {
        what: "manifest",
        detail: format!("missing field `{field}`"),
    };
    if is_index {
        return Ok(Manifest::Index(
            raw.manifests.ok_or_else(|| missing("manifests"))?,
        ));
    }
    Ok(Manifest::Image(ImageManifest {
        config: raw.config.ok_or_else(|| missing("config"))?,
        layers: raw.layers.ok_or_else(|| missing("layers"))?,
    }))
}

/// Picks the linux/amd64 entry of an index, or its only entry.
pub fn select_platform(entries: &[Descriptor]) -> Result<&Descriptor, ManifestError> {
    if let [only] = entries {
        return Ok(only);
    }
    if entries.is_empty() {
        return Err(ManifestError::EmptyIndex);
    }
    entries
        .iter()
        .find(|d| {
            d.platform
                .as_ref()
                .is_some_and(|p| p.os == "linux" && p.architecture == "amd64")
        })
        .ok_or_else(|| ManifestError::NoPlatform {
            available: entries
                .iter()
                .map(|d| match &d.platform {
                    Some(p) => format!("{}/{}", p.os, p.architecture),
                    None => "unspecified".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Checks that a layer's media type is a tar (plain or gzip; the content is sniffed anyway).
pub fn check_layer_media_type(media_type: &str) -> Result<(), ManifestError> {
    let tar_like = matches!(
        media_type,
        "application/vnd.oci.image.layer.v1.tar"
            | OCI_LAYER_GZIP
            | "application/vnd.oci.image.layer.nondistributable.v1.tar"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
            | "application/vnd.docker.image.rootfs.diff.tar"
            | "application/vnd.docker.image.rootfs.diff.tar.gzip"
            | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
    );
    if tar_like {
        Ok(())
    } else {
        Err(ManifestError::UnsupportedMediaType {
            what: "layer",
            media_type: media_type.to_owned(),
        })
    }
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(default)]
    config: Option<RawRuntimeConfig>,
}

#[derive(Deserialize)]
struct RawRuntimeConfig {
    #[serde(rename = "Labels", default)]
    labels: Option<BTreeMap<String, String>>,
}

/// Reads the labels of an image config (`config.Labels`; absent means none).
pub fn config_labels(bytes: &[u8]) -> Result<BTreeMap<String, String>, ManifestError> {
    let raw: RawConfig = serde_json::from_slice(bytes).map_err(|e| ManifestError::Malformed {
        what: "image config",
        detail: e.to_string(),
    })?;
    Ok(raw.config.and_then(|c| c.labels).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(media_type: &str, platform: Option<(&str, &str)>) -> String {
        let platform = platform
            .map(|(os, arch)| format!(r#","platform":{{"os":"{os}","architecture":"{arch}"}}"#))
            .unwrap_or_default();
        format!(
            r#"{{"mediaType":"{media_type}","digest":"sha256:{}","size":3{platform}}}"#,
            "a".repeat(64)
        )
    }

    #[test]
    fn manifest_without_media_type_is_recognised_by_shape() {
        let text = format!(
            r#"{{"schemaVersion":2,"config":{},"layers":[{}]}}"#,
            descriptor(OCI_CONFIG, None),
            descriptor(OCI_LAYER_GZIP, None)
        );
        let Manifest::Image(image) = parse_manifest(text.as_bytes()).unwrap() else {
            panic!("not an image manifest");
        };
        assert_eq!(image.layers.len(), 1);
    }

    #[test]
    fn index_selection() {
        let text = format!(
            r#"{{"schemaVersion":2,"mediaType":"{DOCKER_MANIFEST_LIST}","manifests":[{},{}]}}"#,
            descriptor(DOCKER_MANIFEST, Some(("linux", "arm64"))),
            descriptor(DOCKER_MANIFEST, Some(("linux", "amd64")))
        );
        let Manifest::Index(entries) = parse_manifest(text.as_bytes()).unwrap() else {
            panic!("not an index");
        };
        let chosen = select_platform(&entries).unwrap();
        assert_eq!(chosen.platform.as_ref().unwrap().architecture, "amd64");
        let err = select_platform(&[entries[0].clone(), entries[0].clone()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "image index has no linux/amd64 entry (it has: linux/arm64, linux/arm64)"
        );
        assert!(select_platform(&entries[..1]).is_ok());
    }

    #[test]
    fn rejects_other_schemas_and_types() {
        assert!(matches!(
            parse_manifest(br#"{"schemaVersion":1}"#),
            Err(ManifestError::SchemaVersion(1))
        ));
        let text = r#"{"schemaVersion":2,"mediaType":"application/vnd.cncf.helm.config"}"#;
        assert!(parse_manifest(text.as_bytes()).is_err());
        assert!(check_layer_media_type("application/vnd.oci.image.layer.v1.tar+zstd").is_err());
        assert!(check_layer_media_type(OCI_LAYER_GZIP).is_ok());
    }

    #[test]
    fn labels_from_config() {
        let labels = config_labels(br#"{"config":{"Labels":{"a":"b"}},"os":"linux"}"#).unwrap();
        assert_eq!(labels["a"], "b");
        assert!(config_labels(br#"{"os":"linux"}"#).unwrap().is_empty());
        assert!(
            config_labels(br#"{"config":{"Labels":null}}"#)
                .unwrap()
                .is_empty()
        );
    }
}
