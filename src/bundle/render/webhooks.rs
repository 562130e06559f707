//! Admission webhook configurations and APIServices, as OLM v0 builds them
//! (`operator-framework/api: WebhookDescription.GetValidatingWebhook/GetMutatingWebhook`,
//! `operator-lifecycle-manager: pkg/controller/install/webhook.go`, `apiservice.go`).
//!
//! One configuration per admission webhook, holding one webhook named after its
//! `generateName`, with the CSV's rules, failure policy, match policy, object selector, side
//! effects, timeout, admission review versions (and reinvocation policy for mutating ones)
//! unchanged; unset fields stay unset, so the API server's defaults apply as with OLM. The client
//! configuration points at the Deployment's Service in the install namespace, on the webhook's
//! `containerPort` (default 443) and `webhookPath`, with the CA bundle of its serving
//! certificate.
//!
//! **Namespace selector.** OLM scopes an admission webhook to the OperatorGroup's namespaces:
//! it labels each target namespace `olm.operatorgroup.uid/<uid>` and selects that label (or uses
//! the OperatorGroup's own selector). opcat does not label namespaces (it only reads them), so it
//! selects `kubernetes.io/metadata.name In (<targets>)` instead, as OLM v1 does: the API server
//! sets that label on every namespace to its name and nobody can change it, so the selector
//! matches exactly the target namespaces, and nobody can pull another namespace into an
//! operator's webhooks by labelling it. An AllNamespaces install gets no selector (every
//! namespace), as in OLM. Cluster-scoped objects are never filtered by a namespace selector.
//!
//! APIServices are named `<version>.<group>`, point at the Deployment's Service on the
//! description's `containerPort` (default 443) with the CA bundle, and get OLM's priorities
//! (`groupPriorityMinimum` 2000, `versionPriority` 15).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, ServiceReference, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference as ApiServiceReference,
};
use kube::api::DynamicObject;

use super::serving::certificate;
use super::{RenderContext, RenderError, Stamp, to_dynamic};
use crate::api::ClusterServiceVersion;
use crate::api::cluster_service_version::{WebhookAdmissionType, WebhookDescription};
use crate::bundle::TargetNamespaces;
use crate::bundle::serving::{
    api_service_name, owned_api_services, port_or_default, service_name,
    webhook_configuration_name, webhooks,
};

/// The label the API server sets on every namespace to its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// OLM's `groupPriorityMinimum` for operator APIServices.
const GROUP_PRIORITY_MINIMUM: i32 = 2000;
/// OLM's `versionPriority` for operator APIServices.
const VERSION_PRIORITY: i32 = 15;

/// The Validating- and MutatingWebhookConfigurations and the APIServices of the CSV.
pub(super) fn webhook_objects(
    csv: &ClusterServiceVersion,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<Vec<DynamicObject>, RenderError> {
    let mut objects = Vec::new();
    let selector = namespace_selector(context.targets);
    for webhook in webhooks(csv) {
        let name = webhook_configuration_name(&webhook.generate_name, context.install_namespace);
        let metadata = stamp.metadata(&name, None, None, None);
        // A MutatingWebhook is a ValidatingWebhook plus `reinvocationPolicy`.
        let validating = ValidatingWebhook {
            name: webhook.generate_name.clone(),
            admission_review_versions: webhook.admission_review_versions.clone(),
            client_config: client_config(webhook, context)?,
            failure_policy: webhook.failure_policy.clone(),
            match_policy: webhook.match_policy.clone(),
            namespace_selector: selector.clone(),
            object_selector: webhook.object_selector.clone(),
            rules: webhook.rules.clone(),
            side_effects: webhook.side_effects.clone().unwrap_or_default(),
            timeout_seconds: webhook.timeout_seconds,
            match_conditions: None,
        };
        match webhook.type_ {
            WebhookAdmissionType::ValidatingAdmissionWebhook => {
                objects.push(to_dynamic(&ValidatingWebhookConfiguration {
                    metadata,
                    webhooks: Some(vec![validating]),
                })?);
            }
            WebhookAdmissionType::MutatingAdmissionWebhook => {
                let mut mutating: MutatingWebhook = serde_json::to_value(&validating)
                    .and_then(serde_json::from_value)
                    .map_err(|error| RenderError::Serialize {
                        kind: "MutatingWebhookConfiguration".to_owned(),
                        name: name.clone(),
                        message: error.to_string(),
                    })?;
                mutating.reinvocation_policy = webhook.reinvocation_policy.clone();
                objects.push(to_dynamic(&MutatingWebhookConfiguration {
                    metadata,
                    webhooks: Some(vec![mutating]),
                })?);
            }
            // Not a configuration: the CRD's `spec.conversion` (see `serving::conversions`).
            WebhookAdmissionType::ConversionWebhook => {}
        }
    }
    for api in owned_api_services(csv) {
        let deployment = api.deployment_name.as_deref().unwrap_or_default();
        let certificate = certificate(context, deployment)?;
        let name = api_service_name(api);
        objects.push(to_dynamic(&APIService {
            metadata: stamp.metadata(&name, None, None, None),
            spec: Some(APIServiceSpec {
                group: Some(api.group.clone()),
                version: Some(api.version.clone()),
                group_priority_minimum: GROUP_PRIORITY_MINIMUM,
                version_priority: VERSION_PRIORITY,
                service: Some(ApiServiceReference {
                    name: Some(service_name(deployment)),
                    namespace: Some(context.install_namespace.to_owned()),
                    port: Some(port_or_default(api.container_port)),
                }),
                ca_bundle: Some(ByteString(certificate.ca_bundle.as_bytes().to_vec())),
                insecure_skip_tls_verify: None,
            }),
            status: None,
        })?);
    }
    Ok(objects)
}

fn client_config(
    webhook: &WebhookDescription,
    context: &RenderContext<'_>,
) -> Result<WebhookClientConfig, RenderError> {
    let deployment = webhook.deployment_name.as_deref().unwrap_or_default();
    let certificate = certificate(context, deployment)?;
    Ok(WebhookClientConfig {
        ca_bundle: Some(ByteString(certificate.ca_bundle.as_bytes().to_vec())),
        service: Some(ServiceReference {
            name: service_name(deployment),
            namespace: context.install_namespace.to_owned(),
            path: webhook.webhook_path.clone(),
            port: Some(port_or_default(webhook.container_port)),
        }),
        url: None,
    })
}

/// The admission webhooks' namespace selector for an install watching `targets`: none for all
/// namespaces, else the target namespaces by name (see the module docs).
pub fn namespace_selector(targets: &TargetNamespaces) -> Option<LabelSelector> {
    match targets {
        TargetNamespaces::All => None,
        TargetNamespaces::Namespaces(namespaces) => Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: NAMESPACE_NAME_LABEL.to_owned(),
                operator: "In".to_owned(),
                values: Some(namespaces.iter().cloned().collect()),
            }]),
            match_labels: None,
        }),
    }
}
