//! Reading one manifest file: YAML or JSON, the first document only (as `opm` does), with bare
//! numbers turned into strings where Kubernetes expects a resource quantity.

use serde_json::Value;

/// The first non-empty document of a file, and how many further documents were ignored.
#[derive(Debug)]
pub(crate) struct FirstDocument {
    /// The document, `None` when the file holds none.
    pub value: Option<Value>,
    /// Non-empty documents after the first one.
    pub ignored: usize,
}

/// Parses `text` as JSON when it starts with `{` (like Kubernetes' YAML-or-JSON decoder), else
/// as a YAML stream; empty and `null` documents are skipped. The error is the parser's message.
pub(crate) fn first_document(text: &str) -> Result<FirstDocument, String> {
    let documents: Vec<Value> = if text.trim_start().starts_with('{') {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .map_err(|error| error.to_string())?
    } else {
        serde_saphyr::from_multiple(text).map_err(|error| error.without_snippet().to_string())?
    };
    let mut documents = documents.into_iter().filter(|document| !document.is_null());
    let value = documents.next();
    Ok(FirstDocument {
        value,
        ignored: documents.count(),
    })
}

/// Turns bare numbers into strings wherever a pod spec holds a `resource.Quantity`, in every
/// Deployment of a ClusterServiceVersion (`cpu: 1` → `cpu: "1"`). Kubernetes accepts both forms
/// in YAML; k8s-openapi's `Quantity` only accepts strings.
pub(crate) fn quantities_to_strings(csv: &mut Value) {
    let Some(Value::Array(deployments)) = csv.pointer_mut("/spec/install/spec/deployments") else {
        return;
    };
    for deployment in deployments {
        if let Some(pod_spec) = deployment.pointer_mut("/spec/template/spec") {
            pod_spec_quantities_to_strings(pod_spec);
        }
    }
}

fn pod_spec_quantities_to_strings(pod_spec: &mut Value) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(Value::Array(containers)) = pod_spec.get_mut(list) {
            for container in containers {
                resources_to_strings(container.get_mut("resources"));
            }
        }
    }
    resources_to_strings(pod_spec.get_mut("resources"));
    values_to_strings(pod_spec.get_mut("overhead"));
    if let Some(Value::Array(volumes)) = pod_spec.get_mut("volumes") {
        for volume in volumes {
            if let Some(size) = volume.pointer_mut("/emptyDir/sizeLimit") {
                number_to_string(size);
            }
            resources_to_strings(
                volume.pointer_mut("/ephemeral/volumeClaimTemplate/spec/resources"),
            );
        }
    }
}

/// `limits` and `requests` of a `ResourceRequirements`.
fn resources_to_strings(resources: Option<&mut Value>) {
    if let Some(resources) = resources {
        for key in ["limits", "requests"] {
            values_to_strings(resources.get_mut(key));
        }
    }
}

fn values_to_strings(map: Option<&mut Value>) {
    if let Some(Value::Object(map)) = map {
        map.values_mut().for_each(number_to_string);
    }
}

fn number_to_string(value: &mut Value) {
    if let Value::Number(number) = value {
        *value = Value::String(number.to_string());
    }
}
