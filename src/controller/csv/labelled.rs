//! Dereference of the objects a CSV owns: every object labelled with it, from the metadata watch
//! caches where opcat keeps one, otherwise (and always on uninstall) by one label-selected LIST
//! per kind. Touches the client (reads only).

use std::collections::{BTreeMap, BTreeSet};

use kube::ResourceExt;
use kube::api::{DynamicObject, ListParams, TypeMeta};

use super::error::CsvError;
use super::objects::CRD_KIND;
use crate::api::operator::COMPONENT_LABEL_PREFIX;
use crate::bundle::ownership::csv_selector;
use crate::controller::apply::{dynamic_api, is_not_found};
use crate::controller::context::Context;
use crate::controller::owned_objects::{OwnedObject, OwnedObjects};
use crate::controller::resources::ResolvedResource;

/// Kinds listed for a CSV's objects besides the kinds its current render produces, so objects of
/// a previous render can be swept: everything the static resource table knows that a bundle may
/// hold.
pub const SWEPT_KINDS: &[(&str, &str)] = &[
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("apps/v1", "Deployment"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
    ("apiregistration.k8s.io/v1", "APIService"),
];

/// Identity of an object: API group, kind, namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    /// The key of a rendered or listed object.
    pub fn of(object: &DynamicObject) -> Self {
        let (group, kind) = match &object.types {
            Some(types) => {
                let gvk = crate::controller::resources::gvk(&types.api_version, &types.kind);
                (gvk.group, gvk.kind)
            }
            None => (String::new(), String::new()),
        };
        Self {
            group,
            kind,
            namespace: object.metadata.namespace.clone(),
            name: object.name_any(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Every object labelled with a CSV, by key, with the resource that serves it.
#[derive(Default)]
pub struct LabelledObjects {
    pub objects: BTreeMap<ObjectKey, (ResolvedResource, DynamicObject)>,
    /// The keys of `objects` known by their metadata only (from the watch cache), each with
    /// whether its content is the one opcat last verified ([`OwnedObject::verified`]).
    pub partial: BTreeMap<ObjectKey, bool>,
}

impl LabelledObjects {
    /// The live object for a rendered one.
    pub fn get(&self, object: &DynamicObject) -> Option<&DynamicObject> {
        self.objects
            .get(&ObjectKey::of(object))
            .map(|(_, object)| object)
    }
}

/// The objects of each kind in `kinds` labelled with `csv` of `namespace`: the kinds of the
/// static resource table from the metadata watch caches (no request; see
/// [`crate::controller::owned_objects`]), any other kind (a custom resource a bundle ships) by a
/// label-selected LIST. The uninstall lists instead ([`labelled_objects`]): it must not miss an
/// object whose watch event is still on its way.
pub async fn cached_objects(
    context: &Context,
    csv: &str,
    namespace: &str,
    kinds: &BTreeSet<(String, String)>,
) -> Result<LabelledObjects, CsvError> {
    let owned = &context.stores.owned;
    let (cached, listed): (BTreeSet<_>, BTreeSet<_>) = kinds
        .iter()
        .cloned()
        .partition(|(api_version, kind)| owned.caches(api_version, kind));
    let mut found = labelled_objects(context, csv, namespace, &listed).await?;
    for object in owned.of_csv(csv, namespace) {
        let resource = &object.resource.resource;
        if !cached.contains(&(resource.api_version.clone(), resource.kind.clone())) {
            continue;
        }
        let (resource, verified) = (object.resource.clone(), object.verified);
        let partial = metadata_only(object);
        let key = ObjectKey::of(&partial);
        found.partial.insert(key.clone(), verified);
        found.objects.insert(key, (resource, partial));
    }
    Ok(found)
}

/// `object` as the owned-object cache holds it, when it is opcat's but labelled for another
/// CSV (a shared CRD), and whether its content is verified. A CRD's component labels are left
/// out: it carries one per install of its operator (thousands on a large cluster), the CRD an
/// install renders carries none, and restoring them for each install's look would cost in
/// proportion to the installs.
pub fn cached_for_another_csv(
    owned: &OwnedObjects,
    types: &TypeMeta,
    object: &DynamicObject,
) -> Option<(DynamicObject, bool)> {
    let (namespace, name) = (object.namespace(), object.name_any());
    let cached = if types.kind == CRD_KIND {
        owned.get_without_labels(
            &types.api_version,
            &types.kind,
            (namespace.as_deref(), &name),
            COMPONENT_LABEL_PREFIX,
        )
    } else {
        owned.get(&types.api_version, &types.kind, namespace.as_deref(), &name)
    }?;
    let verified = cached.verified;
    Some((metadata_only(cached), verified))
}

/// A cached object as a [`DynamicObject`] without content.
pub fn metadata_only(object: OwnedObject) -> DynamicObject {
    DynamicObject {
        types: Some(kube::api::TypeMeta {
            api_version: object.resource.resource.api_version,
            kind: object.resource.resource.kind,
        }),
        metadata: object.meta,
        data: serde_json::Value::Object(serde_json::Map::new()),
    }
}

/// Lists, in every namespace, the objects of each kind in `kinds` labelled with `csv` of
/// `namespace` ([`csv_selector`]). Kinds the cluster does not serve are skipped.
pub async fn labelled_objects(
    context: &Context,
    csv: &str,
    namespace: &str,
    kinds: &BTreeSet<(String, String)>,
) -> Result<LabelledObjects, CsvError> {
    let selector = csv_selector(csv, namespace);
    let params = ListParams::default().labels(&selector);
    let mut found = LabelledObjects::default();
    for (api_version, kind) in kinds {
        let resource = match context.resources.resolve(api_version, kind).await {
            Ok(resource) => resource,
            Err(error) => {
                tracing::debug!(
                    api_version = %api_version,
                    kind = %kind,
                    error = %crate::failure::error_chain(&error),
                    "kind not served; nothing of it to list"
                );
                continue;
            }
        };
        let api = dynamic_api(&context.client, &resource, None);
        let list = match api.list(&params).await {
            Ok(list) => list,
            // A kind of the static table that this cluster does not serve: nothing to list.
            Err(error) if is_not_found(&error) => continue,
            Err(source) => {
                return Err(CsvError::read(
                    format!("{kind} objects of ClusterServiceVersion {namespace}/{csv}"),
                    source,
                ));
            }
        };
        for mut object in list.items {
            // Lists do not carry the kind of each item.
            object.types = Some(kube::api::TypeMeta {
                api_version: resource.resource.api_version.clone(),
                kind: resource.resource.kind.clone(),
            });
            found
                .objects
                .insert(ObjectKey::of(&object), (resource.clone(), object));
        }
    }
    Ok(found)
}

/// The kinds to list: [`SWEPT_KINDS`] plus the kinds of `rendered`.
pub fn kinds_to_list<'a>(
    rendered: impl IntoIterator<Item = &'a DynamicObject>,
) -> BTreeSet<(String, String)> {
    let mut kinds: BTreeSet<(String, String)> = SWEPT_KINDS
        .iter()
        .map(|(version, kind)| ((*version).to_owned(), (*kind).to_owned()))
        .collect();
    kinds.extend(rendered.into_iter().filter_map(|object| {
        let types = object.types.as_ref()?;
        Some((types.api_version.clone(), types.kind.clone()))
    }));
    kinds
}
