//! The Deployments of a CSV that serve admission webhooks, conversion webhooks or aggregated API
//! services, and the names OLM v0 gives what they need (pure).
//!
//! For each such Deployment OLM creates a Service, `<deployment with '.' → '-'>-service`, whose
//! ports are the webhooks' and API services' `containerPort` (default 443; the target port is
//! the webhook's `targetPort`, else the same number), named after the number; and a serving
//! certificate in the Secret `<service>-cert` (`operator-lifecycle-manager:
//! pkg/controller/install/certresources.go`, `operator-framework/api: WebhookDescription.
//! DomainName`). OLM v1 keeps both names (`operator-controller:
//! internal/operator-controller/rukpak/render/certprovider.go`), and so does opcat, so that an
//! operator's own documentation of them stays true.
//!
//! Webhook configurations are cluster-scoped. OLM names them with `generateName:
//! <generateName>-` (a random suffix); opcat needs a name it can compute again on every
//! reconcile, so the suffix is a hash of the install namespace and the `generateName`
//! ([`webhook_configuration_name`]): the same operator installed in two namespaces gets two
//! configurations, and an upgrade that keeps a webhook's `generateName` updates its
//! configuration in place. The webhook inside keeps `generateName` as its name, as in OLM.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServicePort;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ownership::generated_name;
use crate::api::ClusterServiceVersion;
use crate::api::cluster_service_version::{
    ApiServiceDescription, WebhookAdmissionType, WebhookDescription,
};
use crate::pull_secrets::names::{HASH_LEN, short_hash};

/// Service port when a webhook or API service names none (OLM's default `containerPort`).
pub const DEFAULT_PORT: i32 = 443;
/// Longest Service name (a DNS-1035 label).
const MAX_SERVICE_NAME_LEN: usize = 63;
/// Longest name of a cluster-scoped object.
const MAX_NAME_LEN: usize = 253;

/// One Deployment that serves webhooks or API services.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedDeployment {
    /// The Deployment's name.
    pub deployment: String,
    /// Its Service ([`service_name`]).
    pub service: String,
    /// The Secret with its serving certificate ([`secret_name`]).
    pub secret: String,
    /// The Service's ports, in the order the CSV first names them, without repeats.
    pub ports: Vec<ServicePort>,
}

/// The Deployments of `csv` that serve webhooks or owned API services, sorted by name. Entries
/// without a `deploymentName` are left out (validation refuses them).
pub fn served_deployments(csv: &ClusterServiceVersion) -> Vec<ServedDeployment> {
    let mut ports: BTreeMap<&str, Vec<ServicePort>> = BTreeMap::new();
    let named = webhooks(csv)
        .iter()
        .filter_map(|webhook| {
            Some((
                webhook.deployment_name.as_deref()?,
                service_port(webhook.container_port, webhook.target_port.as_ref()),
            ))
        })
        .chain(owned_api_services(csv).iter().filter_map(|api| {
            Some((
                api.deployment_name.as_deref()?,
                service_port(api.container_port, None),
            ))
        }));
    for (deployment, port) in named {
        let list = ports.entry(deployment).or_default();
        if !list.contains(&port) {
            list.push(port);
        }
    }
    ports
        .into_iter()
        .map(|(deployment, ports)| {
            let service = service_name(deployment);
            ServedDeployment {
                deployment: deployment.to_owned(),
                secret: secret_name(&service),
                service,
                ports,
            }
        })
        .collect()
}

/// `spec.webhookdefinitions` (empty when none).
pub fn webhooks(csv: &ClusterServiceVersion) -> &[WebhookDescription] {
    csv.spec.webhook_definitions.as_deref().unwrap_or_default()
}

/// `spec.apiservicedefinitions.owned` (empty when none).
pub fn owned_api_services(csv: &ClusterServiceVersion) -> &[ApiServiceDescription] {
    csv.spec
        .api_service_definitions
        .as_ref()
        .and_then(|definitions| definitions.owned.as_deref())
        .unwrap_or_default()
}

/// The conversion webhooks' CRDs: CRD name → the webhook that converts it.
pub fn conversion_crds(csv: &ClusterServiceVersion) -> BTreeMap<&str, &WebhookDescription> {
    webhooks(csv)
        .iter()
        .filter(|webhook| webhook.type_ == WebhookAdmissionType::ConversionWebhook)
        .flat_map(|webhook| {
            webhook
                .conversion_crds
                .iter()
                .flatten()
                .map(move |crd| (crd.as_str(), webhook))
        })
        .collect()
}

/// OLM's Service name for a Deployment: `<deployment with '.' → '-'>-service`, its base cut so
/// the name fits a DNS-1035 label (as OLM v1 cuts it).
pub fn service_name(deployment: &str) -> String {
    const SUFFIX: &str = "-service";
    let mut base = deployment.replace('.', "-");
    base.truncate(MAX_SERVICE_NAME_LEN - SUFFIX.len());
    format!("{}{SUFFIX}", base.trim_end_matches('-'))
}

/// OLM's name of the Secret holding a Service's serving certificate: `<service>-cert`.
pub fn secret_name(service: &str) -> String {
    format!("{service}-cert")
}

/// A Service port for a webhook or API service, as OLM builds it: named after the port number,
/// the target port the given one or else the same number.
pub fn service_port(container_port: Option<i32>, target_port: Option<&IntOrString>) -> ServicePort {
    let port = port_or_default(container_port);
    ServicePort {
        name: Some(port.to_string()),
        port,
        target_port: Some(target_port.cloned().unwrap_or(IntOrString::Int(port))),
        ..ServicePort::default()
    }
}

/// A `containerPort`, or OLM's default 443 when it is unset or zero.
pub fn port_or_default(container_port: Option<i32>) -> i32 {
    container_port
        .filter(|port| *port > 0)
        .unwrap_or(DEFAULT_PORT)
}

/// Name of the webhook configuration (Validating or Mutating) of the webhook `generate_name` of
/// an install in `namespace`: `<generateName>-<hash>`; see the module docs.
pub fn webhook_configuration_name(generate_name: &str, namespace: &str) -> String {
    let base = generate_name.trim_end_matches('-');
    let hash = short_hash(&["opcat.dev/webhook-configuration/v1", namespace, base]);
    let mut readable = base.to_owned();
    readable.truncate(MAX_NAME_LEN - 1 - HASH_LEN);
    format!("{}-{hash}", readable.trim_end_matches(['-', '.']))
}

/// Name of an owned API service's APIService: `<version>.<group>` (Kubernetes requires it).
pub fn api_service_name(api: &ApiServiceDescription) -> String {
    format!("{}.{}", api.version, api.group)
}

/// Names of the RBAC objects OLM creates for a served Deployment's ServiceAccount: the Role and
/// RoleBinding that may read the certificate Secret (named like the Secret, in the install
/// namespace), the ClusterRoleBinding to `system:auth-delegator` and the RoleBinding in
/// `kube-system` to `extension-apiserver-authentication-reader`. OLM names the last two
/// `<service>-system:auth-delegator` and `<service>-auth-reader`, which two installs in
/// different namespaces would share; opcat adds a hash of the install namespace.
pub fn auth_binding_names(service: &str, namespace: &str) -> (String, String) {
    (
        generated_name(
            &format!("{service}-system-auth-delegator"),
            &["auth-delegator", namespace, service],
        ),
        generated_name(
            &format!("{service}-auth-reader"),
            &["auth-reader", namespace, service],
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_olm_and_fit() {
        assert_eq!(
            service_name("webhook-operator.controller-manager"),
            "webhook-operator-controller-manager-service"
        );
        assert_eq!(
            secret_name("webhook-operator-controller-manager-service"),
            "webhook-operator-controller-manager-service-cert"
        );
        let long = service_name(&"a".repeat(80));
        assert_eq!(long.len(), 63);
        assert!(long.ends_with("-service"));

        let name = webhook_configuration_name("vwebhook.example.com", "ops");
        assert!(name.starts_with("vwebhook.example.com-"), "{name}");
        assert_ne!(
            name,
            webhook_configuration_name("vwebhook.example.com", "dev")
        );
        assert_eq!(
            name,
            webhook_configuration_name("vwebhook.example.com-", "ops")
        );
        assert!(webhook_configuration_name(&"w".repeat(300), "ops").len() <= 253);
    }

    #[test]
    fn service_ports_default_to_443_and_keep_the_target_port() {
        let port = service_port(None, None);
        assert_eq!(
            (port.name.as_deref(), port.port, port.target_port),
            (Some("443"), 443, Some(IntOrString::Int(443)))
        );
        let port = service_port(Some(8443), Some(&IntOrString::String("https".into())));
        assert_eq!(
            (port.name.as_deref(), port.port, port.target_port),
            (
                Some("8443"),
                8443,
                Some(IntOrString::String("https".into()))
            )
        );
    }
}
