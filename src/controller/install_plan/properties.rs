//! Pure: what a bundle declares about dependencies, and the properties annotation its CSV
//! carries (no client).
//!
//! A registry+v1 bundle image may declare dependencies in `metadata/` (any file with a
//! `dependencies:` list, usually `dependencies.yaml`; olm-api.md §7) in the legacy form:
//! `olm.package` with `version` (a range), `olm.gvk`, `olm.constraint`. `opm render` turns them
//! into the catalog properties `olm.package.required` (`versionRange`), `olm.gvk.required` and
//! `olm.constraint`; [`csv_properties`] does the same, so the CSV records in one list (OLM's
//! `operatorframework.io/properties` annotation) what the catalog said and what the image adds.

use serde_json::{Value, json};

use crate::bundle::Bundle;
use crate::controller::plan_record::{PlanEntry, parse_properties, recorded_properties};
use crate::fbc::property::types;

/// `olm.constraint`, the same type in both forms.
const CONSTRAINT: &str = crate::dependency::parse::CONSTRAINT;

/// The [`crate::controller::keys::csv::PROPERTIES`] annotation of the CSV installed from
/// `bundle`: the properties the plan recorded from the catalog, plus the requirements the
/// image declares (in catalog form), sorted, without repeats. Entries of a type OLM does not
/// know as a dependency are left out.
pub fn csv_properties(entry: &PlanEntry, bundle: &Bundle) -> String {
    let mut values = entry.properties.clone();
    values.extend(bundle.dependencies().into_iter().filter_map(catalog_form));
    let typed = parse_properties(&values).unwrap_or_else(|_| {
        // One malformed entry must not drop the others: type them one by one.
        values
            .iter()
            .filter_map(|value| parse_properties(std::slice::from_ref(value)).ok())
            .flatten()
            .collect()
    });
    json!({"properties": recorded_properties(&typed)}).to_string()
}

/// A legacy dependency entry as the catalog property `opm render` makes of it.
fn catalog_form(entry: &Value) -> Option<Value> {
    let value = entry.get("value")?;
    match entry.get("type")?.as_str()? {
        types::PACKAGE => Some(json!({
            "type": types::PACKAGE_REQUIRED,
            "value": {
                "packageName": value.get("packageName")?,
                "versionRange": value.get("version")?,
            },
        })),
        types::GVK => Some(json!({"type": types::GVK_REQUIRED, "value": value})),
        CONSTRAINT => Some(json!({"type": CONSTRAINT, "value": value})),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::api::ClusterServiceVersion;

    fn bundle(metadata: &[(&str, Value)]) -> Bundle {
        Bundle {
            dir: "bundle".into(),
            csv_file: "csv.yaml".into(),
            csv: ClusterServiceVersion::new("widget.v1", Default::default()),
            objects: vec![],
            metadata: metadata
                .iter()
                .map(|(file, value)| ((*file).to_owned(), value.clone()))
                .collect::<BTreeMap<_, _>>(),
            warnings: vec![],
        }
    }

    #[test]
    fn declared_dependencies_join_the_catalog_s_properties_in_catalog_form() {
        let image = bundle(&[
            (
                "dependencies.yaml",
                json!({"dependencies": [
                    {"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0"}},
                    {"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}},
                    {"type": "olm.label", "value": {"label": "x"}},
                ]}),
            ),
            ("properties.yaml", json!({"properties": []})),
        ]);
        assert_eq!(image.dependencies().len(), 3);
        let entry = PlanEntry {
            properties: vec![
                json!({"type": "olm.package", "value": {"packageName": "widget", "version": "1.0.0"}}),
                json!({"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.0"}}),
            ],
            ..PlanEntry::default()
        };
        let annotation: Value = serde_json::from_str(&csv_properties(&entry, &image)).unwrap();
        assert_eq!(
            annotation,
            json!({"properties": [
                {"type": "olm.gvk.required", "value": {"group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}},
                {"type": "olm.package", "value": {"packageName": "widget", "version": "1.0.0"}},
                {"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.0"}},
            ]})
        );
    }

    #[test]
    fn a_bundle_without_dependencies_records_the_catalog_s_properties_only() {
        let annotation = csv_properties(&PlanEntry::default(), &bundle(&[]));
        assert_eq!(annotation, r#"{"properties":[]}"#);
    }
}
