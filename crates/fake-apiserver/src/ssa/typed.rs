//! Schema-aware operations on JSON values, following `structured-merge-diff/typed`:
//! the field set of a value, merging an applied configuration into a live object, comparing
//! two objects field by field, and removing a set of fields.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, PathElement, path_string};
use crate::schema::{ListKind, Schema};

/// A value that cannot be described by the schema (a list item without its key, duplicates).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub(crate) struct TypedError {
    pub(crate) path: String,
    pub(crate) message: String,
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Null => true,
        _ => false,
    }
}

/// The path element naming `item` in a list of kind `kind`.
pub(crate) fn list_item_pe(
    kind: &ListKind,
    index: usize,
    item: &Value,
) -> Result<PathElement, String> {
    match kind {
        ListKind::Atomic => Ok(PathElement::Index(index)),
        ListKind::Set => Ok(PathElement::Value(item.to_string())),
        ListKind::Map { keys, key_defaults } => {
            let Value::Object(obj) = item else {
                return Err(format!(
                    "expected an object in an associative list, got {item}"
                ));
            };
            let mut pairs = Vec::with_capacity(keys.len());
            for key in keys {
                let value = obj.get(key).cloned().or_else(|| {
                    key_defaults
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.clone())
                });
                match value {
                    Some(v) => pairs.push((key.clone(), v.to_string())),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field \
                             {key:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            pairs.sort();
            Ok(PathElement::Key(pairs))
        }
    }
}

/// Items of a non-atomic list, keyed by path element, in order; later duplicates are dropped
/// (or reported when `strict`).
fn index_items<'a>(
    kind: &ListKind,
    items: &'a [Value],
    path: &[PathElement],
    strict: bool,
) -> Result<Vec<(PathElement, &'a Value)>, TypedError> {
    let mut seen = HashMap::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let pe = list_item_pe(kind, i, item).map_err(|message| TypedError {
            path: path_string(path),
            message,
        })?;
        if seen.insert(pe.clone(), ()).is_some() {
            if strict {
                return Err(TypedError {
                    path: path_string(path),
                    message: format!(
                        "duplicate entries for key {}",
                        path_string(std::slice::from_ref(&pe))
                    ),
                });
            }
            continue;
        }
        out.push((pe, item));
    }
    Ok(out)
}

/// The set of fields `value` sets (`TypedValue.ToFieldSet`).
pub(crate) fn to_field_set(value: &Value, schema: &Schema) -> Result<FieldSet, TypedError> {
    let mut set = FieldSet::default();
    let mut path = Vec::new();
    walk_field_set(value, schema, &mut path, &mut set)?;
    Ok(set)
}

fn walk_field_set(
    value: &Value,
    schema: &Schema,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
) -> Result<(), TypedError> {
    match value {
        Value::Object(map) if !schema.is_atomic() && !matches!(schema, Schema::List { .. }) => {
            for (key, child) in map {
                path.push(PathElement::Field(key.clone()));
                walk_field_set(child, schema.field(key), path, set)?;
                let empty_map = matches!(child, Value::Object(m) if m.is_empty());
                if child.is_null() || empty_map || !schema.is_named_field(key) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) if !matches!(schema.list_kind(), ListKind::Atomic) => {
            for (pe, item) in index_items(schema.list_kind(), items, path, true)? {
                path.push(pe);
                walk_field_set(item, schema.items(), path, set)?;
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
    Ok(())
}

/// Merges `rhs` (applied configuration) over `lhs` (live object) (`TypedValue.Merge`).
pub(crate) fn merge(lhs: &Value, rhs: &Value, schema: &Schema) -> Result<Value, TypedError> {
    let mut path = Vec::new();
    Ok(merge_at(Some(lhs), Some(rhs), schema, &mut path)?.unwrap_or(Value::Null))
}

fn merge_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: &Schema,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, TypedError> {
    match (lhs, rhs) {
        (None, None) => Ok(None),
        (Some(l), None) => Ok(Some(l.clone())),
        (None, Some(r)) => Ok(Some(r.clone())),
        (Some(l), Some(r)) => {
            if is_empty_container(l) && is_empty_container(r) {
                return Ok(Some(r.clone()));
            }
            match (l, r) {
                (Value::Object(lm), Value::Object(rm))
                    if !schema.is_atomic() && !matches!(schema, Schema::List { .. }) =>
                {
                    let mut out = Map::new();
                    for (key, lv) in lm {
                        path.push(PathElement::Field(key.clone()));
                        if let Some(v) = merge_at(Some(lv), rm.get(key), schema.field(key), path)? {
                            out.insert(key.clone(), v);
                        }
                        path.pop();
                    }
                    for (key, rv) in rm {
                        if !lm.contains_key(key) {
                            out.insert(key.clone(), rv.clone());
                        }
                    }
                    Ok(Some(Value::Object(out)))
                }
                (Value::Array(la), Value::Array(ra))
                    if !matches!(schema.list_kind(), ListKind::Atomic) =>
                {
                    merge_lists(la, ra, schema, path).map(|v| Some(Value::Array(v)))
                }
                _ => Ok(Some(r.clone())),
            }
        }
    }
}

/// Merges associative lists keeping live-only items where they were and applied items in the
/// applied order (`mergingWalker.visitListItems`).
fn merge_lists(
    lhs: &[Value],
    rhs: &[Value],
    schema: &Schema,
    path: &mut Vec<PathElement>,
) -> Result<Vec<Value>, TypedError> {
    let kind = schema.list_kind();
    let items_schema = schema.items();
    let r_items = index_items(kind, rhs, path, true)?;
    let l_items = index_items(kind, lhs, path, false)?;
    let r_index: HashMap<&PathElement, &Value> = r_items.iter().map(|(pe, v)| (pe, *v)).collect();
    let l_index: HashMap<&PathElement, &Value> = l_items.iter().map(|(pe, v)| (pe, *v)).collect();
    let shared: Vec<&PathElement> = r_items
        .iter()
        .map(|(pe, _)| pe)
        .filter(|pe| l_index.contains_key(pe))
        .collect();
    let mut shared_iter = shared.into_iter();
    let mut next_shared = shared_iter.next();

    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let merge_item = |pe: &PathElement,
                      l: Option<&Value>,
                      r: Option<&Value>,
                      out: &mut Vec<Value>,
                      path: &mut Vec<PathElement>|
     -> Result<(), TypedError> {
        path.push(pe.clone());
        let merged = merge_at(l, r, items_schema, path)?;
        path.pop();
        if let Some(v) = merged {
            out.push(v);
        }
        Ok(())
    };

    let (mut li, mut ri) = (0, 0);
    while li < l_items.len() || ri < r_items.len() {
        if li < l_items.len() && ri < r_items.len() {
            let lpe = &l_items[li].0;
            if lpe == &r_items[ri].0 {
                merge_item(
                    lpe,
                    Some(l_items[li].1),
                    Some(r_items[ri].1),
                    &mut out,
                    path,
                )?;
                li += 1;
                ri += 1;
                next_shared = shared_iter.next();
                continue;
            }
            if r_index.contains_key(lpe) && next_shared.is_some_and(|s| s != lpe) {
                // A shared item that the applied order places later.
                li += 1;
                continue;
            }
        }
        if li < l_items.len() {
            let lpe = &l_items[li].0;
            if !r_index.contains_key(lpe) {
                merge_item(lpe, Some(l_items[li].1), None, &mut out, path)?;
                li += 1;
                continue;
            }
        }
        if ri < r_items.len() {
            let rpe = &r_items[ri].0;
            merge_item(
                rpe,
                l_index.get(rpe).copied(),
                Some(r_items[ri].1),
                &mut out,
                path,
            )?;
            ri += 1;
            if next_shared.is_some_and(|s| s == rpe) {
                next_shared = shared_iter.next();
            }
        }
    }
    Ok(out)
}

/// Fields added, changed and removed going from `lhs` to `rhs` (`TypedValue.Compare`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// `added ∪ modified`.
    pub(crate) fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }
}

/// Compares two objects field by field.
pub(crate) fn compare(lhs: &Value, rhs: &Value, schema: &Schema) -> Comparison {
    let mut cmp = Comparison::default();
    compare_at(Some(lhs), Some(rhs), schema, &mut Vec::new(), &mut cmp);
    cmp
}

fn is_leaf(l: Option<&Value>, r: Option<&Value>, schema: &Schema) -> bool {
    let both_empty = l.is_none_or(is_empty_container) && r.is_none_or(is_empty_container);
    if both_empty {
        return true;
    }
    let present = [l, r].into_iter().flatten();
    let mut object = false;
    let mut array = false;
    for v in present {
        match v {
            Value::Object(_) => object = true,
            Value::Array(_) => array = true,
            _ => return true,
        }
    }
    if object && array {
        return true;
    }
    if object {
        return schema.is_atomic() || matches!(schema, Schema::List { .. });
    }
    matches!(schema.list_kind(), ListKind::Atomic)
}

fn compare_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: &Schema,
    path: &mut Vec<PathElement>,
    cmp: &mut Comparison,
) {
    if is_leaf(lhs, rhs, schema) {
        match (lhs, rhs) {
            (None, Some(_)) => cmp.added.insert(path),
            (Some(_), None) => cmp.removed.insert(path),
            (Some(l), Some(r)) if l != r => cmp.modified.insert(path),
            _ => {}
        }
        return;
    }
    let empty = Map::new();
    match lhs.or(rhs) {
        Some(Value::Object(_)) => {
            let lm = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let rm = rhs.and_then(Value::as_object).unwrap_or(&empty);
            for (key, lv) in lm {
                path.push(PathElement::Field(key.clone()));
                compare_at(Some(lv), rm.get(key), schema.field(key), path, cmp);
                path.pop();
            }
            for (key, rv) in rm {
                if !lm.contains_key(key) {
                    path.push(PathElement::Field(key.clone()));
                    compare_at(None, Some(rv), schema.field(key), path, cmp);
                    path.pop();
                }
            }
        }
        Some(Value::Array(_)) => {
            let kind = schema.list_kind();
            let none: Vec<Value> = Vec::new();
            let la = lhs.and_then(Value::as_array).unwrap_or(&none);
            let ra = rhs.and_then(Value::as_array).unwrap_or(&none);
            // Values that cannot be keyed were validated on write; treat failures as atomic.
            let (Ok(l_items), Ok(r_items)) = (
                index_items(kind, la, path, false),
                index_items(kind, ra, path, false),
            ) else {
                if lhs != rhs {
                    cmp.modified.insert(path);
                }
                return;
            };
            let l_index: HashMap<&PathElement, &Value> =
                l_items.iter().map(|(pe, v)| (pe, *v)).collect();
            let r_index: HashMap<&PathElement, &Value> =
                r_items.iter().map(|(pe, v)| (pe, *v)).collect();
            for (pe, rv) in &r_items {
                path.push(pe.clone());
                compare_at(
                    l_index.get(pe).copied(),
                    Some(rv),
                    schema.items(),
                    path,
                    cmp,
                );
                path.pop();
            }
            for (pe, lv) in &l_items {
                if !r_index.contains_key(pe) {
                    path.push(pe.clone());
                    compare_at(Some(lv), None, schema.items(), path, cmp);
                    path.pop();
                }
            }
        }
        _ => {}
    }
    match (lhs, rhs) {
        (None, Some(_)) => cmp.added.insert(path),
        (Some(_), None) => cmp.removed.insert(path),
        _ => {}
    }
}

/// `value` without the fields in `set`; a member path is removed with everything below it.
pub(crate) fn remove_items(value: &Value, set: &FieldSet, schema: &Schema) -> Value {
    match value {
        Value::Object(map) if !schema.is_atomic() && !matches!(schema, Schema::List { .. }) => {
            let mut out = Map::new();
            for (key, child) in map {
                let pe = PathElement::Field(key.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(sub) => remove_items(child, sub, schema.field(key)),
                    None => child.clone(),
                };
                out.insert(key.clone(), kept);
            }
            Value::Object(out)
        }
        Value::Array(items) if !matches!(schema.list_kind(), ListKind::Atomic) => {
            let kind = schema.list_kind();
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let Ok(pe) = list_item_pe(kind, i, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                out.push(match set.child(&pe) {
                    Some(sub) => remove_items(item, sub, schema.items()),
                    None => item.clone(),
                });
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_like() -> Schema {
        let mut s = Schema::open_struct();
        s.set("metadata.labels", Schema::string_map());
        s.set("spec.containers", Schema::map_list(&["name"]));
        s.set("spec.args", Schema::atomic_list());
        s.set("spec.finalizers", Schema::set_list());
        s
    }

    #[test]
    fn field_set_marks_list_items_and_map_entries_as_members() {
        let v = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i"}], "args": ["x"]}});
        let set = to_field_set(&v, &pod_like()).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {"f:args": {}, "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}
            })
        );
    }

    #[test]
    fn merge_keeps_live_only_items_and_applied_order() {
        let live = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c"}]}});
        let cfg = json!({"spec": {"containers": [{"name": "c", "image": "3"}, {"name": "a", "image": "9"}]}});
        let out = merge(&live, &cfg, &pod_like()).unwrap();
        let names: Vec<_> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["b", "c", "a"]);
        assert_eq!(out["spec"]["containers"][2]["image"], "9");
    }

    #[test]
    fn merge_replaces_atomic_lists() {
        let live = json!({"spec": {"args": ["a", "b"]}});
        let cfg = json!({"spec": {"args": ["c"]}});
        assert_eq!(
            merge(&live, &cfg, &pod_like()).unwrap()["spec"]["args"],
            json!(["c"])
        );
    }

    #[test]
    fn compare_reports_added_modified_removed() {
        let a = json!({"spec": {"x": 1, "y": 2}});
        let b = json!({"spec": {"x": 3, "z": {"k": 1}}});
        let cmp = compare(&a, &b, &Schema::open_struct());
        let f = |s: &str| PathElement::Field(s.into());
        assert!(cmp.modified.has(&[f("spec"), f("x")]));
        assert!(cmp.removed.has(&[f("spec"), f("y")]));
        assert!(cmp.added.has(&[f("spec"), f("z")]));
        assert!(cmp.added.has(&[f("spec"), f("z"), f("k")]));
    }

    #[test]
    fn duplicate_keys_in_applied_lists_are_rejected() {
        let cfg = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
        let err = to_field_set(&cfg, &pod_like()).unwrap_err();
        assert!(err.message.contains("duplicate entries"), "{err}");
    }

    #[test]
    fn remove_items_drops_members_with_their_subtrees() {
        let v = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}});
        let mut set = FieldSet::default();
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key(vec![("name".into(), "\"a\"".into())]),
        ]);
        let out = remove_items(&v, &set, &pod_like());
        assert_eq!(out, json!({"spec": {"containers": [{"name": "b"}]}}));
    }
}
