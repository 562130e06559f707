//! Custom resources: turning a CustomResourceDefinition into a served resource
//! (`apiextensions-apiserver`), and the structural-schema behaviour of custom resources:
//! unknown fields are pruned and `default`s filled in.

use std::sync::Arc;

use serde_json::{Value, json};

use super::ResourceInfo;
use super::builtin::object_meta;
use crate::cluster::string_list;
use crate::schema::{ListKind, Schema, StructSchema};
use crate::status::{self, Cause};

/// The served versions and storage version of a CRD.
struct Versions {
    served: Vec<String>,
    storage: String,
    schema: Option<Value>,
    has_status: bool,
}

fn versions(spec: &Value, causes: &mut Vec<Cause>) -> Option<Versions> {
    let list = spec.get("versions").and_then(Value::as_array);
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        causes.push(status::required(
            "spec.versions",
            "must have at least one version",
        ));
        return None;
    };
    let mut served = Vec::new();
    let mut storage = Vec::new();
    for v in list {
        let Some(name) = v.get("name").and_then(Value::as_str) else {
            causes.push(status::required("spec.versions[].name", ""));
            continue;
        };
        if v.get("served").and_then(Value::as_bool).unwrap_or(false) {
            served.push(name.to_string());
        }
        if v.get("storage").and_then(Value::as_bool).unwrap_or(false) {
            storage.push(v);
        }
    }
    let [storage] = storage.as_slice() else {
        causes.push(status::invalid_value(
            "spec.versions",
            &json!(
                list.iter()
                    .filter_map(|v| v.get("name"))
                    .collect::<Vec<_>>()
            ),
            "must have exactly one version marked as storage version",
        ));
        return None;
    };
    Some(Versions {
        served,
        storage: storage
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        schema: storage.pointer("/schema/openAPIV3Schema").cloned(),
        has_status: storage.pointer("/subresources/status").is_some(),
    })
}

/// Validates `crd` and describes the resource it defines.
pub(crate) fn resource_from_crd(crd: &Value) -> Result<ResourceInfo, Vec<Cause>> {
    let mut causes = Vec::new();
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let text = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let group = text("/group");
    let plural = text("/names/plural");
    let kind = text("/names/kind");
    let scope = text("/scope");
    if group.is_empty() {
        causes.push(status::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(status::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(status::required("spec.names.kind", ""));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(status::invalid_value(
            "spec.scope",
            &json!(scope),
            "should be either Cluster or Namespaced",
        ));
    }
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(status::invalid_value(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = versions(&spec, &mut causes);
    let (Some(versions), true) = (versions, causes.is_empty()) else {
        return Err(causes);
    };
    let mut schema = match &versions.schema {
        Some(s) => from_openapi(s),
        None => Schema::Untyped,
    };
    if let Schema::Struct(root) = &mut schema {
        root.fields.insert("apiVersion".into(), Schema::Atomic);
        root.fields.insert("kind".into(), Schema::Atomic);
    }
    object_meta(&mut schema, "metadata");
    if let Schema::Struct(root) = &mut schema
        && let Some(Schema::Struct(meta)) = root.fields.get_mut("metadata")
    {
        meta.open = true;
    }
    let mut served = versions.served;
    // Preferred version first: the storage version when it is served.
    if let Some(pos) = served.iter().position(|v| *v == versions.storage) {
        let storage = served.remove(pos);
        served.insert(0, storage);
    }
    let singular = spec
        .pointer("/names/singular")
        .and_then(Value::as_str)
        .map_or_else(|| kind.to_lowercase(), str::to_string);
    let strings = |p: &str| string_list(spec.pointer(p));
    Ok(ResourceInfo {
        group,
        versions: served,
        kind,
        plural,
        singular,
        short_names: strings("/names/shortNames"),
        categories: strings("/names/categories"),
        namespaced: scope == "Namespaced",
        has_status: versions.has_status,
        tracks_generation: true,
        builtin: false,
        field_labels: vec!["metadata.name", "metadata.namespace"],
        create_only: false,
        schema: Arc::new(schema),
    })
}

/// The status the apiextensions controllers give an accepted CRD.
pub(crate) fn established_status(crd: &Value, now: &str) -> Value {
    let mut names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Value::Object(n) = &mut names {
        let kind = n
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        n.entry("singular")
            .or_insert_with(|| kind.to_lowercase().into());
        n.entry("listKind")
            .or_insert_with(|| format!("{kind}List").into());
    }
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        })
        .and_then(|v| v.get("name").cloned())
        .unwrap_or(Value::Null);
    json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "storedVersions": [storage],
    })
}

/// Converts an OpenAPI v3 schema node.
pub(crate) fn from_openapi(node: &Value) -> Schema {
    let flag = |k: &str| node.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("x-kubernetes-int-or-string") {
        return Schema::Atomic;
    }
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    match node.get("type").and_then(Value::as_str) {
        Some("object") => {
            if node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                return Schema::Atomic;
            }
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                let mut s = StructSchema {
                    open: preserve,
                    ..StructSchema::default()
                };
                for (name, prop) in props {
                    s.fields.insert(name.clone(), from_openapi(prop));
                    if let Some(d) = prop.get("default") {
                        s.defaults.insert(name.clone(), d.clone());
                    }
                }
                return Schema::Struct(s);
            }
            if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
                return Schema::Map(Box::new(from_openapi(values)));
            }
            if preserve {
                return Schema::Untyped;
            }
            Schema::Struct(StructSchema::default())
        }
        Some("array") => {
            let items = node.get("items").map_or(Schema::Deduced, from_openapi);
            let kind = match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("map") => {
                    let keys = string_list(node.get("x-kubernetes-list-map-keys"));
                    let key_defaults = keys
                        .iter()
                        .filter_map(|k| {
                            let d = node.pointer(&format!("/items/properties/{k}/default"))?;
                            Some((k.clone(), d.clone()))
                        })
                        .collect();
                    ListKind::Map { keys, key_defaults }
                }
                Some("set") => ListKind::Set,
                _ => ListKind::Atomic,
            };
            Schema::List {
                kind,
                items: Box::new(items),
            }
        }
        None if preserve => Schema::Untyped,
        _ => Schema::Atomic,
    }
}

/// Drops fields the structural schema does not declare and fills declared defaults
/// (apiextensions pruning and defaulting).
pub(crate) fn prune_and_default(value: &mut Value, schema: &Schema) {
    match (value, schema) {
        (Value::Object(map), Schema::Struct(s)) => {
            if !s.open {
                map.retain(|k, _| s.fields.contains_key(k));
            }
            for (k, d) in &s.defaults {
                if !map.contains_key(k) {
                    map.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(field) = s.fields.get(k) {
                    prune_and_default(v, field);
                }
            }
        }
        (Value::Object(map), Schema::Map(values)) => {
            for v in map.values_mut() {
                prune_and_default(v, values);
            }
        }
        (
            Value::Array(items),
            Schema::List {
                items: item_schema, ..
            },
        ) => {
            for v in items {
                prune_and_default(v, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "default": 3},
                            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                      "x-kubernetes-list-map-keys": ["name"],
                                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }}}
                }]
            }
        })
    }

    #[test]
    fn crd_becomes_a_namespaced_resource_with_status() {
        let info = resource_from_crd(&crd()).unwrap();
        assert_eq!(info.plural, "widgets");
        assert!(info.namespaced && info.has_status && !info.builtin);
        let ports = info.schema.field("spec").field("ports");
        assert!(matches!(ports.list_kind(), ListKind::Map { keys, .. } if keys == &["name"]));
    }

    #[test]
    fn wrong_name_is_invalid() {
        let mut c = crd();
        c["metadata"]["name"] = json!("widgets");
        let causes = resource_from_crd(&c).unwrap_err();
        assert_eq!(causes[0].field, "metadata.name");
    }

    #[test]
    fn unknown_fields_are_pruned_and_defaults_filled() {
        let info = resource_from_crd(&crd()).unwrap();
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}},
            "spec": {"bogus": 1, "free": {"anything": {"goes": true}}}, "extra": 1});
        prune_and_default(&mut obj, &info.schema);
        assert_eq!(
            obj["spec"],
            json!({"size": 3, "free": {"anything": {"goes": true}}})
        );
        assert!(obj.get("extra").is_none());
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
    }
}
