//! OpenAPI documents of the package API: `/openapi/v2` (Swagger 2.0) and `/openapi/v3` with
//! `/openapi/v3/apis/packages.operators.coreos.com/v1` (OpenAPI 3.0). kube-aggregator merges
//! them into the cluster's documents, which `kubectl explain packagemanifest.status` and
//! client-side validation read: the PackageManifest schemas carry
//! `x-kubernetes-group-version-kind`, as the generic API server writes them.
//!
//! The schemas are derived from [`super::types`] with `schemars` (OpenAPI 3.0 settings); the
//! Kubernetes ones (`ObjectMeta`, `ListMeta`, ...) come from `k8s-openapi`.

use std::sync::LazyLock;

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::types::{
    API_VERSION, GROUP, KIND, LIST_KIND, MODEL_PREFIX, PackageManifest, PackageManifestList,
    RESOURCE, VERSION,
};

/// The schemas, computed once.
static DOCUMENTS: LazyLock<Documents> = LazyLock::new(Documents::build);

/// The documents, serialized once: they never change while the process runs.
struct Documents {
    v2: Vec<u8>,
    v3: Vec<u8>,
    v3_root: Vec<u8>,
}

/// Path of the group-version document under `/openapi/v3/`.
pub const V3_GROUP_VERSION_PATH: &str = "apis/packages.operators.coreos.com/v1";

/// `GET /openapi/v2`.
pub fn v2() -> &'static [u8] {
    &DOCUMENTS.v2
}

/// `GET /openapi/v3/apis/packages.operators.coreos.com/v1`.
pub fn v3() -> &'static [u8] {
    &DOCUMENTS.v3
}

/// `GET /openapi/v3`: the index of group-version documents.
pub fn v3_root() -> &'static [u8] {
    &DOCUMENTS.v3_root
}

impl Documents {
    fn build() -> Self {
        let v3_schemas = schemas("#/components/schemas/");
        let v2_schemas = schemas("#/definitions/");
        let v3 = json!({
            "openapi": "3.0.0",
            "info": {"title": "opcat package API", "version": VERSION},
            "paths": paths("#/components/schemas/", true),
            "components": {"schemas": v3_schemas},
        });
        let v2 = json!({
            "swagger": "2.0",
            "info": {"title": "opcat package API", "version": VERSION},
            "paths": paths("#/definitions/", false),
            "definitions": v2_schemas,
        });
        let v3 = serde_json::to_vec(&v3).unwrap_or_default();
        let hash = {
            use sha2::{Digest, Sha256};
            hex::encode_upper(Sha256::digest(&v3))
        };
        let v3_root = json!({
            "paths": {
                V3_GROUP_VERSION_PATH: {
                    "serverRelativeURL": format!("/openapi/v3/{V3_GROUP_VERSION_PATH}?hash={hash}"),
                },
            },
        });
        Self {
            v2: serde_json::to_vec(&v2).unwrap_or_default(),
            v3,
            v3_root: serde_json::to_vec(&v3_root).unwrap_or_default(),
        }
    }
}

/// Every schema, with references under `prefix`, and the GVK extension on the two kinds.
fn schemas(prefix: &str) -> Map<String, Value> {
    let path = prefix
        .trim_start_matches('#')
        .trim_end_matches('/')
        .to_owned();
    let mut generator = SchemaSettings::openapi3()
        .with(|settings| {
            settings.definitions_path = path.into();
            settings.meta_schema = None;
        })
        .into_generator();
    generator.subschema_for::<PackageManifest>();
    generator.subschema_for::<PackageManifestList>();
    let mut definitions = generator.take_definitions(true);
    for (kind, name) in [
        (KIND, "PackageManifest"),
        (LIST_KIND, "PackageManifestList"),
    ] {
        if let Some(Value::Object(schema)) = definitions.get_mut(&format!("{MODEL_PREFIX}.{name}"))
        {
            schema.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                json!([{"group": GROUP, "kind": kind, "version": VERSION}]),
            );
        }
    }
    if prefix == "#/definitions/" {
        for schema in definitions.values_mut() {
            strip_openapi3_only(schema);
        }
    }
    definitions
}

/// Swagger 2.0 has no `nullable`.
fn strip_openapi3_only(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            for child in map.values_mut() {
                strip_openapi3_only(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_openapi3_only),
        _ => {}
    }
}

/// The read-only paths: list (namespaced and across namespaces), get, and the icon.
fn paths(prefix: &str, v3: bool) -> Value {
    let base = format!("/apis/{API_VERSION}");
    let reference = |name: &str| json!({"$ref": format!("{prefix}{MODEL_PREFIX}.{name}")});
    let response = |name: &str| {
        if v3 {
            json!({"200": {"description": "OK", "content": {
                "application/json": {"schema": reference(name)},
                "application/yaml": {"schema": reference(name)},
            }}})
        } else {
            json!({"200": {"description": "OK", "schema": reference(name)}})
        }
    };
    let operation = |id: &str, action: &str, name: &str| {
        json!({"get": {
            "operationId": id,
            "tags": ["packagesOperatorsCoreosCom_v1"],
            "responses": response(name),
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": KIND},
        }})
    };
    json!({
        format!("{base}/{RESOURCE}"):
            operation("listPackagesOperatorsCoreosComV1PackageManifestForAllNamespaces", "list", "PackageManifestList"),
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}"):
            operation("listPackagesOperatorsCoreosComV1NamespacedPackageManifest", "list", "PackageManifestList"),
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"):
            operation("readPackagesOperatorsCoreosComV1NamespacedPackageManifest", "get", "PackageManifest"),
    })
}
