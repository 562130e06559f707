//! Apply, after the Deployments exist: the webhook configurations and APIServices, and the
//! `spec.conversion` of the CRDs that conversion webhooks convert; on uninstall, the conversion
//! put back to `None`. Also the watches that bring a deleted or edited configuration, APIService
//! or certificate Secret back to the CSV. Touches the client.
//!
//! Some of these objects exist once per cluster whatever the namespace: an APIService is named
//! after its API, a CRD's conversion has one webhook. The install whose labels the object
//! carries holds it while its CSV exists; an install in another namespace stops with
//! [`CsvError::HeldElsewhere`] rather than taking it over (two installs would take it from each
//! other at every reconcile). The install's own namespace takes it over: that is an upgrade.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DynamicObject, PartialObjectMeta, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, watcher};
use kube::runtime::{Controller, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use super::error::CsvError;
use super::labelled::LabelledObjects;
use super::objects;
use super::observe;
use super::status::Health;
use crate::api::{ClusterServiceVersion, FIELD_MANAGER};
use crate::bundle::RenderedBundle;
use crate::bundle::ownership::{CSV_ANNOTATION, CSV_LABEL, CSV_NAMESPACE_LABEL};
use crate::bundle::serving::{conversion_crds, service_name};
use crate::certificates::{CERTIFICATE_LABEL, CERTIFICATE_LABEL_VALUE};
use crate::controller::apply::ApplyError;
use crate::controller::context::Context;
use crate::controller::drift;
use crate::controller::stored_object::StoredCsv;
use crate::controller::stores::{Scope, created_by_opcat};

const API_SERVICE_KIND: &str = "APIService";
const CRD_KIND: &str = "CustomResourceDefinition";

/// Applies the rendered webhook configurations and APIServices, then the CRD conversions.
pub(super) async fn apply(
    context: &Context,
    namespace: &str,
    rendered: &RenderedBundle,
    live: &LabelledObjects,
) -> Result<(), CsvError> {
    for object in &rendered.webhooks {
        let is_api_service = object
            .types
            .as_ref()
            .is_some_and(|types| types.kind == API_SERVICE_KIND);
        if is_api_service && live.get(object).is_none() {
            let api: Api<APIService> = Api::all(context.client.clone());
            let name = object.name_any();
            let current = api
                .get_opt(&name)
                .await
                .map_err(|source| CsvError::read(format!("APIService {name}"), source))?;
            if let Some(holder) = current.and_then(|c| held_elsewhere(context, namespace, &c)) {
                return Err(held(API_SERVICE_KIND, &name, holder));
            }
        }
    }
    let no_force = |_: &DynamicObject, _: &DynamicObject| false;
    let hashed = |object: &DynamicObject| rendered.has_hashed_name(object);
    objects::apply_all(context, &rendered.webhooks, live, hashed, no_force).await?;

    let crds: Api<CustomResourceDefinition> = Api::all(context.client.clone());
    for conversion in &rendered.conversions {
        let name = &conversion.crd;
        let crd = crds
            .get_opt(name)
            .await
            .map_err(|source| CsvError::read(format!("{CRD_KIND} {name}"), source))?
            .ok_or_else(|| CsvError::Foreign {
                kind: CRD_KIND.to_owned(),
                object: format!("{name} (named in conversionCRDs; it does not exist)"),
            })?;
        if let Some(holder) = held_elsewhere(context, namespace, &crd) {
            return Err(held(CRD_KIND, name, holder));
        }
        let current = serde_json::to_value(&crd.spec.conversion).unwrap_or(Value::Null);
        if drift::contains(&current, &conversion.conversion) {
            continue;
        }
        set_conversion(&crds, name, conversion.conversion.clone()).await?;
        tracing::info!(namespace, crd = %name, service = %conversion.service, "conversion webhook set");
    }
    Ok(())
}

/// OLM's install check for owned API services: the install is healthy once its Deployments
/// are and every APIService reports `Available` (the aggregator reached the operator's
/// server through the Service with the CA bundle).
pub(super) async fn api_service_health(
    context: &Context,
    rendered: &RenderedBundle,
    health: Health,
) -> Result<Health, CsvError> {
    if health != Health::Ready {
        return Ok(health);
    }
    let api: Api<APIService> = Api::all(context.client.clone());
    for object in &rendered.webhooks {
        if object
            .types
            .as_ref()
            .is_none_or(|types| types.kind != API_SERVICE_KIND)
        {
            continue;
        }
        let name = object.name_any();
        let live = api
            .get_opt(&name)
            .await
            .map_err(|source| CsvError::read(format!("APIService {name}"), source))?;
        let available = live
            .as_ref()
            .and_then(|service| service.status.as_ref())
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conditions| conditions.iter().find(|c| c.type_ == "Available"));
        match available {
            Some(condition) if condition.status == "True" => {}
            Some(condition) => {
                return Ok(Health::NotReady(format!(
                    "waiting for APIService {name} to become available: {}: {}",
                    condition.reason.as_deref().unwrap_or_default(),
                    condition.message.as_deref().unwrap_or_default()
                )));
            }
            None => {
                return Ok(Health::NotReady(format!(
                    "waiting for APIService {name} to become available"
                )));
            }
        }
    }
    Ok(Health::Ready)
}

/// On uninstall: every CRD this CSV converts whose conversion still calls this install's
/// Service goes back to `strategy: None`, unless another CSV of opcat in the namespace converts
/// it too (an upgrade in progress). The CRDs themselves stay (DESIGN invariant 10).
pub(super) async fn restore_conversions(
    context: &Context,
    csv: &ClusterServiceVersion,
    namespace: &str,
) -> Result<(), CsvError> {
    let name = csv.name_any();
    let others = observe::other_csvs(context, namespace, &name);
    let crds: Api<CustomResourceDefinition> = Api::all(context.client.clone());
    for (crd_name, webhook) in conversion_crds(csv) {
        if others
            .iter()
            .any(|other| conversion_crds(other).contains_key(crd_name))
        {
            continue;
        }
        let Some(crd) = crds
            .get_opt(crd_name)
            .await
            .map_err(|source| CsvError::read(format!("{CRD_KIND} {crd_name}"), source))?
        else {
            continue;
        };
        let service = service_name(webhook.deployment_name.as_deref().unwrap_or_default());
        let calls_us = crd
            .spec
            .conversion
            .as_ref()
            .filter(|conversion| conversion.strategy == "Webhook")
            .and_then(|conversion| conversion.webhook.as_ref())
            .and_then(|webhook| webhook.client_config.as_ref())
            .and_then(|config| config.service.as_ref())
            .is_some_and(|reference| reference.namespace == namespace && reference.name == service);
        if calls_us {
            set_conversion(&crds, crd_name, json!({"strategy": "None"})).await?;
            tracing::info!(namespace, csv = %name, crd = %crd_name, "conversion webhook removed");
        }
    }
    Ok(())
}

/// Replaces a CRD's `spec.conversion` as a whole (JSON patch `add`, which replaces an existing
/// member): a merge would keep fields of the old value, such as a `url` beside a `service`.
async fn set_conversion(
    crds: &Api<CustomResourceDefinition>,
    name: &str,
    conversion: Value,
) -> Result<(), CsvError> {
    let patch: Patch<()> = Patch::Json(
        serde_json::from_value(json!([
            {"op": "add", "path": "/spec/conversion", "value": conversion}
        ]))
        .map_err(|error| {
            ApplyError::new(
                "encode",
                CRD_KIND,
                name.to_owned(),
                kube::Error::SerdeError(error),
            )
        })?,
    );
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    crds.patch(name, &params, &patch).await.map_err(|source| {
        ApplyError::new("patch the conversion of", CRD_KIND, name.to_owned(), source)
    })?;
    Ok(())
}

fn held(kind: &str, object: &str, holder: String) -> CsvError {
    CsvError::HeldElsewhere {
        kind: kind.to_owned(),
        object: object.to_owned(),
        holder,
    }
}

/// The namespace of the install holding `object`, when that is not `namespace` and its CSV
/// still exists.
fn held_elsewhere<K: Resource>(context: &Context, namespace: &str, object: &K) -> Option<String> {
    let holder = labelled_csv(object)?;
    let holder_namespace = holder.namespace.clone().unwrap_or_default();
    let installed = context
        .stores
        .csvs
        .get(&holder)
        .is_some_and(|csv| !observe::is_deleting(csv.as_ref()));
    (holder_namespace != namespace && installed).then_some(holder_namespace)
}

/// The CSV an object's ownership labels name (full name from the annotation when the label was
/// shortened).
fn labelled_csv<K: Resource>(object: &K) -> Option<ObjectRef<StoredCsv>> {
    let labels = object.meta().labels.as_ref()?;
    let namespace = labels.get(CSV_NAMESPACE_LABEL)?;
    let name = object
        .meta()
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(CSV_ANNOTATION))
        .or_else(|| labels.get(CSV_LABEL))?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Adds the watches of what this module and the certificates write: certificate Secrets (by
/// their label), webhook configurations and APIServices (by opcat's label), metadata only, each
/// mapped to the CSV its labels name.
pub(super) fn watch(
    controller: Controller<StoredCsv>,
    client: &Client,
    scope: &Scope,
) -> Controller<StoredCsv> {
    let certificates = watcher::Config::default().labels(&format!(
        "{},{CERTIFICATE_LABEL}={CERTIFICATE_LABEL_VALUE}",
        created_by_opcat()
    ));
    let ours = watcher::Config::default().labels(&created_by_opcat());
    let secrets: Api<PartialObjectMeta<Secret>> = match scope {
        Scope::Cluster => Api::all(client.clone()),
        Scope::Namespace(namespace) => Api::namespaced(client.clone(), namespace),
    };
    let validating: Api<PartialObjectMeta<ValidatingWebhookConfiguration>> =
        Api::all(client.clone());
    let mutating: Api<PartialObjectMeta<MutatingWebhookConfiguration>> = Api::all(client.clone());
    let api_services: Api<PartialObjectMeta<APIService>> = Api::all(client.clone());
    controller
        .watches_stream(
            watcher(secrets, certificates)
                .default_backoff()
                .touched_objects(),
            |secret| labelled_csv(&secret).into_iter().collect::<Vec<_>>(),
        )
        .watches_stream(
            watcher(validating, ours.clone())
                .default_backoff()
                .touched_objects(),
            |object| labelled_csv(&object).into_iter().collect::<Vec<_>>(),
        )
        .watches_stream(
            watcher(mutating, ours.clone())
                .default_backoff()
                .touched_objects(),
            |object| labelled_csv(&object).into_iter().collect::<Vec<_>>(),
        )
        .watches_stream(
            watcher(api_services, ours)
                .default_backoff()
                .touched_objects(),
            |object| labelled_csv(&object).into_iter().collect::<Vec<_>>(),
        )
}
