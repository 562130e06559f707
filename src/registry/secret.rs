//! Pull secrets as opcat receives them (a Kubernetes `Secret`, or a file read by
//! `secret_file`): name, type and data, and the kubelet's rule that the type decides which data
//! key holds the dockerconfig.

use std::collections::BTreeMap;
use std::fmt;

use super::credentials::{
    ConfigError, ConfigFormat, DOCKER_CONFIG_JSON_TYPE, DOCKERCFG_TYPE, ParsedConfig,
    UnusableEntry, parse_config,
};

/// A pull secret as opcat receives it: a name, a type and raw data.
///
/// Build it from a Kubernetes `Secret` with `From`, or from a file with
/// [`super::secret_file::read_pull_secret_file`]. `Debug` shows the data keys, not the data.
#[derive(Clone, PartialEq, Eq)]
pub struct PullSecret {
    /// Where it came from: the Secret's name, or the file path.
    pub name: String,
    /// The Secret type (`kubernetes.io/dockerconfigjson` or `kubernetes.io/dockercfg`).
    pub type_: String,
    /// The Secret's data (decoded bytes).
    pub data: BTreeMap<String, Vec<u8>>,
}

impl fmt::Debug for PullSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullSecret")
            .field("name", &self.name)
            .field("type_", &self.type_)
            .field("data_keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl From<&k8s_openapi::api::core::v1::Secret> for PullSecret {
    fn from(secret: &k8s_openapi::api::core::v1::Secret) -> Self {
        let mut data: BTreeMap<String, Vec<u8>> = secret
            .data
            .iter()
            .flatten()
            .map(|(key, value)| (key.clone(), value.0.clone()))
            .collect();
        // stringData is write-only on the server, but objects read from files may carry it;
        // the API server lets it win over data.
        for (key, value) in secret.string_data.iter().flatten() {
            data.insert(key.clone(), value.clone().into_bytes());
        }
        PullSecret {
            name: secret.metadata.name.clone().unwrap_or_default(),
            type_: secret.type_.clone().unwrap_or_default(),
            data,
        }
    }
}

/// Why a pull secret gives no (or fewer) credentials. Names the secret; never shows data.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    /// The type is neither dockerconfigjson nor dockercfg.
    #[error(
        "pull secret {secret:?} has type {type_:?}; expected {DOCKER_CONFIG_JSON_TYPE:?} or {DOCKERCFG_TYPE:?}"
    )]
    WrongType {
        /// The secret name.
        secret: String,
        /// Its type.
        type_: String,
    },
    /// The data key the type requires is missing or empty.
    #[error("pull secret {secret:?} of type {type_:?} has no data key {key:?}")]
    MissingKey {
        /// The secret name.
        secret: String,
        /// Its type.
        type_: String,
        /// The missing key.
        key: &'static str,
    },
    /// The document is malformed.
    #[error("pull secret {secret:?}: {source}")]
    Malformed {
        /// The secret name.
        secret: String,
        /// What is wrong.
        source: ConfigError,
    },
    /// One entry cannot be used; the other entries of the secret are kept.
    #[error("pull secret {secret:?}: {entry}")]
    UnusableEntry {
        /// The secret name.
        secret: String,
        /// The entry and why.
        entry: UnusableEntry,
    },
}

impl SecretError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            SecretError::WrongType { .. } => "wrong_secret_type",
            SecretError::MissingKey { .. } | SecretError::Malformed { .. } => {
                "malformed_pull_secret"
            }
            SecretError::UnusableEntry { .. } => "unusable_credential",
        }
    }

    /// The name of the secret this error is about.
    pub fn secret(&self) -> &str {
        match self {
            SecretError::WrongType { secret, .. }
            | SecretError::MissingKey { secret, .. }
            | SecretError::Malformed { secret, .. }
            | SecretError::UnusableEntry { secret, .. } => secret,
        }
    }
}

impl PullSecret {
    /// Parses the secret's dockerconfig according to its type.
    pub fn parse(&self) -> Result<ParsedConfig, SecretError> {
        let format = match self.type_.as_str() {
            DOCKER_CONFIG_JSON_TYPE => ConfigFormat::DockerConfigJson,
            DOCKERCFG_TYPE => ConfigFormat::DockerCfg,
            _ => {
                return Err(SecretError::WrongType {
                    secret: self.name.clone(),
                    type_: self.type_.clone(),
                });
            }
        };
        let bytes = self
            .data
            .get(format.data_key())
            .filter(|bytes| !bytes.is_empty())
            .ok_or_else(|| SecretError::MissingKey {
                secret: self.name.clone(),
                type_: self.type_.clone(),
                key: format.data_key(),
            })?;
        parse_config(bytes, format).map_err(|source| SecretError::Malformed {
            secret: self.name.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::credentials::DOCKER_CONFIG_JSON_KEY;

    #[test]
    fn secret_type_selects_the_data_key() {
        let mut secret = PullSecret {
            name: "regcred".into(),
            type_: DOCKERCFG_TYPE.into(),
            data: BTreeMap::from([(
                DOCKER_CONFIG_JSON_KEY.to_owned(),
                br#"{"auths":{"r.io":{"auth":"dTpw"}}}"#.to_vec(),
            )]),
        };
        let err = secret.parse().unwrap_err();
        assert_eq!(
            err.to_string(),
            "pull secret \"regcred\" of type \"kubernetes.io/dockercfg\" has no data key \".dockercfg\""
        );
        secret.type_ = "Opaque".into();
        assert!(
            secret
                .parse()
                .unwrap_err()
                .to_string()
                .contains("has type \"Opaque\"")
        );
        secret.type_ = DOCKER_CONFIG_JSON_TYPE.into();
        assert_eq!(secret.parse().unwrap().entries.len(), 1);
    }

    #[test]
    fn debug_shows_keys_not_data() {
        let secret = PullSecret {
            name: "s".into(),
            type_: DOCKER_CONFIG_JSON_TYPE.into(),
            data: BTreeMap::from([(".dockerconfigjson".to_owned(), b"hunter2".to_vec())]),
        };
        let shown = format!("{secret:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains(".dockerconfigjson"),
            "{shown}"
        );
    }
}
