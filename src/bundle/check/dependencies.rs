//! Checks of the `dependencies:` lists of the bundle's metadata files (`dependencies.yaml`), as
//! operator-registry's `ValidateBundleDependencies` makes them: every entry has a known type and
//! the fields of its type; `olm.package` ranges and `olm.constraint` values are read the way
//! opcat reads them when it resolves ([`metadata_dependencies`]).

use serde_json::Value;

use super::Finding;
use crate::bundle::load::Bundle;
use crate::dependency::parse::{CONSTRAINT, metadata_dependencies};
use crate::fbc::property::types;

/// `type: olm.label`: a dependency on a label, which OLM does not resolve.
const LABEL: &str = "olm.label";

/// One finding per malformed entry of every `dependencies:` list.
pub(super) fn dependency_findings(bundle: &Bundle) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (file, document) in &bundle.metadata {
        let Some(entries) = document.get("dependencies").and_then(Value::as_array) else {
            continue;
        };
        let file = format!("metadata/{file}");
        for (index, entry) in entries.iter().enumerate() {
            for message in entry_problems(bundle.name(), entry) {
                findings.push(Finding::error(
                    Some(&file),
                    format!("dependencies[{index}]: {message}"),
                ));
            }
        }
    }
    findings
}

fn entry_problems(bundle: &str, entry: &Value) -> Vec<String> {
    let type_ = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = entry.get("value").filter(|v| !v.is_null());
    let text = |key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let mut problems = Vec::new();
    match type_ {
        types::PACKAGE => {
            if text("packageName").is_empty() {
                problems.push("Package name is empty".to_owned());
            }
            if text("version").is_empty() {
                problems.push("Package version is empty".to_owned());
            } else if let Err(error) = metadata_dependencies(bundle, &[entry]) {
                problems.push(format!("Invalid semver format version: {}", error.problem));
            }
        }
        types::GVK => {
            let missing: Vec<&str> = ["group", "version", "kind"]
                .into_iter()
                .filter(|key| text(key).is_empty())
                .collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "couldn't parse dependency of type {type_}: {} missing",
                    missing.join(", ")
                ));
            }
        }
        LABEL => {
            if text("label").is_empty() {
                problems.push("Label information is missing".to_owned());
            }
        }
        CONSTRAINT => {
            if let Err(error) = metadata_dependencies(bundle, &[entry]) {
                problems.push(error.problem.to_string());
            }
        }
        "" => problems.push("the dependency has no type".to_owned()),
        other => problems.push(format!(
            "couldn't parse dependency of type {other}: unknown type (known: {}, {}, {LABEL}, \
             {CONSTRAINT})",
            types::PACKAGE,
            types::GVK
        )),
    }
    problems
}
