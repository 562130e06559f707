//! The part of an OpenAPI schema that server-side apply and strategic merge patch need:
//! which objects are structs (named fields) or maps (free-form keys), which lists are
//! `atomic`, `set` or `map` (with their keys), and which nodes are replaced whole.
//!
//! Builtin kinds describe only the paths where the distinction matters (see
//! `resources::builtin`); anything else is [`Schema::Deduced`], which behaves like the
//! real server's typed schemas for plain structs and scalars and treats unknown lists as
//! atomic (their SMP default, "replace").

use std::collections::BTreeMap;

use serde_json::Value;

/// How list items are identified and merged (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ListKind {
    /// Replaced whole; one manager owns the list.
    Atomic,
    /// Scalars merged as a set; each value owned separately.
    Set,
    /// Objects merged by `keys`; each item owned separately. `key_defaults` fill a key that an
    /// item omits (as `ports[].protocol` defaults to `TCP`).
    Map {
        keys: Vec<String>,
        key_defaults: Vec<(String, Value)>,
    },
}

/// An object whose keys are declared fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StructSchema {
    pub(crate) fields: BTreeMap<String, Schema>,
    /// Values the server fills in when a field is absent (CRD `default`).
    pub(crate) defaults: BTreeMap<String, Value>,
    /// Unknown keys are kept (builtin structs described partially, or CRD
    /// `x-kubernetes-preserve-unknown-fields`); when false they are pruned (CRD structural schema).
    pub(crate) open: bool,
}

/// A node of the schema tree.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Schema {
    /// A scalar, or a struct/map/list replaced whole (`atomic`).
    Atomic,
    /// An object with named fields (`structType=granular`).
    Struct(StructSchema),
    /// An object with free-form keys (`map[string]T`); each entry is its own field.
    Map(Box<Schema>),
    /// A list.
    List { kind: ListKind, items: Box<Schema> },
    /// Nothing declared: objects act as open structs, lists as atomic, scalars as leaves.
    Deduced,
    /// `x-kubernetes-preserve-unknown-fields` without properties: objects are maps of untyped
    /// values, lists are atomic.
    Untyped,
}

static DEDUCED: Schema = Schema::Deduced;
static UNTYPED: Schema = Schema::Untyped;
static ATOMIC_KIND: ListKind = ListKind::Atomic;

impl Schema {
    /// An open struct with no declared fields yet (the root of a builtin kind).
    pub(crate) fn open_struct() -> Self {
        Schema::Struct(StructSchema {
            open: true,
            ..StructSchema::default()
        })
    }

    /// A list merged by `keys`.
    pub(crate) fn map_list(keys: &[&str]) -> Self {
        Schema::List {
            kind: ListKind::Map {
                keys: keys.iter().map(|k| (*k).to_string()).collect(),
                key_defaults: Vec::new(),
            },
            items: Box::new(Schema::Deduced),
        }
    }

    /// A list of scalars merged as a set.
    pub(crate) fn set_list() -> Self {
        Schema::List {
            kind: ListKind::Set,
            items: Box::new(Schema::Atomic),
        }
    }

    /// A list replaced whole.
    pub(crate) fn atomic_list() -> Self {
        Schema::List {
            kind: ListKind::Atomic,
            items: Box::new(Schema::Deduced),
        }
    }

    /// A `map[string]string`-like object with granular entries.
    pub(crate) fn string_map() -> Self {
        Schema::Map(Box::new(Schema::Atomic))
    }

    /// The schema of the value under object key `key`.
    pub(crate) fn field(&self, key: &str) -> &Schema {
        match self {
            Schema::Struct(s) => s.fields.get(key).unwrap_or(&DEDUCED),
            Schema::Map(values) => values,
            Schema::Untyped => &UNTYPED,
            _ => &DEDUCED,
        }
    }

    /// True when `key` is a named field of a struct (as opposed to an entry of a map).
    pub(crate) fn is_named_field(&self, key: &str) -> bool {
        match self {
            Schema::Struct(s) => s.open || s.fields.contains_key(key),
            Schema::Deduced => true,
            _ => false,
        }
    }

    /// The schema of list items.
    pub(crate) fn items(&self) -> &Schema {
        match self {
            Schema::List { items, .. } => items,
            Schema::Untyped => &UNTYPED,
            _ => &DEDUCED,
        }
    }

    /// How this node merges when it holds a list.
    pub(crate) fn list_kind(&self) -> &ListKind {
        match self {
            Schema::List { kind, .. } => kind,
            _ => &ATOMIC_KIND,
        }
    }

    /// True when an object value at this node is replaced whole.
    pub(crate) fn is_atomic(&self) -> bool {
        matches!(self, Schema::Atomic)
    }

    fn struct_fields_mut(&mut self) -> &mut BTreeMap<String, Schema> {
        if !matches!(self, Schema::Struct(_)) {
            *self = Schema::open_struct();
        }
        match self {
            Schema::Struct(s) => &mut s.fields,
            // Safe: the `if` above replaced any other variant with a struct.
            _ => unreachable!("converted to a struct above"),
        }
    }

    /// Declares `node` at a dotted `path`; a segment `name[]` descends into the items of the
    /// list `name` (which must have been declared before).
    pub(crate) fn set(&mut self, path: &str, node: Schema) {
        let segments: Vec<&str> = path.split('.').collect();
        let mut cur = self;
        for (i, segment) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            match segment.strip_suffix("[]") {
                Some(list) => {
                    let entry = cur
                        .struct_fields_mut()
                        .entry(list.to_string())
                        .or_insert_with(Schema::atomic_list);
                    cur = match entry {
                        Schema::List { items, .. } => items,
                        other => other,
                    };
                }
                None if last => {
                    cur.struct_fields_mut().insert((*segment).to_string(), node);
                    return;
                }
                None => {
                    cur = cur
                        .struct_fields_mut()
                        .entry((*segment).to_string())
                        .or_insert_with(Schema::open_struct);
                }
            }
        }
    }

    /// Declares the same `node` under every `prefix` (for structs embedded at several paths,
    /// like a PodSpec).
    pub(crate) fn set_all(&mut self, prefix: &str, entries: &[(&str, Schema)]) {
        for (path, node) in entries {
            let full = if prefix.is_empty() {
                (*path).to_string()
            } else {
                format!("{prefix}.{path}")
            };
            self.set(&full, node.clone());
        }
    }

    /// With `key_defaults` on a map list at `path` (already declared).
    pub(crate) fn with_key_default(mut self, key: &str, value: Value) -> Self {
        if let Schema::List {
            kind: ListKind::Map { key_defaults, .. },
            ..
        } = &mut self
        {
            key_defaults.push((key.to_string(), value));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_builds_nested_structs_and_list_items() {
        let mut root = Schema::open_struct();
        root.set("spec.containers", Schema::map_list(&["name"]));
        root.set("spec.containers[].env", Schema::map_list(&["name"]));
        let containers = root.field("spec").field("containers");
        assert!(matches!(containers.list_kind(), ListKind::Map { .. }));
        let env = containers.items().field("env");
        assert!(matches!(env.list_kind(), ListKind::Map { keys, .. } if keys == &["name"]));
        assert_eq!(root.field("spec").field("other"), &Schema::Deduced);
    }

    #[test]
    fn maps_have_no_named_fields() {
        let labels = Schema::string_map();
        assert!(!labels.is_named_field("app"));
        assert!(Schema::open_struct().is_named_field("anything"));
    }
}
