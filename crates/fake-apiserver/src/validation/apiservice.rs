//! APIService, as `staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/validation/validation.go`
//! validates it (`ValidateAPIService`, and `ValidateAPIServiceStatus` for the conditions).
//! The path-segment part of the name check is `NameRule::PathSegment`.

use serde_json::{Value, json};

use super::formats::bytes_field;
use super::{dns1035_msgs, subdomain_msgs};
use crate::status::{Cause, invalid_value, not_supported, required};

/// Every error of an APIService (spec and status).
pub(super) fn errors(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = (text("group"), text("version"));
    let mut out = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let required_name = format!("{version}.{group}");
    let path_segment_ok = !matches!(name, "." | "..") && !name.contains(['/', '%']);
    if path_segment_ok && name != required_name {
        out.push(invalid_value(
            "metadata.name",
            &json!(name),
            &format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
        ));
    }
    // In this case we allow empty group.
    if group.is_empty() && version != "v1" {
        out.push(required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for msg in subdomain_msgs(group) {
            out.push(invalid_value("spec.group", &json!(group), &msg));
        }
    }
    for msg in dns1035_msgs(version) {
        out.push(invalid_value("spec.version", &json!(version), &msg));
    }
    let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or(0);
    let group_min = int("groupPriorityMinimum");
    if group_min <= 0 || group_min > 20000 {
        out.push(invalid_value(
            "spec.groupPriorityMinimum",
            &json!(group_min),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("versionPriority");
    if version_priority <= 0 || version_priority > 1000 {
        out.push(invalid_value(
            "spec.versionPriority",
            &json!(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_len = bytes_field(spec, "caBundle").len();
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match spec.get("service").filter(|s| !s.is_null()) {
        None => {
            if ca_len != 0 {
                out.push(invalid_value(
                    "spec.caBundle",
                    &json!(format!("{ca_len} bytes")),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                out.push(invalid_value(
                    "spec.insecureSkipTLSVerify",
                    &json!(true),
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
        }
        Some(service) => {
            let stext = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or_default();
            if stext("namespace").is_empty() {
                out.push(required("spec.service.namespace", ""));
            }
            if stext("name").is_empty() {
                out.push(required("spec.service.name", ""));
            }
            // Defaulted to 443 before validation.
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            if !(1..=65535).contains(&port) {
                out.push(invalid_value(
                    "spec.service.port",
                    &json!(port),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if insecure && ca_len > 0 {
                out.push(invalid_value(
                    "spec.insecureSkipTLSVerify",
                    &json!(true),
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    out.extend(status_errors(obj));
    out
}

/// `ValidateAPIServiceStatus`: condition statuses are True, False or Unknown.
fn status_errors(obj: &Value) -> Vec<Cause> {
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    conditions
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, c)| {
            let status = c.get("status").cloned().unwrap_or(json!(""));
            let ok = matches!(status.as_str(), Some("True" | "False" | "Unknown"));
            (!ok).then(|| {
                not_supported(
                    &format!("status.conditions[{i}].status"),
                    &status,
                    &["True", "False", "Unknown"],
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn a_remote_api_service_is_valid() {
        let obj = api_service(
            "v1alpha1.wardle.example.com",
            json!({"group": "wardle.example.com", "version": "v1alpha1",
                   "groupPriorityMinimum": 1000, "versionPriority": 15,
                   "service": {"namespace": "w", "name": "api", "port": 443},
                   "caBundle": "Y2E="}),
        );
        assert_eq!(errors(&obj), Vec::new());
    }

    #[test]
    fn name_priorities_and_tls_are_checked() {
        let obj = api_service(
            "wrong",
            json!({"group": "wardle.example.com", "version": "v1alpha1",
                   "groupPriorityMinimum": 20001, "versionPriority": 0,
                   "insecureSkipTLSVerify": true, "caBundle": "Y2E="}),
        );
        let fields: Vec<String> = errors(&obj).into_iter().map(|c| c.field).collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.groupPriorityMinimum",
                "spec.versionPriority",
                "spec.caBundle",
                "spec.insecureSkipTLSVerify",
            ]
        );
    }
}
