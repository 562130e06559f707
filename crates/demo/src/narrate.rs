//! Turning objects into the lines the demo prints. Pure: objects in, text out (never a Secret's
//! data).

use std::io::Write;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use serde_json::Value;

/// Annotation in which opcat records the `imagePullSecrets` entries it added to a
/// ServiceAccount.
pub const ADDED_PULL_SECRETS: &str = "opcat.dev/added-pull-secrets";

/// Writes the demo's account: numbered steps, indented details, elapsed time.
pub struct Narrator<'a> {
    out: &'a mut dyn Write,
    started: Instant,
    steps: usize,
    step: usize,
}

impl<'a> Narrator<'a> {
    /// A narrator of `steps` steps writing to `out`.
    pub fn new(out: &'a mut dyn Write, steps: usize) -> Self {
        Self {
            out,
            started: Instant::now(),
            steps,
            step: 0,
        }
    }

    /// Time since the demo started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// A line as is.
    pub fn say(&mut self, text: &str) {
        // The account is best effort: a closed stdout must not fail the demo itself.
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// The next numbered step.
    pub fn step(&mut self, title: &str) {
        self.step += 1;
        let line = format!(
            "\n[{}/{}] {title}   (t+{:.1}s)",
            self.step,
            self.steps,
            self.elapsed().as_secs_f64()
        );
        self.say(&line);
    }

    /// A detail of the current step.
    pub fn detail(&mut self, text: &str) {
        self.say(&format!("      {text}"));
    }

    /// A detail one level deeper.
    pub fn sub(&mut self, text: &str) {
        self.say(&format!("        {text}"));
    }
}

/// The string at a JSON pointer, or "".
pub fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `(status, reason, message)` of the condition of `type_` in `status.conditions`.
pub fn condition<'v>(object: &'v Value, type_: &str) -> Option<(&'v str, &'v str, &'v str)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default(),
            )
        })
}

/// `sha256:0123456789ab…`.
pub fn short_digest(digest: &str) -> String {
    match digest.get(..19) {
        Some(prefix) if digest.len() > 19 => format!("{prefix}…"),
        _ => digest.to_owned(),
    }
}

/// A CatalogSource's state: `READY, digest sha256:…, 2 packages` or the failure message.
pub fn catalog_source(catalog: &Value) -> String {
    let state = text(catalog, "/status/connectionState/lastObservedState");
    if state == "READY" {
        format!(
            "READY, serving {} (digest {}), {} packages",
            text(catalog, "/spec/image"),
            short_digest(text(catalog, "/status/resolvedImageDigest")),
            catalog
                .pointer("/status/packageCount")
                .and_then(Value::as_u64)
                .unwrap_or_default()
        )
    } else {
        format!(
            "{} ({}): {}",
            if state.is_empty() {
                "not loaded"
            } else {
                state
            },
            text(catalog, "/status/reason"),
            text(catalog, "/status/message")
        )
    }
}

/// The names in a ServiceAccount's `imagePullSecrets`, each marked with who put it there.
pub fn service_account(account: &ServiceAccount) -> String {
    let added: Vec<String> = account
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ADDED_PULL_SECRETS))
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default();
    let entries: Vec<String> = account
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| {
            if added.contains(&entry.name) {
                format!("{} (added by opcat)", entry.name)
            } else {
                format!("{} (not opcat's: kept in place)", entry.name)
            }
        })
        .collect();
    format!(
        "{:<18} imagePullSecrets [{}]",
        account.metadata.name.as_deref().unwrap_or_default(),
        entries.join(", ")
    )
}

/// Names of a ServiceAccount's `imagePullSecrets`, in order.
pub fn pull_secret_names(account: &ServiceAccount) -> Vec<String> {
    account
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.clone())
        .collect()
}

/// A Deployment: its service account, pod-template `imagePullSecrets` and `olm.*` annotations.
pub fn deployment(deployment: &Deployment) -> Vec<String> {
    let template = deployment.spec.as_ref().map(|spec| &spec.template);
    let pod = template.and_then(|t| t.spec.as_ref());
    let account = pod
        .and_then(|p| p.service_account_name.as_deref())
        .unwrap_or("default");
    let secrets: Vec<&str> = pod
        .and_then(|p| p.image_pull_secrets.as_ref())
        .into_iter()
        .flatten()
        .map(|entry| entry.name.as_str())
        .collect();
    let olm: Vec<String> = template
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.annotations.as_ref())
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with("olm."))
        .map(|(key, value)| format!("{key}={value:?}"))
        .collect();
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Available" && c.status == "True");
    vec![
        format!(
            "{} ({}, service account {account})",
            deployment.metadata.name.as_deref().unwrap_or_default(),
            if available {
                "Available"
            } else {
                "not available"
            }
        ),
        format!("  pod template imagePullSecrets [{}]", secrets.join(", ")),
        format!("  pod template annotations {}", olm.join(" ")),
    ]
}

/// A Secret opcat copied: name, type, labels, owners and the keys of its data (never the data).
pub fn copy(secret: &Secret) -> Vec<String> {
    let labels: Vec<String> = secret
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let owners: Vec<String> = secret
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|owner| format!("{} {}", owner.kind, owner.name))
        .collect();
    let keys: Vec<&str> = secret
        .data
        .iter()
        .flatten()
        .map(|(key, _)| key.as_str())
        .collect();
    vec![
        format!(
            "Secret {}/{} (type {})",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default(),
            secret.type_.as_deref().unwrap_or_default()
        ),
        format!("  labels {}", labels.join(" ")),
        format!("  owned by {}", owners.join(", ")),
        format!(
            "  data keys [{}] (the data itself is not shown)",
            keys.join(", ")
        ),
    ]
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::LocalObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_ready_catalog_shows_its_digest_and_packages_and_a_failed_one_its_message() {
        let ready = json!({
            "spec": {"image": "127.0.0.1:5000/c:latest"},
            "status": {
                "connectionState": {"lastObservedState": "READY"},
                "resolvedImageDigest": "sha256:0123456789abcdef0123",
                "packageCount": 2
            }
        });
        assert_eq!(
            catalog_source(&ready),
            "READY, serving 127.0.0.1:5000/c:latest (digest sha256:0123456789ab…), 2 packages"
        );
        let failed = json!({"status": {
            "connectionState": {"lastObservedState": "TRANSIENT_FAILURE"},
            "reason": "RegistryServerError",
            "message": "401 from the registry"
        }});
        assert_eq!(
            catalog_source(&failed),
            "TRANSIENT_FAILURE (RegistryServerError): 401 from the registry"
        );
    }

    #[test]
    fn service_account_entries_say_who_added_them() {
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some("default".into()),
                annotations: Some(
                    [(ADDED_PULL_SECRETS.to_owned(), r#"["copy"]"#.to_owned())].into(),
                ),
                ..ObjectMeta::default()
            },
            image_pull_secrets: Some(vec![
                LocalObjectReference {
                    name: "team-registry".into(),
                },
                LocalObjectReference {
                    name: "copy".into(),
                },
            ]),
            ..ServiceAccount::default()
        };
        assert_eq!(
            service_account(&account),
            "default            imagePullSecrets [team-registry (not opcat's: kept in place), \
             copy (added by opcat)]"
        );
    }

    #[test]
    fn a_copy_is_described_without_its_data() {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some("copy".into()),
                namespace: Some("widgets".into()),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(
                [(
                    ".dockerconfigjson".to_owned(),
                    k8s_openapi::ByteString(b"very-secret".to_vec()),
                )]
                .into(),
            ),
            ..Secret::default()
        };
        let lines = copy(&secret).join("\n");
        assert!(lines.contains("data keys [.dockerconfigjson]"), "{lines}");
        assert!(!lines.contains("very-secret"));
        assert!(!lines.contains("dmVyeS1zZWNyZXQ"), "nor its base64");
    }

    #[test]
    fn conditions_are_found_by_type() {
        let sub = json!({"status": {"conditions": [
            {"type": "PullCredentialsReady", "status": "True", "reason": "ImagesResolvable",
             "message": "2 images"}
        ]}});
        assert_eq!(
            condition(&sub, "PullCredentialsReady"),
            Some(("True", "ImagesResolvable", "2 images"))
        );
        assert_eq!(condition(&sub, "Other"), None);
    }
}
