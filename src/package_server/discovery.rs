//! Discovery documents: `/apis`, `/apis/packages.operators.coreos.com`,
//! `/apis/packages.operators.coreos.com/v1` (what kube-aggregator's availability check reads),
//! and aggregated discovery (`apidiscovery.k8s.io/v2` and `v2beta1`) for `/apis`.

use serde_json::{Value, json};

use super::types::{API_VERSION, GROUP, ICON_SUBRESOURCE, KIND, RESOURCE, SINGULAR, VERSION};

fn group_version() -> Value {
    json!({"groupVersion": API_VERSION, "version": VERSION})
}

fn group() -> Value {
    json!({
        "name": GROUP,
        "versions": [group_version()],
        "preferredVersion": group_version(),
    })
}

/// `GET /apis`.
pub fn group_list() -> Value {
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group()]})
}

/// `GET /apis/packages.operators.coreos.com`.
pub fn api_group() -> Value {
    let mut group = group();
    if let Some(object) = group.as_object_mut() {
        object.insert("kind".to_owned(), json!("APIGroup"));
        object.insert("apiVersion".to_owned(), json!("v1"));
    }
    group
}

/// `GET /apis/packages.operators.coreos.com/v1`: get and list only (no watch, no writes), and
/// the `icon` subresource.
pub fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": API_VERSION,
        "resources": [
            {
                "name": RESOURCE,
                "singularName": SINGULAR,
                "namespaced": true,
                "kind": KIND,
                "verbs": ["get", "list"],
            },
            {
                "name": format!("{RESOURCE}/{ICON_SUBRESOURCE}"),
                "singularName": "",
                "namespaced": true,
                "kind": KIND,
                "verbs": ["get"],
            },
        ],
    })
}

/// Aggregated discovery of `/apis` in `apidiscovery.k8s.io/<version>` (`v2` or `v2beta1`).
pub fn aggregated(version: &str) -> Value {
    let kind = json!({"group": GROUP, "version": VERSION, "kind": KIND});
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": [{
            "metadata": {"name": GROUP, "creationTimestamp": null},
            "versions": [{
                "version": VERSION,
                "resources": [{
                    "resource": RESOURCE,
                    "responseKind": kind,
                    "scope": "Namespaced",
                    "singularResource": SINGULAR,
                    "verbs": ["get", "list"],
                    "subresources": [{
                        "subresource": ICON_SUBRESOURCE,
                        "responseKind": kind,
                        "verbs": ["get"],
                    }],
                }],
                "freshness": "Current",
            }],
        }],
    })
}
