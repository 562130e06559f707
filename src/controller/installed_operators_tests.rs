use std::collections::BTreeMap;

use kube::api::ObjectMeta;
use serde_json::json;

use super::*;
use crate::api::ClusterServiceVersionSpec;
use crate::api::cluster_service_version::{
    ApiServiceDefinitions, ApiServiceDescription, CrdDescription, CustomResourceDefinitions,
};

fn csv(
    name: &str,
    annotations: &[(&str, String)],
    replaces: Option<&str>,
) -> ClusterServiceVersion {
    ClusterServiceVersion {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec: ClusterServiceVersionSpec {
            version: name.rsplit_once(".v").map(|(_, v)| v.to_owned()),
            replaces: replaces.map(str::to_owned),
            ..ClusterServiceVersionSpec::default()
        },
        status: None,
    }
}

fn etcd_cluster() -> Gvk {
    Gvk {
        group: "etcd.database.coreos.com".into(),
        kind: "EtcdCluster".into(),
        version: "v1beta2".into(),
    }
}

#[test]
fn a_csv_tells_its_package_version_catalog_apis_and_recorded_dependencies() {
    let properties = json!({"properties": [
        {"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.0"}},
        {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Widget", "version": "v1"}},
    ]});
    let mut widget = csv(
        "widget.v1.2.0",
        &[
            (keys::csv::PACKAGE, "widget".into()),
            (keys::csv::CATALOG, "olm/examples".into()),
            (keys::csv::PROPERTIES, properties.to_string()),
        ],
        None,
    );
    widget.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
        owned: Some(vec![CrdDescription {
            name: "gadgets.example.com".into(),
            version: "v1alpha1".into(),
            kind: "Gadget".into(),
            ..CrdDescription::default()
        }]),
        required: None,
    });
    widget.spec.api_service_definitions = Some(Box::new(ApiServiceDefinitions {
        owned: Some(vec![ApiServiceDescription {
            name: "v1.metrics.example.com".into(),
            group: "metrics.example.com".into(),
            version: "v1".into(),
            kind: "Sample".into(),
            ..ApiServiceDescription::default()
        }]),
        required: None,
    }));
    let operator = installed_operator(&widget);
    assert_eq!(operator.csv, "widget.v1.2.0");
    assert_eq!(operator.package, "widget");
    assert_eq!(operator.version, Some(semver::Version::new(1, 2, 0)));
    assert_eq!(operator.catalog, Some(CatalogId::new("olm", "examples")));
    let kinds: Vec<&str> = operator.provides.iter().map(|g| g.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["Gadget", "Widget", "Sample"],
        "{:?}",
        operator.provides
    );
    assert_eq!(operator.provides[0].group, "example.com");
    assert_eq!(operator.dependencies.len(), 1);
    let etcd = |version: &str| InstalledOperator {
        csv: format!("etcd.v{version}"),
        package: "etcd".into(),
        version: Some(semver::Version::parse(version).unwrap()),
        provides: vec![etcd_cluster()],
        ..InstalledOperator::default()
    };
    assert!(is_met(&operator.dependencies[0], &[etcd("0.9.4")]));
    assert!(!is_met(&operator.dependencies[0], &[etcd("0.8.0")]));
    assert!(!is_met(&operator.dependencies[0], &[]));
}

#[test]
fn a_csv_without_records_needs_nothing_and_takes_its_package_from_the_properties() {
    let bare = csv("bare.v1.0.0", &[], None);
    let operator = installed_operator(&bare);
    assert_eq!(operator.package, "");
    assert!(operator.dependencies.is_empty() && operator.provides.is_empty());
    let recorded = csv(
        "old.v1.0.0",
        &[(
            keys::csv::PROPERTIES,
            json!({"properties": [{"type": "olm.package", "value": {"packageName": "old", "version": "1.0.0"}}]})
                .to_string(),
        )],
        None,
    );
    assert_eq!(installed_operator(&recorded).package, "old");
}

#[test]
fn replaced_and_deleting_csvs_are_not_installed_any_more() {
    let mut deleting = csv("gone.v1.0.0", &[], None);
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
    );
    let csvs: BTreeMap<String, Arc<ClusterServiceVersion>> = [
        csv("widget.v1.0.0", &[], None),
        csv("widget.v1.1.0", &[], Some("widget.v1.0.0")),
        deleting,
    ]
    .into_iter()
    .map(|csv| (csv.name_any(), Arc::new(csv)))
    .collect();
    let names: Vec<String> = installed_operators(&csvs)
        .into_iter()
        .map(|operator| operator.csv)
        .collect();
    assert_eq!(names, ["widget.v1.1.0"]);
}

#[test]
fn compound_constraints_need_one_operator_to_match_the_whole() {
    let operator = InstalledOperator {
        csv: "etcd.v0.9.4".into(),
        package: "etcd".into(),
        version: Some(semver::Version::new(0, 9, 4)),
        provides: vec![etcd_cluster()],
        ..InstalledOperator::default()
    };
    let package = |range: &str| Constraint::Package {
        package: "etcd".into(),
        range: range.into(),
    };
    assert!(matches(
        &Constraint::All(vec![package(">=0.9.0"), Constraint::Gvk(etcd_cluster())]),
        &operator
    ));
    assert!(!matches(
        &Constraint::All(vec![package(">=1.0.0"), Constraint::Gvk(etcd_cluster())]),
        &operator
    ));
    assert!(matches(
        &Constraint::Any(vec![package(">=1.0.0"), Constraint::Gvk(etcd_cluster())]),
        &operator
    ));
    assert!(matches(
        &Constraint::Not(Box::new(package(">=1.0.0"))),
        &operator
    ));
    assert!(matches(&package(""), &operator));
}
