//! Field ownership: server-side apply and the ownership bookkeeping of every other write
//! (`sigs.k8s.io/structured-merge-diff/merge/update.go`).

pub(crate) mod fieldset;
pub(crate) mod managed;
pub(crate) mod typed;

use serde_json::Value;

use self::fieldset::{FieldSet, path_string};
use self::managed::{ManagedFields, ManagerId, strip_meta};
use self::typed::{TypedError, compare, merge, remove_items, to_field_set};
use crate::schema::Schema;
use crate::status::{ApiError, Cause};

/// Why an apply failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// The configuration does not fit the schema.
    Invalid(TypedError),
    /// Fields owned by other managers would change (and `force` was not set).
    Conflict(ApiError),
}

/// Merges `config` into `live` for manager `who` (operation Apply), prunes what `who` applied
/// before and no longer applies (unless another manager owns it), and moves ownership.
/// Returns the new object; `managers` is updated in place (time is left to the caller).
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    schema: &Schema,
    managers: &mut ManagedFields,
    who: &ManagerId,
    force: bool,
) -> Result<Value, ApplyError> {
    let mut merged = merge(live, config, schema).map_err(ApplyError::Invalid)?;
    let applied = to_field_set(config, schema).map_err(ApplyError::Invalid)?;
    let last = managers.get(who).map(|e| e.set.clone());

    if let Some(last) = last.filter(|l| !l.is_empty()) {
        let mut managed = applied.clone();
        for entry in &managers.entries {
            if !entry.id.same(who) {
                managed.union_with(&entry.set);
            }
        }
        let to_remove = last
            .ensure_named_fields_are_members(schema)
            .difference(&managed.ensure_named_fields_are_members(schema));
        merged = remove_items(&merged, &to_remove, schema);
    }

    let cmp = compare(live, &merged, schema);
    let changed = cmp.changed();
    let mut conflicts: Vec<(ManagerId, FieldSet)> = Vec::new();
    for entry in &managers.entries {
        if entry.id.same(who) {
            continue;
        }
        let both = entry.set.intersection(&changed);
        if !both.is_empty() {
            conflicts.push((entry.id.clone(), both));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflict(conflict_error(&conflicts)));
    }
    for entry in &mut managers.entries {
        if entry.id.same(who) {
            continue;
        }
        if let Some((_, lost)) = conflicts.iter().find(|(id, _)| entry.id.same(id)) {
            entry.set = entry.set.difference(lost);
        }
        entry.set = entry.set.difference(&cmp.removed);
    }
    managers.put(who, strip_meta(&applied), None);
    managers.drop_empty();
    Ok(merged)
}

/// Records an Update/Patch/Create by `who`: it takes ownership of every field it added or
/// changed (from whoever owned it) and nobody owns removed fields any more. Returns true when
/// `who` took any field (the real server then refreshes its timestamp).
pub(crate) fn record_update(
    live: &Value,
    new: &Value,
    schema: &Schema,
    managers: &mut ManagedFields,
    who: &ManagerId,
) -> bool {
    let cmp = compare(live, new, schema);
    let taken = strip_meta(&cmp.changed().difference(&cmp.removed));
    for entry in &mut managers.entries {
        entry.set = entry
            .set
            .difference(&cmp.added)
            .difference(&cmp.modified)
            .difference(&cmp.removed);
    }
    let took_any = !taken.is_empty();
    if took_any {
        let previous = managers.get(who).map(|e| e.set.clone()).unwrap_or_default();
        managers.put(who, previous.union(&taken), Some(crate::ids::now_rfc3339()));
    }
    managers.drop_empty();
    took_any
}

/// The 409 body of `errors.NewApplyConflict`, with one cause per conflicting field.
fn conflict_error(conflicts: &[(ManagerId, FieldSet)]) -> ApiError {
    let mut sorted: Vec<&(ManagerId, FieldSet)> = conflicts.iter().collect();
    sorted.sort_by(|a, b| a.0.manager.cmp(&b.0.manager));
    let mut causes = Vec::new();
    let mut lines = Vec::new();
    for (id, set) in &sorted {
        let who = id.describe();
        lines.push(format!("conflicts with {who}:"));
        for path in set.paths() {
            let field = path_string(&path);
            lines.push(format!("- {field}"));
            causes.push(Cause {
                reason: "FieldManagerConflict",
                message: format!("conflict with {who}"),
                field,
            });
        }
    }
    let message = match causes.as_slice() {
        [one] => format!(
            "Apply failed with 1 conflict: {}: {}",
            one.message, one.field
        ),
        many => format!(
            "Apply failed with {} conflicts: {}",
            many.len(),
            lines.join("\n")
        ),
    };
    ApiError::apply_conflict(message, causes)
}

#[cfg(test)]
mod tests {
    use super::managed::Operation;
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        let mut s = Schema::open_struct();
        s.set("metadata.labels", Schema::string_map());
        s.set("spec.items", Schema::map_list(&["name"]));
        s
    }

    fn applier(name: &str) -> ManagerId {
        ManagerId {
            manager: name.into(),
            operation: Operation::Apply,
            subresource: String::new(),
            api_version: "v1".into(),
        }
    }

    /// An object (or applied configuration) named `x` with `extra` merged in.
    fn obj(extra: Value) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}});
        json_patch::merge(&mut v, &extra);
        v
    }

    /// Applies `config` over `live` as `manager`.
    fn run(
        live: &Value,
        config: Value,
        mf: &mut ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<Value, ApplyError> {
        apply(live, &obj(config), &schema(), mf, &applier(manager), force)
    }

    #[test]
    fn reapplying_without_a_field_prunes_it() {
        let mut mf = ManagedFields::default();
        let live = run(
            &obj(json!({})),
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            &mut mf,
            "m",
            false,
        )
        .unwrap();
        let live = run(
            &live,
            json!({"metadata": {"labels": {"a": "1"}}}),
            &mut mf,
            "m",
            false,
        )
        .unwrap();
        assert_eq!(live["metadata"]["labels"], json!({"a": "1"}));
    }

    #[test]
    fn another_appliers_field_conflicts_unless_forced() {
        let mut mf = ManagedFields::default();
        let live = run(
            &obj(json!({})),
            json!({"spec": {"replicas": 1}}),
            &mut mf,
            "a",
            false,
        )
        .unwrap();
        let Err(ApplyError::Conflict(err)) =
            run(&live, json!({"spec": {"replicas": 2}}), &mut mf, "b", false)
        else {
            panic!("expected a conflict");
        };
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let live = run(&live, json!({"spec": {"replicas": 2}}), &mut mf, "b", true).unwrap();
        assert_eq!(live["spec"]["replicas"], 2);
        assert!(mf.get(&applier("a")).is_none(), "a lost its only field");
    }

    #[test]
    fn same_value_is_shared_not_a_conflict() {
        let mut mf = ManagedFields::default();
        let live = run(
            &obj(json!({})),
            json!({"spec": {"replicas": 1}}),
            &mut mf,
            "a",
            false,
        )
        .unwrap();
        run(&live, json!({"spec": {"replicas": 1}}), &mut mf, "b", false).unwrap();
        assert_eq!(mf.entries.len(), 2);
    }

    #[test]
    fn field_kept_when_another_manager_owns_it() {
        let mut mf = ManagedFields::default();
        let labels = json!({"metadata": {"labels": {"a": "1"}}});
        let live = run(&obj(json!({})), labels.clone(), &mut mf, "a", false).unwrap();
        let live = run(&live, labels, &mut mf, "b", false).unwrap();
        let live = run(&live, json!({}), &mut mf, "a", false).unwrap();
        assert_eq!(live["metadata"]["labels"], json!({"a": "1"}));
    }

    #[test]
    fn update_takes_ownership_from_an_applier() {
        let mut mf = ManagedFields::default();
        let live = run(
            &obj(json!({})),
            json!({"spec": {"replicas": 1}}),
            &mut mf,
            "a",
            false,
        )
        .unwrap();
        let updater = ManagerId {
            operation: Operation::Update,
            ..applier("u")
        };
        let new = obj(json!({"spec": {"replicas": 5}}));
        assert!(record_update(&live, &new, &schema(), &mut mf, &updater));
        assert!(mf.get(&applier("a")).is_none());
        // Re-applying the old value now conflicts with the updater.
        let err = run(&new, json!({"spec": {"replicas": 1}}), &mut mf, "a", false).unwrap_err();
        assert!(matches!(err, ApplyError::Conflict(e) if e.message.contains("\"u\" using v1")));
    }
}
