//! Schema helpers for fields whose generated JSON schema needs a Kubernetes extension.
//!
//! Used through `#[schemars(schema_with = "...")]` on CRD fields. Every helper returns a
//! *structural* schema (see the Kubernetes docs on structural schemas): the apiserver must be
//! able to prune and default with it.

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
