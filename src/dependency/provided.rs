//! The APIs a catalog bundle provides. `opm render` writes one `olm.gvk` property per API
//! (`operator-registry: pkg/registry/parse.go`, `derivedProperties`), so those are read first.
//! A hand-written catalog may lack them; then, as `opm` derives them
//! (`pkg/registry/bundle.go`, `ProvidedAPIs`): every served version of every CRD among the
//! bundle's objects plus the CSV's owned API services, or, for a bundle reduced to
//! `olm.csv.metadata`, its owned `crdDescriptions` and `apiServiceDefinitions`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::fbc::Bundle;
use crate::fbc::property::{Gvk, Property};

/// The APIs `bundle` provides, sorted and without duplicates.
pub fn provided_apis(bundle: &Bundle) -> Vec<Gvk> {
    let mut provided: BTreeSet<Gvk> = bundle
        .properties
        .iter()
        .filter_map(|p| match p {
            Property::Gvk(gvk) => Some(gvk.clone()),
            _ => None,
        })
        .collect();
    if provided.is_empty() {
        if bundle.objects().next().is_some() {
            from_objects(bundle, &mut provided);
        } else if let Some(metadata) = bundle.csv_metadata() {
            owned_crds(metadata.crd_descriptions.as_ref(), &mut provided);
            owned_api_services(metadata.api_service_definitions.as_ref(), &mut provided);
        }
    }
    provided.into_iter().collect()
}

fn from_objects(bundle: &Bundle, provided: &mut BTreeSet<Gvk>) {
    for object in bundle.objects().filter_map(|o| o.manifest().ok()) {
        let kind = object.get("kind").and_then(Value::as_str);
        if kind == Some("CustomResourceDefinition") {
            let spec = object.get("spec");
            let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
            let group = text(spec.and_then(|s| s.get("group")));
            let kind = text(spec.and_then(|s| s.pointer("/names/kind")));
            let versions = spec
                .and_then(|s| s.get("versions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|v| text(v.get("name")))
                .chain(spec.and_then(|s| s.get("version")).map(|v| text(Some(v))));
            for version in versions.filter(|v| !v.is_empty()) {
                provided.insert(Gvk {
                    group: group.clone(),
                    kind: kind.clone(),
                    version,
                });
            }
        } else if kind == Some("ClusterServiceVersion") {
            owned_api_services(object.pointer("/spec/apiservicedefinitions"), provided);
        }
    }
}

/// `{owned: [{name: plural.group, version, kind}]}`: the group is the name after its first dot.
fn owned_crds(descriptions: Option<&Value>, provided: &mut BTreeSet<Gvk>) {
    for owned in owned(descriptions) {
        let name = field(owned, "name");
        let group = name.split_once('.').map(|(_, g)| g).unwrap_or_default();
        provided.insert(Gvk {
            group: group.to_owned(),
            kind: field(owned, "kind").to_owned(),
            version: field(owned, "version").to_owned(),
        });
    }
}

/// `{owned: [{group, version, kind}]}`.
fn owned_api_services(definitions: Option<&Value>, provided: &mut BTreeSet<Gvk>) {
    for owned in owned(definitions) {
        provided.insert(Gvk {
            group: field(owned, "group").to_owned(),
            kind: field(owned, "kind").to_owned(),
            version: field(owned, "version").to_owned(),
        });
    }
}

fn owned(definitions: Option<&Value>) -> impl Iterator<Item = &Value> {
    definitions
        .and_then(|d| d.get("owned"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}
