//! `--pull-secret FILE`: a Secret manifest (YAML or JSON) or a raw dockerconfig JSON file.
//!
//! - A document with `kind: Secret` is a Secret manifest; `data` (base64) and `stringData` are
//!   read, `stringData` winning as on the API server.
//! - A JSON object with an `auths` object is a raw `.dockerconfigjson` (e.g. a copy of
//!   `~/.docker/config.json`); any other JSON object is a raw legacy `.dockercfg`.
//!
//! Parser error texts are never shown: YAML and JSON errors can quote the input, which here is
//! secret. Only positions and our own descriptions are reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use super::credentials::{ConfigFormat, DOCKER_CONFIG_JSON_TYPE, DOCKERCFG_TYPE};
use super::secret::PullSecret;

/// Why a pull-secret file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// The file cannot be read.
    #[error("cannot read pull secret file {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Neither JSON nor YAML.
    #[error("pull secret file {path} is neither JSON nor YAML{}", location_suffix(.location))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Line and column of the syntax error, if known.
        location: Option<(u64, u64)>,
    },
    /// A Secret manifest with a field of the wrong shape.
    #[error("pull secret file {path}: {problem}")]
    BadManifest {
        /// The file.
        path: PathBuf,
        /// What is wrong (our own words, no values).
        problem: String,
    },
}

impl SecretFileError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            SecretFileError::Read { .. } => "io",
            SecretFileError::Syntax { .. } | SecretFileError::BadManifest { .. } => {
                "malformed_pull_secret"
            }
        }
    }
}

fn location_suffix(location: &Option<(u64, u64)>) -> String {
    match location {
        Some((line, column)) => format!(" (syntax error at line {line}, column {column})"),
        None => String::new(),
    }
}

/// Reads a pull secret from a file. The secret's name is the manifest's `metadata.name`, or
/// the file path for raw dockerconfig files.
pub fn read_pull_secret_file(path: &Path) -> Result<PullSecret, SecretFileError> {
    let bytes = std::fs::read(path).map_err(|source| SecretFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    pull_secret_from_bytes(path, &bytes)
}

/// Interprets file contents; `path` is used for the name and in errors.
pub fn pull_secret_from_bytes(path: &Path, bytes: &[u8]) -> Result<PullSecret, SecretFileError> {
    let document: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(_) => serde_saphyr::from_slice(bytes).map_err(|e| SecretFileError::Syntax {
            path: path.to_owned(),
            location: e.location().map(|l| (l.line(), l.column())),
        })?,
    };
    let bad = |problem: &str| SecretFileError::BadManifest {
        path: path.to_owned(),
        problem: problem.to_owned(),
    };
    let Value::Object(top) = &document else {
        return Err(bad(
            "expected a Secret manifest or a dockerconfig JSON object",
        ));
    };
    if top.get("kind").and_then(Value::as_str) == Some("Secret") {
        return secret_from_manifest(path, &document);
    }
    let format = if top.get("auths").is_some_and(Value::is_object) {
        ConfigFormat::DockerConfigJson
    } else {
        ConfigFormat::DockerCfg
    };
    let (type_, key) = match format {
        ConfigFormat::DockerConfigJson => (DOCKER_CONFIG_JSON_TYPE, ".dockerconfigjson"),
        ConfigFormat::DockerCfg => (DOCKERCFG_TYPE, ".dockercfg"),
    };
    // Re-serialise what was parsed (YAML input becomes JSON) so that `PullSecret` holds JSON.
    let json = serde_json::to_vec(&document).map_err(|_| bad("cannot re-encode the document"))?;
    Ok(PullSecret {
        name: path.display().to_string(),
        type_: type_.to_owned(),
        data: BTreeMap::from([(key.to_owned(), json)]),
    })
}

fn secret_from_manifest(path: &Path, document: &Value) -> Result<PullSecret, SecretFileError> {
    let bad = |problem: String| SecretFileError::BadManifest {
        path: path.to_owned(),
        problem,
    };
    let name = document
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map_or_else(|| path.display().to_string(), str::to_owned);
    let type_ = match document.get("type") {
        None => "Opaque".to_owned(),
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(bad(format!("Secret {name:?}: \"type\" must be a string"))),
    };
    let mut data = BTreeMap::new();
    if let Some(entries) = non_null(document.get("data")) {
        let Value::Object(entries) = entries else {
            return Err(bad(format!("Secret {name:?}: \"data\" must be a map")));
        };
        for (key, value) in entries {
            let decoded = value
                .as_str()
                .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "Secret {name:?}: data key {key:?} is not a base64 string"
                    ))
                })?;
            data.insert(key.clone(), decoded);
        }
    }
    if let Some(entries) = non_null(document.get("stringData")) {
        let Value::Object(entries) = entries else {
            return Err(bad(format!(
                "Secret {name:?}: \"stringData\" must be a map"
            )));
        };
        for (key, value) in entries {
            let text = value.as_str().ok_or_else(|| {
                bad(format!(
                    "Secret {name:?}: stringData key {key:?} is not a string"
                ))
            })?;
            data.insert(key.clone(), text.as_bytes().to_vec());
        }
    }
    Ok(PullSecret { name, type_, data })
}

fn non_null(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<PullSecret, SecretFileError> {
        pull_secret_from_bytes(Path::new("secret.yaml"), text.as_bytes())
    }

    #[test]
    fn secret_manifest_in_yaml() {
        // {"auths":{"r.io":{"auth":"dTpw"}}}
        let secret = read(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\n\
             type: kubernetes.io/dockerconfigjson\ndata:\n  \
             .dockerconfigjson: eyJhdXRocyI6eyJyLmlvIjp7ImF1dGgiOiJkVHB3In19fQ==\n",
        )
        .unwrap();
        assert_eq!(secret.name, "regcred");
        assert_eq!(secret.parse().unwrap().entries[0].key, "r.io");
    }

    #[test]
    fn secret_manifest_with_string_data() {
        let secret = read(
            r#"{"kind":"Secret","metadata":{"name":"legacy"},"type":"kubernetes.io/dockercfg",
               "stringData":{".dockercfg":"{\"r.io\":{\"username\":\"u\",\"password\":\"p\"}}"}}"#,
        )
        .unwrap();
        assert_eq!(secret.parse().unwrap().entries.len(), 1);
    }

    #[test]
    fn raw_files_pick_their_format() {
        let json = read(r#"{"auths":{"r.io":{"auth":"dTpw"}},"credsStore":"desktop"}"#).unwrap();
        assert_eq!(json.type_, DOCKER_CONFIG_JSON_TYPE);
        assert_eq!(json.name, "secret.yaml");
        let cfg = read(r#"{"r.io":{"auth":"dTpw"}}"#).unwrap();
        assert_eq!(cfg.type_, DOCKERCFG_TYPE);
        assert_eq!(cfg.parse().unwrap().entries.len(), 1);
    }

    #[test]
    fn errors_do_not_quote_the_file() {
        let err = read("kind: Secret\ndata:\n  .dockerconfigjson: 'hunter2 not base64!'\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a base64 string"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        let err = read("{{{ hunter2: [").unwrap_err().to_string();
        assert!(err.contains("neither JSON nor YAML"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}
