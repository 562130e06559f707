//! Checks and fix-ups every write shares: type meta, namespace, server-owned metadata,
//! defaulting, pruning and validation, `generation`, no-op detection.

use serde_json::{Value, json};

use super::{Target, meta, meta_mut, meta_str};
use crate::resources::{ResourceInfo, crd};
use crate::ssa::managed::ManagedFields;
use crate::status::{self, ApiError};
use crate::validation::{self, NameRule};

/// Rejects a body whose `apiVersion`/`kind` name another type (400 like the decoder).
pub(crate) fn check_type_meta(t: &Target, obj: &Value) -> Result<(), ApiError> {
    let expected = t.info.api_version(&t.version);
    if let Some(v) = obj.get("apiVersion").and_then(Value::as_str)
        && !v.is_empty()
        && v != expected
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({expected})"
        )));
    }
    if let Some(k) = obj.get("kind").and_then(Value::as_str)
        && !k.is_empty()
        && k != t.info.kind
    {
        return Err(ApiError::bad_request(format!(
            "{k} in version \"{}\" cannot be handled as a {}: the kind in the data does not match the kind of the request",
            t.version, t.info.kind
        )));
    }
    Ok(())
}

/// Parses a body as a JSON object (400 otherwise).
pub(crate) fn parse_object(body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding request body: expected a JSON object",
        ));
    }
    Ok(v)
}

/// Sets or checks `metadata.namespace` against the request; clears it for cluster scope.
pub(crate) fn resolve_namespace(t: &Target, obj: &mut Value) -> Result<(), ApiError> {
    let meta = meta_mut(obj);
    if !t.info.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && ns != t.namespace => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ if t.namespace.is_empty() => Err(ApiError::invalid(
            &t.info.group,
            &t.info.kind,
            meta.get("name").and_then(Value::as_str).unwrap_or_default(),
            vec![status::required("metadata.namespace", "")],
        )),
        _ => {
            meta.insert("namespace".into(), t.namespace.clone().into());
            Ok(())
        }
    }
}

/// Checks that the body names the object the URL names.
pub(crate) fn check_name(t: &Target, obj: &mut Value) -> Result<(), ApiError> {
    let meta = meta_mut(obj);
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if n == t.name => Ok(()),
        None | Some("") => {
            meta.insert("name".into(), t.name.clone().into());
            Ok(())
        }
        Some(n) => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({})",
            t.name
        ))),
    }
}

/// Copies what clients cannot change from the stored object.
pub(crate) fn restore_server_fields(old: &Value, new: &mut Value) {
    let meta = meta_mut(new);
    meta.remove("selfLink");
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
    ] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(v) => {
                meta.insert(field.into(), v.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
}

/// Defaults, structural pruning (custom resources) and validation; 422 with every cause.
pub(crate) fn normalize(
    info: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if info.builtin {
        crate::defaults::apply(&info.group, &info.kind, obj);
    } else {
        crd::prune_and_default(obj, &info.schema);
    }
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    let mut causes = validation::name_errors(
        "metadata.name",
        &name,
        NameRule::for_kind(&info.group, &info.kind),
    );
    causes.extend(validation::metadata_errors(obj));
    causes.extend(validation::kind_errors(&info.group, &info.kind, obj, old));
    if info.builtin
        && info.group == "apiextensions.k8s.io"
        && let Err(more) = crd::resource_from_crd(obj)
    {
        causes.extend(more);
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&info.group, &info.kind, &name, causes))
    }
}

/// True when something other than metadata (and status, with a status subresource) changed.
pub(crate) fn spec_changed(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    let skip: &[&str] = if info.has_status {
        &["metadata", "apiVersion", "kind", "status"]
    } else {
        &["metadata", "apiVersion", "kind"]
    };
    !eq_except(old, new, skip)
}

/// Whether `a` and `b` are equal but for the top-level fields `skip`, compared in place: these
/// checks run on every write, and copying both objects to compare them was most of what a
/// write cost the server at 1,000 namespaces (scripts/bench-scale.sh).
fn eq_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let kept = |(key, _): &(&String, &Value)| !skip.contains(&key.as_str());
            a.iter().filter(kept).count() == b.iter().filter(kept).count()
                && a.iter()
                    .filter(kept)
                    .all(|(key, value)| b.get(key) == Some(value))
        }
        _ => a == b,
    }
}

/// True when `new` would store exactly `old` (timestamps in managedFields aside).
pub(crate) fn is_noop(old: &Value, new: &Value) -> bool {
    let same_metadata = eq_except(
        old.get("metadata").unwrap_or(&Value::Null),
        new.get("metadata").unwrap_or(&Value::Null),
        &["managedFields", "resourceVersion"],
    );
    if !same_metadata || !eq_except(old, new, &["metadata"]) {
        return false;
    }
    match (ManagedFields::decode(old), ManagedFields::decode(new)) {
        (Some(a), Some(b)) => a.same_ignoring_time(&b),
        (None, None) => true,
        (a, b) => a
            .unwrap_or_default()
            .same_ignoring_time(&b.unwrap_or_default()),
    }
}

/// Writes `managed` into `obj` (or removes the field when nobody owns anything).
pub(crate) fn write_managed_fields(obj: &mut Value, managed: &ManagedFields) {
    let encoded = managed.encode();
    let meta = meta_mut(obj);
    if encoded.as_array().is_some_and(Vec::is_empty) {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), encoded);
    }
}

/// The object without `managedFields` (what ownership is computed on).
pub(crate) fn without_managed_fields(obj: &Value) -> Value {
    // Copies everything but `managedFields` (often the largest part) rather than copying it too
    // and dropping it.
    let Value::Object(fields) = obj else {
        return obj.clone();
    };
    let copy = fields.iter().map(|(key, value)| {
        let value = match value {
            Value::Object(meta) if key == "metadata" => Value::Object(
                meta.iter()
                    .filter(|(key, _)| *key != "managedFields")
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            ),
            other => other.clone(),
        };
        (key.clone(), value)
    });
    Value::Object(copy.collect())
}

/// New finalizers on an object being deleted (422 like `ValidateObjectMetaUpdate`).
pub(crate) fn check_no_new_finalizers(
    info: &ResourceInfo,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if meta(old).and_then(|m| m.get("deletionTimestamp")).is_none() {
        return Ok(());
    }
    let before = super::finalizers(old);
    let added: Vec<String> = super::finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let name = meta_str(old, "name").unwrap_or_default();
    let list = added
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(ApiError::invalid(
        &info.group,
        &info.kind,
        name,
        vec![status::forbidden_field(
            "metadata.finalizers",
            &format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
            ),
        )],
    ))
}

/// An empty object of the target's type, as the "live" side of a create.
pub(crate) fn empty_object() -> Value {
    json!({})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn compares_in_place_what_the_copies_compared() {
        let old = json!({
            "kind": "Secret",
            "metadata": {"name": "a", "resourceVersion": "1", "managedFields": [{"manager": "x"}]},
            "data": {"k": "dg=="},
        });
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"l": "v"});
        let mut rewritten = old.clone();
        rewritten["data"]["k"] = json!("dw==");
        let mut extra = old.clone();
        extra["type"] = json!("Opaque");
        let mut bumped = old.clone();
        bumped["metadata"]["resourceVersion"] = json!("2");

        assert!(eq_except(&old, &relabelled, &["metadata"]));
        assert!(!eq_except(&old, &rewritten, &["metadata"]));
        assert!(!eq_except(&old, &extra, &["metadata"]));
        assert!(!eq_except(&extra, &old, &["metadata"]));
        assert!(is_noop(&old, &bumped));
        assert!(!is_noop(&old, &relabelled));
        assert!(!is_noop(&old, &rewritten));
    }

    #[test]
    fn without_managed_fields_keeps_everything_else() {
        let object = json!({
            "kind": "Secret",
            "metadata": {"name": "a", "labels": {"l": "v"}, "managedFields": [{"manager": "x"}]},
            "data": {"k": "dg=="},
        });
        let mut expected = object.clone();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(without_managed_fields(&object), expected);
    }
}
