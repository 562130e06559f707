//! Request handling shared by the in-process tower `Service` and the HTTP listener:
//! latency, counting, injected failures, authentication and authorization, routing (to the
//! aggregation layer, discovery or a resource) and the answer.

mod resource;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::Value;

use crate::auth::{self, UserInfo};
use crate::control::{Origin, RequestKey, Verb};
use crate::discovery;
use crate::route::{self, Discovery, Route};
use crate::server::Shared;
use crate::status::ApiError;

/// Body of every response.
pub(crate) type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn respond(code: u16, content_type: &str, body: &Value) -> Response<ResponseBody> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(bytes)).boxed_unsync());
    *resp.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

pub(crate) fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    respond(code, "application/json", body)
}

pub(crate) fn error_response(err: &ApiError) -> Response<ResponseBody> {
    json_response(err.code, &err.to_status())
}

pub(crate) fn stream_response(
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

/// A request's head and what every handler reads from it.
pub(crate) struct Incoming {
    pub(crate) parts: http::request::Parts,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) agent: Option<String>,
    pub(crate) user_agent: Option<String>,
}

impl Incoming {
    fn new(parts: http::request::Parts) -> Self {
        let text = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Self {
            agent: text(AGENT_HEADER),
            user_agent: text(header::USER_AGENT.as_str()),
            query: route::query_pairs(parts.uri.query()),
            parts,
        }
    }

    pub(crate) fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn path(&self) -> &str {
        self.parts.uri.path()
    }

    /// Counts and logs the request, applies an injected failure, then authenticates and
    /// authorizes it: the user it is served as.
    pub(crate) fn admit(
        &self,
        shared: &Shared,
        key: &RequestKey,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<UserInfo>, ApiError> {
        let origin = Origin {
            namespace,
            name,
            agent: self.agent.as_deref(),
            user_agent: self.user_agent.as_deref(),
        };
        if let Some(code) = shared.control().admit(key, origin) {
            return Err(ApiError::injected(code, "injected failure"));
        }
        auth::guard(
            shared,
            &self.parts.method,
            &self.parts.headers,
            self.path(),
            &self.query,
        )
    }
}

/// Serves one request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Bytes>) -> Response<ResponseBody> {
    let latency = shared.control().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let (parts, body) = req.into_parts();
    let incoming = Incoming::new(parts);
    if let Some(backend) = crate::aggregator::backend_for(&shared, incoming.path()) {
        return crate::aggregator::proxy::serve(&shared, &incoming, backend, body).await;
    }
    match route::parse(incoming.path()) {
        None => {
            let guarded = auth::guard(
                &shared,
                &incoming.parts.method,
                &incoming.parts.headers,
                incoming.path(),
                &incoming.query,
            );
            error_response(&guarded.err().unwrap_or_else(ApiError::no_route))
        }
        Some(Route::Discovery(d)) => {
            let key = RequestKey {
                verb: Verb::Get,
                group: String::new(),
                resource: String::new(),
                subresource: String::new(),
            };
            if let Err(e) = incoming.admit(&shared, &key, "", "") {
                return error_response(&e);
            }
            discovery_response(&shared, &incoming, &d).await
        }
        Some(Route::Resource(rp)) => resource::serve(&shared, incoming, rp, body),
    }
}

async fn discovery_response(
    shared: &Arc<Shared>,
    incoming: &Incoming,
    d: &Discovery,
) -> Response<ResponseBody> {
    let aggregated = incoming
        .header(header::ACCEPT)
        .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"));
    match d {
        Discovery::Groups if aggregated => {
            return crate::aggregator::discovery::aggregated_groups(shared).await;
        }
        Discovery::OpenApi(path) => {
            return crate::aggregator::openapi::serve(shared, path, incoming.parts.uri.query())
                .await;
        }
        _ => {}
    }
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
        Discovery::CoreVersions => Some(discovery::core_versions()),
        Discovery::Groups => {
            let mut doc = discovery::groups(registry);
            crate::aggregator::discovery::add_groups(&cluster, &mut doc);
            Some(doc)
        }
        Discovery::Group(g) => {
            crate::aggregator::discovery::group(&cluster, g, discovery::group(registry, g))
        }
        Discovery::Resources { group, version } => discovery::resources(registry, group, version),
        Discovery::Version => Some(discovery::version()),
        Discovery::OpenApi(_) => None,
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
