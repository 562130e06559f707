//! Parsing dependency declarations and provided APIs.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::test_support::*;
use super::{Constraint, Dependency, bundle_dependencies, metadata_dependencies, provided_apis};
use crate::fbc::Bundle;

/// The first bundle of package `app` built with these properties.
fn app_with(properties: Vec<Value>) -> Bundle {
    let catalog = CatalogBuilder::default()
        .package("app", &[("1.0.0", properties)])
        .build();
    let package = catalog.package("app").unwrap_or_else(|| panic!("no app"));
    package
        .bundles()
        .next()
        .unwrap_or_else(|| panic!("no bundle"))
        .clone()
}

fn package(name: &str, range: &str) -> Constraint {
    Constraint::Package {
        package: name.into(),
        range: range.into(),
    }
}

fn plain(constraint: Constraint) -> Dependency {
    Dependency {
        constraint,
        failure_message: None,
    }
}

fn parse_constraint(value: Value) -> Result<Dependency, String> {
    bundle_dependencies(&app_with(vec![constraint(value)]))
        .map(|mut deps| deps.remove(0))
        .map_err(|e| e.to_string())
}

#[test]
fn required_package_and_api_properties() {
    let bundle = app_with(vec![
        requires_package("etcd", ">=0.9.0 <1.0.0"),
        requires_api("etcd.database.coreos.com", "v1beta2", "EtcdCluster"),
        json!({"type": "olm.label.required", "value": {"label": "ignored"}}),
    ]);
    assert_eq!(
        bundle_dependencies(&bundle).unwrap_or_else(|e| panic!("{e}")),
        vec![
            plain(package("etcd", ">=0.9.0 <1.0.0")),
            plain(Constraint::Gvk(gvk(
                "etcd.database.coreos.com",
                "v1beta2",
                "EtcdCluster"
            ))),
        ]
    );
}

#[test]
fn every_constraint_form_is_read_as_olm_reads_it() {
    let etcd = json!({"packageName": "etcd", "versionRange": ">=1.0.0"});
    let api = json!({"group": "g.example.com", "version": "v1", "kind": "Thing"});
    let cases = [
        (json!({"package": etcd}), package("etcd", ">=1.0.0")),
        (
            json!({"gvk": api}),
            Constraint::Gvk(gvk("g.example.com", "v1", "Thing")),
        ),
        (
            json!({"all": {"constraints": [{"package": etcd}, {"gvk": api}]}}),
            Constraint::All(vec![
                package("etcd", ">=1.0.0"),
                Constraint::Gvk(gvk("g.example.com", "v1", "Thing")),
            ]),
        ),
        (
            json!({"any": {"constraints": [{"package": etcd}, {"any": {"constraints": []}}]}}),
            Constraint::Any(vec![package("etcd", ">=1.0.0"), Constraint::Any(vec![])]),
        ),
        // `not` takes a list: one item is negated, several are negated together.
        (
            json!({"not": {"constraints": [{"package": etcd}]}}),
            Constraint::Not(Box::new(package("etcd", ">=1.0.0"))),
        ),
        (
            json!({"not": {"constraints": [{"package": etcd}, {"gvk": api}]}}),
            Constraint::Not(Box::new(Constraint::Any(vec![
                package("etcd", ">=1.0.0"),
                Constraint::Gvk(gvk("g.example.com", "v1", "Thing")),
            ]))),
        ),
        // The deprecated `none` means `not`.
        (
            json!({"none": {"constraints": [{"gvk": api}]}}),
            Constraint::Not(Box::new(Constraint::Gvk(gvk(
                "g.example.com",
                "v1",
                "Thing",
            )))),
        ),
        // Several keys: gvk, then package, then all, any, not win, as in OLM.
        (
            json!({"package": etcd, "gvk": api, "cel": {"rule": "true"}}),
            Constraint::Gvk(gvk("g.example.com", "v1", "Thing")),
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(
            parse_constraint(value.clone()),
            Ok(plain(expected)),
            "{value}"
        );
    }
    assert_eq!(
        parse_constraint(json!({"failureMessage": "needs etcd", "package": etcd})),
        Ok(Dependency {
            constraint: package("etcd", ">=1.0.0"),
            failure_message: Some("needs etcd".into()),
        })
    );
}

#[test]
fn malformed_constraints_are_refused_naming_the_bundle() {
    let cases = [
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'x')"}}),
            "bundle app.v1.0.0: olm.constraint has a cel rule (\"properties.exists(p, p.type == \
             'x')\"), which opcat does not evaluate; only package, gvk, all, any and not \
             constraints are supported",
        ),
        (
            json!({"all": {"constraints": [{"cel": {"rule": "true"}}]}}),
            "bundle app.v1.0.0: olm.constraint has a cel rule (\"true\"), which opcat does not \
             evaluate; only package, gvk, all, any and not constraints are supported",
        ),
        (
            json!({"failureMessage": "x"}),
            "bundle app.v1.0.0: olm.constraint is empty: it has none of package, gvk, all, any, \
             not",
        ),
        (
            json!({"package": {"packageName": "etcd", "versionRange": ">=1.0.0"}, "extra": 1}),
            "bundle app.v1.0.0: invalid olm.constraint value: unknown field `extra`, expected one \
             of `failureMessage`, `cel`, `package`, `gvk`, `all`, `any`, `not`, `none` at line 1 \
             column 8",
        ),
        (
            json!({"package": {"packageName": "etcd", "versionRange": ">=banana"}}),
            "bundle app.v1.0.0: dependency on package etcd has an invalid version range \
             \">=banana\": could not get version from string: \">=banana\"",
        ),
    ];
    for (value, expected) in cases {
        let got = parse_constraint(value.clone());
        let got = got.map_err(|e| e.replace(char::is_control, ""));
        assert_eq!(got, Err(expected.to_owned()), "{value}");
    }
    let huge = "x".repeat(2 << 16);
    assert!(
        parse_constraint(json!({"failureMessage": huge}))
            .is_err_and(|e| e.ends_with("greater than max constraint size 131072 bytes"))
    );
}

#[test]
fn a_bad_required_range_names_bundle_package_and_range() {
    let bundle = app_with(vec![requires_package("etcd", ">=1.0.0 ||")]);
    assert_eq!(
        bundle_dependencies(&bundle).map_err(|e| e.to_string()),
        Err(
            "bundle app.v1.0.0: dependency on package etcd has an invalid version range \
             \">=1.0.0 ||\": last element in range is '||'"
                .to_owned()
        )
    );
}

#[test]
fn legacy_dependencies_yaml_entries() {
    let entries = [
        json!({"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0"}}),
        json!({"type": "olm.gvk", "value": {"group": "g.example.com", "kind": "Thing", "version": "v1"}}),
        json!({"type": "olm.constraint", "value": {"failureMessage": "m", "any": {"constraints": [
            {"package": {"packageName": "a", "versionRange": ">=1.0.0"}}]}}}),
        json!({"type": "olm.label", "value": {"label": "ignored"}}),
    ];
    let refs: Vec<&Value> = entries.iter().collect();
    assert_eq!(
        metadata_dependencies("app.v1.0.0", &refs).unwrap_or_else(|e| panic!("{e}")),
        vec![
            plain(package("etcd", ">=0.9.0")),
            plain(Constraint::Gvk(gvk("g.example.com", "v1", "Thing"))),
            Dependency {
                constraint: Constraint::Any(vec![package("a", ">=1.0.0")]),
                failure_message: Some("m".into()),
            },
        ]
    );
    let bad = json!({"type": "olm.package", "value": {"packageName": "etcd", "version": "one"}});
    assert_eq!(
        metadata_dependencies("app.v1.0.0", &[&bad]).map_err(|e| e.to_string()),
        Err(
            "bundle app.v1.0.0: dependency on package etcd has an invalid version range \"one\": \
             could not get version from string: \"one\""
                .to_owned()
        )
    );
    let cel = json!({"type": "olm.constraint", "value": {"cel": {"rule": "true"}}});
    assert!(metadata_dependencies("app.v1.0.0", &[&cel]).is_err());
}

#[test]
fn constraints_read_as_users_read_them() {
    let constraint = Constraint::All(vec![
        package("etcd", ">=1.0.0"),
        Constraint::Not(Box::new(Constraint::Any(vec![
            package("etcd", "1.2.0"),
            Constraint::Gvk(gvk("", "v1", "ConfigMap")),
        ]))),
    ]);
    assert_eq!(
        constraint.to_string(),
        "all of (package etcd >=1.0.0, not (any of (package etcd 1.2.0, API v1 ConfigMap)))"
    );
}

#[test]
fn provided_apis_come_from_gvk_properties_or_the_manifests() {
    let bundle = app_with(vec![
        provides_api("b.example.com", "v1", "B"),
        provides_api("a.example.com", "v1", "A"),
    ]);
    assert_eq!(
        provided_apis(&bundle),
        vec![
            gvk("a.example.com", "v1", "A"),
            gvk("b.example.com", "v1", "B")
        ]
    );

    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "c.example.com", "names": {"kind": "C"},
                 "versions": [{"name": "v1"}, {"name": "v2"}]}});
    let csv = json!({"kind": "ClusterServiceVersion", "spec": {"apiservicedefinitions": {"owned": [
        {"group": "d.example.com", "version": "v1", "kind": "D", "name": "ds"}]}}});
    let object = |v: &Value| json!({"type": "olm.bundle.object", "value": {"data": base64_of(&v.to_string())}});
    let bundle = app_with(vec![object(&crd), object(&csv)]);
    assert_eq!(
        provided_apis(&bundle),
        vec![
            gvk("c.example.com", "v1", "C"),
            gvk("c.example.com", "v2", "C"),
            gvk("d.example.com", "v1", "D"),
        ]
    );

    let metadata = json!({"type": "olm.csv.metadata", "value": {
        "crdDescriptions": {"owned": [{"name": "es.e.example.com", "version": "v1", "kind": "E"}]},
        "apiServiceDefinitions": {"owned": [{"group": "f.example.com", "version": "v1", "kind": "F"}]}
    }});
    assert_eq!(
        provided_apis(&app_with(vec![metadata])),
        vec![
            gvk("e.example.com", "v1", "E"),
            gvk("f.example.com", "v1", "F")
        ]
    );
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
