//! OpenAPI of aggregated APIs, what `kubectl explain` and client-side validation read
//! (`kube-aggregator/pkg/controllers/openapi` for v2, `.../openapiv3` for v3):
//!
//! * `/openapi/v2`: one Swagger document with the `paths` and `definitions` of every
//!   available backend's `/openapi/v2` (the first definition of a name wins);
//! * `/openapi/v3`: the index `{"paths": {"apis/<group>/<version>": {"serverRelativeURL":
//!   ...}}}` of the group-versions the backends list in their own `/openapi/v3`;
//! * `/openapi/v3/apis/<group>/<version>` (with the `hash` query of the index): the backend's
//!   document.
//!
//! The backends are asked as `system:kube-aggregator` on every request (kube-aggregator
//! downloads them in the background and caches them); a backend that cannot be read is left
//! out. Local resources have no documents here.

use std::sync::Arc;

use http::Response;
use serde_json::{Map, Value, json};

use super::{Backend, client};
use crate::server::Shared;
use crate::service::{ResponseBody, error_response, json_response, respond};
use crate::status::ApiError;

/// The available backends that have an endpoint.
fn reachable(shared: &Shared) -> Vec<(Backend, client::Target)> {
    shared
        .cluster()
        .remote_backends()
        .into_iter()
        .filter(|b| b.available)
        .filter_map(|b| b.target.clone().map(|t| (b, t)))
        .collect()
}

async fn fetch_json(shared: &Shared, target: &client::Target, path: &str) -> Option<Value> {
    match super::proxy::fetch(shared, target, path, "application/json").await {
        Ok((200, _, body)) => serde_json::from_slice(&body).ok(),
        Ok((status, _, _)) => {
            tracing::debug!(path, status, "aggregated OpenAPI download failed");
            None
        }
        Err(e) => {
            tracing::debug!(path, error = %e, "aggregated OpenAPI download failed");
            None
        }
    }
}

fn merge_into(target: &mut Map<String, Value>, from: Option<&Value>) {
    for (k, v) in from.and_then(Value::as_object).into_iter().flatten() {
        target.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

async fn v2(shared: &Shared) -> Response<ResponseBody> {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for (_, target) in reachable(shared) {
        if let Some(doc) = fetch_json(shared, &target, "/openapi/v2").await {
            merge_into(&mut paths, doc.get("paths"));
            merge_into(&mut definitions, doc.get("definitions"));
        }
    }
    json_response(
        200,
        &json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": paths,
            "definitions": definitions,
        }),
    )
}

async fn v3_index(shared: &Shared) -> Response<ResponseBody> {
    let mut paths = Map::new();
    for (backend, target) in reachable(shared) {
        let own = format!("apis/{}/{}", backend.group, backend.version);
        let Some(index) = fetch_json(shared, &target, "/openapi/v3").await else {
            continue;
        };
        let entry = index.pointer(&format!("/paths/{}", own.replace('/', "~1")));
        if let Some(url) = entry
            .and_then(|e| e.get("serverRelativeURL"))
            .and_then(Value::as_str)
        {
            let query = url
                .split_once('?')
                .map(|(_, q)| format!("?{q}"))
                .unwrap_or_default();
            paths.insert(
                own.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{own}{query}")}),
            );
        }
    }
    json_response(200, &json!({"paths": paths}))
}

/// Serves `/openapi/<rest>`.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    rest: &str,
    query: Option<&str>,
) -> Response<ResponseBody> {
    if rest == "v2" {
        return v2(shared).await;
    }
    if rest == "v3" {
        return v3_index(shared).await;
    }
    let backend = rest
        .strip_prefix("v3/apis/")
        .and_then(|gv| gv.split_once('/'))
        .and_then(|(group, version)| {
            reachable(shared)
                .into_iter()
                .find(|(b, _)| b.group == group && b.version == version)
        });
    let Some((_, target)) = backend else {
        return error_response(&ApiError::no_route());
    };
    let path = match query {
        Some(q) => format!("/openapi/{rest}?{q}"),
        None => format!("/openapi/{rest}"),
    };
    match super::proxy::fetch(shared, &target, &path, "application/json").await {
        Ok((200, content_type, body)) => match serde_json::from_slice::<Value>(&body) {
            Ok(doc) => respond(200, &content_type, &doc),
            Err(_) => error_response(&ApiError::service_unavailable(
                "the aggregated API server answered its OpenAPI document with no JSON",
            )),
        },
        Ok((status, _, _)) => error_response(&ApiError::service_unavailable(format!(
            "the aggregated API server answered {status} for {path}"
        ))),
        Err(e) => error_response(&ApiError::service_unavailable(format!(
            "error trying to reach service: {e}"
        ))),
    }
}
