//! Defaults of the kinds that register webhooks and API services:
//! `pkg/apis/admissionregistration/v1/defaults.go` (`SetDefaults_ValidatingWebhook`,
//! `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`, `SetDefaults_ServiceReference`),
//! `staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/defaults.go` and
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`
//! (`SetDefaults_CustomResourceDefinitionSpec`, `SetDefaults_ServiceReference`).
//!
//! v1 webhooks get no default `sideEffects` or `admissionReviewVersions`: both are required.

use serde_json::{Value, json};

use super::{default_field, obj_mut};

/// `port: 443` on a service reference (`clientConfig.service`, `spec.service`).
fn service_port(service: Option<&mut Value>) {
    if let Some(Value::Object(svc)) = service {
        default_field(svc, "port", json!(443));
    }
}

/// Every webhook of a Validating/MutatingWebhookConfiguration.
pub(super) fn webhook_configuration(obj: &mut Value, mutating: bool) {
    let Some(Value::Array(hooks)) = obj.get_mut("webhooks") else {
        return;
    };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        default_field(hook, "failurePolicy", json!("Fail"));
        default_field(hook, "matchPolicy", json!("Equivalent"));
        default_field(hook, "namespaceSelector", json!({}));
        default_field(hook, "objectSelector", json!({}));
        default_field(hook, "timeoutSeconds", json!(10));
        if mutating {
            default_field(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(Value::Array(rules)) = hook.get_mut("rules") {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_field(rule, "scope", json!("*"));
            }
        }
        if let Some(cc) = hook.get_mut("clientConfig") {
            service_port(cc.get_mut("service"));
        }
    }
}

/// APIService: the service port.
pub(super) fn api_service(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        service_port(spec.get_mut("service"));
    }
}

/// CustomResourceDefinition: singular and list kind from the kind, `conversion: None`, and
/// the conversion webhook's service port.
pub(super) fn crd(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    if let Some(Value::Object(names)) = spec.get_mut("names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        let list_kind_missing = names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if list_kind_missing && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    default_field(spec, "conversion", json!({"strategy": "None"}));
    if let Some(cc) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
    {
        service_port(cc.get_mut("service"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_get_the_v1_defaults() {
        let mut obj = json!({"webhooks": [{"name": "a.b.c", "rules": [{}],
            "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]});
        webhook_configuration(&mut obj, true);
        let h = &obj["webhooks"][0];
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["rules"][0]["scope"], "*");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        assert!(h.get("sideEffects").is_none());
        assert!(h.get("admissionReviewVersions").is_none());
    }

    #[test]
    fn crd_names_and_conversion_are_defaulted() {
        let mut obj = json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"}}});
        crd(&mut obj);
        assert_eq!(obj["spec"]["names"]["singular"], "widget");
        assert_eq!(obj["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(obj["spec"]["conversion"], json!({"strategy": "None"}));
    }
}
