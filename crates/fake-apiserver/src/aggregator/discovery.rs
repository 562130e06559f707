//! Discovery of aggregated groups.
//!
//! * `/apis` and `/apis/<group>` (`handler_apis.go`, `convertToDiscoveryAPIGroup`): every
//!   APIService's group and version is listed, available or not, versions by descending
//!   `versionPriority`, the first preferred; groups the fake serves itself keep their versions
//!   first.
//! * Aggregated discovery (`apidiscovery.k8s.io/v2`, `pkg/apiserver/discovery_aggregation`
//!   style): each remote group-version's resources come from the backend's
//!   `/apis/<group>/<version>` (`APIResourceList`, converted: `kind/sub` entries become
//!   subresources of `kind`); a backend that is unavailable or cannot be read is listed with
//!   `freshness: Stale` and no resources.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use super::{Backend, api_services};
use crate::cluster::Cluster;
use crate::cluster::str_at;
use crate::discovery::AGGREGATED_CONTENT_TYPE;
use crate::server::Shared;
use crate::service::{ResponseBody, respond};

/// `(group, version, versionPriority)` of every APIService, best version first per group.
fn api_service_versions(cluster: &Cluster) -> Vec<(String, String, i64)> {
    let mut all: Vec<(String, String, i64)> = cluster
        .store
        .in_namespace(&api_services(), "")
        .map(|o| {
            let priority = o
                .pointer("/spec/versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or_default();
            (
                str_at(o, "/spec/group").to_string(),
                str_at(o, "/spec/version").to_string(),
                priority,
            )
        })
        .filter(|(g, v, _)| !g.is_empty() && !v.is_empty())
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)).then(a.1.cmp(&b.1)));
    all
}

fn version_entry(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// Adds the APIServices' versions to an `APIGroup` (or makes one).
fn merge_group(group: &str, local: Option<Value>, versions: &[&str]) -> Value {
    let mut doc = local.unwrap_or_else(|| {
        json!({"name": group, "versions": [], "preferredVersion": version_entry(group, versions.first().copied().unwrap_or_default())})
    });
    if let Some(list) = doc.get_mut("versions").and_then(Value::as_array_mut) {
        for version in versions {
            if !list.iter().any(|v| v["version"] == *version) {
                list.push(version_entry(group, version));
            }
        }
    }
    doc
}

/// `/apis`: the APIServices' groups and versions added to the local ones.
pub(crate) fn add_groups(cluster: &Cluster, doc: &mut Value) {
    let versions = api_service_versions(cluster);
    let Some(groups) = doc.get_mut("groups").and_then(Value::as_array_mut) else {
        return;
    };
    let mut names: Vec<&str> = versions.iter().map(|(g, _, _)| g.as_str()).collect();
    names.dedup();
    for name in names {
        let of_group: Vec<&str> = versions
            .iter()
            .filter(|(g, _, _)| g == name)
            .map(|(_, v, _)| v.as_str())
            .collect();
        match groups.iter_mut().find(|g| g["name"] == name) {
            Some(existing) => *existing = merge_group(name, Some(existing.clone()), &of_group),
            None => groups.push(merge_group(name, None, &of_group)),
        }
    }
}

/// `/apis/<group>`: the local document with the APIServices' versions of `group`.
pub(crate) fn group(cluster: &Cluster, name: &str, local: Option<Value>) -> Option<Value> {
    let versions = api_service_versions(cluster);
    let of_group: Vec<&str> = versions
        .iter()
        .filter(|(g, _, _)| g == name)
        .map(|(_, v, _)| v.as_str())
        .collect();
    if of_group.is_empty() {
        return local;
    }
    let mut doc = merge_group(name, local, &of_group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// An `APIResourceList` as the versions entry of aggregated discovery.
fn converted(group: &str, version: &str, list: &Value) -> Value {
    let resources = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out: Vec<Value> = Vec::new();
    for r in resources
        .iter()
        .filter(|r| !str_at(r, "/name").contains('/'))
    {
        let kind = json!({"group": group, "version": version, "kind": str_at(r, "/kind")});
        let scope = if r["namespaced"].as_bool().unwrap_or(false) {
            "Namespaced"
        } else {
            "Cluster"
        };
        let mut entry = json!({
            "resource": str_at(r, "/name"), "responseKind": kind, "scope": scope,
            "singularResource": str_at(r, "/singularName"), "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for field in ["shortNames", "categories"] {
            if let Some(v) = r.get(field).filter(|v| !v.is_null()) {
                entry[field] = v.clone();
            }
        }
        let prefix = format!("{}/", str_at(r, "/name"));
        let subresources: Vec<Value> = resources
            .iter()
            .filter_map(|s| {
                let sub = str_at(s, "/name").strip_prefix(&prefix)?;
                Some(json!({"subresource": sub,
                    "responseKind": {"group": group, "version": version, "kind": str_at(s, "/kind")},
                    "verbs": s.get("verbs").cloned().unwrap_or(json!([]))}))
            })
            .collect();
        if !subresources.is_empty() {
            entry["subresources"] = json!(subresources);
        }
        out.push(entry);
    }
    json!({"version": version, "resources": out, "freshness": "Current"})
}

async fn version_of(shared: &Shared, backend: &Backend) -> Value {
    let stale = json!({"version": backend.version, "resources": [], "freshness": "Stale"});
    let Some(target) = backend.target.as_ref().filter(|_| backend.available) else {
        return stale;
    };
    let path = format!("/apis/{}/{}", backend.group, backend.version);
    match super::proxy::fetch(shared, target, &path, "application/json").await {
        Ok((200, _, body)) => serde_json::from_slice::<Value>(&body)
            .map(|list| converted(&backend.group, &backend.version, &list))
            .unwrap_or(stale),
        _ => stale,
    }
}

/// Aggregated `/apis`: the local groups and every remote group-version.
pub(crate) async fn aggregated_groups(shared: &Arc<Shared>) -> Response<ResponseBody> {
    let (mut doc, backends) = {
        let cluster = shared.cluster();
        (
            crate::discovery::aggregated(&cluster.registry, false),
            cluster.remote_backends(),
        )
    };
    let versions = futures::future::join_all(backends.iter().map(|b| version_of(shared, b))).await;
    if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
        for (backend, version) in backends.iter().zip(versions) {
            let position = items
                .iter()
                .position(|i| i.pointer("/metadata/name") == Some(&json!(backend.group)));
            if position.is_none() {
                items.push(json!({"metadata": {"name": backend.group}, "versions": []}));
            }
            let item = match position {
                Some(i) => items.get_mut(i),
                None => items.last_mut(),
            };
            if let Some(list) = item
                .and_then(|item| item.get_mut("versions"))
                .and_then(Value::as_array_mut)
            {
                list.push(version);
            }
        }
    }
    respond(200, AGGREGATED_CONTENT_TYPE, &doc)
}
