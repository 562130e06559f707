use super::*;
use crate::registry_grpc::test_catalog::catalog;

const ETCD_API: Api<'static> = Api {
    group: "etcd.database.coreos.com",
    version: "v1beta2",
    kind: "EtcdCluster",
};

fn entries(list: &[api::ChannelEntry]) -> Vec<(&str, &str, &str, &str)> {
    list.iter()
        .map(|e| {
            (
                e.package_name.as_str(),
                e.channel_name.as_str(),
                e.bundle_name.as_str(),
                e.replaces.as_str(),
            )
        })
        .collect()
}

#[test]
fn packages_and_list_bundles_are_sorted() {
    let catalog = catalog();
    assert_eq!(package_names(&catalog), ["certs", "etcd"]);
    let listed: Vec<(&str, &str, &str)> = bundles_in_channels(&catalog)
        .map(|v| {
            (
                v.package.name.as_str(),
                v.channel.name.as_str(),
                v.entry.name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("certs", "v1", "certs.v1.0.0"),
            ("etcd", "alpha", "etcd.v0.9.2"),
            ("etcd", "stable", "etcd.v0.9.0"),
            ("etcd", "stable", "etcd.v0.9.2"),
        ]
    );
}

#[test]
fn single_bundles_carry_manifests_without_upgrade_edges() {
    let catalog = catalog();
    let head = bundle_for_channel(&catalog, "etcd", "stable").unwrap();
    assert_eq!(head.csv_name, "etcd.v0.9.2");
    assert!(head.replaces.is_empty() && head.skips.is_empty());
    assert_eq!(head.skip_range, ">=0.9.0 <0.9.2");
    assert_eq!(head.object.len(), 2);
    let old = bundle(&catalog, "etcd", "stable", "etcd.v0.9.0").unwrap();
    assert!(
        !old.csv_json.is_empty(),
        "GetBundle sends the CSV even with an image"
    );
}

#[test]
fn missing_things_are_named_like_upstream() {
    let catalog = catalog();
    let error = |result: Result<api::Bundle, QueryError>| result.unwrap_err().to_string();
    assert_eq!(
        error(bundle(&catalog, "nope", "x", "y")),
        "package \"nope\" not found"
    );
    assert_eq!(
        error(bundle(&catalog, "etcd", "beta", "y")),
        "package \"etcd\", channel \"beta\" not found"
    );
    assert_eq!(
        error(bundle(&catalog, "etcd", "alpha", "etcd.v0.9.0")),
        "package \"etcd\", channel \"alpha\", bundle \"etcd.v0.9.0\" not found"
    );
    assert_eq!(
        package(&catalog, "nope").unwrap_err().to_string(),
        "package \"nope\" not found"
    );
}

#[test]
fn replacements_are_found_through_replaces_and_skips() {
    let catalog = catalog();
    assert_eq!(
        entries(&entries_that_replace(&catalog, "etcd.v0.9.0").unwrap()),
        [("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0")]
    );
    assert_eq!(
        entries(&entries_that_replace(&catalog, "etcd.v0.9.1").unwrap()),
        [("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0")],
        "an entry found through skips carries its own replaces, as upstream"
    );
    assert_eq!(
        entries_that_replace(&catalog, "etcd.v0.9.2")
            .unwrap_err()
            .to_string(),
        "no channel entries found that replace etcd.v0.9.2"
    );
    let replacing = bundle_that_replaces(&catalog, "etcd.v0.9.1", "etcd", "stable").unwrap();
    assert_eq!(replacing.csv_name, "etcd.v0.9.2");
    assert!(bundle_that_replaces(&catalog, "etcd.v0.9.0", "etcd", "alpha").is_err());
}

#[test]
fn providers_are_every_entry_or_the_channel_heads() {
    let catalog = catalog();
    assert_eq!(
        entries(&entries_that_provide(&catalog, &ETCD_API).unwrap()),
        [
            ("etcd", "alpha", "etcd.v0.9.2", ""),
            ("etcd", "stable", "etcd.v0.9.0", ""),
            ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0"),
            ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.1"),
        ]
    );
    assert_eq!(
        entries(&latest_entries_that_provide(&catalog, &ETCD_API).unwrap()),
        [
            ("etcd", "alpha", "etcd.v0.9.2", ""),
            ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0"),
        ],
        "heads only, and only skips that are in the channel"
    );
    let chosen = default_bundle_that_provides(&catalog, &ETCD_API).unwrap();
    assert_eq!(
        (chosen.channel_name.as_str(), chosen.csv_name.as_str()),
        ("stable", "etcd.v0.9.2")
    );
    let unknown = Api {
        kind: "Nothing",
        ..ETCD_API
    };
    assert_eq!(
        default_bundle_that_provides(&catalog, &unknown)
            .unwrap_err()
            .to_string(),
        "no entry found that provides group:\"etcd.database.coreos.com\" version:\"v1beta2\" kind:\"Nothing\""
    );
    assert!(entries_that_provide(&catalog, &unknown).is_err());
}

#[test]
fn custom_schemas_are_selected_by_schema_and_package() {
    let catalog = catalog();
    let names = |package: &str| -> Vec<String> {
        custom_schema_blobs(&catalog, "acme.note", package)
            .unwrap()
            .iter()
            .map(|meta| meta.name.clone())
            .collect()
    };
    assert_eq!(names("etcd"), ["hello"]);
    assert_eq!(names(""), ["global"]);
    assert!(names("certs").is_empty());
    for (schema, package, message) in [
        ("", "etcd", "schema is required"),
        ("a/b", "", "invalid schema \"a/b\""),
        ("acme.note", "..", "invalid packageName \"..\""),
    ] {
        let error = custom_schema_blobs(&catalog, schema, package).unwrap_err();
        assert!(matches!(error, QueryError::InvalidArgument(_)));
        assert!(error.to_string().contains(message), "{error}");
    }
}
