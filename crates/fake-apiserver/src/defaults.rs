//! Defaulting the real server applies to builtin kinds on every write
//! (`pkg/apis/*/v1/defaults.go`), so a client that compares its desired object with the live
//! one sees the same extra fields it would on a cluster. Only the kinds opcat writes.

mod registration;

use base64::Engine as _;
use serde_json::{Map, Value, json};

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    v.get_mut(key).and_then(Value::as_object_mut)
}

fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Applies the defaults of `group`/`kind` to `obj`.
pub(crate) fn apply(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Secret") => secret(obj),
        ("", "Namespace") => namespace(obj),
        ("apps", "Deployment") => deployment(obj),
        ("", "Service") => service(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => binding(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => registration::crd(obj),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            registration::webhook_configuration(obj, false);
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            registration::webhook_configuration(obj, true);
        }
        ("apiregistration.k8s.io", "APIService") => registration::api_service(obj),
        _ => {}
    }
}

/// The label `kubernetes.io/metadata.name` set to the name, on every create and update, so no
/// client can change or remove it (`pkg/apis/core/v1/defaults.go`, `SetDefaults_Namespace`;
/// `pkg/registry/core/namespace/strategy.go`, `Canonicalize`; GA since Kubernetes 1.22).
fn namespace(obj: &mut Value) {
    let Some(name) = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
    else {
        return;
    };
    let Some(meta) = obj_mut(obj, "metadata") else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    if let Value::Object(labels) = labels {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
}

/// `type: Opaque`, and write-only `stringData` folded into `data`.
fn secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    default_field(map, "type", json!("Opaque"));
    if let Some(Value::Object(string_data)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(data) = data {
            for (k, v) in string_data {
                let plain = v.as_str().unwrap_or_default();
                let encoded = base64::engine::general_purpose::STANDARD.encode(plain);
                data.insert(k, Value::String(encoded));
            }
        }
    }
}

fn deployment(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_field(spec, "replicas", json!(1));
    default_field(spec, "revisionHistoryLimit", json!(10));
    default_field(spec, "progressDeadlineSeconds", json!(600));
    let strategy = spec
        .entry("strategy")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(strategy) = strategy {
        default_field(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type") == Some(&json!("RollingUpdate")) {
            let rolling = strategy
                .entry("rollingUpdate")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(rolling) = rolling {
                default_field(rolling, "maxUnavailable", json!("25%"));
                default_field(rolling, "maxSurge", json!("25%"));
            }
        }
    }
    if let Some(template) = spec.get_mut("template")
        && let Some(pod) = obj_mut(template, "spec")
    {
        pod_spec(pod);
    }
}

fn pod_spec(pod: &mut Map<String, Value>) {
    default_field(pod, "restartPolicy", json!("Always"));
    default_field(pod, "terminationGracePeriodSeconds", json!(30));
    default_field(pod, "dnsPolicy", json!("ClusterFirst"));
    default_field(pod, "securityContext", json!({}));
    default_field(pod, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = pod.get_mut(list) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
    if let Some(Value::Array(volumes)) = pod.get_mut("volumes") {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["secret", "configMap"] {
                if let Some(Value::Object(s)) = v.get_mut(source) {
                    default_field(s, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn container(c: &mut Map<String, Value>) {
    default_field(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_field(c, "terminationMessagePolicy", json!("File"));
    default_field(c, "resources", json!({}));
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let last = image.rsplit('/').next().unwrap_or_default();
    let latest =
        !image.contains('@') && last.split_once(':').is_none_or(|(_, tag)| tag == "latest");
    default_field(
        c,
        "imagePullPolicy",
        json!(if latest { "Always" } else { "IfNotPresent" }),
    );
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_field(p, "protocol", json!("TCP"));
        }
    }
}

fn service(obj: &mut Value) {
    let Some(spec) = obj_mut(obj, "spec") else {
        return;
    };
    default_field(spec, "type", json!("ClusterIP"));
    default_field(spec, "sessionAffinity", json!("None"));
    default_field(spec, "internalTrafficPolicy", json!("Cluster"));
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_field(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                default_field(p, "targetPort", port);
            }
        }
    }
}

fn binding(obj: &mut Value) {
    if let Some(Value::Array(subjects)) = obj.get_mut("subjects") {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let group = match s.get("kind").and_then(Value::as_str) {
                Some("ServiceAccount") => "",
                _ => "rbac.authorization.k8s.io",
            };
            default_field(s, "apiGroup", json!(group));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_string_data_becomes_data() {
        let mut s = json!({"stringData": {"a": "hi"}});
        apply("", "Secret", &mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"a": "aGk="}}));
    }

    #[test]
    fn deployment_gets_pod_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "r/i:1"}, {"name": "d", "image": "r/i"}]}}}});
        apply("apps", "Deployment", &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c[1]["imagePullPolicy"], "Always");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }
}
