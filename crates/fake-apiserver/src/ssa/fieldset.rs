//! Sets of field paths, the unit of ownership in server-side apply, and their `FieldsV1`
//! encoding (`sigs.k8s.io/structured-merge-diff/fieldpath`): a path is a member of a set, and
//! a node that is both a member and a parent is written with a `"."` entry.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::schema::Schema;

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// `f:name`: a struct field or map entry.
    Field(String),
    /// `k:{"name":"x"}`: an item of a `listType=map` list; key names sorted, values as JSON.
    Key(Vec<(String, String)>),
    /// `v:"x"`: an item of a `listType=set` list (JSON).
    Value(String),
    /// `i:0`: an item of a list identified by position.
    Index(usize),
}

impl PathElement {
    /// The `FieldsV1` key.
    fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(pairs) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(name.clone()).to_string());
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
                out
            }
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(key: &str) -> Result<Self, String> {
        if let Some(name) = key.strip_prefix("f:") {
            return Ok(PathElement::Field(name.to_string()));
        }
        if let Some(json) = key.strip_prefix("k:") {
            let parsed: Map<String, Value> = serde_json::from_str(json)
                .map_err(|e| format!("invalid key path element {key:?}: {e}"))?;
            return Ok(PathElement::Key(
                parsed
                    .into_iter()
                    .map(|(k, v)| (k, v.to_string()))
                    .collect(),
            ));
        }
        if let Some(json) = key.strip_prefix("v:") {
            let parsed: Value = serde_json::from_str(json)
                .map_err(|e| format!("invalid value path element {key:?}: {e}"))?;
            return Ok(PathElement::Value(parsed.to_string()));
        }
        if let Some(index) = key.strip_prefix("i:") {
            return index
                .parse()
                .map(PathElement::Index)
                .map_err(|e| format!("invalid index path element {key:?}: {e}"));
        }
        Err(format!("unknown path element {key:?}"))
    }
}

/// A path as the real server prints it in conflict messages: `.spec.containers[name="a"].image`.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for pe in path {
        match pe {
            PathElement::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            PathElement::Key(pairs) => {
                let inner = pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let _ = write!(out, "[{inner}]");
            }
            PathElement::Value(json) => {
                let _ = write!(out, "[={json}]");
            }
            PathElement::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

/// A set of field paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Adds `path` (the empty path is ignored).
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// True when `path` is a member.
    #[cfg(test)]
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// True when the set has no member at any depth.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Members directly under this node.
    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The subset of paths below `pe`.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// `self ∪ other`.
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// `self := self ∪ other`.
    pub(crate) fn union_with(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// Members of `self` that are not members of `other` (children compared path by path).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let diff = match other.children.get(pe) {
                    Some(o) => child.difference(o),
                    None => child.clone(),
                };
                (!diff.is_empty()).then(|| (pe.clone(), diff))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Members of both sets.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let o = other.children.get(pe)?;
                let both = child.intersection(o);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Removes every path of `other` and everything below a member of `other`.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                if other.members.contains(pe) {
                    return None;
                }
                let diff = match other.children.get(pe) {
                    Some(o) => child.recursive_difference(o),
                    None => child.clone(),
                };
                (!diff.is_empty()).then(|| (pe.clone(), diff))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Makes every named struct field that has members below it a member itself, as
    /// `Set.EnsureNamedFieldsAreMembers` does; map entries and list items are left alone.
    pub(crate) fn ensure_named_fields_are_members(&self, schema: &Schema) -> FieldSet {
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let child_schema = match pe {
                PathElement::Field(name) => {
                    if schema.is_named_field(name) {
                        members.insert(pe.clone());
                    }
                    schema.field(name)
                }
                _ => schema.items(),
            };
            children.insert(
                pe.clone(),
                child.ensure_named_fields_are_members(child_schema),
            );
        }
        FieldSet { members, children }
    }

    /// Every member path, in order.
    pub(crate) fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.keys());
        for pe in keys {
            prefix.push(pe.clone());
            if self.members.contains(pe) {
                out.push(prefix.clone());
            }
            if let Some(child) = self.children.get(pe) {
                child.collect_paths(prefix, out);
            }
            prefix.pop();
        }
    }

    /// The `fieldsV1` JSON object.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for pe in &self.members {
            if self.children.get(pe).is_none_or(FieldSet::is_empty) {
                out.insert(pe.encode(), Value::Object(Map::new()));
            }
        }
        for (pe, child) in &self.children {
            if child.is_empty() {
                continue;
            }
            let mut encoded = child.to_fields_v1();
            if self.members.contains(pe)
                && let Value::Object(m) = &mut encoded
            {
                m.insert(".".to_string(), Value::Object(Map::new()));
            }
            out.insert(pe.encode(), encoded);
        }
        Value::Object(out)
    }

    /// Parses a `fieldsV1` JSON object.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = value else {
            return Err("fieldsV1 must be an object".to_string());
        };
        let mut set = FieldSet::default();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let pe = PathElement::decode(key)?;
            let Value::Object(child_map) = child else {
                return Err(format!("fieldsV1 entry {key:?} must be an object"));
            };
            if child_map.is_empty() || child_map.contains_key(".") {
                set.members.insert(pe.clone());
            }
            let nested = FieldSet::from_fields_v1(child)?;
            if !nested.is_empty() {
                set.children.insert(pe, nested);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_markers() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}},
        });
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(set.has(&[f("metadata"), f("labels"), f("app")]));
        assert!(!set.has(&[f("metadata")]));
        assert_eq!(set.to_fields_v1(), encoded);
    }

    #[test]
    fn key_elements_print_like_the_real_server() {
        let pe = PathElement::Key(vec![("name".into(), "\"nginx\"".into())]);
        assert_eq!(
            path_string(&[f("spec"), f("containers"), pe, f("image")]),
            ".spec.containers[name=\"nginx\"].image"
        );
    }

    #[test]
    fn difference_and_intersection_work_member_wise() {
        let mut a = FieldSet::default();
        a.insert(&[f("spec"), f("x")]);
        a.insert(&[f("spec"), f("y")]);
        let mut b = FieldSet::default();
        b.insert(&[f("spec"), f("y")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("spec"), f("x")]]);
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("spec"), f("y")]]);
        assert!(b.difference(&a).is_empty());
    }

    #[test]
    fn recursive_difference_drops_subtrees() {
        let mut a = FieldSet::default();
        a.insert(&[f("status"), f("phase")]);
        a.insert(&[f("spec"), f("x")]);
        let mut status = FieldSet::default();
        status.insert(&[f("status")]);
        assert_eq!(
            a.recursive_difference(&status).paths(),
            vec![vec![f("spec"), f("x")]]
        );
    }
}
