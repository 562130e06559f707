//! Kubernetes pull secrets: dockerconfig parsing the way the kubelet reads it, and credential
//! types that never print their contents.
//!
//! Kubelet semantics (kubernetes `pkg/credentialprovider/config.go`, `secrets/secrets.go`):
//! - `kubernetes.io/dockerconfigjson` secrets carry `.dockerconfigjson` = `{"auths": {KEY: ENTRY}}`;
//!   `kubernetes.io/dockercfg` secrets carry `.dockercfg` = `{KEY: ENTRY}`. The type decides
//!   which key is read.
//! - An entry's `auth` (base64 `user:pass`, padded or not, split at the first `:`) wins over
//!   `username`/`password`. `email` is ignored, and so are `identitytoken`/`registrytoken`: an
//!   entry that has nothing else cannot pull, and we say so instead of silently pulling
//!   anonymously.
//! - A syntactically broken entry makes the whole secret unreadable (the kubelet's JSON decode
//!   fails as a whole).
//!
//! Error messages name the secret, the registry key and the field; they never contain values.
//! serde error texts are not passed through because they can quote the input.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde_json::Value;

/// Secret type of `.dockerconfigjson` pull secrets.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// Secret type of legacy `.dockercfg` pull secrets.
pub const DOCKERCFG_TYPE: &str = "kubernetes.io/dockercfg";
/// Data key of `kubernetes.io/dockerconfigjson` secrets.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";
/// Data key of `kubernetes.io/dockercfg` secrets.
pub const DOCKERCFG_KEY: &str = ".dockercfg";

/// A username/password pair for one registry. `Debug` and `Display` never show either part.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    username: String,
    password: String,
}

impl Credential {
    /// A credential from its parts.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Credential {
            username: username.into(),
            password: password.into(),
        }
    }

    /// The user name (secret data: do not log it).
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The password (secret data: do not log it).
    pub fn password(&self) -> &str {
        &self.password
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential { username: <redacted>, password: <redacted> }")
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted credential>")
    }
}

/// The two dockerconfig layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// `{"auths": {...}}` (`kubernetes.io/dockerconfigjson`, `~/.docker/config.json`).
    DockerConfigJson,
    /// `{host: entry}` (`kubernetes.io/dockercfg`, legacy `~/.dockercfg`).
    DockerCfg,
}

impl ConfigFormat {
    /// The secret data key this format is stored under.
    pub fn data_key(self) -> &'static str {
        match self {
            ConfigFormat::DockerConfigJson => DOCKER_CONFIG_JSON_KEY,
            ConfigFormat::DockerCfg => DOCKERCFG_KEY,
        }
    }
}

/// One usable registry entry of a dockerconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The registry key exactly as written in the config (e.g. `https://index.docker.io/v1/`).
    pub key: String,
    /// The credential for that key.
    pub credential: Credential,
}

/// A parsed dockerconfig: usable entries plus entries that hold no pull credential.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedConfig {
    /// Entries with a username/password (from `auth` or the separate fields).
    pub entries: Vec<ConfigEntry>,
    /// Entries that parse but cannot be used to pull, with the reason.
    pub unusable: Vec<UnusableEntry>,
}

/// An entry that parses but carries no pull credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusableEntry {
    /// The registry key as written.
    pub key: String,
    /// Why it cannot be used.
    pub reason: Unusable,
}

/// Why an entry cannot be used to pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Only `identitytoken` and/or `registrytoken` are set.
    TokenOnly,
    /// No `auth`, `username` or `password` at all.
    Empty,
}

impl fmt::Display for UnusableEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            Unusable::TokenOnly => write!(
                f,
                "registry entry {:?} has only an identitytoken/registrytoken; tokens are not usable \
                 as pull credentials (the kubelet ignores them): add \"auth\" or \"username\"/\"password\"",
                self.key
            ),
            Unusable::Empty => write!(
                f,
                "registry entry {:?} has no \"auth\", \"username\" or \"password\"",
                self.key
            ),
        }
    }
}

/// Why a dockerconfig document cannot be read. Never contains secret values.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Not JSON at all.
    #[error("{format} is not valid JSON (syntax error at line {line}, column {column})", format = .format.data_key())]
    NotJson {
        /// Which layout was expected.
        format: ConfigFormat,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The document is not a JSON object.
    #[error("{} must be a JSON object", .0.data_key())]
    NotAnObject(ConfigFormat),
    /// `.dockerconfigjson` has no `auths` object.
    #[error(
        ".dockerconfigjson has no \"auths\" object (expected {{\"auths\": {{\"registry\": {{\"auth\": \"...\"}}}}}})"
    )]
    MissingAuths,
    /// A registry entry is not an object.
    #[error("registry entry {key:?} must be a JSON object")]
    EntryNotObject {
        /// The registry key.
        key: String,
    },
    /// A field has a non-string value.
    #[error("field {field:?} of registry entry {key:?} must be a string")]
    FieldNotString {
        /// The registry key.
        key: String,
        /// The field name.
        field: &'static str,
    },
    /// `auth` is not base64.
    #[error("field \"auth\" of registry entry {key:?} is not valid base64")]
    AuthNotBase64 {
        /// The registry key.
        key: String,
    },
    /// `auth` does not decode to `user:password`.
    #[error("field \"auth\" of registry entry {key:?} does not decode to \"username:password\"")]
    AuthNotUserPass {
        /// The registry key.
        key: String,
    },
    /// No entries at all.
    #[error("{} lists no registries", .0.data_key())]
    NoEntries(ConfigFormat),
}

impl ConfigError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        "malformed_pull_secret"
    }
}

const STRING_FIELDS: [&str; 6] = [
    "auth",
    "username",
    "password",
    "email",
    "identitytoken",
    "registrytoken",
];

/// Parses a dockerconfig document in the given layout.
pub fn parse_config(bytes: &[u8], format: ConfigFormat) -> Result<ParsedConfig, ConfigError> {
    let document: Value = serde_json::from_slice(bytes).map_err(|e| ConfigError::NotJson {
        format,
        line: e.line(),
        column: e.column(),
    })?;
    parse_config_value(&document, format)
}

/// Parses an already-decoded dockerconfig document.
pub fn parse_config_value(
    document: &Value,
    format: ConfigFormat,
) -> Result<ParsedConfig, ConfigError> {
    let Value::Object(top) = document else {
        return Err(ConfigError::NotAnObject(format));
    };
    let registries = match format {
        ConfigFormat::DockerConfigJson => match top.get("auths") {
            Some(Value::Object(auths)) => auths,
            _ => return Err(ConfigError::MissingAuths),
        },
        ConfigFormat::DockerCfg => top,
    };
    if registries.is_empty() {
        return Err(ConfigError::NoEntries(format));
    }
    let mut parsed = ParsedConfig::default();
    for (key, entry) in registries {
        match parse_entry(key, entry)? {
            Ok(credential) => parsed.entries.push(ConfigEntry {
                key: key.clone(),
                credential,
            }),
            Err(reason) => parsed.unusable.push(UnusableEntry {
                key: key.clone(),
                reason,
            }),
        }
    }
    Ok(parsed)
}

fn parse_entry(key: &str, entry: &Value) -> Result<Result<Credential, Unusable>, ConfigError> {
    let Value::Object(fields) = entry else {
        return Err(ConfigError::EntryNotObject {
            key: key.to_owned(),
        });
    };
    let mut strings: BTreeMap<&str, &str> = BTreeMap::new();
    for field in STRING_FIELDS {
        match fields.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                strings.insert(field, text);
            }
            Some(_) => {
                return Err(ConfigError::FieldNotString {
                    key: key.to_owned(),
                    field,
                });
            }
        }
    }
    let get = |field: &str| strings.get(field).copied().unwrap_or_default();
    if !get("auth").is_empty() {
        return decode_auth(key, get("auth")).map(Ok);
    }
    if !get("username").is_empty() || !get("password").is_empty() {
        return Ok(Ok(Credential::new(get("username"), get("password"))));
    }
    if !get("identitytoken").is_empty() || !get("registrytoken").is_empty() {
        return Ok(Err(Unusable::TokenOnly));
    }
    Ok(Err(Unusable::Empty))
}

/// Decodes an `auth` field: base64 (padded or not) of `user:password`, split at the first `:`.
fn decode_auth(key: &str, auth: &str) -> Result<Credential, ConfigError> {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let decoded = engine
        .decode(auth)
        .map_err(|_| ConfigError::AuthNotBase64 {
            key: key.to_owned(),
        })?;
    let text = String::from_utf8(decoded).map_err(|_| ConfigError::AuthNotUserPass {
        key: key.to_owned(),
    })?;
    let (username, password) =
        text.split_once(':')
            .ok_or_else(|| ConfigError::AuthNotUserPass {
                key: key.to_owned(),
            })?;
    Ok(Credential::new(username, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(format: ConfigFormat, text: &str) -> Result<ParsedConfig, ConfigError> {
        parse_config(text.as_bytes(), format)
    }

    #[test]
    fn auth_wins_over_username_password_and_splits_at_first_colon() {
        // "u:p:q" padded and unpadded variants.
        for auth in ["dTpwOnE=", "dTpwOnE"] {
            let text = format!(
                r#"{{"auths":{{"r.io":{{"auth":"{auth}","username":"x","password":"y"}}}}}}"#
            );
            let parsed = json(ConfigFormat::DockerConfigJson, &text).unwrap();
            assert_eq!(parsed.entries[0].credential, Credential::new("u", "p:q"));
        }
    }

    #[test]
    fn username_password_without_auth() {
        let parsed = json(
            ConfigFormat::DockerCfg,
            r#"{"r.io":{"username":"u","password":"p","email":"e@x"}}"#,
        )
        .unwrap();
        assert_eq!(parsed.entries[0].key, "r.io");
        assert_eq!(parsed.entries[0].credential, Credential::new("u", "p"));
    }

    #[test]
    fn token_only_entries_are_unusable_and_say_why() {
        let parsed = json(
            ConfigFormat::DockerConfigJson,
            r#"{"auths":{"a.io":{"identitytoken":"tok"},"b.io":{"auth":"dTpw"}}}"#,
        )
        .unwrap();
        assert_eq!(parsed.entries.len(), 1);
        let message = parsed.unusable[0].to_string();
        assert!(message.contains("\"a.io\""), "{message}");
        assert!(
            message.contains("not usable as pull credentials"),
            "{message}"
        );
        assert!(!message.contains("tok\""), "{message}");
    }

    #[test]
    fn malformed_documents_have_specific_errors_without_values() {
        let cases = [
            (
                ConfigFormat::DockerConfigJson,
                "{not json",
                "not valid JSON",
            ),
            (
                ConfigFormat::DockerConfigJson,
                "[]",
                "must be a JSON object",
            ),
            (
                ConfigFormat::DockerConfigJson,
                r#"{"r.io":{}}"#,
                "no \"auths\"",
            ),
            (
                ConfigFormat::DockerCfg,
                r#"{"r.io":"s3cr3t"}"#,
                "must be a JSON object",
            ),
            (
                ConfigFormat::DockerCfg,
                r#"{"r.io":{"auth":"!!s3cr3t"}}"#,
                "not valid base64",
            ),
            (
                ConfigFormat::DockerCfg,
                r#"{"r.io":{"auth":"czNjcjN0"}}"#,
                "username:password",
            ),
            (
                ConfigFormat::DockerCfg,
                r#"{"r.io":{"password":7}}"#,
                "must be a string",
            ),
            (ConfigFormat::DockerCfg, "{}", "lists no registries"),
        ];
        for (format, text, expected) in cases {
            let message = json(format, text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}: {message}");
            assert!(!message.contains("s3cr3t"), "{message}");
        }
    }

    #[test]
    fn debug_and_display_redact() {
        let credential = Credential::new("alice", "hunter2");
        let shown = format!("{credential:?} {credential}");
        assert!(
            !shown.contains("alice") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
