//! Metadata-only responses: a client that asks for `as=PartialObjectMetadata` (or
//! `as=PartialObjectMetadataList`) in `Accept` gets each object as a `meta.k8s.io/v1`
//! `PartialObjectMetadata` holding its `metadata` only, in get, list and watch answers. Mirrors
//! `transformObject`, `asPartialObjectMetadata` and `asPartialObjectMetadataList` of
//! kubernetes `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go` (items carry
//! their own `apiVersion`/`kind`; the list keeps `resourceVersion` and `continue`).

use serde_json::{Map, Value, json};

const API_VERSION: &str = "meta.k8s.io/v1";

/// Whether the `Accept` header asks for metadata only.
pub(crate) fn wanted(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|media| {
            media.starts_with("application/json")
                && media
                    .split(';')
                    .any(|param| param.trim().starts_with("as=PartialObjectMetadata"))
        })
    })
}

/// One object as `PartialObjectMetadata`.
pub(crate) fn object(obj: &Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "PartialObjectMetadata",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// A list answer as `PartialObjectMetadataList`.
pub(crate) fn list(body: &Value) -> Value {
    let items: Vec<Value> = body
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(object).collect())
        .unwrap_or_default();
    json!({
        "apiVersion": API_VERSION,
        "kind": "PartialObjectMetadataList",
        "metadata": body.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_clients_metadata_accept_headers_are_recognised() {
        // What kube-rs and client-go send.
        assert!(wanted(Some(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        )));
        assert!(wanted(Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        )));
        assert!(!wanted(Some("application/json")));
        assert!(!wanted(None));
    }

    #[test]
    fn only_metadata_is_kept() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "resourceVersion": "5"}, "data": {"k": "v"}});
        let list = list(&json!({"apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "9"}, "items": [cm]}));
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["metadata"]["resourceVersion"], "9");
        assert_eq!(
            list["items"][0],
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": {"name": "a", "resourceVersion": "5"}})
        );
    }
}
