//! Errors as `Status` objects, worded as `k8s.io/apimachinery/pkg/api/errors` and
//! `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters` word them.

use serde_json::{Value, json};

use super::types::{GROUP, RESOURCE};

/// A failed request: its HTTP code and the `Status` body.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The `Status` object.
    pub body: Value,
}

impl ApiError {
    fn new(code: u16, reason: &str, message: String, details: Option<Value>) -> Self {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        });
        if let (Some(details), Some(object)) = (details, body.as_object_mut()) {
            object.insert("details".to_owned(), details);
        }
        Self { code, body }
    }

    /// 401: no credentials, or credentials that do not authenticate.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized".to_owned(), None)
    }

    /// 403 for a resource request (`NewForbidden` after the authorizer's denial).
    pub fn forbidden(message: String, name: &str) -> Self {
        let mut details = json!({"group": GROUP, "kind": RESOURCE});
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        Self::new(
            403,
            "Forbidden",
            format!(
                "{RESOURCE}.{GROUP} {}is forbidden: {message}",
                quoted_name(name)
            ),
            Some(details),
        )
    }

    /// 403 for a non-resource request (a path).
    pub fn forbidden_path(message: String) -> Self {
        Self::new(403, "Forbidden", format!("forbidden: {message}"), None)
    }

    /// 404 for a PackageManifest.
    pub fn not_found(name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{RESOURCE}.{GROUP} \"{name}\" not found"),
            Some(json!({"name": name, "group": GROUP, "kind": RESOURCE})),
        )
    }

    /// 404 for a path the server does not serve (`NotFound` handler of the generic server).
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
            Some(json!({})),
        )
    }

    /// 405: writes and watches (packageserver's storage only gets and lists).
    pub fn method_not_allowed(verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{RESOURCE}.{GROUP}\""),
            Some(json!({"group": GROUP, "kind": RESOURCE})),
        )
    }

    /// 400: a malformed selector or parameter.
    pub fn bad_request(message: String) -> Self {
        Self::new(400, "BadRequest", message, None)
    }

    /// 406: no media type in `Accept` that the server produces.
    pub fn not_acceptable(accept: &str) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json, \
                 application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (asked: {accept})"
            ),
            None,
        )
    }

    /// 503: this replica does not hold the catalogs (a standby, or the leader still loading).
    pub fn unavailable(message: &str) -> Self {
        Self::new(503, "ServiceUnavailable", message.to_owned(), None)
    }

    /// 500: a review could not be made.
    pub fn internal(message: String) -> Self {
        Self::new(500, "InternalError", message, None)
    }
}

fn quoted_name(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("\"{name}\" ")
    }
}
