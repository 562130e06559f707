//! The catalog's pull secrets (pure, no client): the keyring from the Secrets named in
//! `spec.secrets` as the source-secret watches last saw them, a fingerprint that changes when
//! any of them changes, and the `PullSecretSourceMissing` condition. Never reads secret data
//! into anything but the keyring (DESIGN invariant 8).

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

use crate::controller::source_secrets::SourceState;
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_SECRET_SOURCE_MISSING, ConditionStatus, MAX_MESSAGE_LEN, PullSecretCondition,
    REASON_SOURCE_INVALID, REASON_SOURCE_NOT_FOUND, REASON_SOURCES_PRESENT, bounded_list,
};
use crate::registry::{Keyring, PullSecret, SecretError};

/// The version of one source Secret as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceVersion {
    /// The Secret does not exist.
    Missing,
    /// The Secret at this `resourceVersion`.
    Present(String),
}

/// Every named source Secret and its version, in `spec.secrets` order: when this changes (a
/// rotation, a fix, a deletion), the registry is contacted again at once.
pub type Fingerprint = Vec<(String, SourceVersion)>;

/// The usable credentials and what is wrong with the rest.
#[derive(Debug)]
pub struct Sources {
    /// Credentials of the present, parseable secrets.
    pub keyring: Keyring,
    /// Versions of all named secrets.
    pub fingerprint: Fingerprint,
    /// Named secrets that do not exist.
    pub missing: Vec<String>,
    /// Present secrets (or entries of them) that give no credential.
    pub unusable: Vec<SecretError>,
}

/// The outcome of reading the source secrets.
#[derive(Debug)]
pub enum Gathered {
    /// The by-name watch of this secret has not listed yet: a short, expected wait.
    Waiting { secret: String },
    /// Every named secret's state is known.
    Known(Sources),
}

/// Reads the states of `names` (duplicates and empty names are skipped) and builds the keyring.
pub fn gather<'a>(
    names: impl IntoIterator<Item = &'a str>,
    state: impl Fn(&str) -> SourceState,
) -> Gathered {
    let mut fingerprint: Fingerprint = Vec::new();
    let mut missing = Vec::new();
    let mut present: Vec<PullSecret> = Vec::new();
    for name in names {
        if name.is_empty() || fingerprint.iter().any(|(seen, _)| seen == name) {
            continue;
        }
        match state(name) {
            SourceState::Unknown => {
                return Gathered::Waiting {
                    secret: name.to_owned(),
                };
            }
            SourceState::Missing => {
                missing.push(name.to_owned());
                fingerprint.push((name.to_owned(), SourceVersion::Missing));
            }
            SourceState::Present(secret) => {
                fingerprint.push((name.to_owned(), version(&secret)));
                present.push(PullSecret::from(secret.as_ref()));
            }
        }
    }
    let (keyring, unusable) = Keyring::from_secrets(&present);
    Gathered::Known(Sources {
        keyring,
        fingerprint,
        missing,
        unusable,
    })
}

fn version(secret: &Secret) -> SourceVersion {
    SourceVersion::Present(secret.resource_version().unwrap_or_default())
}

impl Sources {
    /// `PullSecretSourceMissing`: `True` when a named Secret is missing (reason
    /// `SourceSecretNotFound`) or unusable (`SourceSecretInvalid`); names the secrets and the
    /// causes, never their data.
    pub fn condition(&self, namespace: &str) -> PullSecretCondition {
        let problems: Vec<String> = self
            .missing
            .iter()
            .map(|name| format!("Secret {name:?} not found in namespace {namespace:?}"))
            .chain(self.unusable.iter().map(ToString::to_string))
            .collect();
        let reason = if !self.missing.is_empty() {
            REASON_SOURCE_NOT_FOUND
        } else if !self.unusable.is_empty() {
            REASON_SOURCE_INVALID
        } else {
            let message = match self.fingerprint.len() {
                0 => "spec.secrets names no pull secrets".to_owned(),
                1 => "the pull secret in spec.secrets is present and usable".to_owned(),
                n => format!("all {n} pull secrets in spec.secrets are present and usable"),
            };
            return PullSecretCondition {
                type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
                status: ConditionStatus::False,
                reason: REASON_SOURCES_PRESENT,
                message,
            };
        };
        PullSecretCondition {
            type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
            status: ConditionStatus::True,
            reason,
            message: bounded_list(
                "catalog pulls use the remaining credentials: ",
                &problems,
                MAX_MESSAGE_LEN,
            ),
        }
    }

    /// Whether some named secret is missing or unusable.
    pub fn has_problems(&self) -> bool {
        !self.missing.is_empty() || !self.unusable.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    const PASSWORD: &str = "hunter2-never-shown";

    fn secret(name: &str, type_: &str, data: &str, resource_version: &str) -> Arc<Secret> {
        let key = if type_ == "kubernetes.io/dockercfg" {
            ".dockercfg"
        } else {
            ".dockerconfigjson"
        };
        Arc::new(Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                resource_version: Some(resource_version.to_owned()),
                ..ObjectMeta::default()
            },
            type_: Some(type_.to_owned()),
            data: Some(BTreeMap::from([(
                key.to_owned(),
                ByteString(data.as_bytes().to_vec()),
            )])),
            ..Secret::default()
        })
    }

    fn good(name: &str, resource_version: &str) -> Arc<Secret> {
        secret(
            name,
            "kubernetes.io/dockerconfigjson",
            &format!(
                r#"{{"auths":{{"registry.example.com":{{"username":"reader","password":"{PASSWORD}"}}}}}}"#
            ),
            resource_version,
        )
    }

    fn states(entries: Vec<(&'static str, SourceState)>) -> impl Fn(&str) -> SourceState {
        move |name| {
            entries
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(SourceState::Unknown, |(_, s)| s.clone())
        }
    }

    fn known(gathered: Gathered) -> Sources {
        match gathered {
            Gathered::Known(sources) => sources,
            Gathered::Waiting { secret } => panic!("unexpected wait for {secret}"),
        }
    }

    #[test]
    fn present_secrets_fill_the_keyring_and_the_fingerprint_follows_versions() {
        let sources = known(gather(
            ["a", "", "a"],
            states(vec![("a", SourceState::Present(good("a", "7")))]),
        ));
        assert_eq!(sources.keyring.secret_names(), ["a"]);
        assert_eq!(
            sources.fingerprint,
            vec![("a".to_owned(), SourceVersion::Present("7".to_owned()))]
        );
        let condition = sources.condition("olm");
        assert_eq!(condition.status, ConditionStatus::False);
        assert_eq!(condition.reason, REASON_SOURCES_PRESENT);
        let rotated = known(gather(
            ["a"],
            states(vec![("a", SourceState::Present(good("a", "8")))]),
        ));
        assert_ne!(rotated.fingerprint, sources.fingerprint);
    }

    #[test]
    fn an_unlisted_watch_is_a_wait_not_a_missing_secret() {
        let gathered = gather(["a", "b"], states(vec![("a", SourceState::Missing)]));
        assert!(matches!(gathered, Gathered::Waiting { secret } if secret == "b"));
    }

    #[test]
    fn missing_and_unusable_secrets_are_named_without_their_data() {
        let sources = known(gather(
            ["gone", "wrong-type", "bad-json", "ok"],
            states(vec![
                ("gone", SourceState::Missing),
                (
                    "wrong-type",
                    SourceState::Present(secret("wrong-type", "Opaque", PASSWORD, "1")),
                ),
                (
                    "bad-json",
                    SourceState::Present(secret(
                        "bad-json",
                        "kubernetes.io/dockerconfigjson",
                        &format!("{{\"auths\": {PASSWORD}"),
                        "2",
                    )),
                ),
                ("ok", SourceState::Present(good("ok", "3"))),
            ]),
        ));
        assert_eq!(sources.keyring.secret_names(), ["ok"]);
        assert!(sources.has_problems());
        let condition = sources.condition("olm");
        assert_eq!(condition.status, ConditionStatus::True);
        assert_eq!(condition.reason, REASON_SOURCE_NOT_FOUND);
        for name in ["\"gone\"", "\"wrong-type\"", "\"bad-json\""] {
            assert!(condition.message.contains(name), "{}", condition.message);
        }
        assert!(
            !condition.message.contains(PASSWORD),
            "{}",
            condition.message
        );
        assert!(
            !condition.message.contains("\"ok\""),
            "{}",
            condition.message
        );
    }

    #[test]
    fn only_unusable_secrets_give_the_invalid_reason() {
        let sources = known(gather(
            ["wrong-type"],
            states(vec![(
                "wrong-type",
                SourceState::Present(secret("wrong-type", "Opaque", PASSWORD, "1")),
            )]),
        ));
        let condition = sources.condition("olm");
        assert_eq!(condition.reason, REASON_SOURCE_INVALID);
        assert!(
            condition.message.contains("Opaque"),
            "{}",
            condition.message
        );
    }
}
