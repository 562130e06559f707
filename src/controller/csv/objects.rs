//! Apply: the rendered objects (RBAC, CRDs, Deployments, the rest), the wait for CRDs to be
//! established, and the sweep of objects a render no longer produces. Touches the client.
//!
//! Every object is server-side applied with field manager `opcat` behind the drift check
//! (`controller::apply`). The check asks whether the desired object is contained in the live
//! one, which cannot see a field opcat *stopped* setting (a Subscription `config` entry removed,
//! a pull-secret copy dropped from a pod template). So each applied object also carries
//! [`APPLIED_HASH_ANNOTATION`], a hash of what was rendered: when the render changes, the live
//! object no longer contains the desired hash, and the apply — which prunes what opcat no
//! longer sets — happens. A converged object still gets no write (DESIGN invariant 5).

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};

use super::error::CsvError;
use super::labelled::{LabelledObjects, ObjectKey};
use crate::api::operator::is_component_label;
use crate::bundle::ownership::{
    CSV_ANNOTATION, CSV_LABEL, CSV_NAMESPACE_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE,
    RETAIN_LABEL, RETAIN_VALUE,
};
use crate::controller::apply::{self, dynamic_api};
use crate::controller::context::Context;
use crate::pull_secrets::names::short_hash;

pub use crate::controller::keys::APPLIED_HASH as APPLIED_HASH_ANNOTATION;

pub(super) const CRD_KIND: &str = "CustomResourceDefinition";

/// `object` with [`APPLIED_HASH_ANNOTATION`] set to the hash of its rendered form.
pub fn with_applied_hash(object: &DynamicObject) -> DynamicObject {
    let mut object = object.clone();
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove(APPLIED_HASH_ANNOTATION);
        if annotations.is_empty() {
            object.metadata.annotations = None;
        }
    }
    // Objects rendered from plain data always serialise; an empty text still hashes.
    let rendered = serde_json::to_string(&object).unwrap_or_default();
    object
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(APPLIED_HASH_ANNOTATION.to_owned(), short_hash(&[&rendered]));
    object
}

/// Whether `object` is opcat's (labelled `app.kubernetes.io/managed-by=opcat`).
pub(super) fn is_opcat(object: &impl ResourceExt) -> bool {
    object.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE)
}

/// Applies `objects` in order. An object not labelled for this CSV is looked up by name
/// first (in the watch cache of opcat's objects, else by a GET): one that exists without
/// opcat's label is not taken over (CRDs excepted: they are adopted, as OLM does, and never
/// deleted). Objects whose names opcat derives with a hash over their content
/// (`hashed_name`) skip the GET: no one else names an object so, and a name no watch shows
/// is absent at a first install. An object the cache shows verified and with the desired
/// metadata is converged without a request; any other is read whole for the drift check.
/// Returns how many objects were written.
pub async fn apply_all(
    context: &Context,
    objects: &[DynamicObject],
    live: &LabelledObjects,
    hashed_name: impl Fn(&DynamicObject) -> bool,
    force: impl Fn(&DynamicObject, &DynamicObject) -> bool,
) -> Result<usize, CsvError> {
    let owned = &context.stores.owned;
    let mut written = 0;
    for object in objects {
        let Some(types) = &object.types else {
            continue;
        };
        let resource = context
            .resources
            .resolve(&types.api_version, &types.kind)
            .await?;
        let key = ObjectKey::of(object);
        let mut current = live.get(object).cloned();
        let mut verified = live.partial.get(&key).copied();
        if current.is_none()
            && let Some((cached, cached_verified)) =
                super::labelled::cached_for_another_csv(owned, types, object)
        {
            verified = Some(cached_verified);
            current = Some(cached);
        }
        if current.is_none() && !hashed_name(object) {
            current = get(context, &resource, object).await?;
            if let Some(existing) = &current
                && !is_opcat(existing)
                && types.kind != CRD_KIND
            {
                return Err(CsvError::Foreign {
                    kind: types.kind.clone(),
                    object: key.to_string(),
                });
            }
        }
        let desired = match &current {
            Some(existing) if types.kind == CRD_KIND => with_applied_hash(&without_components(
                shared_crd(object, existing, |namespace, name| {
                    holder_is_installed(context, namespace, name)
                }),
            )),
            _ if types.kind == CRD_KIND => with_applied_hash(&without_components(object.clone())),
            _ => with_applied_hash(object),
        };
        if let (Some(partial), Some(verified)) = (&current, verified) {
            // Content as verified and metadata as desired: converged, no request. (The render
            // is in the applied hash, so a verified object holds nothing opcat stopped setting.)
            if verified && metadata_contains(partial, &desired) {
                continue;
            }
            current = get(context, &resource, object).await?;
        }
        // A live object that still carries something opcat stopped setting is re-applied even
        // when the desired object is contained in it.
        let current = current.filter(|live| !force(object, live));
        match apply::apply_dynamic_returning(&context.client, &resource, &desired, current.as_ref())
            .await?
        {
            Some(applied) => {
                owned.verified(&applied);
                written += 1;
            }
            None => {
                if let Some(current) = &current {
                    owned.verified(current);
                }
            }
        }
    }
    Ok(written)
}

/// Whether the metadata of `live` holds the metadata `desired` sets (labels, annotations with
/// the applied hash, owner references).
fn metadata_contains(live: &DynamicObject, desired: &DynamicObject) -> bool {
    match (
        serde_json::to_value(&live.metadata),
        serde_json::to_value(&desired.metadata),
    ) {
        (Ok(live), Ok(desired)) => crate::controller::drift::contains(&live, &desired),
        _ => false,
    }
}

/// A CRD is one cluster-scoped object shared by every install of its operator. The install
/// whose labels it carries keeps them while that CSV exists in another namespace: every other
/// install renders the CRD with the holder's ownership labels and annotation, so it compares
/// (and, on drift, applies) the content only. Otherwise N installs would take the CRD over from
/// each other at every resync — N writes per resync period, forever. The holder's own namespace
/// takes over (an upgrade: the CSV that replaces the holder), and so does any install once the
/// holder is gone. CRDs are never swept or deleted, so whose labels they carry changes nothing
/// else.
fn shared_crd(
    rendered: &DynamicObject,
    live: &DynamicObject,
    holder_is_installed: impl Fn(&str, &str) -> bool,
) -> DynamicObject {
    let label = |object: &DynamicObject, key: &str| object.labels().get(key).cloned();
    let (Some(holder_namespace), Some(holder_label)) =
        (label(live, CSV_NAMESPACE_LABEL), label(live, CSV_LABEL))
    else {
        return rendered.clone();
    };
    let holder_name = live
        .annotations()
        .get(CSV_ANNOTATION)
        .cloned()
        .unwrap_or_else(|| holder_label.clone());
    let same_install = label(rendered, CSV_NAMESPACE_LABEL).as_ref() == Some(&holder_namespace);
    if !is_opcat(live) || same_install || !holder_is_installed(&holder_namespace, &holder_name) {
        return rendered.clone();
    }
    let mut shared = rendered.clone();
    let labels = shared.metadata.labels.get_or_insert_default();
    labels.insert(CSV_LABEL.to_owned(), holder_label);
    labels.insert(CSV_NAMESPACE_LABEL.to_owned(), holder_namespace);
    let annotations = shared.metadata.annotations.get_or_insert_default();
    match live.annotations().get(CSV_ANNOTATION) {
        Some(full_name) => annotations.insert(CSV_ANNOTATION.to_owned(), full_name.clone()),
        None => annotations.remove(CSV_ANNOTATION),
    };
    if annotations.is_empty() {
        shared.metadata.annotations = None;
    }
    shared
}

/// `desired` without component labels (`operators.coreos.com/<package>.<namespace>`). A CRD
/// is shared by every install of its operator and is a component of each: each install's label
/// is set by a merge patch of that one label (the Operator reconciler, as OLM's adoption
/// controller) and removed by one at uninstall ([`super::component_release`]), so that the
/// applies of the CRD, by one field manager, neither carry nor remove them (carrying them made
/// every install rewrite the CRD whenever another install's label appeared).
fn without_components(mut desired: DynamicObject) -> DynamicObject {
    if let Some(labels) = desired.metadata.labels.as_mut() {
        labels.retain(|key, _| !is_component_label(key));
    }
    desired
}

/// Whether the CSV `namespace/name` exists (in the store) and is not being deleted.
fn holder_is_installed(context: &Context, namespace: &str, name: &str) -> bool {
    context
        .stores
        .csvs
        .get(&ObjectRef::new(name).within(namespace))
        .is_some_and(|csv| csv.meta().deletion_timestamp.is_none())
}

async fn get(
    context: &Context,
    resource: &crate::controller::resources::ResolvedResource,
    object: &DynamicObject,
) -> Result<Option<DynamicObject>, CsvError> {
    let api = dynamic_api(&context.client, resource, object.namespace().as_deref());
    api.get_opt(&object.name_any())
        .await
        .map_err(|source| CsvError::read(ObjectKey::of(object).to_string(), source))
}

/// The CRDs among `crds` whose group serves one of `objects` and that are not `Established`
/// yet: objects of those kinds must wait.
pub async fn unestablished_crds(
    client: &Client,
    crds: &[DynamicObject],
    objects: &[DynamicObject],
) -> Result<Vec<String>, CsvError> {
    let groups: BTreeSet<String> = objects
        .iter()
        .filter_map(|object| object.types.as_ref())
        .map(|types| crate::controller::resources::gvk(&types.api_version, &types.kind).group)
        .collect();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut waiting = Vec::new();
    for crd in crds {
        let group = crd
            .data
            .pointer("/spec/group")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if !groups.contains(group) {
            continue;
        }
        let name = crd.name_any();
        let live = api
            .get_opt(&name)
            .await
            .map_err(|source| CsvError::read(format!("CustomResourceDefinition {name}"), source))?;
        let established = live
            .and_then(|crd| crd.status)
            .and_then(|status| status.conditions)
            .into_iter()
            .flatten()
            .any(|condition| condition.type_ == "Established" && condition.status == "True");
        if !established {
            waiting.push(name);
        }
    }
    Ok(waiting)
}

/// Whether the sweep and the uninstall keep `object`: CRDs and objects labelled to be retained
/// (DESIGN invariant 10).
pub fn is_retained(object: &DynamicObject) -> bool {
    object
        .types
        .as_ref()
        .is_some_and(|types| types.kind == CRD_KIND)
        || object.labels().get(RETAIN_LABEL).map(String::as_str) == Some(RETAIN_VALUE)
}

/// Deletes every object of `live` whose key is not in `keep` and that is not retained. Each
/// delete carries the uid it was listed with. Returns the keys deleted.
pub async fn delete_unlisted(
    client: &Client,
    live: &LabelledObjects,
    keep: &BTreeSet<ObjectKey>,
) -> Result<Vec<ObjectKey>, CsvError> {
    let mut deleted = Vec::new();
    for (key, (resource, object)) in &live.objects {
        if keep.contains(key) || is_retained(object) {
            continue;
        }
        if object.metadata.deletion_timestamp.is_some() {
            continue;
        }
        apply::delete_dynamic(
            client,
            resource,
            object.namespace().as_deref(),
            &object.name_any(),
            object.uid(),
        )
        .await?;
        deleted.push(key.clone());
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_applied_hash_follows_the_rendered_object_and_nothing_else() {
        let a = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "1"}}));
        let b = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "2"}}));
        let hash = |o: &DynamicObject| o.annotations().get(APPLIED_HASH_ANNOTATION).cloned();
        let hashed = with_applied_hash(&a);
        assert_eq!(hash(&hashed), hash(&with_applied_hash(&a)));
        assert_eq!(hash(&with_applied_hash(&hashed)), hash(&hashed));
        assert_ne!(hash(&hashed), hash(&with_applied_hash(&b)));
    }

    fn crd(csv: &str, namespace: &str, annotations: serde_json::Value) -> DynamicObject {
        object(json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "annotations": annotations,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE, RETAIN_LABEL: RETAIN_VALUE,
                    CSV_LABEL: csv, CSV_NAMESPACE_LABEL: namespace}},
            "spec": {"group": "example.com"}}))
    }

    #[test]
    fn a_crd_keeps_the_labels_of_an_install_in_another_namespace_while_it_exists() {
        let live = crd("widget.v1", "team-a", json!({"team": "x"}));
        let rendered = crd("widget.v1", "team-b", json!({"team": "x"}));
        let installed = |namespace: &str, name: &str| namespace == "team-a" && name == "widget.v1";
        let shared = shared_crd(&rendered, &live, installed);
        assert_eq!(shared.labels(), live.labels());
        assert_eq!(shared.annotations(), live.annotations());
        assert_eq!(shared.data, rendered.data);
        // Same bundle, so the same applied hash as the holder's: no write.
        let hash =
            |o: &DynamicObject| with_applied_hash(o).annotations()[APPLIED_HASH_ANNOTATION].clone();
        assert_eq!(hash(&shared), hash(&live));

        // The holder is gone: this install takes the CRD over.
        let gone = |_: &str, _: &str| false;
        assert_eq!(
            shared_crd(&rendered, &live, gone).labels(),
            rendered.labels()
        );
        // The holder's namespace (an upgrade) takes it over.
        let upgrade = crd("widget.v2", "team-a", json!({"team": "x"}));
        assert_eq!(
            shared_crd(&upgrade, &live, installed).labels(),
            upgrade.labels()
        );
    }

    #[test]
    fn a_crd_held_under_a_hashed_label_is_found_by_its_full_name_annotation() {
        let long = "a".repeat(70);
        let live = crd(
            "aaaa-hashed",
            "team-a",
            json!({CSV_ANNOTATION: long.clone()}),
        );
        let rendered = crd("widget.v1", "team-b", json!({}));
        let installed = |namespace: &str, name: &str| namespace == "team-a" && name == long;
        let shared = shared_crd(&rendered, &live, installed);
        assert_eq!(shared.labels(), live.labels());
        assert_eq!(shared.annotations()[CSV_ANNOTATION], long);
        // The holder's annotation does not leak into an install that does not need one.
        let plain = crd("widget.v1", "team-a", json!({}));
        let installed = |_: &str, name: &str| name == "widget.v1";
        let taken = crd("widget.v1", "team-b", json!({CSV_ANNOTATION: "stale"}));
        assert!(
            shared_crd(&taken, &plain, installed)
                .metadata
                .annotations
                .is_none()
        );
    }

    #[test]
    fn a_crd_is_applied_without_component_labels() {
        let mut rendered = crd("widget.v1", "team-b", json!({}));
        rendered
            .labels_mut()
            .insert("operators.coreos.com/widget.team-b".into(), String::new());
        let desired = without_components(rendered);
        assert!(!desired.labels().keys().any(|key| is_component_label(key)));
        assert_eq!(desired.labels()[CSV_LABEL], "widget.v1");
    }

    #[test]
    fn crds_and_retained_objects_are_never_swept() {
        let crd = object(json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "w.example.com"}}));
        let retained = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {RETAIN_LABEL: RETAIN_VALUE}}}));
        let plain = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}}));
        assert!(is_retained(&crd));
        assert!(is_retained(&retained));
        assert!(!is_retained(&plain));
    }
}
