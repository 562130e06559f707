//! Dereference and build: the components of one install, read from the stores the controller
//! already keeps (no request), as OLM's Operator lists them (`status.components.refs`): each
//! object labelled `operators.coreos.com/<package>.<namespace>`, with `apiVersion`, `kind`,
//! `name`, `namespace` and the object's `status.conditions` (for a ClusterServiceVersion one
//! condition of type `status.phase`, OLM's `csvConditionsJQ`), sorted by kind, apiVersion,
//! namespace and name (OLM's `Components.Less`).
//!
//! What the stores hold: Subscriptions, CSVs, InstallPlans, OperatorConditions, Deployments and
//! pull-secret copies with their conditions; every other object opcat created as metadata only
//! ([`crate::controller::owned_objects`]), so CRDs and APIServices are listed without their
//! conditions.

use std::sync::Arc;

use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::Install;
use crate::api::operator::{ComponentCondition, RichReference};
use crate::api::{ClusterServiceVersion, InstallPlan, OperatorCondition, Subscription};
use crate::controller::context::Context;
use crate::controller::deployment_rollout::DeploymentRollout;
use crate::controller::keys::csv as csv_keys;
use crate::controller::stored_object::{StoredCsv, StoredSubscription};

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";

/// The components of `install`, sorted; empty when nothing of it is left.
pub fn components(context: &Context, install: &Install) -> Vec<RichReference> {
    let stores = &context.stores;
    let namespace = &*install.namespace;
    let key = install.label_key();
    let mut refs = Vec::new();

    for subscription in subscriptions(context, install) {
        let conditions = subscription.status.as_ref().and_then(|status| {
            let loaded = status.load().conditions?;
            Some(
                loaded
                    .into_iter()
                    .map(|c| ComponentCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_update_time: None,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect(),
            )
        });
        refs.push(reference::<Subscription>(
            namespace,
            subscription.as_ref(),
            conditions,
        ));
    }
    let csvs: Vec<Arc<StoredCsv>> = csvs(context, install)
        .into_iter()
        .filter(|csv| csv.label(&key).is_some())
        .collect();
    for csv in &csvs {
        let conditions = csv.status.as_ref().and_then(|status| {
            let phase = status.phase?;
            Some(vec![ComponentCondition {
                type_: phase.as_str().to_owned(),
                status: "True".to_owned(),
                reason: status.reason.clone(),
                message: status.message.clone(),
                last_update_time: status.last_update_time.clone(),
                last_transition_time: status.last_transition_time.clone(),
            }])
        });
        refs.push(reference::<ClusterServiceVersion>(
            namespace,
            csv.as_ref(),
            conditions,
        ));
    }
    for plan in stores.namespaced.install_plans.in_namespace(namespace) {
        if plan.label(&key).is_none() {
            continue;
        }
        let conditions = plan.status.as_ref().and_then(|status| {
            let list = status.conditions.as_ref()?;
            Some(
                list.iter()
                    .map(|c| ComponentCondition {
                        type_: c.type_.clone().unwrap_or_default(),
                        status: c.status.clone().unwrap_or_default(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                        last_update_time: c.last_update_time.clone(),
                        last_transition_time: c.last_transition_time.clone(),
                    })
                    .collect(),
            )
        });
        refs.push(reference::<InstallPlan>(
            namespace,
            plan.as_ref(),
            conditions,
        ));
    }
    for copy in stores.namespaced.copies.in_namespace(namespace) {
        if copy.label(&key).is_some() {
            refs.push(reference::<k8s_openapi::api::core::v1::Secret>(
                namespace,
                copy.as_ref(),
                None,
            ));
        }
    }
    for csv in &csvs {
        let name = csv.meta().name.as_deref().unwrap_or_default();
        refs.extend(objects_of(context, name, namespace, &key));
        if let Some(operator_condition) = stores
            .operator_conditions
            .get(&ObjectRef::new(name).within(namespace))
            .filter(|found| found.labels().contains_key(&key))
        {
            refs.push(operator_condition_ref(namespace, &operator_condition));
        }
        // Owned CRDs another install holds carry this install's label too.
        for owned in csv.spec.owned_crds() {
            let labelled =
                stores
                    .owned
                    .has_label(CRD_API_VERSION, CRD_KIND, (None, &owned.name), &key)
                    == Some(true);
            if labelled {
                refs.push(RichReference {
                    api_version: Some(CRD_API_VERSION.to_owned()),
                    kind: Some(CRD_KIND.to_owned()),
                    name: Some(owned.name.clone()),
                    ..RichReference::default()
                });
            }
        }
    }
    refs.sort_by(|a, b| {
        (&a.kind, &a.api_version, &a.namespace, &a.name).cmp(&(
            &b.kind,
            &b.api_version,
            &b.namespace,
            &b.name,
        ))
    });
    refs.dedup();
    refs
}

/// The Subscriptions of `install`: those in its namespace for its package.
pub fn subscriptions(context: &Context, install: &Install) -> Vec<Arc<StoredSubscription>> {
    context
        .stores
        .namespaced
        .subscriptions
        .in_namespace(&install.namespace)
        .into_iter()
        .filter(|subscription| *subscription.spec.package == *install.package)
        .collect()
}

/// The CRDs `csv` owns that opcat applied (the metadata store shows them) and that lack `key`.
pub fn unlabelled_crds(context: &Context, csv: &StoredCsv, key: &str) -> Vec<String> {
    csv.spec
        .owned_crds()
        .iter()
        .filter(|owned| {
            context
                .stores
                .owned
                .has_label(CRD_API_VERSION, CRD_KIND, (None, &owned.name), key)
                == Some(false)
        })
        .map(|owned| owned.name.clone())
        .collect()
}

/// The CSVs opcat installed for `install` (their package annotation), labelled or not.
pub fn csvs(context: &Context, install: &Install) -> Vec<Arc<StoredCsv>> {
    context
        .stores
        .namespaced
        .csvs
        .in_namespace(&install.namespace)
        .into_iter()
        .filter(|csv| csv.annotation(csv_keys::PACKAGE) == Some(&*install.package))
        .collect()
}

/// The objects opcat created for the CSV `csv` (metadata store) that carry the label `key`,
/// Deployments with their conditions.
fn objects_of(context: &Context, csv: &str, namespace: &str, key: &str) -> Vec<RichReference> {
    let stores = &context.stores;
    stores
        .owned
        .of_csv(csv, namespace)
        .into_iter()
        .filter(|object| object.has_label(key))
        .map(|object| {
            let resource = &object.resource.resource;
            let conditions = (resource.kind == "Deployment")
                .then(|| {
                    let name = object.meta.name.as_deref().unwrap_or_default();
                    let found: Arc<DeploymentRollout> = stores
                        .deployments
                        .get(&ObjectRef::new(name).within(namespace))?;
                    let list = found.status.as_ref()?.conditions.as_ref()?;
                    Some(
                        list.iter()
                            .map(|c| ComponentCondition {
                                type_: c.type_.clone(),
                                status: c.status.clone(),
                                reason: c.reason.as_deref().map(str::to_owned),
                                message: c.message.clone(),
                                last_update_time: c.last_update_time.clone(),
                                last_transition_time: c.last_transition_time.clone(),
                            })
                            .collect(),
                    )
                })
                .flatten();
            RichReference {
                api_version: Some(resource.api_version.clone()),
                kind: Some(resource.kind.clone()),
                namespace: object.meta.namespace.clone(),
                name: object.meta.name.clone(),
                conditions,
                ..RichReference::default()
            }
        })
        .collect()
}

fn operator_condition_ref(namespace: &str, found: &OperatorCondition) -> RichReference {
    let conditions = found.status.as_ref().and_then(|status| {
        let list = status.conditions.as_ref()?;
        Some(
            list.iter()
                .map(|c| ComponentCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: Some(c.reason.clone()).filter(|reason| !reason.is_empty()),
                    message: Some(c.message.clone()).filter(|message| !message.is_empty()),
                    last_update_time: None,
                    last_transition_time: c.last_transition_time.clone(),
                })
                .collect(),
        )
    });
    reference::<OperatorCondition>(namespace, found, conditions)
}

fn reference<K: Resource<DynamicType = ()>>(
    namespace: &str,
    object: &impl Resource,
    conditions: Option<Vec<ComponentCondition>>,
) -> RichReference {
    RichReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: Some(namespace.to_owned()),
        name: object.meta().name.clone(),
        conditions,
        ..RichReference::default()
    }
}

/// The install of a CSV: its package annotation and namespace.
pub fn install_of_csv(csv: &StoredCsv) -> Option<Install> {
    let package = csv.annotation(csv_keys::PACKAGE)?;
    let namespace = csv.meta().namespace.as_deref()?;
    Some(Install::new(package, namespace))
}
