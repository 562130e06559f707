//! Objects taken from the bundle's manifests (ServiceAccounts, RBAC, CRDs and the rest), and the
//! ServiceAccounts opcat creates for the names the CSV uses.
//!
//! A manifest keeps its content but gets fresh metadata: its name, labels and annotations plus
//! opcat's, and nothing the API server owns (`creationTimestamp: null`, `uid`, `status`, ...),
//! so that "desired ⊆ live" holds after the first apply. Namespaced kinds are placed in the
//! install namespace.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::DynamicObject;
use serde_json::Value;

use super::{RenderContext, RenderError, Stamp, to_dynamic};
use crate::bundle::kinds::{self, CUSTOM_RESOURCE_DEFINITION, SERVICE_ACCOUNT};
use crate::bundle::load::BundleObject;
use crate::bundle::ownership::{RETAIN_LABEL, RETAIN_VALUE};

/// Fields of a bundle ServiceAccount that opcat never writes: `imagePullSecrets` is a
/// `listType=atomic` list that the controller edits with a read-modify-write (writing it here
/// would take it over and drop entries added by others); `secrets` lists token Secrets of the
/// namespace the manifest was generated in.
const SERVICE_ACCOUNT_FIELDS_NOT_RENDERED: &[&str] = &["imagePullSecrets", "secrets"];

/// A bundle manifest as opcat applies it.
pub(super) fn from_manifest(
    object: &BundleObject,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> DynamicObject {
    let kind = object.kind();
    let namespace = kinds::is_namespaced(kind)
        .unwrap_or(true)
        .then_some(context.install_namespace);
    let source = &object.object;
    let mut labels = source.metadata.labels.clone().unwrap_or_default();
    if kind == CUSTOM_RESOURCE_DEFINITION {
        labels.insert(RETAIN_LABEL.to_owned(), RETAIN_VALUE.to_owned());
    }
    let metadata = stamp.metadata(
        object.name(),
        namespace,
        Some(&labels),
        source.metadata.annotations.as_ref(),
    );
    let mut data = source.data.clone();
    if let Value::Object(fields) = &mut data {
        fields.remove("status");
        if kind == SERVICE_ACCOUNT {
            for field in SERVICE_ACCOUNT_FIELDS_NOT_RENDERED {
                fields.remove(*field);
            }
        }
    }
    DynamicObject {
        types: source.types.clone(),
        metadata,
        data,
    }
}

/// The ServiceAccounts opcat creates (`to_create`): from the bundle's manifest when it has one,
/// else bare.
pub(super) fn service_accounts(
    manifests: &[&BundleObject],
    to_create: &BTreeSet<String>,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<Vec<DynamicObject>, RenderError> {
    to_create
        .iter()
        .map(
            |name| match manifests.iter().find(|manifest| manifest.name() == name) {
                Some(manifest) => Ok(from_manifest(manifest, context, stamp)),
                None => to_dynamic(&ServiceAccount {
                    metadata: stamp.metadata(name, Some(context.install_namespace), None, None),
                    ..ServiceAccount::default()
                }),
            },
        )
        .collect()
}

/// The `imagePullSecrets` names the bundle's ServiceAccount manifests list (`default`
/// included), by ServiceAccount, for the controller to attach with a read-modify-write.
pub(super) fn bundle_pull_secrets(manifests: &[&BundleObject]) -> BTreeMap<String, Vec<String>> {
    manifests
        .iter()
        .map(|manifest| (manifest.name().to_owned(), manifest_pull_secrets(manifest)))
        .filter(|(_, names)| !names.is_empty())
        .collect()
}

/// `imagePullSecrets[].name` of a ServiceAccount manifest, without empty names.
fn manifest_pull_secrets(manifest: &BundleObject) -> Vec<String> {
    manifest
        .object
        .data
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("name")?.as_str())
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}
