use std::collections::BTreeSet;

use super::*;
use crate::fbc::Catalog;
use crate::registry_grpc::queries::bundles_in_channels;
use crate::registry_grpc::test_catalog::{self, ETCD_CRD_JSON};
use crate::registry_grpc::to_api::{self, Manifests};

/// What a client receives from a server of the test catalog, read back.
fn round_trip(manifests: Manifests) -> Catalog {
    let original = test_catalog::catalog();
    let mut builder = CatalogBuilder::default();
    for view in bundles_in_channels(&original) {
        builder
            .add_bundle(to_api::bundle(view, manifests).unwrap())
            .unwrap();
    }
    for name in builder.packages_needed() {
        builder.add_package(to_api::package(original.package(&name).unwrap()));
    }
    assert!(builder.packages_needed().is_empty());
    Catalog::new(builder.finish()).expect("what a server sends is a valid catalog")
}

fn property_set(bundle: &crate::fbc::Bundle) -> BTreeSet<(String, String)> {
    bundle
        .properties
        .iter()
        .filter(|p| !matches!(p, Property::BundleObject(_)))
        .map(|p| (p.type_name().to_owned(), property_value(p)))
        .collect()
}

#[test]
fn a_catalog_read_from_a_server_is_the_catalog_served() {
    let original = test_catalog::catalog();
    let read = round_trip(Manifests::UnlessImage);
    let names =
        |catalog: &Catalog| -> Vec<String> { catalog.packages().map(|p| p.name.clone()).collect() };
    assert_eq!(names(&read), names(&original));
    for package in original.packages() {
        let got = read.package(&package.name).unwrap();
        assert_eq!(got.default_channel, package.default_channel);
        for channel in package.channels() {
            let got_channel = got.channel(&channel.name).unwrap();
            assert_eq!(
                got_channel.entries, channel.entries,
                "{}/{}",
                package.name, channel.name
            );
            assert_eq!(got_channel.deprecation, channel.deprecation);
        }
        for bundle in package.bundles() {
            let got_bundle = got.bundle(&bundle.name).unwrap();
            assert_eq!(got_bundle.image, bundle.image);
            assert_eq!(got_bundle.version, bundle.version);
            assert_eq!(got_bundle.deprecation, bundle.deprecation);
            let mut expected = property_set(bundle);
            expected.retain(|(type_, _)| type_ != "olm.csv.metadata");
            assert_eq!(property_set(got_bundle), expected, "{}", bundle.name);
        }
    }
}

#[test]
fn embedded_manifests_come_back_as_bundle_objects() {
    let read = round_trip(Manifests::UnlessImage);
    let etcd = read.package("etcd").unwrap();
    let embedded = etcd.bundle("etcd.v0.9.2").unwrap();
    let objects: Vec<serde_json::Value> =
        embedded.objects().map(|o| o.manifest().unwrap()).collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["kind"], "ClusterServiceVersion");
    assert_eq!(
        objects[1],
        serde_json::from_str::<serde_json::Value>(ETCD_CRD_JSON).unwrap()
    );
    assert_eq!(
        etcd.bundle("etcd.v0.9.0").unwrap().objects().count(),
        0,
        "ListBundles sends no manifests for bundles with an image"
    );
    let with_manifests = round_trip(Manifests::Always);
    let synthetic = with_manifests
        .package("etcd")
        .unwrap()
        .bundle("etcd.v0.9.0")
        .unwrap();
    assert_eq!(synthetic.csv().unwrap()["metadata"]["name"], "etcd.v0.9.0");
    assert_eq!(
        synthetic.related_images.len(),
        1,
        "related images come from csvJson"
    );
}

#[test]
fn apis_and_legacy_dependencies_fill_in_missing_properties_once() {
    let mut builder = CatalogBuilder::default();
    builder
        .add_bundle(api::Bundle {
            csv_name: "legacy.v1.0.0".into(),
            package_name: "legacy".into(),
            channel_name: "stable".into(),
            bundle_path: "registry.example.com/legacy:v1".into(),
            version: "1.0.0".into(),
            provided_apis: vec![api::GroupVersionKind {
                group: "example.com".into(),
                version: "v1".into(),
                kind: "Thing".into(),
                plural: "things".into(),
            }],
            required_apis: vec![api::GroupVersionKind {
                group: "dep.example.com".into(),
                version: "v1".into(),
                kind: "Other".into(),
                plural: String::new(),
            }],
            dependencies: vec![
                api::Dependency {
                    r#type: "olm.gvk".into(),
                    value: r#"{"group":"dep.example.com","kind":"Other","version":"v1"}"#.into(),
                },
                api::Dependency {
                    r#type: "olm.package".into(),
                    value: r#"{"packageName":"base","version":">=2.0.0"}"#.into(),
                },
                api::Dependency {
                    r#type: "olm.label".into(),
                    value: r#"{"label":"gold"}"#.into(),
                },
            ],
            ..api::Bundle::default()
        })
        .unwrap();
    builder.add_package(api::Package {
        name: "legacy".into(),
        default_channel_name: "stable".into(),
        ..api::Package::default()
    });
    let config = builder.finish();
    let bundle = &config.bundles[0];
    let types: Vec<&str> = bundle.properties.iter().map(Property::type_name).collect();
    assert_eq!(
        types,
        [
            "olm.gvk",
            "olm.gvk.required",
            "olm.package.required",
            "olm.label.required",
            "olm.package"
        ]
    );
    assert_eq!(
        property_value(&bundle.properties[2]),
        r#"{"packageName":"base","versionRange":">=2.0.0"}"#
    );
    assert_eq!(
        property_value(&bundle.properties[4]),
        r#"{"packageName":"legacy","version":"1.0.0"}"#
    );
    Catalog::new(config).expect("a legacy server's catalog is valid");
}

#[test]
fn bad_messages_name_the_bundle_and_the_problem() {
    let mut builder = CatalogBuilder::default();
    let missing = builder.add_bundle(api::Bundle::default()).unwrap_err();
    assert_eq!(missing.to_string(), "a bundle message has no csvName");
    let bad = builder
        .add_bundle(api::Bundle {
            csv_name: "x.v1".into(),
            package_name: "x".into(),
            channel_name: "stable".into(),
            properties: vec![api::Property {
                r#type: "olm.gvk".into(),
                value: "{not json".into(),
            }],
            ..api::Bundle::default()
        })
        .unwrap_err();
    assert!(
        bad.to_string()
            .starts_with("bundle x.v1 of package x: property olm.gvk: "),
        "{bad}"
    );
}
