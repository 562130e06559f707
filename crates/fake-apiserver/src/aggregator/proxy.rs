//! Proxying a request to an aggregated API server (`handler_proxy.go`, `proxyHandler.ServeHTTP`):
//! authentication and authorization first (the caller's request attributes), then 503 unless
//! the APIService is available and its Service has an endpoint, then the request goes over
//! [`super::client`] with the caller's identity in the front-proxy headers.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderName, Request, Response};
use http_body_util::{BodyExt as _, BodyStream, Full, StreamBody};

use super::{Backend, client};
use crate::auth::UserInfo;
use crate::auth::request_info::RequestInfo;
use crate::control::{RequestKey, Verb};
use crate::server::Shared;
use crate::service::{AGENT_HEADER, Incoming, ResponseBody, error_response};
use crate::status::ApiError;

/// Headers that belong to one connection (RFC 9110 §7.6.1), never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn verb(name: &str) -> Verb {
    match name {
        "list" => Verb::List,
        "watch" => Verb::Watch,
        "create" => Verb::Create,
        "update" => Verb::Update,
        "patch" => Verb::Patch,
        "delete" => Verb::Delete,
        "deletecollection" => Verb::DeleteCollection,
        _ => Verb::Get,
    }
}

/// `headerKeyEscape` of `client-go/transport`: bytes that are not RFC 7230 token characters,
/// and `%`, are percent-encoded.
fn escape_key(key: &str) -> String {
    let mut out = String::new();
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The caller's headers that travel on: not its credentials, not hop-by-hop ones, not
/// identity headers it may have forged, not the fake's own.
fn forwarded(name: &HeaderName) -> bool {
    let name = name.as_str();
    !(HOP_BY_HOP.contains(&name)
        || name == "authorization"
        || name == "host"
        || name == "content-length"
        || name == AGENT_HEADER
        || name.starts_with("x-remote-")
        || name.starts_with("impersonate-"))
}

/// `transport.SetAuthProxyHeaders`.
pub(crate) fn identity_headers(
    mut builder: http::request::Builder,
    user: &UserInfo,
) -> http::request::Builder {
    builder = builder.header("X-Remote-User", user.name.as_str());
    for group in &user.groups {
        builder = builder.header("X-Remote-Group", group.as_str());
    }
    for (key, values) in &user.extra {
        for value in values {
            builder = builder.header(
                format!("X-Remote-Extra-{}", escape_key(key)),
                value.as_str(),
            );
        }
    }
    builder
}

fn unavailable(message: impl Into<String>) -> Response<ResponseBody> {
    error_response(&ApiError::service_unavailable(message))
}

/// The backend's answer, streamed.
pub(crate) fn stream_back(resp: Response<hyper::body::Incoming>) -> Response<ResponseBody> {
    let (mut parts, body) = resp.into_parts();
    for name in HOP_BY_HOP {
        parts.headers.remove(*name);
    }
    let frames = BodyStream::new(body)
        .take_while(|frame| std::future::ready(frame.is_ok()))
        .filter_map(|frame| std::future::ready(frame.ok().map(Ok::<_, Infallible>)));
    Response::from_parts(parts, StreamBody::new(frames).boxed_unsync())
}

/// Serves a request under a remote APIService's group-version.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    incoming: &Incoming,
    backend: Backend,
    body: Bytes,
) -> Response<ResponseBody> {
    let method = incoming.parts.method.as_str();
    let info = RequestInfo::new(method, incoming.path(), &incoming.query);
    let key = RequestKey {
        verb: verb(&info.verb),
        group: info.api_group.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
    };
    let user = match incoming.admit(shared, &key, &info.namespace, &info.name) {
        Ok(user) => user,
        Err(e) => return error_response(&e),
    };
    let Some(target) = backend.target.filter(|_| backend.available) else {
        return unavailable("service unavailable");
    };
    // `location.RawQuery = req.URL.Query().Encode()`: no `?` without a query.
    let path = match incoming.parts.uri.query().filter(|q| !q.is_empty()) {
        Some(query) => format!("{}?{query}", incoming.path()),
        None => incoming.path().to_string(),
    };
    let mut builder = Request::builder()
        .method(incoming.parts.method.clone())
        .uri(path)
        .header(http::header::HOST, target.addr.to_string());
    for (name, value) in &incoming.parts.headers {
        if forwarded(name) {
            builder = builder.header(name, value);
        }
    }
    let request = match identity_headers(builder, &user).body(Full::new(body)) {
        Ok(request) => request,
        Err(e) => return error_response(&ApiError::bad_request(e.to_string())),
    };
    match client::send(&shared.aggregation.pki, &target, request).await {
        Ok(resp) => stream_back(resp),
        Err(e) => {
            tracing::debug!(apiservice = %backend.name, error = %e, "aggregated API unreachable");
            unavailable(format!("error trying to reach service: {e}"))
        }
    }
}

/// GET `path` from a backend as the aggregator itself (`system:kube-aggregator`,
/// `system:masters`): the status and body (OpenAPI and discovery downloads).
pub(crate) async fn fetch(
    shared: &Shared,
    target: &client::Target,
    path: &str,
    accept: &str,
) -> Result<(u16, String, Bytes), String> {
    let aggregator = UserInfo {
        name: super::probe::AGGREGATOR_USER.to_string(),
        uid: String::new(),
        groups: vec!["system:masters".to_string()],
        extra: Default::default(),
    };
    let builder = Request::get(path)
        .header(http::header::HOST, target.addr.to_string())
        .header(http::header::ACCEPT, accept);
    let request = identity_headers(builder, &aggregator)
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let resp = client::send(&shared.aggregation.pki, target, request).await?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, content_type, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_escaped_like_client_go() {
        assert_eq!(
            escape_key("authentication.kubernetes.io/credential-id"),
            "authentication.kubernetes.io%2Fcredential-id"
        );
        assert_eq!(escape_key("a%b c"), "a%25b%20c");
    }
}
