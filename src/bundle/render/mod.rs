//! Rendering a bundle into the Kubernetes objects of one install (pure).
//!
//! [`render`] checks the CSV ([`validate_for_install`]) and the OperatorGroup's targets
//! ([`check_install_mode`]), then builds every object, grouped in the order the controller
//! applies them (DESIGN §4): ServiceAccounts, RBAC, CRDs, Deployments, the rest. Each group is
//! sorted by kind, namespace and name; the same input always gives the same output.
//!
//! What goes where:
//! - ServiceAccounts: every one the bundle uses except `default`
//!   ([`service_accounts`](crate::bundle::service_accounts())), from the bundle's manifest when
//!   it ships one, else bare; never with `imagePullSecrets` (see
//!   [`RenderedBundle::bundle_pull_secrets`]).
//! - RBAC: generated from `permissions`/`clusterPermissions` (see `rbac`), plus the bundle's own
//!   Role, RoleBinding, ClusterRole and ClusterRoleBinding manifests.
//! - CRDs: as in the bundle, labelled, marked to be retained on uninstall.
//! - Deployments: see `deployment`.
//! - The CSV's OperatorCondition ([`RenderedBundle::operator_condition`]) with its Role and
//!   RoleBinding (in RBAC), and `OPERATOR_CONDITION_NAME` in every Deployment (see
//!   `operator_condition`).
//! - Others: the remaining manifests; namespaced kinds are placed in the install namespace; plus
//!   a Service per Deployment that serves webhooks or API services (see `serving`).
//! - Webhooks: Validating/MutatingWebhookConfigurations and APIServices (see `webhooks`),
//!   applied once the Deployments exist; and [`RenderedBundle::conversions`], the CRDs'
//!   `spec.conversion` for conversion webhooks, which the controller writes then.
//!
//! Labels and owner references: see [`ownership`](crate::bundle::ownership).

mod config;
mod deployment;
mod objects;
mod operator_condition;
mod rbac;
mod serving;
mod webhooks;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::DynamicObject;
use serde::Serialize;

use super::install_mode::{InstallModeError, TargetNamespaces, check_install_mode};
use super::kinds::{
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CUSTOM_RESOURCE_DEFINITION, ROLE, ROLE_BINDING,
    SERVICE_ACCOUNT,
};
use super::load::Bundle;
use super::ownership::{CsvOwner, ownership_annotations, ownership_labels};
use super::service_accounts::{ServiceAccounts, service_accounts};
use super::validate::{ValidationError, validate_for_install};
use crate::api::subscription::SubscriptionConfig;
use crate::pull_secrets::names::{is_label_key, is_label_value};

pub use serving::{CrdConversion, ServingCertificate};
pub use webhooks::{NAMESPACE_NAME_LABEL, namespace_selector};

/// Everything about one install that is not in the bundle.
#[derive(Clone, Copy, Debug)]
pub struct RenderContext<'a> {
    /// The ClusterServiceVersion in the cluster (name and UID): owner of the namespaced objects.
    pub csv: &'a CsvOwner,
    /// Namespace of the CSV and of the operator's Deployments.
    pub install_namespace: &'a str,
    /// The namespaces the operator watches (the OperatorGroup's `status.namespaces`).
    pub targets: &'a TargetNamespaces,
    /// Name of the OperatorGroup (`olm.operatorGroup` annotation).
    pub operator_group: &'a str,
    /// The Subscription's `spec.config`, applied to every Deployment.
    pub subscription_config: Option<&'a SubscriptionConfig>,
    /// Names of the pull-secret copies in the install namespace, put into every pod template.
    pub pull_secret_names: &'a [String],
    /// More labels for every object (opcat's own labels win on a clash).
    pub extra_labels: &'a BTreeMap<String, String>,
    /// The serving certificate of each Deployment that serves webhooks or API services
    /// ([`served_deployments`](crate::bundle::serving::served_deployments)), by Deployment name.
    pub serving_certificates: &'a BTreeMap<String, ServingCertificate>,
}

/// The objects of one install, grouped in apply order; each group sorted by kind, namespace,
/// name. Every object has `apiVersion` and `kind`.
#[derive(Clone, Debug, Default)]
pub struct RenderedBundle {
    /// ServiceAccounts opcat creates (never `default`, never with `imagePullSecrets`).
    pub service_accounts: Vec<DynamicObject>,
    /// Roles, RoleBindings, ClusterRoles, ClusterRoleBindings.
    pub rbac: Vec<DynamicObject>,
    /// CustomResourceDefinitions (cluster-scoped; never deleted by opcat).
    pub crds: Vec<DynamicObject>,
    /// The operator's Deployments.
    pub deployments: Vec<DynamicObject>,
    /// Every other bundle object (Services, ConfigMaps, Secrets, PDBs, ...), and the Services
    /// of the Deployments that serve webhooks or API services.
    pub others: Vec<DynamicObject>,
    /// Validating- and MutatingWebhookConfigurations and APIServices (cluster-scoped).
    pub webhooks: Vec<DynamicObject>,
    /// `spec.conversion` of the CRDs that conversion webhooks convert (the CRDs in
    /// [`RenderedBundle::crds`] have none).
    pub conversions: Vec<CrdConversion>,
    /// The ServiceAccounts the bundle uses (the pull-secret copies go to all of them) and the
    /// ones opcat creates.
    pub service_account_names: ServiceAccounts,
    /// `imagePullSecrets` that the bundle's own ServiceAccount manifests list, by ServiceAccount
    /// name. They are not in [`RenderedBundle::service_accounts`]; the controller attaches them
    /// with the same read-modify-write as the copies, so entries others added are kept.
    pub bundle_pull_secrets: BTreeMap<String, Vec<String>>,
    /// The CSV's OperatorCondition (`operators.coreos.com/v2`), named like the CSV. Not in
    /// [`RenderedBundle::in_apply_order`]: the controller applies it before the Deployments,
    /// which name it in `OPERATOR_CONDITION_NAME`, and drift-checks it against its own watch.
    pub operator_condition: crate::api::OperatorCondition,
    /// Kind, namespace and name of each object whose name opcat derives with a hash over the
    /// object's inputs (the RBAC generated from `permissions` and `clusterPermissions`), and of
    /// the OperatorCondition's Role and RoleBinding (named like the CSV: only OLM names objects
    /// so, for the same grant). Nothing else names an object so, so the controller creates
    /// these without first reading the name to look for a foreign object there (issue 12).
    pub hashed_names: BTreeSet<(String, Option<String>, String)>,
}

impl RenderedBundle {
    /// Every object, in apply order.
    pub fn in_apply_order(&self) -> impl Iterator<Item = &DynamicObject> {
        self.service_accounts
            .iter()
            .chain(&self.rbac)
            .chain(&self.crds)
            .chain(&self.deployments)
            .chain(&self.others)
            .chain(&self.webhooks)
    }

    /// Whether opcat derived `object`'s name with a hash over its inputs
    /// ([`RenderedBundle::hashed_names`]).
    pub fn has_hashed_name(&self, object: &DynamicObject) -> bool {
        let wanted = key(object);
        self.hashed_names.iter().any(|(kind, namespace, name)| {
            (kind.as_str(), namespace.as_deref(), name.as_str()) == wanted
        })
    }
}

/// Why a bundle cannot be rendered for an install.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The CSV cannot be installed by opcat.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The CSV does not support the OperatorGroup's targets.
    #[error(transparent)]
    InstallMode(#[from] InstallModeError),
    /// An extra label is not a valid Kubernetes label.
    #[error("extra label {key:?}={value:?} is not a valid Kubernetes label")]
    InvalidExtraLabel {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// A Deployment without a pod template spec.
    #[error("Deployment {deployment} has no pod template (spec.template.spec)")]
    NoPodSpec {
        /// The Deployment's name.
        deployment: String,
    },
    /// A Deployment serves webhooks or API services, but the context has no certificate for it.
    #[error(
        "Deployment {deployment} serves webhooks or API services but has no serving certificate"
    )]
    MissingCertificate {
        /// The Deployment's name.
        deployment: String,
    },
    /// A conversion webhook's CRD keeps unknown fields (OLM's message).
    #[error(
        "CustomResourceDefinition {crd}: spec.preserveUnknownFields must be false to let the API \
         server call the webhook to do the conversion"
    )]
    ConversionKeepsUnknownFields {
        /// The CRD.
        crd: String,
    },
    /// A rendered object cannot be represented as JSON.
    #[error("cannot render {kind} {name}: {message}")]
    Serialize {
        /// Kind of the object.
        kind: String,
        /// Name of the object.
        name: String,
        /// The serializer's message.
        message: String,
    },
    /// Two different objects were rendered with the same kind, namespace and name.
    #[error("two different {kind} objects named {name} in {namespace}")]
    Conflict {
        /// Kind of the objects.
        kind: String,
        /// Their namespace (`cluster scope` for cluster-scoped objects).
        namespace: String,
        /// Their name.
        name: String,
    },
}

impl RenderError {
    /// A short CamelCase name of the error, for metric labels and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(error) => error.kind(),
            Self::InstallMode(error) => error.kind(),
            Self::InvalidExtraLabel { .. } => "InvalidExtraLabel",
            Self::NoPodSpec { .. } => "InvalidInstallStrategy",
            Self::MissingCertificate { .. } => "RenderFailed",
            Self::ConversionKeepsUnknownFields { .. } => "InvalidWebhookDescription",
            Self::Serialize { .. } => "RenderFailed",
            Self::Conflict { .. } => "ObjectConflict",
        }
    }
}

/// Renders `bundle` for the install described by `context`.
pub fn render(bundle: &Bundle, context: &RenderContext<'_>) -> Result<RenderedBundle, RenderError> {
    let csv = &bundle.csv;
    validate_for_install(csv)?;
    check_install_mode(csv, context.install_namespace, context.targets)?;
    let stamp = Stamp::new(context)?;

    let mut rbac_objects = rbac::rbac(
        csv.spec.install.permissions(),
        csv.spec.install.cluster_permissions(),
        context,
        &stamp,
    )?;
    let operator_condition = operator_condition::operator_condition(csv, context, &stamp);
    let operator_condition_rbac = operator_condition::rbac(&operator_condition, context, &stamp)?;
    let hashed_names = rbac_objects
        .iter()
        .chain(&operator_condition_rbac)
        .map(|object| {
            let (kind, namespace, name) = key(object);
            (
                kind.to_owned(),
                namespace.map(str::to_owned),
                name.to_owned(),
            )
        })
        .collect();
    let mut crds = Vec::new();
    let mut others = Vec::new();
    let mut service_account_manifests = Vec::new();
    for object in &bundle.objects {
        match object.kind() {
            SERVICE_ACCOUNT => service_account_manifests.push(object),
            ROLE | ROLE_BINDING | CLUSTER_ROLE | CLUSTER_ROLE_BINDING => {
                rbac_objects.push(objects::from_manifest(object, context, &stamp));
            }
            CUSTOM_RESOURCE_DEFINITION => {
                crds.push(objects::from_manifest(object, context, &stamp))
            }
            _ => others.push(objects::from_manifest(object, context, &stamp)),
        }
    }
    serving::strip_conversions(csv, &mut crds);
    let conversions = serving::conversions(csv, &crds, context)?;
    let (services, serving_rbac) = serving::services_and_rbac(csv, context, &stamp)?;
    // OLM replaces a bundle Service of the same name with its own; so does opcat.
    others.retain(|object| !services.iter().any(|service| key(service) == key(object)));
    others.extend(services);
    rbac_objects.extend(serving_rbac);
    rbac_objects.extend(operator_condition_rbac);
    let webhooks = webhooks::webhook_objects(csv, context, &stamp)?;
    let service_account_names = service_accounts(bundle);
    let accounts = objects::service_accounts(
        &service_account_manifests,
        &service_account_names.to_create,
        context,
        &stamp,
    )?;
    let bundle_pull_secrets = objects::bundle_pull_secrets(&service_account_manifests);
    let deployments = deployment::deployments(csv, context, &stamp)?
        .iter()
        .map(to_dynamic)
        .collect::<Result<Vec<_>, _>>()?;

    Ok(RenderedBundle {
        service_accounts: sorted(accounts)?,
        rbac: sorted(rbac_objects)?,
        hashed_names,
        crds: sorted(crds)?,
        deployments: sorted(deployments)?,
        others: sorted(others)?,
        webhooks: sorted(webhooks)?,
        conversions,
        service_account_names,
        bundle_pull_secrets,
        operator_condition,
    })
}

/// The labels, annotations and owner every rendered object gets.
struct Stamp {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    owner: OwnerReference,
    install_namespace: String,
}

impl Stamp {
    fn new(context: &RenderContext<'_>) -> Result<Self, RenderError> {
        if let Some((key, value)) = context
            .extra_labels
            .iter()
            .find(|(key, value)| !is_label_key(key) || !is_label_value(value))
        {
            return Err(RenderError::InvalidExtraLabel {
                key: key.clone(),
                value: value.clone(),
            });
        }
        let mut labels = context.extra_labels.clone();
        labels.extend(ownership_labels(
            &context.csv.name,
            context.install_namespace,
        ));
        Ok(Self {
            labels,
            annotations: ownership_annotations(&context.csv.name),
            owner: context.csv.owner_reference(),
            install_namespace: context.install_namespace.to_owned(),
        })
    }

    /// Metadata of a rendered object: `labels` and `annotations` from the bundle plus ours, and
    /// the owner reference when the object lives in the CSV's namespace.
    fn metadata(
        &self,
        name: &str,
        namespace: Option<&str>,
        labels: Option<&BTreeMap<String, String>>,
        annotations: Option<&BTreeMap<String, String>>,
    ) -> ObjectMeta {
        let mut all_labels = labels.cloned().unwrap_or_default();
        all_labels.extend(self.labels.clone());
        let mut all_annotations = annotations.cloned().unwrap_or_default();
        all_annotations.extend(self.annotations.clone());
        let owned = namespace == Some(self.install_namespace.as_str());
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            labels: Some(all_labels),
            annotations: Some(all_annotations).filter(|map| !map.is_empty()),
            owner_references: owned.then(|| vec![self.owner.clone()]),
            ..ObjectMeta::default()
        }
    }
}

/// A typed Kubernetes object as a [`DynamicObject`] (with `apiVersion` and `kind`).
fn to_dynamic<K>(object: &K) -> Result<DynamicObject, RenderError>
where
    K: kube::Resource<DynamicType = ()> + Serialize,
{
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|error| RenderError::Serialize {
            kind: K::kind(&()).into_owned(),
            name: object.meta().name.clone().unwrap_or_default(),
            message: error.to_string(),
        })
}

/// Sorts by kind, namespace, name; drops exact duplicates (two `permissions` entries with the
/// same account and rules render the same objects) and refuses different objects under one name.
fn sorted(mut objects: Vec<DynamicObject>) -> Result<Vec<DynamicObject>, RenderError> {
    objects.sort_by(|a, b| key(a).cmp(&key(b)));
    let mut unique: Vec<DynamicObject> = Vec::with_capacity(objects.len());
    for object in objects {
        match unique.last() {
            Some(last) if key(last) == key(&object) => {
                if !same_object(last, &object) {
                    let (kind, namespace, name) = key(&object);
                    return Err(RenderError::Conflict {
                        kind: kind.to_owned(),
                        namespace: namespace.unwrap_or("cluster scope").to_owned(),
                        name: name.to_owned(),
                    });
                }
            }
            _ => unique.push(object),
        }
    }
    Ok(unique)
}

fn key(object: &DynamicObject) -> (&str, Option<&str>, &str) {
    (
        object.types.as_ref().map_or("", |t| t.kind.as_str()),
        object.metadata.namespace.as_deref(),
        object.metadata.name.as_deref().unwrap_or_default(),
    )
}

fn same_object(a: &DynamicObject, b: &DynamicObject) -> bool {
    a.types == b.types && a.metadata == b.metadata && a.data == b.data
}
