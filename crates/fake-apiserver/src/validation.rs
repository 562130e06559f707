//! The validation opcat can trip over, worded like `k8s.io/apimachinery/pkg/util/validation`
//! and `pkg/apis/core/validation`: object names, label and annotation keys and values,
//! finalizer names, owner references, Secret types and immutability, Deployment selectors.

mod admission;
mod apiservice;
mod crd_conversion;
mod formats;
mod webhook_client;

pub(crate) use formats::{dns1035_msgs, label_value_errors, subdomain_msgs};

use serde_json::{Value, json};

use crate::status::{Cause, forbidden_field, invalid_value, required};

pub(crate) const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
pub(crate) const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
pub(crate) const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
const MAX_SECRET_BYTES: usize = 1024 * 1024;

/// How a resource's object names are validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameRule {
    Subdomain,
    Label,
    Dns1035,
    PathSegment,
}

impl NameRule {
    pub(crate) fn for_kind(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "Namespace") => NameRule::Label,
            ("", "Service") => NameRule::Dns1035,
            ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
            // `ValidateAPIService`: a path segment that must also equal `version.group`
            // (checked with the spec in `validation::apiservice`).
            ("apiregistration.k8s.io", "APIService") => NameRule::PathSegment,
            _ => NameRule::Subdomain,
        }
    }
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
        && b[b.len() - 1].is_ascii_lowercase() | b[b.len() - 1].is_ascii_digit()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && formats::matches_subdomain(s)
}

pub(crate) fn is_qualified_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Errors for an object name (`metadata.name`), empty when valid.
pub(crate) fn name_errors(field: &str, name: &str, rule: NameRule) -> Vec<Cause> {
    let v = json!(name);
    match rule {
        NameRule::Subdomain if name.len() > 253 => {
            vec![invalid_value(
                field,
                &v,
                "must be no more than 253 characters",
            )]
        }
        NameRule::Subdomain if !is_dns_subdomain(name) => {
            vec![invalid_value(field, &v, DNS1123_SUBDOMAIN_MSG)]
        }
        NameRule::Label if name.len() > 63 => {
            vec![invalid_value(
                field,
                &v,
                "must be no more than 63 characters",
            )]
        }
        NameRule::Label if !is_dns_label(name) => vec![invalid_value(field, &v, DNS1123_LABEL_MSG)],
        NameRule::Dns1035 if !is_dns_label(name) || !name.as_bytes()[0].is_ascii_lowercase() => {
            vec![invalid_value(field, &v, DNS1035_LABEL_MSG)]
        }
        NameRule::PathSegment if name == "." || name == ".." => {
            vec![invalid_value(field, &v, &format!("may not be '{name}'"))]
        }
        // `IsValidPathSegmentName` (`k8s.io/apimachinery/pkg/api/validation/path/name.go`).
        NameRule::PathSegment => ["/", "%"]
            .into_iter()
            .filter(|bad| name.contains(bad))
            .map(|bad| invalid_value(field, &v, &format!("may not contain '{bad}'")))
            .collect(),
        _ => Vec::new(),
    }
}

/// Errors for a qualified name (`prefix/name`) used as a label, annotation or finalizer key.
pub(crate) fn qualified_name_errors(field: &str, key: &str) -> Vec<Cause> {
    let v = json!(key);
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let mut out = Vec::new();
    if let Some(p) = prefix {
        if p.is_empty() {
            out.push(invalid_value(field, &v, "prefix part must be non-empty"));
        } else if !is_dns_subdomain(p) {
            out.push(invalid_value(
                field,
                &v,
                &format!("prefix part {DNS1123_SUBDOMAIN_MSG}"),
            ));
        }
    }
    if name.is_empty() {
        out.push(invalid_value(field, &v, "name part must be non-empty"));
    } else if name.len() > 63 {
        out.push(invalid_value(
            field,
            &v,
            "name part must be no more than 63 characters",
        ));
    } else if !is_qualified_part(name) {
        out.push(invalid_value(field, &v, QUALIFIED_NAME_MSG));
    }
    out
}

/// Errors in `metadata` shared by every kind (labels, annotations, finalizers, owners).
pub(crate) fn metadata_errors(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let meta = obj.get("metadata");
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            out.extend(qualified_name_errors("metadata.labels", k));
            out.extend(label_value_errors(
                "metadata.labels",
                v.as_str().unwrap_or_default(),
            ));
        }
    }
    if let Some(ann) = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        let mut total = 0;
        for (k, v) in ann {
            out.extend(qualified_name_errors(
                "metadata.annotations",
                &k.to_lowercase(),
            ));
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > MAX_ANNOTATIONS_BYTES {
            out.push(Cause {
                reason: "FieldValueTooLong",
                message: format!("Too long: may not be more than {MAX_ANNOTATIONS_BYTES} bytes"),
                field: "metadata.annotations".into(),
            });
        }
    }
    if let Some(finalizers) = meta
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
    {
        for f in finalizers {
            out.extend(qualified_name_errors(
                "metadata.finalizers",
                f.as_str().unwrap_or_default(),
            ));
        }
    }
    if let Some(owners) = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
    {
        let mut controllers = 0;
        for (i, o) in owners.iter().enumerate() {
            for field in ["apiVersion", "kind", "name", "uid"] {
                if o.get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    out.push(required(
                        &format!("metadata.ownerReferences[{i}].{field}"),
                        &format!("{field} must not be empty"),
                    ));
                }
            }
            if o.get("controller") == Some(&Value::Bool(true)) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            out.push(invalid_value(
                "metadata.ownerReferences",
                &Value::Array(owners.clone()),
                "Only one reference can have Controller set to true",
            ));
        }
    }
    out
}

fn secret_data_errors(obj: &Value) -> Vec<Cause> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let data = obj.get("data").and_then(Value::as_object);
    let mut total = 0;
    let mut decoded = std::collections::BTreeMap::new();
    for (k, v) in data.into_iter().flatten() {
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        {
            out.push(invalid_value("data", &json!(k), "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap_or_default();
        total += bytes.len();
        decoded.insert(k.clone(), bytes);
    }
    if total > MAX_SECRET_BYTES {
        out.push(Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {MAX_SECRET_BYTES} bytes"),
            field: "data".into(),
        });
    }
    let typed_key = match obj.get("type").and_then(Value::as_str) {
        Some("kubernetes.io/dockerconfigjson") => Some(".dockerconfigjson"),
        Some("kubernetes.io/dockercfg") => Some(".dockercfg"),
        _ => None,
    };
    if let Some(key) = typed_key {
        let field = format!("data[{key}]");
        match decoded.get(key) {
            None => out.push(required(&field, "")),
            Some(bytes) => {
                if let Err(e) = serde_json::from_slice::<Value>(bytes) {
                    out.push(invalid_value(
                        &field,
                        &json!("<secret contents redacted>"),
                        &e.to_string(),
                    ));
                }
            }
        }
    }
    out
}

fn immutable_errors(old: &Value, new: &Value, field: &str) -> Option<Cause> {
    (old.get(field) != new.get(field))
        .then(|| forbidden_field(field, "field is immutable when `immutable` is set"))
}

/// Kind-specific errors; `old` is set on updates.
pub(crate) fn kind_errors(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    match (group, kind) {
        ("", "Secret") => {
            out.extend(secret_data_errors(obj));
            if let Some(old) = old {
                if old.get("type") != obj.get("type") {
                    out.push(invalid_value(
                        "type",
                        obj.get("type").unwrap_or(&Value::Null),
                        "field is immutable",
                    ));
                }
                if old.get("immutable") == Some(&Value::Bool(true)) {
                    out.extend(immutable_errors(old, obj, "data"));
                    if obj.get("immutable") != Some(&Value::Bool(true)) {
                        out.push(forbidden_field(
                            "immutable",
                            "field is immutable when `immutable` is set",
                        ));
                    }
                }
            }
        }
        ("", "ConfigMap") => {
            if let Some(old) = old
                && old.get("immutable") == Some(&Value::Bool(true))
            {
                out.extend(immutable_errors(old, obj, "data"));
                out.extend(immutable_errors(old, obj, "binaryData"));
            }
        }
        ("apps", "Deployment") => out.extend(deployment_errors(obj, old)),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            out.extend(admission::configuration_errors(obj, false));
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            out.extend(admission::configuration_errors(obj, true));
        }
        ("apiregistration.k8s.io", "APIService") => out.extend(apiservice::errors(obj)),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            out.extend(crd_conversion::errors(obj, old));
        }
        _ => {}
    }
    out
}

fn deployment_errors(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let selector = obj.pointer("/spec/selector");
    match selector
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
    {
        None if selector.and_then(|s| s.get("matchExpressions")).is_none() => {
            out.push(required("spec.selector", ""));
        }
        Some(match_labels) => {
            let labels = obj
                .pointer("/spec/template/metadata/labels")
                .and_then(Value::as_object);
            let matches = match_labels
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
            if !matches {
                out.push(invalid_value(
                    "spec.template.metadata.labels",
                    &labels.map_or(Value::Null, |l| Value::Object(l.clone())),
                    "`selector` does not match template `labels`",
                ));
            }
        }
        None => {}
    }
    if let Some(old) = old
        && old.pointer("/spec/selector") != selector
    {
        out.push(invalid_value(
            "spec.selector",
            selector.unwrap_or(&Value::Null),
            "field is immutable",
        ));
    }
    match obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
    {
        Some(containers) if !containers.is_empty() => {
            for (i, c) in containers.iter().enumerate() {
                for field in ["name", "image"] {
                    if c.get(field)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        out.push(required(
                            &format!("spec.template.spec.containers[{i}].{field}"),
                            "",
                        ));
                    }
                }
            }
        }
        _ => out.push(required("spec.template.spec.containers", "")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_rfc1123() {
        assert!(name_errors("metadata.name", "ok-name.x", NameRule::Subdomain).is_empty());
        assert!(!name_errors("metadata.name", "Bad_Name", NameRule::Subdomain).is_empty());
        assert!(!name_errors("metadata.name", "a.b", NameRule::Label).is_empty());
        assert!(
            name_errors(
                "metadata.name",
                "system:controller:x",
                NameRule::PathSegment
            )
            .is_empty()
        );
    }

    #[test]
    fn long_label_values_are_rejected() {
        let obj = json!({"metadata": {"labels": {"opcat.dev/source": "x".repeat(64)}}});
        let errs = metadata_errors(&obj);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .message
                .contains("must be no more than 63 characters")
        );
    }

    #[test]
    fn dockerconfigjson_secret_needs_its_key_with_json() {
        let obj = json!({"type": "kubernetes.io/dockerconfigjson", "data": {}});
        assert_eq!(
            kind_errors("", "Secret", &obj, None)[0].field,
            "data[.dockerconfigjson]"
        );
        let ok = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}});
        assert!(kind_errors("", "Secret", &ok, None).is_empty());
    }

    #[test]
    fn two_controller_owners_are_invalid() {
        let owner =
            json!({"apiVersion": "v1", "kind": "X", "name": "a", "uid": "1", "controller": true});
        let obj = json!({"metadata": {"ownerReferences": [owner.clone(), owner]}});
        assert!(
            metadata_errors(&obj)
                .iter()
                .any(|c| c.message.contains("Only one reference"))
        );
    }
}
