//! Requests on resources: routing to the cluster's verbs, the review kinds, watches.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use tokio::time::Instant;

use super::{Incoming, ResponseBody, error_response, json_response, stream_response};
use crate::auth;
use crate::cluster::update::PatchType;
use crate::cluster::{DeleteOptions, ListParams, Target, WatchParams, WriteParams};
use crate::control::{CollectionRead, RequestKey, Verb};
use crate::route::{self, ResourcePath};
use crate::server::Shared;
use crate::status::ApiError;
use crate::watch::{WatchStream, error_stream};

/// Serves a request on a resource path.
pub(super) fn serve(
    shared: &Arc<Shared>,
    incoming: Incoming,
    path: ResourcePath,
    body: Bytes,
) -> Response<ResponseBody> {
    let meta_only = crate::partial::wanted(incoming.header(http::header::ACCEPT));
    let content_type = incoming
        .header(http::header::CONTENT_TYPE)
        .unwrap_or_default()
        .to_string();
    let req = ResourceRequest {
        method: incoming.parts.method.clone(),
        query: incoming.query.clone(),
        agent: incoming.agent.clone(),
        incoming,
        path,
        content_type,
        meta_only,
        body,
    };
    match resource_request(shared, req) {
        Ok(resp) => resp,
        Err(err) => error_response(&err),
    }
}

struct ResourceRequest {
    incoming: Incoming,
    method: Method,
    path: ResourcePath,
    query: Vec<(String, String)>,
    agent: Option<String>,
    content_type: String,
    /// Answer with `PartialObjectMetadata` ([`crate::partial`]).
    meta_only: bool,
    body: Bytes,
}

fn query_flag(query: &[(String, String)], key: &str, value: &str) -> bool {
    query.iter().any(|(k, v)| k == key && v == value)
}

fn resource_request(
    shared: &Arc<Shared>,
    req: ResourceRequest,
) -> Result<Response<ResponseBody>, ApiError> {
    let rp = &req.path;
    let watch = query_flag(&req.query, "watch", "true") || query_flag(&req.query, "watch", "1");
    let verb = route::verb(&req.method, !rp.name.is_empty(), watch);
    let key = RequestKey {
        verb: verb.unwrap_or(Verb::Get),
        group: rp.group.clone(),
        resource: rp.plural.clone(),
        subresource: rp.subresource.clone().unwrap_or_default(),
    };
    let user = req.incoming.admit(shared, &key, &rp.namespace, &rp.name)?;
    if let (Some(agent), Some(verb @ (Verb::List | Verb::Watch))) = (req.agent.as_deref(), verb) {
        let param = |name: &str| {
            req.query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let read = CollectionRead {
            verb,
            group: rp.group.clone(),
            resource: rp.plural.clone(),
            namespace: rp.namespace.clone(),
            label_selector: param("labelSelector"),
            field_selector: param("fieldSelector"),
        };
        shared
            .control()
            .reads_by_agent
            .entry(agent.to_owned())
            .or_default()
            .insert(read);
    }
    let mut cluster = shared.cluster();
    let info = cluster
        .registry
        .lookup(&rp.group, &rp.version, &rp.plural)
        .cloned()
        .ok_or_else(ApiError::no_route)?;
    let Some(verb) = verb else {
        return Err(ApiError::method_not_allowed(
            req.method.as_str(),
            info.group_resource(),
        ));
    };
    let subresource_ok = match rp.subresource.as_deref() {
        None => true,
        Some("status") => info.has_status,
        Some("finalize") => info.group.is_empty() && info.kind == "Namespace",
        Some(_) => false,
    };
    let scope_ok = if info.namespaced {
        !rp.namespace.is_empty() || rp.name.is_empty()
    } else {
        rp.namespace.is_empty()
    };
    if !subresource_ok || !scope_ok {
        return Err(ApiError::no_route());
    }
    if info.create_only {
        if verb != Verb::Create {
            return Err(ApiError::method_not_allowed(
                req.method.as_str(),
                info.group_resource(),
            ));
        }
        let review = auth::reviews::Review {
            tokens: &shared.tokens,
            cluster: &cluster,
            requester: &user,
            group: &info.group,
            plural: &info.plural,
            kind: &info.kind,
            namespace: &rp.namespace,
        };
        return Ok(json_response(201, &review.answer(&req.body)?));
    }
    let t = Target {
        info,
        version: rp.version.clone(),
        namespace: rp.namespace.clone(),
        name: rp.name.clone(),
        subresource: rp.subresource.clone(),
    };
    let params = WriteParams {
        field_manager: req
            .query
            .iter()
            .find(|(k, _)| k == "fieldManager")
            .map(|(_, v)| v.clone()),
        user_agent: req.incoming.user_agent.clone(),
        dry_run: query_flag(&req.query, "dryRun", "All"),
        force: query_flag(&req.query, "force", "true"),
    };
    let patch_type = || {
        PatchType::from_content_type(&req.content_type)
            .ok_or_else(|| ApiError::unsupported_media_type(&req.content_type))
    };
    if matches!(verb, Verb::Create | Verb::Update | Verb::Patch)
        && !user.is_privileged()
        && auth::escalation::guards(&t)
    {
        // What the write would store, to check what it grants (`policybased` storage).
        let trial = WriteParams {
            dry_run: true,
            ..params.clone()
        };
        let would = match verb {
            Verb::Create => cluster.create(&t, &trial, &req.body)?,
            Verb::Update => cluster.update(&t, &trial, &req.body)?,
            _ => cluster.patch(&t, &trial, patch_type()?, &req.body)?,
        };
        let name = would.body["metadata"]["name"].as_str().unwrap_or_default();
        let old = cluster
            .store
            .get(&t.info.key(), &t.namespace, name)
            .cloned();
        auth::escalation::check(&cluster, &user, &t, &rp.name, &would.body, old.as_deref())?;
    }
    let reply = match verb {
        Verb::Get if req.meta_only => {
            let reply = cluster.get(&t)?;
            return Ok(json_response(
                reply.code,
                &crate::partial::object(&reply.body),
            ));
        }
        Verb::List if req.meta_only => {
            let reply = cluster.list(&t, &ListParams::from_query(&req.query)?)?;
            return Ok(json_response(
                reply.code,
                &crate::partial::list(&reply.body),
            ));
        }
        Verb::Get => cluster.get(&t)?,
        Verb::List => cluster.list(&t, &ListParams::from_query(&req.query)?)?,
        Verb::Watch => {
            let wp = WatchParams::from_query(&req.query)?;
            let started = match cluster.start_watch(&t, &wp) {
                Ok(s) => s,
                Err(err) if err.code == 410 => return Ok(stream_response(error_stream(&err))),
                Err(err) => return Err(err),
            };
            let rv = cluster.store.current_rv();
            drop(cluster);
            let stream = WatchStream {
                info: t.info.clone(),
                version: t.version.clone(),
                initial: started.initial.into(),
                initial_end: (wp.send_initial_events && wp.allow_bookmarks).then_some(rv),
                rx: started.rx,
                bookmarks: wp.allow_bookmarks,
                meta_only: req.meta_only,
                bookmark_interval: shared.bookmark_interval,
                deadline: wp
                    .timeout_seconds
                    .map(|s| Instant::now() + std::time::Duration::from_secs(s)),
                shared: Arc::downgrade(shared),
            };
            return Ok(stream_response(stream.into_stream()));
        }
        Verb::Create => cluster.create(&t, &params, &req.body)?,
        Verb::Update => cluster.update(&t, &params, &req.body)?,
        Verb::Patch => cluster.patch(&t, &params, patch_type()?, &req.body)?,
        Verb::Delete => cluster.delete(&t, &DeleteOptions::parse(&req.body, &req.query)?)?,
        Verb::DeleteCollection => cluster.delete_collection(
            &t,
            &ListParams::from_query(&req.query)?,
            &DeleteOptions::parse(&req.body, &req.query)?,
        )?,
    };
    Ok(json_response(reply.code, &reply.body))
}
