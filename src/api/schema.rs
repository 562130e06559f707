//! Schema helpers for fields whose generated JSON schema needs a Kubernetes extension.
//!
//! Used through `#[schemars(schema_with = "...")]` on CRD fields. Every helper returns a
//! *structural* schema (see the Kubernetes docs on structural schemas): the apiserver must be
//! able to prune and default with it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSON,
};
use schemars::{Schema, SchemaGenerator, json_schema};

/// Any JSON value (object, array, string, number, boolean), kept as written.
///
/// For OLM fields typed `json.RawMessage` or free-form maps: the apiserver neither validates
/// nor prunes them.
pub(crate) fn any_json(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Removes the type's own description from its schema.
///
/// For enums used as optional fields: kube's `OptionalEnum` transform copies the enum's
/// description over the field's, so the field's `///` docs (what `kubectl explain` should
/// show) would be lost. Without a type description the field's description stays.
pub(crate) fn drop_description(schema: &mut Schema) {
    schema.remove("description");
}

/// Makes `spec` optional in every version of `crd`, with `default` as its default: the apiserver
/// fills it in when an object is written or read without one, so readers always find it.
pub(crate) fn optional_spec(crd: &mut CustomResourceDefinition, default: &serde_json::Value) {
    for version in &mut crd.spec.versions {
        let Some(root) = version
            .schema
            .as_mut()
            .and_then(|schema| schema.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        if let Some(required) = root.required.as_mut() {
            required.retain(|field| field != "spec");
        }
        if root.required.as_ref().is_some_and(Vec::is_empty) {
            root.required = None;
        }
        if let Some(spec) = root
            .properties
            .as_mut()
            .and_then(|properties| properties.get_mut("spec"))
        {
            spec.default = Some(JSON(default.clone()));
        }
    }
}
