//! String formats and label selectors shared by the kinds' validation, worded like
//! `k8s.io/apimachinery/pkg/util/validation/validation.go` (`IsDNS1123Subdomain`,
//! `IsDNS1035Label`), `k8s.io/apimachinery/pkg/api/validate/content` (`IsLabelValue`) and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go` (`ValidateLabelSelector`).

use serde_json::{Value, json};

use super::{
    DNS1035_LABEL_MSG, DNS1123_SUBDOMAIN_MSG, LABEL_VALUE_MSG, is_qualified_part,
    qualified_name_errors,
};
use crate::status::{Cause, forbidden_field, invalid_value, required};

/// A Go `[]byte` field: base64 in JSON (taken as raw bytes if it does not decode).
pub(super) fn bytes_field(obj: &Value, key: &str) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = obj.get(key).and_then(Value::as_str).unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap_or_else(|_| encoded.as_bytes().to_vec())
}

/// The RFC 1123 subdomain regex alone (no length limit).
pub(super) fn matches_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// `IsDNS1123Subdomain` (`k8s.io/apimachinery/pkg/util/validation/validation.go`): every
/// message, empty when `s` is valid.
pub(crate) fn subdomain_msgs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !matches_subdomain(s) {
        out.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    out
}

/// `IsDNS1035Label` (same file): every message, empty when `s` is valid.
pub(crate) fn dns1035_msgs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let matches = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !matches {
        out.push(DNS1035_LABEL_MSG.to_string());
    }
    out
}

/// `IsValidLabelValue` (`k8s.io/apimachinery/pkg/api/validate/content`) as causes on `field`.
pub(crate) fn label_value_errors(field: &str, value: &str) -> Vec<Cause> {
    let v = json!(value);
    if value.len() > 63 {
        vec![invalid_value(
            field,
            &v,
            "must be no more than 63 characters",
        )]
    } else if !value.is_empty() && !is_qualified_part(value) {
        vec![invalid_value(field, &v, LABEL_VALUE_MSG)]
    } else {
        Vec::new()
    }
}

/// `metav1validation.ValidateLabelSelector` with `AllowInvalidLabelValueInSelector: false`
/// (`k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go`).
pub(crate) fn label_selector_errors(selector: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let labels_path = format!("{path}.matchLabels");
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            out.extend(qualified_name_errors(&labels_path, k));
            out.extend(label_value_errors(
                &labels_path,
                v.as_str().unwrap_or_default(),
            ));
        }
    }
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, expr) in exprs.into_iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let op = expr.get("operator").cloned().unwrap_or(json!(""));
        match op.as_str().unwrap_or_default() {
            "In" | "NotIn" if values.is_empty() => out.push(required(
                &format!("{p}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(forbidden_field(
                &format!("{p}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => out.push(invalid_value(
                &format!("{p}.operator"),
                &op,
                "not a valid selector operator",
            )),
        }
        out.extend(qualified_name_errors(
            &format!("{p}.key"),
            expr.get("key").and_then(Value::as_str).unwrap_or_default(),
        ));
        for (j, v) in values.iter().enumerate() {
            out.extend(label_value_errors(
                &format!("{p}.values[{j}]"),
                v.as_str().unwrap_or_default(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_check_operators_keys_and_values() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "bad key", "operator": "Has", "values": ["-x"]},
        ]});
        let got: Vec<String> = label_selector_errors(&sel, "s")
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            got,
            [
                "s.matchExpressions[0].values",
                "s.matchExpressions[1].values",
                "s.matchExpressions[2].operator",
                "s.matchExpressions[2].key",
                "s.matchExpressions[2].values[0]",
            ]
        );
    }
}
