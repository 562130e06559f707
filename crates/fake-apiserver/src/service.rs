//! Request handling shared by the in-process tower `Service` and the HTTP listener:
//! latency, counting, injected failures, routing and the answer.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::Value;
use tokio::time::Instant;

use crate::auth;
use crate::cluster::update::PatchType;
use crate::cluster::{DeleteOptions, ListParams, Target, WatchParams, WriteParams};
use crate::control::{CollectionRead, Origin, RequestKey, Verb};
use crate::discovery;
use crate::route::{self, Discovery, ResourcePath, Route};
use crate::server::Shared;
use crate::status::ApiError;
use crate::watch::{WatchStream, error_stream};

/// Body of every response.
pub(crate) type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

fn respond(code: u16, content_type: &str, body: &Value) -> Response<ResponseBody> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(bytes)).boxed_unsync());
    *resp.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    respond(code, "application/json", body)
}

pub(crate) fn error_response(err: &ApiError) -> Response<ResponseBody> {
    json_response(err.code, &err.to_status())
}

fn stream_response(
    stream: impl futures::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>> + Send + 'static,
) -> Response<ResponseBody> {
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Header naming the client a request came from ([`crate::FakeApiServer::client_as`]).
pub(crate) const AGENT_HEADER: &str = "x-fake-apiserver-agent";

/// Serves one request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Bytes>) -> Response<ResponseBody> {
    let latency = shared.control().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let (parts, body) = req.into_parts();
    let agent = parts
        .headers
        .get(AGENT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let query = route::query_pairs(parts.uri.query());
    match route::parse(parts.uri.path()) {
        None => match auth::guard(
            &shared,
            &parts.method,
            &parts.headers,
            parts.uri.path(),
            &query,
        ) {
            Ok(_) => error_response(&ApiError::no_route()),
            Err(e) => error_response(&e),
        },
        Some(Route::Discovery(d)) => {
            let key = RequestKey {
                verb: Verb::Get,
                group: String::new(),
                resource: String::new(),
                subresource: String::new(),
            };
            let origin = Origin {
                agent: agent.as_deref(),
                user_agent: user_agent.as_deref(),
                ..Origin::default()
            };
            if let Some(code) = shared.control().admit(&key, origin) {
                return error_response(&ApiError::injected(code, "injected failure"));
            }
            if let Err(e) = auth::guard(
                &shared,
                &parts.method,
                &parts.headers,
                parts.uri.path(),
                &query,
            ) {
                return error_response(&e);
            }
            let aggregated = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"));
            discovery_response(&shared, &d, aggregated)
        }
        Some(Route::Resource(rp)) => {
            let meta_only = crate::partial::wanted(
                parts
                    .headers
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok()),
            );
            let content_type = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let req = ResourceRequest {
                method: parts.method,
                raw_path: parts.uri.path().to_string(),
                headers: parts.headers,
                path: rp,
                query,
                agent,
                user_agent,
                content_type,
                meta_only,
                body,
            };
            match resource_request(&shared, req) {
                Ok(resp) => resp,
                Err(err) => error_response(&err),
            }
        }
    }
}

fn discovery_response(shared: &Shared, d: &Discovery, aggregated: bool) -> Response<ResponseBody> {
    let cluster = shared.cluster();
    let registry = &cluster.registry;
    let doc = match d {
        Discovery::CoreVersions if aggregated => {
            return respond(
                200,
                discovery::AGGREGATED_CONTENT_TYPE,
                &discovery::aggregated(registry, true),
            );
        }
        Discovery::Groups if aggregated => {
            return respond(
                200,
                discovery::AGGREGATED_CONTENT_TYPE,
                &discovery::aggregated(registry, false),
            );
        }
        Discovery::CoreVersions => Some(discovery::core_versions()),
        Discovery::Groups => Some(discovery::groups(registry)),
        Discovery::Group(g) => discovery::group(registry, g),
        Discovery::Resources { group, version } => discovery::resources(registry, group, version),
        Discovery::Version => Some(discovery::version()),
        Discovery::Health => {
            let mut resp = Response::new(Full::new(Bytes::from_static(b"ok")).boxed_unsync());
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            return resp;
        }
    };
    match doc {
        Some(doc) => json_response(200, &doc),
        None => error_response(&ApiError::no_route()),
    }
}

struct ResourceRequest {
    method: Method,
    raw_path: String,
    headers: http::HeaderMap,
    path: ResourcePath,
    query: Vec<(String, String)>,
    agent: Option<String>,
    user_agent: Option<String>,
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
    let origin = Origin {
        namespace: &rp.namespace,
        name: &rp.name,
        agent: req.agent.as_deref(),
        user_agent: req.user_agent.as_deref(),
    };
    if let Some(code) = shared.control().admit(&key, origin) {
        return Err(ApiError::injected(code, "injected failure"));
    }
    let user = auth::guard(shared, &req.method, &req.headers, &req.raw_path, &req.query)?;
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
        user_agent: req.user_agent.clone(),
        dry_run: query_flag(&req.query, "dryRun", "All"),
        force: query_flag(&req.query, "force", "true"),
    };
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
        Verb::Patch => {
            let kind = PatchType::from_content_type(&req.content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(&req.content_type))?;
            cluster.patch(&t, &params, kind, &req.body)?
        }
        Verb::Delete => cluster.delete(&t, &DeleteOptions::parse(&req.body, &req.query)?)?,
        Verb::DeleteCollection => cluster.delete_collection(
            &t,
            &ListParams::from_query(&req.query)?,
            &DeleteOptions::parse(&req.body, &req.query)?,
        )?,
    };
    Ok(json_response(reply.code, &reply.body))
}

/// The in-process tower `Service` a `kube::Client` is built on.
#[derive(Clone)]
pub(crate) struct FakeService {
    pub(crate) shared: Arc<Shared>,
    /// Tags every request (see [`AGENT_HEADER`]).
    pub(crate) agent: Option<HeaderValue>,
    /// `Authorization` sent with every request ([`crate::FakeApiServer::client_with_token`]).
    pub(crate) authorization: Option<HeaderValue>,
}

impl tower::Service<Request<kube::client::Body>> for FakeService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let shared = self.shared.clone();
        let agent = self.agent.clone();
        let authorization = self.authorization.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            if let Some(agent) = agent {
                parts.headers.insert(AGENT_HEADER, agent);
            }
            if let Some(authorization) = authorization {
                parts.headers.insert(header::AUTHORIZATION, authorization);
            }
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => {
                    return Ok(error_response(&ApiError::bad_request(format!(
                        "reading request body: {e}"
                    ))));
                }
            };
            Ok(handle(shared, Request::from_parts(parts, bytes)).await)
        })
    }
}
