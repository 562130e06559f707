//! Pure: which fields of a status a write changes, for the debug log of every status write
//! (`controller::apply`): the top-level fields, and for `conditions` the types whose entry
//! differs. Shows why an object's status is written again (issue 12: a status written once per
//! real transition).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The changed fields from `current` (none when the object has no status) to `desired`.
pub fn changed_fields(current: Option<&Value>, desired: &Value) -> Vec<String> {
    let field = |value: Option<&Value>, key: &str| value.and_then(|value| value.get(key)).cloned();
    let keys: BTreeSet<&String> = [Some(desired), current]
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|object| object.keys())
        .collect();
    let mut changed = Vec::new();
    for key in keys {
        let (before, after) = (field(current, key), field(Some(desired), key));
        if before == after {
            continue;
        }
        if key == "conditions" {
            let (before, after) = (by_type(before), by_type(after));
            let types: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            for type_ in types {
                if before.get(type_) != after.get(type_) {
                    changed.push(format!("conditions[{type_}]"));
                }
            }
        } else {
            changed.push(key.clone());
        }
    }
    changed
}

/// Conditions by their `type` (CSV history entries have none: they share the key "").
fn by_type(conditions: Option<Value>) -> BTreeMap<String, Value> {
    let Some(Value::Array(conditions)) = conditions else {
        return BTreeMap::new();
    };
    conditions
        .into_iter()
        .map(|condition| {
            let type_ = condition
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (type_, condition)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_the_changed_fields_and_condition_types() {
        let before = json!({
            "state": "UpgradePending",
            "lastUpdated": "t1",
            "conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}],
        });
        let after = json!({
            "state": "AtLatestKnown",
            "lastUpdated": "t1",
            "installedCSV": "x",
            "conditions": [{"type": "A", "status": "True"}, {"type": "C", "status": "True"}],
        });
        assert_eq!(
            changed_fields(Some(&before), &after),
            ["conditions[B]", "conditions[C]", "installedCSV", "state"]
        );
        assert_eq!(
            changed_fields(None, &json!({"phase": "Pending"})),
            ["phase"]
        );
        assert!(changed_fields(Some(&before), &before).is_empty());
    }
}
