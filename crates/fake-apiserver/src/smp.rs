//! Strategic merge patch (`k8s.io/apimachinery/pkg/util/strategicpatch`) for builtin kinds.
//!
//! Maps merge key by key (`null` deletes). Lists follow the schema: `listType=map` lists merge
//! items by their first key (`patchMergeKey`), `listType=set` lists take the union, everything
//! else is replaced whole. Directives: `$patch: replace|delete|merge` on maps and list items,
//! `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.

use serde_json::{Map, Value};

use crate::schema::{ListKind, Schema};

const DELETE_FROM_PRIMITIVE: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies `patch` to `original`.
pub(crate) fn strategic_merge(
    original: &Value,
    patch: &Value,
    schema: &Schema,
) -> Result<Value, String> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => Ok(merge_map(o, p, schema)?
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Map::new()))),
        (_, Value::Object(p)) => Ok(merge_map(&Map::new(), p, schema)?
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Map::new()))),
        _ => Err("strategic merge patch must be a JSON object".to_string()),
    }
}

/// `None` means "delete this map" (`$patch: delete`).
fn merge_map(
    original: &Map<String, Value>,
    patch: &Map<String, Value>,
    schema: &Schema,
) -> Result<Option<Map<String, Value>>, String> {
    match patch.get("$patch").map(|v| v.as_str()) {
        None | Some(Some("merge")) => {}
        Some(Some("replace")) => return merge_map(&Map::new(), &without_patch(patch), schema),
        Some(Some("delete")) => return Ok(None),
        Some(other) => return Err(format!("Unknown patch type: {other:?}")),
    }
    let mut out = original.clone();
    if let Some(retain) = patch.get("$retainKeys") {
        let keep: Vec<&str> = retain
            .as_array()
            .ok_or("$retainKeys must be a list")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        out.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, values) in patch {
        let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE) else {
            continue;
        };
        let remove = values
            .as_array()
            .ok_or_else(|| format!("{key} must be a list"))?;
        if let Some(Value::Array(list)) = out.get_mut(field) {
            list.retain(|v| !remove.contains(v));
        }
    }
    for (key, pv) in patch {
        if key.starts_with('$') {
            continue;
        }
        if pv.is_null() {
            out.remove(key);
            continue;
        }
        let field_schema = schema.field(key);
        let merged = match (out.get(key), pv) {
            (Some(Value::Object(o)), Value::Object(p)) => {
                merge_map(o, p, field_schema)?.map(Value::Object)
            }
            (None, Value::Object(p)) => merge_map(&Map::new(), p, field_schema)?.map(Value::Object),
            (Some(Value::Array(o)), Value::Array(p)) => Some(merge_list(o, p, field_schema)?),
            (None, Value::Array(p)) => Some(merge_list(&[], p, field_schema)?),
            (_, other) => Some(other.clone()),
        };
        match merged {
            Some(v) => {
                out.insert(key.clone(), v);
            }
            None => {
                out.remove(key);
            }
        }
    }
    for (key, order) in patch {
        let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) else {
            continue;
        };
        let order = order
            .as_array()
            .ok_or_else(|| format!("{key} must be a list"))?;
        if let Some(Value::Array(list)) = out.get_mut(field) {
            reorder(list, order, schema.field(field));
        }
    }
    Ok(Some(out))
}

fn without_patch(patch: &Map<String, Value>) -> Map<String, Value> {
    let mut p = patch.clone();
    p.remove("$patch");
    p
}

fn merge_key(schema: &Schema) -> Option<&str> {
    match schema.list_kind() {
        ListKind::Map { keys, .. } => keys.first().map(String::as_str),
        _ => None,
    }
}

fn merge_list(original: &[Value], patch: &[Value], schema: &Schema) -> Result<Value, String> {
    let replace = patch
        .iter()
        .any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"));
    let patch_items: Vec<&Value> = patch
        .iter()
        .filter(|item| item.get("$patch").and_then(Value::as_str) != Some("replace"))
        .collect();
    let items_schema = schema.items();
    match schema.list_kind() {
        ListKind::Set if !replace => {
            let mut out = original.to_vec();
            for item in patch_items {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            Ok(Value::Array(out))
        }
        ListKind::Map { .. } => {
            let key = merge_key(schema).unwrap_or("name");
            let mut out: Vec<Value> = if replace {
                Vec::new()
            } else {
                original.to_vec()
            };
            for item in patch_items {
                let Value::Object(item_map) = item else {
                    return Err(format!(
                        "expected an object in a list merged by {key:?}, got {item}"
                    ));
                };
                let key_value = item_map.get(key).ok_or_else(|| {
                    format!("map: {item} does not contain declared merge key: {key}")
                })?;
                let existing = out.iter().position(|o| o.get(key) == Some(key_value));
                if item.get("$patch").and_then(Value::as_str) == Some("delete") {
                    out.retain(|o| o.get(key) != Some(key_value));
                    continue;
                }
                match existing {
                    Some(i) => {
                        let current = out[i].as_object().cloned().unwrap_or_default();
                        match merge_map(&current, item_map, items_schema)? {
                            Some(m) => out[i] = Value::Object(m),
                            None => {
                                out.remove(i);
                            }
                        }
                    }
                    None => {
                        if let Some(m) = merge_map(&Map::new(), item_map, items_schema)? {
                            out.push(Value::Object(m));
                        }
                    }
                }
            }
            Ok(Value::Array(out))
        }
        _ => {
            let mut out = Vec::with_capacity(patch_items.len());
            for item in patch_items {
                match item {
                    Value::Object(m) => {
                        if let Some(m) = merge_map(&Map::new(), m, items_schema)? {
                            out.push(Value::Object(m));
                        }
                    }
                    other => out.push(other.clone()),
                }
            }
            Ok(Value::Array(out))
        }
    }
}

/// Orders `list` as `order` lists it; items `order` does not mention keep their relative
/// order after the ordered ones.
fn reorder(list: &mut Vec<Value>, order: &[Value], schema: &Schema) {
    let key = merge_key(schema);
    let position = |item: &Value| {
        order.iter().position(|o| match key {
            Some(k) => o.get(k).is_some() && o.get(k) == item.get(k),
            None => o == item,
        })
    };
    let mut indexed: Vec<(usize, usize, Value)> = list
        .drain(..)
        .enumerate()
        .map(|(i, v)| (position(&v).unwrap_or(usize::MAX), i, v))
        .collect();
    indexed.sort_by_key(|(p, i, _)| (*p, *i));
    list.extend(indexed.into_iter().map(|(_, _, v)| v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_spec() -> Schema {
        let mut s = Schema::open_struct();
        s.set("imagePullSecrets", Schema::map_list(&["name"]));
        s.set("containers", Schema::map_list(&["name"]));
        s.set("containers[].env", Schema::map_list(&["name"]));
        s.set("finalizers", Schema::set_list());
        s
    }

    #[test]
    fn merge_lists_merge_by_key_and_keep_other_entries() {
        let orig = json!({"imagePullSecrets": [{"name": "theirs"}], "containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]}]});
        let patch = json!({"imagePullSecrets": [{"name": "ours"}], "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]});
        let out = strategic_merge(&orig, &patch, &pod_spec()).unwrap();
        assert_eq!(
            out["imagePullSecrets"],
            json!([{"name": "theirs"}, {"name": "ours"}])
        );
        assert_eq!(out["containers"][0]["image"], "1");
        assert_eq!(
            out["containers"][0]["env"],
            json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}])
        );
    }

    #[test]
    fn lists_without_strategy_are_replaced() {
        let orig = json!({"tolerations": [{"key": "a"}]});
        let patch = json!({"tolerations": [{"key": "b"}]});
        assert_eq!(
            strategic_merge(&orig, &patch, &pod_spec()).unwrap()["tolerations"],
            json!([{"key": "b"}])
        );
    }

    #[test]
    fn directives_delete_and_replace() {
        let orig = json!({"imagePullSecrets": [{"name": "a"}, {"name": "b"}], "labels": {"x": "1", "y": "2"}});
        let patch = json!({"imagePullSecrets": [{"name": "a", "$patch": "delete"}], "labels": {"$patch": "replace", "z": "3"}});
        let out = strategic_merge(&orig, &patch, &pod_spec()).unwrap();
        assert_eq!(out["imagePullSecrets"], json!([{"name": "b"}]));
        assert_eq!(out["labels"], json!({"z": "3"}));
    }

    #[test]
    fn primitive_sets_union_and_delete() {
        let orig = json!({"finalizers": ["a", "b"]});
        let out = strategic_merge(&orig, &json!({"finalizers": ["c", "a"]}), &pod_spec()).unwrap();
        assert_eq!(out["finalizers"], json!(["a", "b", "c"]));
        let out = strategic_merge(
            &out,
            &json!({"$deleteFromPrimitiveList/finalizers": ["b"]}),
            &pod_spec(),
        )
        .unwrap();
        assert_eq!(out["finalizers"], json!(["a", "c"]));
    }
}
