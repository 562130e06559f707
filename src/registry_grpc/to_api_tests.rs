use serde_json::{Value, json};

use super::*;
use crate::registry_grpc::test_catalog::{ETCD_CRD_JSON, catalog};

fn view<'a>(catalog: &'a crate::fbc::Catalog, channel: &str, name: &str) -> BundleInChannel<'a> {
    let package = catalog.package("etcd").unwrap();
    let channel = package.channel(channel).unwrap();
    BundleInChannel {
        package,
        channel,
        entry: channel.entry(name).unwrap(),
        bundle: package.bundle(name).unwrap(),
    }
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_package_lists_its_channels_with_heads_and_deprecations() {
    let catalog = catalog();
    let message = package(catalog.package("etcd").unwrap());
    assert_eq!(message.name, "etcd");
    assert_eq!(message.default_channel_name, "stable");
    let channels: Vec<(&str, &str, Option<&str>)> = message
        .channels
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.csv_name.as_str(),
                c.deprecation.as_ref().map(|d| d.message.as_str()),
            )
        })
        .collect();
    assert_eq!(
        channels,
        [
            ("alpha", "etcd.v0.9.2", Some("alpha is no longer updated")),
            ("stable", "etcd.v0.9.2", None)
        ]
    );
    assert_eq!(message.deprecation, None);
}

#[test]
fn embedded_manifests_become_json_objects_and_the_csv() {
    let catalog = catalog();
    let message = bundle(
        view(&catalog, "stable", "etcd.v0.9.2"),
        Manifests::UnlessImage,
    )
    .unwrap();
    assert_eq!(message.bundle_path, "");
    assert_eq!(message.object.len(), 2);
    assert_eq!(
        parsed(&message.csv_json),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "metadata": {"name": "etcd.v0.9.2"}, "spec": {"displayName": "etcd", "version": "0.9.2"}})
    );
    assert_eq!(parsed(&message.object[0]), parsed(&message.csv_json));
    assert_eq!(parsed(&message.object[1]), parsed(ETCD_CRD_JSON));
    assert_eq!(message.version, "0.9.2");
    assert_eq!(
        (
            message.replaces.as_str(),
            message.skips.as_slice(),
            message.skip_range.as_str()
        ),
        (
            "etcd.v0.9.0",
            &["etcd.v0.9.1".to_owned()][..],
            ">=0.9.0 <0.9.2"
        )
    );
}

#[test]
fn properties_apis_and_legacy_dependencies_follow_opm() {
    let catalog = catalog();
    let message = bundle(view(&catalog, "alpha", "etcd.v0.9.2"), Manifests::Always).unwrap();
    let types: Vec<&str> = message
        .properties
        .iter()
        .map(|p| p.r#type.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "olm.package",
            "olm.gvk",
            "olm.gvk.required",
            "olm.package.required",
            "acme.label"
        ],
        "bundle objects are not properties"
    );
    assert_eq!(
        parsed(&message.properties[4].value),
        json!({"tier": "gold"})
    );
    assert_eq!(message.provided_apis.len(), 1);
    assert_eq!(message.provided_apis[0].kind, "EtcdCluster");
    assert_eq!(message.required_apis[0].group, "certs.example.com");
    let dependencies: Vec<(&str, Value)> = message
        .dependencies
        .iter()
        .map(|d| (d.r#type.as_str(), parsed(&d.value)))
        .collect();
    assert_eq!(
        dependencies,
        [
            (
                "olm.gvk",
                json!({"group": "certs.example.com", "kind": "Issuer", "version": "v1"})
            ),
            (
                "olm.package",
                json!({"packageName": "certs", "version": ">=1.0.0"})
            ),
        ]
    );
    assert_eq!(
        (message.channel_name.as_str(), message.replaces.as_str()),
        ("alpha", "")
    );
}

#[test]
fn list_bundles_leaves_out_the_manifests_of_bundles_with_an_image() {
    let catalog = catalog();
    let listed = bundle(
        view(&catalog, "stable", "etcd.v0.9.0"),
        Manifests::UnlessImage,
    )
    .unwrap();
    assert_eq!(
        listed.bundle_path,
        "registry.example.com/etcd-bundle:v0.9.0"
    );
    assert!(listed.object.is_empty() && listed.csv_json.is_empty());
    assert_eq!(
        listed.deprecation.map(|d| d.message),
        Some("etcd.v0.9.0 has a known bug".to_owned())
    );
}

#[test]
fn csv_metadata_gives_a_synthetic_csv() {
    let catalog = catalog();
    let message = bundle(view(&catalog, "stable", "etcd.v0.9.0"), Manifests::Always).unwrap();
    let csv = parsed(&message.csv_json);
    assert_eq!(csv["kind"], "ClusterServiceVersion");
    assert_eq!(csv["metadata"]["name"], "etcd.v0.9.0");
    assert_eq!(csv["spec"]["displayName"], "etcd");
    assert_eq!(csv["spec"]["description"], "A key-value store.");
    assert_eq!(
        csv["spec"]["installModes"],
        json!([{"type": "OwnNamespace", "supported": true}])
    );
    assert_eq!(
        csv["spec"]["icon"],
        json!([{"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}])
    );
    assert_eq!(csv["spec"]["install"]["strategy"], "deployment");
    assert_eq!(csv["spec"]["version"], "0.9.0");
    assert_eq!(
        csv["spec"]["relatedImages"],
        json!([{"name": "operator", "image": "registry.example.com/etcd:v0.9.0"}])
    );
    assert_eq!(message.object, std::slice::from_ref(&message.csv_json));
    assert!(
        message
            .properties
            .iter()
            .all(|p| p.r#type != "olm.csv.metadata"),
        "olm.csv.metadata is not sent as a property"
    );
}
