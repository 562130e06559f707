use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::api::ClusterServiceVersionSpec;
use crate::controller::keys;

fn bundle(name: &str, dependencies: Value) -> (Bundle, ClusterServiceVersion) {
    let mut csv = ClusterServiceVersion::new(name, ClusterServiceVersionSpec::default());
    csv.spec.version = name.rsplit_once(".v").map(|(_, v)| v.to_owned());
    let package = name.split_once('.').map_or(name, |(package, _)| package);
    csv.metadata.annotations = Some(BTreeMap::from([(
        keys::csv::PACKAGE.to_owned(),
        package.to_owned(),
    )]));
    let bundle = Bundle {
        dir: "bundle".into(),
        csv_file: "csv.yaml".into(),
        csv: csv.clone(),
        objects: vec![],
        metadata: BTreeMap::from([(
            "dependencies.yaml".to_owned(),
            json!({"dependencies": dependencies}),
        )]),
        warnings: vec![],
    };
    (bundle, csv)
}

fn etcd_range(range: &str) -> Value {
    json!([{"type": "olm.package", "value": {"packageName": "etcd", "version": range}}])
}

#[test]
fn a_declared_dependency_met_by_the_plan_or_the_namespace_passes() {
    let (widget, widget_csv) = bundle("widget.v1.0.0", etcd_range(">=0.9.0"));
    let (etcd, etcd_csv) = bundle("etcd.v0.9.4", json!([]));
    let none = BTreeMap::new();
    assert_eq!(
        unmet("ops", &[(&etcd, &etcd_csv), (&widget, &widget_csv)], &none),
        None
    );
    let installed: BTreeMap<String, Arc<ClusterServiceVersion>> =
        BTreeMap::from([("etcd.v0.9.4".to_owned(), Arc::new(etcd_csv))]);
    assert_eq!(unmet("ops", &[(&widget, &widget_csv)], &installed), None);
}

#[test]
fn an_unmet_or_malformed_declaration_names_the_bundle_and_what_it_requires() {
    let (widget, widget_csv) = bundle("widget.v1.0.0", etcd_range(">=1.0.0"));
    let (etcd, etcd_csv) = bundle("etcd.v0.9.4", json!([]));
    let message = unmet(
        "ops",
        &[(&etcd, &etcd_csv), (&widget, &widget_csv)],
        &BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(
        message,
        "bundle widget.v1.0.0 declares in its metadata/dependencies.yaml that it requires \
         package etcd >=1.0.0, but neither this InstallPlan nor an operator installed in \
         namespace ops provides it"
    );
    let (bad, bad_csv) = bundle("bad.v1.0.0", etcd_range("not a range"));
    let message = unmet("ops", &[(&bad, &bad_csv)], &BTreeMap::new()).unwrap();
    assert!(
        message.starts_with("metadata/dependencies.yaml of bundle bad.v1.0.0"),
        "{message}"
    );
}
