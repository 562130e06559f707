//! One request, after TLS: authenticate, authorize, then answer from the published catalogs
//! (or 503 while this replica holds none), in the negotiated form.

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use k8s_openapi::jiff::Timestamp;
use rustls::pki_types::CertificateDer;
use serde::Serialize;

use super::authn::{AuthnError, authenticate};
use super::authz::authorize;
use super::memo::Memo;
use super::request::{Form, ResourceRequest, Target, classify, negotiate};
use super::selector::{LabelSelector, parse_field_selector};
use super::status::ApiError;
use super::storage::{self, Catalogs, ListQuery, name_from_fields};
use super::table::{IncludeObject, partial_metadata, partial_metadata_list, table};
use super::types::{API_VERSION, GROUP, ICON_SUBRESOURCE};
use super::{PackageServer, discovery, openapi};

pub use super::body::Body;

/// Message of the 503 a replica without catalogs answers.
pub const NOT_SERVING: &str = "this opcat replica holds no loaded catalogs (it is a standby, or \
     the leader is still loading them); retry shortly";

impl PackageServer {
    /// Answers one request; `peer` is the client's certificate chain.
    pub async fn handle(
        &self,
        method: &Method,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        peer: Option<&[CertificateDer<'static>]>,
    ) -> Response<Body> {
        match self.answer(method, path, query, headers, peer).await {
            Ok(response) => response,
            Err(error) => error_response(&error),
        }
    }

    async fn answer(
        &self,
        method: &Method,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        peer: Option<&[CertificateDer<'static>]>,
    ) -> Result<Response<Body>, ApiError> {
        let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let param = |name: &str| {
            params
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        let watch = matches!(param("watch"), Some("true" | "1"));
        let target = classify(method.as_str(), path, watch);

        let authenticators = self.authenticators();
        let user = authenticate(
            &authenticators,
            peer,
            headers,
            self.reviewer.as_ref(),
            &self.tokens,
        )
        .await
        .map_err(|error| {
            if let AuthnError::Review(error) = &error {
                // As Kubernetes: an authenticator's failure is a 401 to the caller.
                tracing::warn!(error = %crate::failure::error_chain(error), "package API: TokenReview failed");
            }
            ApiError::unauthorized()
        })?;
        authorize(&user, &target, self.reviewer.as_ref(), &self.access).await?;

        let Some(catalogs) = self.catalogs() else {
            return Err(ApiError::unavailable(NOT_SERVING));
        };
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        match target {
            Target::NonResource { path, verb } => non_resource(&path, &verb, accept),
            Target::Resource(request) => resource(
                catalogs.as_ref(),
                &self.memo,
                &request,
                accept,
                &param,
                headers,
            ),
        }
    }
}

fn non_resource(path: &str, verb: &str, accept: &str) -> Result<Response<Body>, ApiError> {
    if verb != "get" && verb != "head" {
        return Err(ApiError::path_not_found());
    }
    let group_path = format!("/apis/{GROUP}");
    let version_path = format!("/apis/{API_VERSION}");
    let v3_path = format!("/openapi/v3/{}", openapi::V3_GROUP_VERSION_PATH);
    let trimmed = path.trim_end_matches('/');
    if trimmed == "/apis" {
        return Ok(match negotiate(accept) {
            Some(Form::Discovery(version)) => {
                let content_type = format!(
                    "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
                );
                bytes_response(
                    StatusCode::OK,
                    &content_type,
                    to_json(&discovery::aggregated(version)),
                )
            }
            _ => json_response(&discovery::group_list()),
        });
    }
    if trimmed == group_path {
        return Ok(json_response(&discovery::api_group()));
    }
    if trimmed == version_path {
        return Ok(json_response(&discovery::resource_list()));
    }
    match trimmed {
        "/openapi/v2" => Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            openapi::v2().to_vec(),
        )),
        "/openapi/v3" => Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            openapi::v3_root().to_vec(),
        )),
        _ if trimmed == v3_path => Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            openapi::v3().to_vec(),
        )),
        _ => Err(ApiError::path_not_found()),
    }
}

fn resource<'a>(
    catalogs: &dyn Catalogs,
    memo: &Memo,
    request: &ResourceRequest,
    accept: &str,
    param: &impl Fn(&str) -> Option<&'a str>,
    headers: &HeaderMap,
) -> Result<Response<Body>, ApiError> {
    match (request.verb.as_str(), request.subresource.as_deref()) {
        ("get", Some(ICON_SUBRESOURCE)) => {}
        ("get" | "list", None) => {}
        (_, Some(_)) => return Err(ApiError::path_not_found()),
        (verb, None) => return Err(ApiError::method_not_allowed(verb)),
    }
    let name = request.name.as_deref().unwrap_or_default();
    if request.subresource.is_some() {
        // packageserver: a conditional request naming a resourceVersion is always fresh.
        if headers.contains_key(header::IF_NONE_MATCH) && param("resourceVersion").is_some() {
            return Ok(bytes_response(
                StatusCode::NOT_MODIFIED,
                "",
                Body::default(),
            ));
        }
        let namespace = request.namespace.as_deref().unwrap_or_default();
        let icon =
            storage::icon(catalogs, namespace, name).ok_or_else(|| ApiError::not_found(name))?;
        let mut response = bytes_response(StatusCode::OK, &icon.media_type, icon.bytes);
        if let Ok(etag) = HeaderValue::from_str(&icon.etag)
            && !icon.etag.is_empty()
        {
            response.headers_mut().insert(header::ETAG, etag);
        }
        return Ok(response);
    }
    let form = negotiate(accept).ok_or_else(|| ApiError::not_acceptable(accept))?;
    let include =
        IncludeObject::parse(param("includeObject").unwrap_or_default()).ok_or_else(|| {
            ApiError::bad_request("includeObject must be None, Metadata or Object".to_owned())
        })?;
    let now = Timestamp::now();
    if request.verb == "get" {
        let namespace = request.namespace.as_deref().unwrap_or_default();
        let manifest = storage::get(catalogs, memo, namespace, name)
            .ok_or_else(|| ApiError::not_found(name))?;
        return Ok(match form {
            Form::Table(version) => json_response(&table(
                std::slice::from_ref(&manifest),
                include,
                version,
                now,
            )),
            Form::Metadata(version) => json_response(&partial_metadata(&manifest, version)),
            Form::Yaml => yaml_response(&manifest),
            Form::Json | Form::Discovery(_) => json_response(&manifest),
        });
    }
    let labels = LabelSelector::parse(param("labelSelector").unwrap_or_default())
        .map_err(|error| ApiError::bad_request(error.0))?;
    let fields = parse_field_selector(param("fieldSelector").unwrap_or_default())
        .map_err(|error| ApiError::bad_request(error.0))?;
    let name = name_from_fields(&fields).map_err(|error| ApiError::bad_request(error.0))?;
    let selection = storage::select(
        catalogs,
        memo,
        &ListQuery {
            namespace: request.namespace.clone(),
            labels,
            name,
        },
    );
    Ok(match form {
        Form::Table(version) => {
            json_response(&table(&selection.to_list().items, include, version, now))
        }
        Form::Metadata(version) => {
            json_response(&partial_metadata_list(&selection.to_list().items, version))
        }
        Form::Yaml => yaml_response(&selection.to_list()),
        // The common answer (kubectl -o json, client libraries, the console): the kept JSON
        // sent as it is, only the metadata written, nothing decoded.
        Form::Json | Form::Discovery(_) => {
            bytes_response(StatusCode::OK, "application/json", selection.to_chunks())
        }
    })
}

fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

fn json_response(value: &impl Serialize) -> Response<Body> {
    bytes_response(StatusCode::OK, "application/json", to_json(value))
}

fn yaml_response(value: &impl Serialize) -> Response<Body> {
    match serde_saphyr::to_string(value) {
        Ok(text) => bytes_response(StatusCode::OK, "application/yaml", text.into_bytes()),
        Err(error) => error_response(&ApiError::internal(format!("cannot encode YAML: {error}"))),
    }
}

fn bytes_response(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response<Body> {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    if !content_type.is_empty()
        && let Ok(value) = HeaderValue::from_str(content_type)
    {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// The `Status` answer of `error`.
pub fn error_response(error: &ApiError) -> Response<Body> {
    bytes_response(
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        to_json(&error.body),
    )
}
