//! Failure `Status` bodies worded like the real API server's
//! (`k8s.io/apimachinery/pkg/api/errors/errors.go`), so `kube::Error::Api` carries the same
//! `code`, `reason`, `message` and `details` a client would see from a real cluster.

use serde_json::{Value, json};

/// One entry of `Status.details.causes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cause {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) field: String,
}

/// A request failure, rendered as a `kind: Status` body with the matching HTTP code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Box<Details>>,
}

/// `Status.details`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Details {
    pub(crate) name: String,
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) causes: Vec<Cause>,
}

/// The `group`/`resource` pair the real server names in most messages (`deployments.apps`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupResource<'a> {
    pub(crate) group: &'a str,
    pub(crate) resource: &'a str,
}

impl GroupResource<'_> {
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn details(&self, name: &str) -> Details {
        Details {
            name: name.to_string(),
            group: self.group.to_string(),
            kind: self.resource.to_string(),
            causes: Vec::new(),
        }
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// 404 `secrets "x" not found`.
    pub(crate) fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        Self {
            details: Some(Box::new(gr.details(name))),
            ..Self::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", gr.qualified()),
            )
        }
    }

    /// 404 for a path that names no resource the server knows.
    pub(crate) fn no_route() -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    /// 409 `secrets "x" already exists`.
    pub(crate) fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        Self {
            details: Some(Box::new(gr.details(name))),
            ..Self::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", gr.qualified()),
            )
        }
    }

    /// 409 optimistic-concurrency conflict (stale `resourceVersion`).
    pub(crate) fn conflict_modified(gr: GroupResource<'_>, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 `Operation cannot be fulfilled on secrets "x": <why>`.
    pub(crate) fn conflict(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        Self {
            details: Some(Box::new(gr.details(name))),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    gr.qualified()
                ),
            )
        }
    }

    /// 409 server-side apply conflict (`errors.NewApplyConflict`).
    pub(crate) fn apply_conflict(message: String, causes: Vec<Cause>) -> Self {
        Self {
            details: Some(Box::new(Details {
                causes,
                ..Details::default()
            })),
            ..Self::new(409, "Conflict", message)
        }
    }

    /// 422 `Secret "x" is invalid: <field>: <detail>` with one cause per field error.
    pub(crate) fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let summary = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect::<Vec<_>>();
        let message = match summary.as_slice() {
            [one] => format!("{qualified_kind} \"{name}\" is invalid: {one}"),
            many => format!(
                "{qualified_kind} \"{name}\" is invalid: [{}]",
                many.join(", ")
            ),
        };
        Self {
            details: Some(Box::new(Details {
                name: name.to_string(),
                group: group.to_string(),
                kind: kind.to_string(),
                causes,
            })),
            ..Self::new(422, "Invalid", message)
        }
    }

    /// 422 without field details (patch application failures).
    pub(crate) fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 Forbidden (`errors.NewForbidden`): `secrets "x" is forbidden: <why>`, without the
    /// name when there is none, `forbidden: <why>` without a resource either.
    pub(crate) fn forbidden(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        let message = match (
            gr.resource.is_empty() && gr.group.is_empty(),
            name.is_empty(),
        ) {
            (true, _) => format!("forbidden: {why}"),
            (false, true) => format!("{} is forbidden: {why}", gr.qualified()),
            (false, false) => format!("{} \"{name}\" is forbidden: {why}", gr.qualified()),
        };
        Self {
            details: Some(Box::new(gr.details(name))),
            ..Self::new(403, "Forbidden", message)
        }
    }

    /// 401 for a request whose credentials authenticate nobody (`filters.Unauthorized`).
    pub(crate) fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 503 of the aggregator for an APIService it cannot serve.
    pub(crate) fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// 403 from namespace lifecycle admission for content created in a terminating namespace.
    pub(crate) fn namespace_terminating(gr: GroupResource<'_>, name: &str, ns: &str) -> Self {
        let mut err = Self::forbidden(
            gr,
            name,
            &format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        );
        if let Some(details) = err.details.as_mut() {
            details.causes.push(Cause {
                reason: "NamespaceTerminating",
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".to_string(),
            });
        }
        err
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed(verb: &str, gr: GroupResource<'_>) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                gr.qualified()
            ),
        )
    }

    /// 410 Expired: the requested `resourceVersion` is older than the retained history.
    pub(crate) fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 410 Expired for a `continue` token whose snapshot is no longer retained.
    pub(crate) fn continue_expired() -> Self {
        Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter, or use the continue token \
             in this response to retrieve the remainder of the results. Continuing with the \
             provided token results in an inconsistent list - objects that were created, \
             modified, or deleted between the time the first chunk was returned and now may \
             show up in the list.",
        )
    }

    /// 415 for a patch type the resource does not accept.
    pub(crate) fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml (got {content_type})"
            ),
        )
    }

    /// 500 InternalError.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// An injected failure: code chosen by the test, reason as the real server pairs them.
    pub(crate) fn injected(code: u16, message: &str) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        };
        Self::new(code, reason, message)
    }

    /// The `kind: Status` body.
    pub(crate) fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            let mut d = serde_json::Map::new();
            if !details.name.is_empty() {
                d.insert("name".into(), details.name.clone().into());
            }
            if !details.group.is_empty() {
                d.insert("group".into(), details.group.clone().into());
            }
            if !details.kind.is_empty() {
                d.insert("kind".into(), details.kind.clone().into());
            }
            if !details.causes.is_empty() {
                let causes = details
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect::<Vec<_>>();
                d.insert("causes".into(), causes.into());
            }
            status["details"] = Value::Object(d);
        }
        status
    }
}

/// `<type>` or `<type>: <detail>`: `field.Error.ErrorBody` appends the detail only when there
/// is one (`k8s.io/apimachinery/pkg/util/validation/field/errors.go`).
fn body(kind: &str, detail: &str) -> String {
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// A field error for [`ApiError::invalid`], worded like `field.ErrorList`.
pub(crate) fn required(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired",
        message: body("Required value", detail),
        field: field.to_string(),
    }
}

/// `Invalid value: "x": <detail>`.
pub(crate) fn invalid_value(field: &str, value: &Value, detail: &str) -> Cause {
    invalid_rendered(field, &value.to_string(), detail)
}

/// `Invalid value: <rendered>: <detail>`, for bad values Go prints with `%#v` (slices print
/// as `[]string{"a", "b"}`, see [`go_slice`]).
pub(crate) fn invalid_rendered(field: &str, rendered: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: body(&format!("Invalid value: {rendered}"), detail),
        field: field.to_string(),
    }
}

/// `Unsupported value: "x": supported values: "a", "b"` (`field.NotSupported`).
pub(crate) fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported",
        message: format!(
            "Unsupported value: {value}: supported values: {}",
            quoted.join(", ")
        ),
        field: field.to_string(),
    }
}

/// `Duplicate value: "x"` (`field.Duplicate`).
pub(crate) fn duplicate(field: &str, value: &Value) -> Cause {
    Cause {
        reason: "FieldValueDuplicate",
        message: format!("Duplicate value: {value}"),
        field: field.to_string(),
    }
}

/// A list of strings as Go's `%#v` prints a slice of `type_name`: `[]string{"a", "b"}`.
pub(crate) fn go_slice(type_name: &str, items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(Value::to_string).collect();
    format!("[]{type_name}{{{}}}", parts.join(", "))
}

/// `Forbidden: <detail>`.
pub(crate) fn forbidden_field(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden",
        message: body("Forbidden", detail),
        field: field.to_string(),
    }
}

/// A successful `kind: Status` body (delete of builtin kinds).
pub(crate) fn success_status(name: &str, group: &str, resource: &str, uid: &str) -> Value {
    let mut details = serde_json::Map::new();
    details.insert("name".into(), name.into());
    if !group.is_empty() {
        details.insert("group".into(), group.into());
    }
    details.insert("kind".into(), resource.into());
    details.insert("uid".into(), uid.into());
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
