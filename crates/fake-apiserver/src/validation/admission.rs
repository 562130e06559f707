//! ValidatingWebhookConfiguration and MutatingWebhookConfiguration, as
//! `pkg/apis/admissionregistration/validation/validation.go` validates them on create
//! (`ValidateValidatingWebhookConfiguration`, `ValidateMutatingWebhookConfiguration`:
//! side effects must be None/NoneOnDryRun, a known review version is required, webhook names
//! are unique, selector values must be valid label values). Updates are held to the same
//! rules: upstream relaxes them only for objects stored before a rule existed, which this
//! server never has.
//!
//! Not emulated: compiling `matchConditions[].expression` as CEL (only required, name and
//! count are checked).

use serde_json::{Value, json};

use super::formats::label_selector_errors;
use super::webhook_client::{client_config_errors, review_versions_errors, strings};
use super::{qualified_name_errors, subdomain_msgs};
use crate::status::{
    Cause, duplicate, go_slice, invalid_rendered, invalid_value, not_supported, required,
};

// `sets.NewString(...).List()`: the supported values, sorted.
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const NO_SIDE_EFFECT_CLASSES: &[&str] = &["None", "NoneOnDryRun"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const MAX_MATCH_CONDITIONS: usize = 64;

/// Every error of a webhook configuration (`mutating` adds `reinvocationPolicy`).
pub(super) fn configuration_errors(obj: &Value, mutating: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let path = format!("webhooks[{i}]");
        out.extend(webhook_errors(hook, mutating, &path));
        out.extend(review_versions_errors(
            hook.get("admissionReviewVersions"),
            &format!("{path}.admissionReviewVersions"),
            &format!(
                "must specify one of {}",
                super::webhook_client::ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
        let name = hook.get("name").and_then(Value::as_str).unwrap_or_default();
        if !name.is_empty() {
            if names.contains(&name) {
                out.push(duplicate(&format!("{path}.name"), &json!(name)));
            } else {
                names.push(name);
            }
        }
    }
    out
}

fn text<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// A value that must be one of `supported` when present.
fn enum_errors(hook: &Value, key: &str, path: &str, supported: &[&str]) -> Option<Cause> {
    let v = hook.get(key).filter(|v| !v.is_null())?;
    let ok = v.as_str().is_some_and(|s| supported.contains(&s));
    (!ok).then(|| not_supported(&format!("{path}.{key}"), v, supported))
}

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn webhook_errors(hook: &Value, mutating: bool, path: &str) -> Vec<Cause> {
    let mut out = fully_qualified_name_errors(
        &format!("{path}.name"),
        text(hook, "name").unwrap_or_default(),
    );
    let rules = hook.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        out.extend(rule_errors(rule, &format!("{path}.rules[{i}]")));
    }
    out.extend(enum_errors(hook, "failurePolicy", path, FAILURE_POLICIES));
    out.extend(enum_errors(hook, "matchPolicy", path, MATCH_POLICIES));
    match hook.get("sideEffects").filter(|v| !v.is_null()) {
        None => out.push(required(
            &format!("{path}.sideEffects"),
            &format!("must specify one of {}", NO_SIDE_EFFECT_CLASSES.join(", ")),
        )),
        Some(_) => out.extend(enum_errors(
            hook,
            "sideEffects",
            path,
            NO_SIDE_EFFECT_CLASSES,
        )),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        out.push(invalid_value(
            &format!("{path}.timeoutSeconds"),
            &json!(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(selector) = hook.get(key).filter(|v| !v.is_null()) {
            out.extend(label_selector_errors(selector, &format!("{path}.{key}")));
        }
    }
    if mutating {
        out.extend(enum_errors(
            hook,
            "reinvocationPolicy",
            path,
            REINVOCATION_POLICIES,
        ));
    }
    out.extend(client_config_errors(
        hook.get("clientConfig"),
        &format!("{path}.clientConfig"),
    ));
    out.extend(match_conditions_errors(
        hook.get("matchConditions"),
        &format!("{path}.matchConditions"),
    ));
    out
}

/// `IsFullyQualifiedName` (`k8s.io/apimachinery/pkg/util/validation/validation.go`): a
/// subdomain with at least three segments.
fn fully_qualified_name_errors(path: &str, name: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![required(path, "")];
    }
    let errs = subdomain_msgs(name);
    if !errs.is_empty() {
        return vec![invalid_value(path, &json!(name), &errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![invalid_value(
            path,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

fn has_wildcard(list: &[Value]) -> bool {
    list.iter().any(|v| v.as_str() == Some("*"))
}

/// `validateRuleWithOperations` then `validateRule` (subresources allowed).
fn rule_errors(rule: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let operations = strings(rule.get("operations"));
    let ops_path = format!("{path}.operations");
    if operations.is_empty() {
        out.push(required(&ops_path, ""));
    }
    if operations.len() > 1 && has_wildcard(&operations) {
        out.push(invalid_rendered(
            &ops_path,
            &go_slice("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !op.as_str().is_some_and(|s| OPERATIONS.contains(&s)) {
            out.push(not_supported(&format!("{ops_path}[{i}]"), op, OPERATIONS));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = strings(rule.get(key));
        let list_path = format!("{path}.{key}");
        if list.is_empty() {
            out.push(required(&list_path, ""));
        }
        if list.len() > 1 && has_wildcard(&list) {
            out.push(invalid_rendered(
                &list_path,
                &go_slice("string", &list),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        // Note: group could be empty (the legacy "v1" API); versions may not.
        if key == "apiVersions" {
            for (i, v) in list.iter().enumerate() {
                if v.as_str().is_none_or(str::is_empty) {
                    out.push(required(&format!("{list_path}[{i}]"), ""));
                }
            }
        }
    }
    out.extend(resources_errors(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
    ));
    if let Some(scope) = rule.get("scope").filter(|v| !v.is_null())
        && !scope.as_str().is_some_and(|s| SCOPES.contains(&s))
    {
        out.push(not_supported(&format!("{path}.scope"), scope, SCOPES));
    }
    out
}

/// `validateResources`: `x`, `x/y`, `x/*`, `*/y`, `*` and `*/*` without overlaps.
fn resources_errors(resources: &[Value], path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if resources.is_empty() {
        out.push(required(path, ""));
    }
    let mut with_wildcard_sub: Vec<&str> = Vec::new();
    let mut sub_with_wildcard_res: Vec<&str> = Vec::new();
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut without_sub = false;
    for (i, v) in resources.iter().enumerate() {
        let res_sub = v.as_str().unwrap_or_default();
        let item = format!("{path}[{i}]");
        if res_sub.is_empty() {
            out.push(required(&item, ""));
            continue;
        }
        double_wildcard |= res_sub == "*/*";
        single_wildcard |= res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            // Upstream assigns rather than accumulates: the last plain entry decides.
            without_sub = res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(&res) {
            out.push(invalid_value(
                &item,
                v,
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(&sub) {
            out.push(invalid_value(
                &item,
                v,
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.push(res);
        }
        if res == "*" {
            sub_with_wildcard_res.push(sub);
        }
    }
    let rendered = go_slice("string", resources);
    if resources.len() > 1 && double_wildcard {
        out.push(invalid_rendered(
            path,
            &rendered,
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_sub {
        out.push(invalid_rendered(
            path,
            &rendered,
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    out
}

/// `validateMatchConditions` without the CEL compilation of each expression.
fn match_conditions_errors(conditions: Option<&Value>, path: &str) -> Vec<Cause> {
    let list = conditions
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    if list.len() > MAX_MATCH_CONDITIONS {
        out.push(Cause {
            reason: "FieldValueTooMany",
            message: format!(
                "Too many: {}: must have at most {MAX_MATCH_CONDITIONS} items",
                list.len()
            ),
            field: path.to_string(),
        });
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if text(c, "expression").is_none_or(|e| e.trim().is_empty()) {
            out.push(required(&format!("{p}.expression"), ""));
        }
        let name = text(c, "name").unwrap_or_default();
        if name.is_empty() {
            out.push(required(&format!("{p}.name"), ""));
        } else {
            out.extend(qualified_name_errors(&format!("{p}.name"), name));
            if names.contains(&name) {
                out.push(duplicate(&format!("{p}.name"), &json!(name)));
            } else {
                names.push(name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(extra: Value) -> Value {
        let mut h = json!({
            "name": "check.widgets.example.com",
            "clientConfig": {"service": {"name": "svc", "namespace": "ns", "port": 443}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                       "apiVersions": ["v1"], "resources": ["widgets"], "scope": "*"}],
        });
        if let (Value::Object(h), Value::Object(e)) = (&mut h, extra) {
            h.extend(e);
        }
        h
    }

    fn fields(obj: &Value) -> Vec<String> {
        configuration_errors(obj, true)
            .into_iter()
            .map(|c| c.field)
            .collect()
    }

    #[test]
    fn a_complete_webhook_is_valid() {
        assert_eq!(
            fields(&json!({"webhooks": [hook(json!({}))]})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn names_need_three_segments_and_must_be_unique() {
        let obj =
            json!({"webhooks": [hook(json!({"name": "a.b"})), hook(json!({})), hook(json!({}))]});
        assert_eq!(fields(&obj), ["webhooks[0].name", "webhooks[2].name"]);
    }

    #[test]
    fn resource_wildcards_may_not_overlap() {
        let list = |v: Value| strings(Some(&v));
        assert!(resources_errors(&list(json!(["pods", "pods/status"])), "r").is_empty());
        assert_eq!(
            resources_errors(&list(json!(["*/*", "pods"])), "r").len(),
            1
        );
        assert_eq!(resources_errors(&list(json!(["*", "pods"])), "r").len(), 1);
        // The last plain entry decides, as upstream.
        assert!(resources_errors(&list(json!(["pods", "*"])), "r").is_empty());
        let errs = resources_errors(&list(json!(["pods/*", "pods/log"])), "r");
        assert_eq!(errs[0].field, "r[1]");
    }
}
