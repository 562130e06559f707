//! The serving certificates of an install's webhook and API-service Deployments: read the
//! Secrets, decide (keep, rotate, issue) with [`crate::certificates::plan`], and write them
//! before the Deployments that mount them. Touches the client.
//!
//! Each Secret is read with a GET on every reconcile, not from a watch cache: the CA it holds
//! goes into the pod template and every `caBundle`, and a cache that has not seen opcat's own
//! last write would put the replaced CA back (and restart the Deployment a second time). The
//! certificate Secrets are watched too, metadata only and by label, so that one deleted or
//! edited is put back within seconds.
//!
//! A Secret of that name without opcat's certificate label is never touched (DESIGN invariant
//! 3): the install stops with [`CsvError::Foreign`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::events::EventType;

use super::error::CsvError;
use super::events::reference;
use super::labelled::ObjectKey;
use crate::api::ClusterServiceVersion;
use crate::bundle::ownership::{CsvOwner, ownership_annotations, ownership_labels};
use crate::bundle::render::ServingCertificate;
use crate::bundle::serving::{ServedDeployment, served_deployments};
use crate::certificates::{
    self, Action, CA_HASH_ANNOTATION, CERTIFICATE_LABEL, CERTIFICATE_LABEL_VALUE, Material,
    ServiceIdentity, Stale,
};
use crate::controller::apply::{Outcome, apply_typed};
use crate::controller::context::Context;

/// Event on the CSV when a serving certificate is first issued.
const EVENT_ISSUED: &str = "ServingCertificateIssued";
/// Event on the CSV when a serving certificate is replaced (near expiry, or unusable).
const EVENT_ROTATED: &str = "ServingCertificateRotated";

/// `type` of the certificate Secrets.
const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// The certificates of one install, decided.
#[derive(Default)]
pub(super) struct Certificates {
    /// The public half of each, by Deployment, for rendering.
    pub serving: BTreeMap<String, ServingCertificate>,
    secrets: Vec<Decided>,
}

/// One certificate Secret: what it must hold, what is live, and what changed.
struct Decided {
    desired: Secret,
    live: Option<Secret>,
    action: Action,
    /// The Service, for logs.
    service: String,
}

impl Certificates {
    /// Keys of the certificate Secrets, which the sweep must keep.
    pub fn keys(&self) -> impl Iterator<Item = ObjectKey> + '_ {
        self.secrets.iter().map(|decided| ObjectKey {
            group: String::new(),
            kind: "Secret".to_owned(),
            namespace: decided.desired.metadata.namespace.clone(),
            name: decided.desired.name_any(),
        })
    }
}

/// Reads each served Deployment's certificate Secret and decides what it must hold at `now`.
pub(super) async fn plan(
    context: &Context,
    csv: &ClusterServiceVersion,
    namespace: &str,
    owner: &CsvOwner,
    extra_labels: &BTreeMap<String, String>,
    now: Timestamp,
) -> Result<Certificates, CsvError> {
    let api: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    let mut decided = Certificates::default();
    for served in served_deployments(csv) {
        let live = api.get_opt(&served.secret).await.map_err(|source| {
            CsvError::read(format!("Secret {namespace}/{}", served.secret), source)
        })?;
        if let Some(live) = &live
            && !is_certificate_secret(live)
        {
            return Err(CsvError::Foreign {
                kind: "Secret".to_owned(),
                object: format!("{namespace}/{}", served.secret),
            });
        }
        let stored = live.as_ref().and_then(Material::from_secret_object);
        let identity = ServiceIdentity {
            service: served.service.clone(),
            namespace: namespace.to_owned(),
        };
        let planned = certificates::plan(stored, &identity, now)?;
        decided.serving.insert(
            served.deployment.clone(),
            ServingCertificate {
                ca_bundle: planned.material.ca_bundle(),
                ca_hash: planned.material.ca_hash(),
            },
        );
        decided.secrets.push(Decided {
            desired: secret(&served, namespace, owner, extra_labels, &planned.material),
            live,
            action: planned.action,
            service: identity.to_string(),
        });
    }
    Ok(decided)
}

/// Writes the Secrets whose content or metadata differ from what is live (none when converged).
pub(super) async fn write(
    context: &Context,
    csv: &ClusterServiceVersion,
    certificates: &Certificates,
) -> Result<(), CsvError> {
    for decided in &certificates.secrets {
        let namespace = decided.desired.namespace().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(context.client.clone(), &namespace);
        let outcome = apply_typed(&api, &decided.desired, decided.live.as_ref()).await?;
        if outcome == Outcome::Applied
            && let Action::Issued(reason) = &decided.action
        {
            let secret = decided.desired.name_any();
            tracing::info!(
                namespace = %namespace,
                csv = %csv.name_any(),
                secret = %secret,
                service = %decided.service,
                reason = %reason,
                "issued a serving certificate"
            );
            let event = if *reason == Stale::Missing {
                EVENT_ISSUED
            } else {
                EVENT_ROTATED
            };
            context
                .event(
                    &reference(csv),
                    EventType::Normal,
                    event,
                    "Install",
                    Some(format!(
                        "serving certificate of {} in Secret {secret}: {reason}; the CA \
                         bundles and the Deployment follow",
                        decided.service
                    )),
                )
                .await;
        }
    }
    Ok(())
}

/// Whether `secret` is a certificate Secret opcat made.
fn is_certificate_secret(secret: &Secret) -> bool {
    super::objects::is_opcat(secret)
        && secret.labels().get(CERTIFICATE_LABEL).map(String::as_str)
            == Some(CERTIFICATE_LABEL_VALUE)
}

/// The Secret holding `material` for `served`: type `kubernetes.io/tls`, `extra_labels` (the
/// install's component label), opcat's ownership labels plus [`CERTIFICATE_LABEL`], OLM's CA hash annotation, a non-controller owner
/// reference to the CSV.
fn secret(
    served: &ServedDeployment,
    namespace: &str,
    owner: &CsvOwner,
    extra_labels: &BTreeMap<String, String>,
    material: &Material,
) -> Secret {
    let mut labels = extra_labels.clone();
    labels.extend(ownership_labels(&owner.name, namespace));
    labels.insert(
        CERTIFICATE_LABEL.to_owned(),
        CERTIFICATE_LABEL_VALUE.to_owned(),
    );
    let mut annotations = ownership_annotations(&owner.name);
    annotations.insert(CA_HASH_ANNOTATION.to_owned(), material.ca_hash());
    annotations.extend(material.secret_annotations());
    Secret {
        metadata: ObjectMeta {
            name: Some(served.secret.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner.owner_reference()]),
            ..ObjectMeta::default()
        },
        data: Some(material.secret_data()),
        type_: Some(TLS_SECRET_TYPE.to_owned()),
        ..Secret::default()
    }
}
