//! Shared helpers for the API tests: YAML loading and lossless round-trip checks.
#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Root of this repository.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every YAML document in `path`, as JSON values (empty documents skipped).
pub fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

/// The single YAML document in `path`.
pub fn yaml_document(path: &Path) -> Value {
    let mut documents = yaml_documents(path);
    assert_eq!(
        documents.len(),
        1,
        "{}: expected one YAML document",
        path.display()
    );
    documents.remove(0)
}

/// Files under `dir` (recursively) whose name satisfies `wanted`, sorted.
pub fn files_under(dir: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(wanted)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `value` without `null` members (Kubernetes treats a null field as an absent one).
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Paths at which `expected` and `actual` differ (at most `limit`).
pub fn differences(expected: &Value, actual: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(expected, actual, "", &mut out, limit);
    out
}

fn diff_into(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit {
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                match a.get(key) {
                    Some(other) => diff_into(value, other, &format!("{path}.{key}"), out, limit),
                    None => out.push(format!("{path}.{key}: lost")),
                }
            }
            for key in a.keys().filter(|k| !e.contains_key(*k)) {
                out.push(format!("{path}.{key}: added"));
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                diff_into(x, y, &format!("{path}[{i}]"), out, limit);
            }
        }
        (e, a) if e == a => {}
        (e, a) => out.push(format!("{path}: {e} became {a}")),
    }
}

/// Deserializes `original` into `T`, serializes it back and returns the paths where the result
/// differs from the original (nulls ignored). Empty means the type kept everything.
pub fn round_trip_losses<T: DeserializeOwned + Serialize>(
    original: &Value,
) -> Result<Vec<String>, String> {
    let typed: T = serde_json::from_value(original.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    Ok(differences(
        &without_nulls(original),
        &without_nulls(&back),
        20,
    ))
}

/// Fills in missing fields that have a `default` in `schema`, the way the apiserver defaults
/// objects against a structural schema.
pub fn apply_schema_defaults(object: &mut Value, schema: &Value) {
    let (Some(fields), Some(properties)) =
        (object.as_object_mut(), schema["properties"].as_object())
    else {
        return;
    };
    for (name, property) in properties {
        match fields.get_mut(name) {
            Some(child) => apply_schema_defaults(child, property),
            None => {
                if let Some(default) = property.get("default") {
                    fields.insert(name.clone(), default.clone());
                }
            }
        }
    }
}
