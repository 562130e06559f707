//! The package API's serving certificate: issued and rotated with
//! [`crate::certificates::plan`] for the Service `<service>.<namespace>.svc`, kept in a Secret
//! in opcat's namespace (so every replica and restart serves the same CA), and its CA kept in
//! the APIService's `spec.caBundle` (server-side apply as `opcat`, that field only).
//!
//! Order, so that the APIService never distrusts what is served: the CA bundle is written
//! first (a rotation keeps the previous CA in it for a day), then the Secret; and a replica
//! serves a certificate only once the APIService, as watched, trusts its CA
//! ([`trusted_by`]).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::TypeMeta;
use kube::{Client, ResourceExt};

use crate::api::{MANAGED_LABEL, MANAGED_LABEL_VALUE};
use crate::certificates::{
    self, Action, CA_HASH_ANNOTATION, CERTIFICATE_LABEL, CERTIFICATE_LABEL_VALUE, Material,
    Planned, ServiceIdentity,
};
use crate::controller::apply::{self, ApplyError, Outcome};
use crate::controller::resources::ResolvedResource;

/// `type` of the Secret.
const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// Why the certificate could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// The Secret exists without opcat's labels (DESIGN invariant 3).
    #[error(
        "Secret {0} exists but was not made by opcat (no opcat.dev/managed and \
         opcat.dev/serving-certificate labels); opcat will not overwrite it: delete it or choose \
         another name with --package-api-secret"
    )]
    Foreign(String),
    /// The APIService is not installed.
    #[error(
        "APIService {0} does not exist; apply deploy/package-api.yaml (opcat only keeps its \
         spec.caBundle)"
    )]
    NoApiService(String),
    /// Issuing failed.
    #[error(transparent)]
    Issue(#[from] certificates::CertificateError),
    /// A write failed.
    #[error(transparent)]
    Write(#[from] ApplyError),
}

/// What is stored now.
pub struct Stored<'a> {
    /// The Secret (`None`: absent).
    pub secret: Option<&'a Secret>,
    /// The APIService (`None`: absent).
    pub api_service: Option<&'a APIService>,
}

/// The material the Secret holds, if it is complete.
pub fn material(secret: &Secret) -> Option<Material> {
    Material::from_secret_object(secret)
}

/// Whether `secret` is opcat's certificate Secret.
pub fn is_ours(secret: &Secret) -> bool {
    let labels = secret.labels();
    labels.get(MANAGED_LABEL).map(String::as_str) == Some(MANAGED_LABEL_VALUE)
        && labels.get(CERTIFICATE_LABEL).map(String::as_str) == Some(CERTIFICATE_LABEL_VALUE)
}

/// Decides the material at `now` and writes what changed: the CA bundle, then the Secret.
/// Returns the material the Secret now holds.
pub async fn keep(
    client: &Client,
    identity: &ServiceIdentity,
    secret_name: &str,
    api_service_name: &str,
    stored: Stored<'_>,
    now: Timestamp,
) -> Result<Planned, CertificateError> {
    let object = format!("{}/{secret_name}", identity.namespace);
    if let Some(secret) = stored.secret
        && !is_ours(secret)
    {
        return Err(CertificateError::Foreign(object));
    }
    let Some(api_service) = stored.api_service else {
        return Err(CertificateError::NoApiService(api_service_name.to_owned()));
    };
    let planned = certificates::plan(stored.secret.and_then(material), identity, now)?;
    apply_ca_bundle(client, api_service, &planned.material).await?;
    let desired = secret(identity, secret_name, &planned.material);
    let api: Api<Secret> = Api::namespaced(client.clone(), &identity.namespace);
    // A changed plan is written unconditionally: server-side apply then also removes what the
    // material no longer holds (a previous CA whose day is over).
    let live = if planned.changed() {
        None
    } else {
        stored.secret
    };
    if apply::apply_typed(&api, &desired, live).await? == Outcome::Applied
        && let Action::Issued(reason) = &planned.action
    {
        tracing::info!(secret = %object, service = %identity, %reason, "package API: serving certificate issued");
    }
    Ok(planned)
}

/// Whether `api_service`'s `spec.caBundle` holds `ca_pem`.
pub fn trusted_by(api_service: &APIService, ca_pem: &str) -> bool {
    api_service
        .spec
        .as_ref()
        .and_then(|spec| spec.ca_bundle.as_ref())
        .and_then(|bundle| String::from_utf8(bundle.0.clone()).ok())
        .is_some_and(|bundle| bundle.contains(ca_pem.trim()))
}

/// Applies `spec.caBundle` (only that field) unless it already holds the bundle.
async fn apply_ca_bundle(
    client: &Client,
    live: &APIService,
    material: &Material,
) -> Result<(), ApplyError> {
    let bundle = ByteString(material.ca_bundle().into_bytes());
    if live.spec.as_ref().and_then(|spec| spec.ca_bundle.as_ref()) == Some(&bundle) {
        return Ok(());
    }
    let resource = ResolvedResource {
        resource: ApiResource::erase::<APIService>(&()),
        namespaced: false,
    };
    let mut desired = DynamicObject::new(&live.name_any(), &resource.resource);
    desired.types = Some(TypeMeta {
        api_version: "apiregistration.k8s.io/v1".to_owned(),
        kind: "APIService".to_owned(),
    });
    desired.data = serde_json::json!({"spec": {"caBundle": bundle}});
    apply::apply_dynamic(client, &resource, &desired, None).await?;
    tracing::info!(api_service = %live.name_any(), "package API: CA bundle of the APIService updated");
    Ok(())
}

/// The Secret holding `material`.
fn secret(identity: &ServiceIdentity, name: &str, material: &Material) -> Secret {
    let labels = BTreeMap::from([
        (MANAGED_LABEL.to_owned(), MANAGED_LABEL_VALUE.to_owned()),
        (
            CERTIFICATE_LABEL.to_owned(),
            CERTIFICATE_LABEL_VALUE.to_owned(),
        ),
        ("app.kubernetes.io/name".to_owned(), "opcat".to_owned()),
    ]);
    let mut annotations = material.secret_annotations();
    annotations.insert(CA_HASH_ANNOTATION.to_owned(), material.ca_hash());
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(identity.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        type_: Some(TLS_SECRET_TYPE.to_owned()),
        data: Some(material.secret_data()),
        ..Secret::default()
    }
}
