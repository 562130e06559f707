//! Drift check: does the live object already carry everything we would apply?
//!
//! Server-side apply makes a request even when nothing changes, and a converged cluster must see
//! zero writes from opcat (DESIGN invariant 5). So every apply is preceded by this check, and the
//! check must agree with what the builders produce: it asks whether `desired` is *contained* in
//! `live`, where
//! - objects: every key of `desired` is in `live` with a contained value (keys the server or other
//!   writers added are ignored: defaults, `status`, foreign labels);
//! - lists whose elements all carry a `name` (containers, env, volumes, ports with names,
//!   imagePullSecrets, ...): every desired element has a live element with the same name that
//!   contains it, in any order (these are `listType=map` keyed by name in Kubernetes);
//! - other lists: desired elements appear in live, in order, each contained in its match
//!   (elements another writer inserted are tolerated, so opcat does not fight them forever);
//! - scalars: equal, with numbers compared by value (`1` equals `1.0`);
//! - `null` in desired means "absent or null".

use serde_json::Value;

/// Returns true iff applying `desired` would not change anything opcat cares about in `live`.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (_, Value::Null) => true,
        (Value::Object(live), Value::Object(desired)) => {
            desired.iter().all(|(key, want)| match live.get(key) {
                Some(have) => contains(have, want),
                None => want.is_null() || is_empty_collection(want),
            })
        }
        (Value::Array(live), Value::Array(desired)) => list_contains(live, desired),
        (Value::Number(have), Value::Number(want)) => {
            have == want || matches!((have.as_f64(), want.as_f64()), (Some(a), Some(b)) if a == b)
        }
        (live, desired) => live == desired,
    }
}

/// The server drops empty maps and lists that carry no information (`labels: {}`), so a desired
/// empty collection is satisfied by an absent key.
fn is_empty_collection(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(list) => list.is_empty(),
        _ => false,
    }
}

fn element_name(value: &Value) -> Option<&str> {
    value.get("name").and_then(Value::as_str)
}

fn list_contains(live: &[Value], desired: &[Value]) -> bool {
    let keyed = !desired.is_empty() && desired.iter().all(|item| element_name(item).is_some());
    if keyed {
        return desired.iter().all(|want| {
            let name = element_name(want);
            live.iter()
                .any(|have| element_name(have) == name && contains(have, want))
        });
    }
    // Ordered subsequence match.
    let mut remaining = live.iter();
    desired
        .iter()
        .all(|want| remaining.by_ref().any(|have| contains(have, want)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::contains;

    #[test]
    fn identical_objects_are_contained() {
        let object =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1}});
        assert!(contains(&object, &object));
    }

    #[test]
    fn fields_added_by_the_server_or_other_writers_are_ignored() {
        let live = json!({
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
                         "labels": {"x": "1", "foreign": "y"}},
            "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate"}},
            "status": {"availableReplicas": 1}
        });
        let desired =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1}});
        assert!(contains(&live, &desired));
    }

    #[test]
    fn a_changed_or_missing_field_is_drift() {
        let live = json!({"spec": {"replicas": 1}});
        assert!(!contains(&live, &json!({"spec": {"replicas": 2}})));
        assert!(!contains(&live, &json!({"spec": {"paused": true}})));
        assert!(!contains(&live, &json!({"data": {"k": "dg=="}})));
    }

    #[test]
    fn named_lists_match_by_name_in_any_order_and_tolerate_foreign_entries() {
        let live = json!({"imagePullSecrets": [{"name": "user"}, {"name": "ours"}, {"name": "sa-dockercfg-x"}]});
        assert!(contains(
            &live,
            &json!({"imagePullSecrets": [{"name": "ours"}]})
        ));
        assert!(!contains(
            &live,
            &json!({"imagePullSecrets": [{"name": "missing"}]})
        ));
        let containers = json!({"containers": [
            {"name": "b", "image": "b:1", "imagePullPolicy": "IfNotPresent"},
            {"name": "a", "image": "a:1"}
        ]});
        assert!(contains(
            &containers,
            &json!({"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]})
        ));
        assert!(!contains(
            &containers,
            &json!({"containers": [{"name": "a", "image": "a:2"}]})
        ));
    }

    #[test]
    fn unnamed_lists_match_in_order() {
        let live = json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        assert!(contains(
            &live,
            &json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]})
        ));
        assert!(!contains(
            &live,
            &json!({"rules": [{"verbs": ["list"]}, {"verbs": ["get"]}]})
        ));
        assert!(!contains(
            &live,
            &json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}, {"verbs": ["watch"]}]})
        ));
        assert!(!contains(
            &json!({"verbs": ["get", "list"]}),
            &json!({"verbs": ["get", "watch"]})
        ));
    }

    #[test]
    fn numbers_compare_by_value_and_nulls_mean_absent() {
        assert!(contains(&json!({"port": 8080}), &json!({"port": 8080.0})));
        assert!(contains(&json!({}), &json!({"x": null})));
        assert!(contains(&json!({}), &json!({"labels": {}})));
        assert!(!contains(&json!({}), &json!({"labels": {"a": "b"}})));
    }
}
