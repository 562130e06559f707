//! The review APIs: nothing is stored, the created object comes back with its `status`.
//!
//! * `authorization.k8s.io/v1` SubjectAccessReview, LocalSubjectAccessReview and
//!   SelfSubjectAccessReview (`pkg/registry/authorization/*subjectaccessreview/rest.go`, checks
//!   of `pkg/apis/authorization/validation/validation.go`): the attributes are authorized by the
//!   same authorizer as requests; `status.allowed`, `status.reason` (`RBAC: allowed by ...`),
//!   `status.denied` (never set: RBAC has no deny rules) and `status.evaluationError`.
//! * SelfSubjectRulesReview (`selfsubjectrulesreview/rest.go`): the caller's rules in a
//!   namespace, `system:masters` holding `*` on everything.
//! * `authentication.k8s.io/v1` TokenReview (`pkg/registry/authentication/tokenreview/
//!   storage.go`) from the token table, with the API server's audience, and SelfSubjectReview
//!   (`kubectl auth whoami`).

use serde_json::{Map, Value, json};

use super::request_info::RequestInfo;
use super::tokens::{API_AUDIENCE, Tokens};
use super::{UserInfo, rbac};
use crate::cluster::{str_at, string_list};
use crate::status::{ApiError, Cause, invalid_value};

fn string_list_at(v: &Value, pointer: &str) -> Vec<String> {
    string_list(v.pointer(pointer))
}

const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";

/// The review kinds, as (group, plural, kind, namespaced).
pub(crate) const KINDS: &[(&str, &str, &str, bool)] = &[
    (AUTHZ, "subjectaccessreviews", "SubjectAccessReview", false),
    (
        AUTHZ,
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
    ),
    (
        AUTHZ,
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        true,
    ),
    (
        AUTHZ,
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
    ),
    (AUTHN, "tokenreviews", "TokenReview", false),
    (AUTHN, "selfsubjectreviews", "SelfSubjectReview", false),
];

/// A review request: who asks, where, and what they sent.
pub(crate) struct Review<'a> {
    pub(crate) tokens: &'a Tokens,
    pub(crate) cluster: &'a crate::cluster::Cluster,
    pub(crate) requester: &'a UserInfo,
    pub(crate) group: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) kind: &'a str,
    /// The namespace of the URL (local reviews).
    pub(crate) namespace: &'a str,
}

fn present(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).is_some_and(|x| !x.is_null())
}

/// `AuthorizationAttributesFrom(spec)` without the user.
fn attributes(spec: &Value) -> RequestInfo {
    if present(spec, "/resourceAttributes") {
        let a = |f: &str| str_at(spec, &format!("/resourceAttributes/{f}")).to_string();
        RequestInfo {
            resource_request: true,
            verb: a("verb"),
            api_group: a("group"),
            api_version: a("version"),
            namespace: a("namespace"),
            resource: a("resource"),
            subresource: a("subresource"),
            name: a("name"),
            path: String::new(),
        }
    } else {
        RequestInfo {
            resource_request: false,
            verb: str_at(spec, "/nonResourceAttributes/verb").to_string(),
            path: str_at(spec, "/nonResourceAttributes/path").to_string(),
            ..RequestInfo::default()
        }
    }
}

/// `ValidateSubjectAccessReviewSpec` (`with_user`: the user/group check of the non-self kinds).
fn spec_errors(spec: &Value, with_user: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let resource = present(spec, "/resourceAttributes");
    let non_resource = present(spec, "/nonResourceAttributes");
    let non_resource_value = spec
        .get("nonResourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    if resource && non_resource {
        causes.push(invalid_value(
            "spec.nonResourceAttributes",
            &non_resource_value,
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !resource && !non_resource {
        causes.push(invalid_value(
            "spec.resourceAttributes",
            &non_resource_value,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if with_user && str_at(spec, "/user").is_empty() && string_list_at(spec, "/groups").is_empty() {
        causes.push(invalid_value(
            "spec.user",
            &json!(str_at(spec, "/user")),
            "at least one of user or group must be specified",
        ));
    }
    causes
}

/// `metadata` must hold nothing but (for local reviews) the namespace.
fn metadata_errors(obj: &Value, allow_namespace: bool) -> Vec<Cause> {
    let meta = obj.get("metadata").and_then(Value::as_object);
    let ignored = |k: &str| {
        k == "managedFields" || k == "creationTimestamp" || (allow_namespace && k == "namespace")
    };
    let extra = meta
        .into_iter()
        .flatten()
        .any(|(k, v)| !v.is_null() && !ignored(k));
    if !extra {
        return Vec::new();
    }
    let detail = if allow_namespace {
        "must be empty except for namespace"
    } else {
        "must be empty"
    };
    let shown = obj.get("metadata").cloned().unwrap_or(Value::Null);
    vec![invalid_value("metadata", &shown, detail)]
}

fn user_from_spec(spec: &Value) -> UserInfo {
    let extra = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), string_list(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: str_at(spec, "/user").to_string(),
        uid: str_at(spec, "/uid").to_string(),
        groups: string_list_at(spec, "/groups"),
        extra,
    }
}

fn access_status(decision: rbac::Decision) -> Value {
    let (allowed, reason) = match decision {
        rbac::Decision::Allow(reason) => (true, reason),
        rbac::Decision::NoOpinion(reason) => (false, reason),
    };
    let mut status = json!({"allowed": allowed});
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    status
}

fn user_json(user: &UserInfo) -> Value {
    let mut out = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        out["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        out["extra"] = json!(user.extra);
    }
    out
}

impl Review<'_> {
    fn invalid(&self, causes: Vec<Cause>) -> ApiError {
        ApiError::invalid(self.group, self.kind, "", causes)
    }

    /// Answers the review in `body`: the object with its `status`.
    pub(crate) fn answer(&self, body: &[u8]) -> Result<Value, ApiError> {
        let mut obj: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("decoding {}: {e}", self.kind)))?;
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!("not a {}", self.kind)));
        }
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        let status = match self.plural {
            "subjectaccessreviews" => {
                let mut causes = spec_errors(&spec, true);
                causes.extend(metadata_errors(&obj, false));
                if !causes.is_empty() {
                    return Err(self.invalid(causes));
                }
                let user = user_from_spec(&spec);
                access_status(rbac::authorize(self.cluster, &user, &attributes(&spec)))
            }
            "localsubjectaccessreviews" => self.local(&mut obj, &spec)?,
            "selfsubjectaccessreviews" => {
                let causes = spec_errors(&spec, false);
                if !causes.is_empty() {
                    return Err(self.invalid(causes));
                }
                access_status(rbac::authorize(
                    self.cluster,
                    self.requester,
                    &attributes(&spec),
                ))
            }
            "selfsubjectrulesreviews" => self.rules(&spec)?,
            "tokenreviews" => self.token(&spec)?,
            "selfsubjectreviews" => json!({"userInfo": user_json(self.requester)}),
            _ => return Err(ApiError::no_route()),
        };
        let Value::Object(map) = &mut obj else {
            return Err(ApiError::bad_request(format!("not a {}", self.kind)));
        };
        map.insert("apiVersion".into(), json!(format!("{}/v1", self.group)));
        map.insert("kind".into(), json!(self.kind));
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
        map.insert("status".into(), status);
        Ok(obj)
    }

    /// LocalSubjectAccessReview: `metadata.namespace` is the URL's, and the attributes' too.
    fn local(&self, obj: &mut Value, spec: &Value) -> Result<Value, ApiError> {
        match str_at(obj, "/metadata/namespace") {
            "" => {
                let meta = crate::cluster::meta_mut(obj);
                meta.insert("namespace".into(), json!(self.namespace));
            }
            ns if ns != self.namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
        let mut causes = spec_errors(spec, true);
        causes.extend(metadata_errors(obj, true));
        let attr_ns = str_at(spec, "/resourceAttributes/namespace");
        if present(spec, "/resourceAttributes") && attr_ns != self.namespace {
            causes.push(invalid_value(
                "spec.resourceAttributes.namespace",
                &json!(attr_ns),
                "must match metadata.namespace",
            ));
        }
        if present(spec, "/nonResourceAttributes") {
            let given = spec
                .get("nonResourceAttributes")
                .cloned()
                .unwrap_or(Value::Null);
            causes.push(invalid_value(
                "spec.nonResourceAttributes",
                &given,
                "disallowed on this kind of request",
            ));
        }
        if !causes.is_empty() {
            return Err(self.invalid(causes));
        }
        let user = user_from_spec(spec);
        Ok(access_status(rbac::authorize(
            self.cluster,
            &user,
            &attributes(spec),
        )))
    }

    /// SelfSubjectRulesReview: the requester's rules in `spec.namespace`.
    fn rules(&self, spec: &Value) -> Result<Value, ApiError> {
        let namespace = str_at(spec, "/namespace");
        if namespace.is_empty() {
            return Err(ApiError::bad_request("namespace must be specified"));
        }
        let mut resource_rules = Vec::new();
        let mut non_resource_rules = Vec::new();
        if self.requester.is_privileged() {
            resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
            non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
        }
        let (rules, errors) = rbac::rules_for(self.cluster, self.requester, namespace);
        for rule in rules {
            let pick = |fields: &[&str]| {
                let mut out = Map::new();
                for f in fields {
                    if let Some(v) = rule.get(*f).filter(|v| !v.is_null()) {
                        out.insert((*f).to_string(), v.clone());
                    }
                }
                Value::Object(out)
            };
            if present(&rule, "/resources") {
                resource_rules.push(pick(&["verbs", "apiGroups", "resources", "resourceNames"]));
            }
            if present(&rule, "/nonResourceURLs") {
                non_resource_rules.push(pick(&["verbs", "nonResourceURLs"]));
            }
        }
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": !errors.is_empty(),
        });
        if !errors.is_empty() {
            status["evaluationError"] = json!(errors);
        }
        Ok(status)
    }

    /// TokenReview: who the token is, for the API server's audience.
    fn token(&self, spec: &Value) -> Result<Value, ApiError> {
        if !self.namespace.is_empty() {
            return Err(ApiError::bad_request(format!(
                "namespace is not allowed on this type: {}",
                self.namespace
            )));
        }
        let token = str_at(spec, "/token");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let wanted = string_list_at(spec, "/audiences");
        let audience_ok = wanted.is_empty() || wanted.iter().any(|a| a == API_AUDIENCE);
        let user = audience_ok
            .then(|| self.tokens.lookup(self.cluster, token))
            .flatten();
        Ok(match user {
            Some(user) => json!({
                "authenticated": true,
                "user": user_json(&user),
                "audiences": [API_AUDIENCE],
            }),
            None => json!({"user": {}, "error": "invalid bearer token"}),
        })
    }
}
