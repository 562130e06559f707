//! `metadata.managedFields`: decoding, encoding and manager identity
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go`).

use serde_json::{Map, Value, json};

use super::fieldset::{FieldSet, PathElement};

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns a field set. Two entries are the same manager when manager, operation and
/// subresource match, and for `Update` also the API version (as `BuildManagerIdentifier`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManagerId {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    pub(crate) subresource: String,
    pub(crate) api_version: String,
}

impl ManagerId {
    /// True when both name the same manager.
    pub(crate) fn same(&self, other: &ManagerId) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// How conflict messages name the manager (`printManager`).
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: ManagerId,
    pub(crate) time: Option<String>,
    pub(crate) set: FieldSet,
}

/// All entries of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ManagedFields {
    pub(crate) entries: Vec<Entry>,
}

impl ManagedFields {
    /// Decodes `metadata.managedFields`; `None` when absent or malformed.
    pub(crate) fn decode(obj: &Value) -> Option<ManagedFields> {
        let list = obj.pointer("/metadata/managedFields")?.as_array()?;
        let mut entries = Vec::with_capacity(list.len());
        for item in list {
            let operation = match item.get("operation")?.as_str()? {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return None,
            };
            let set = match item.get("fieldsV1") {
                Some(v) => FieldSet::from_fields_v1(v).ok()?,
                None => FieldSet::default(),
            };
            entries.push(Entry {
                id: ManagerId {
                    manager: item.get("manager").and_then(Value::as_str)?.to_string(),
                    operation,
                    subresource: item
                        .get("subresource")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    api_version: item
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                },
                time: item.get("time").and_then(Value::as_str).map(str::to_string),
                set,
            });
        }
        Some(ManagedFields { entries })
    }

    /// Encodes the entries sorted as the real server sorts them (operation, time, manager,
    /// apiVersion, subresource).
    pub(crate) fn encode(&self) -> Value {
        let mut entries: Vec<&Entry> = self.entries.iter().filter(|e| !e.set.is_empty()).collect();
        entries.sort_by(|a, b| {
            (
                a.id.operation,
                &a.time,
                &a.id.manager,
                &a.id.api_version,
                &a.id.subresource,
            )
                .cmp(&(
                    b.id.operation,
                    &b.time,
                    &b.id.manager,
                    &b.id.api_version,
                    &b.id.subresource,
                ))
        });
        let list = entries
            .into_iter()
            .map(|e| {
                let mut m = Map::new();
                m.insert("manager".into(), e.id.manager.clone().into());
                m.insert("operation".into(), e.id.operation.as_str().into());
                m.insert("apiVersion".into(), e.id.api_version.clone().into());
                if let Some(t) = &e.time {
                    m.insert("time".into(), t.clone().into());
                }
                m.insert("fieldsType".into(), "FieldsV1".into());
                m.insert("fieldsV1".into(), e.set.to_fields_v1());
                if !e.id.subresource.is_empty() {
                    m.insert("subresource".into(), e.id.subresource.clone().into());
                }
                Value::Object(m)
            })
            .collect::<Vec<_>>();
        json!(list)
    }

    /// The entry of manager `id`.
    pub(crate) fn get(&self, id: &ManagerId) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id.same(id))
    }

    /// Replaces (or adds) the set of manager `id`, keeping its time unless `time` is given.
    pub(crate) fn put(&mut self, id: &ManagerId, set: FieldSet, time: Option<String>) {
        match self.entries.iter_mut().find(|e| e.id.same(id)) {
            Some(entry) => {
                entry.set = set;
                entry.id.api_version.clone_from(&id.api_version);
                if time.is_some() {
                    entry.time = time;
                }
            }
            None => self.entries.push(Entry {
                id: id.clone(),
                time,
                set,
            }),
        }
    }

    /// Drops entries that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.set.is_empty());
    }

    /// Equal ignoring the timestamps (`IgnoreManagedFieldsTimestampsTransformer`).
    pub(crate) fn same_ignoring_time(&self, other: &ManagedFields) -> bool {
        let strip = |m: &ManagedFields| {
            let mut v: Vec<(String, Operation, String, String, Value)> = m
                .entries
                .iter()
                .filter(|e| !e.set.is_empty())
                .map(|e| {
                    (
                        e.id.manager.clone(),
                        e.id.operation,
                        e.id.subresource.clone(),
                        e.id.api_version.clone(),
                        e.set.to_fields_v1(),
                    )
                })
                .collect();
            v.sort_by(|a, b| (&a.0, a.1, &a.2, &a.3).cmp(&(&b.0, b.1, &b.2, &b.3)));
            v
        };
        strip(self) == strip(other)
    }
}

/// Fields the server never records as owned (`NewStripMetaManager`).
pub(crate) fn strip_meta(set: &FieldSet) -> FieldSet {
    let f = |s: &str| PathElement::Field(s.to_string());
    let mut strip = FieldSet::default();
    strip.insert(&[f("apiVersion")]);
    strip.insert(&[f("kind")]);
    strip.insert(&[f("metadata")]);
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        strip.insert(&[f("metadata"), f(field)]);
    }
    let mut out = set.difference(&strip);
    // Nothing below managedFields is ever owned either.
    let mut managed = FieldSet::default();
    managed.insert(&[f("metadata"), f("managedFields")]);
    out = out.recursive_difference(&managed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_encode_round_trip_sorted_apply_first() {
        let obj = json!({"metadata": {"managedFields": [
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:y": {}}}},
        ]}});
        let mf = ManagedFields::decode(&obj).unwrap();
        let encoded = mf.encode();
        assert_eq!(encoded[0]["manager"], "a");
        assert_eq!(encoded[1]["manager"], "b");
        assert_eq!(encoded[1]["fieldsV1"], json!({"f:data": {"f:x": {}}}));
    }

    #[test]
    fn update_managers_differ_by_api_version_apply_managers_do_not() {
        let id = |op, v: &str| ManagerId {
            manager: "m".into(),
            operation: op,
            subresource: String::new(),
            api_version: v.into(),
        };
        assert!(id(Operation::Apply, "v1").same(&id(Operation::Apply, "v2")));
        assert!(!id(Operation::Update, "v1").same(&id(Operation::Update, "v2")));
        assert_eq!(
            id(Operation::Update, "apps/v1").describe(),
            "\"m\" using apps/v1"
        );
    }
}
