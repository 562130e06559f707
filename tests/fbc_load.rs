//! Loading file-based catalogs: YAML and JSON streams, `.indexignore`, every file read,
//! unknown schemas and properties kept, typed properties, errors reported all at once.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use std::path::Path;

use fbc_support::fixture;

use opcat::fbc::property::{Gvk, PackageRequired};
use opcat::fbc::{self, Catalog, DeclarativeConfig, LoadError, Property};

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn reads_yaml_and_json_files_whatever_their_name_and_honours_indexignore() {
    let config = fbc::load(&fixture("basic")).unwrap();
    let mut packages: Vec<&str> = config.packages.iter().map(|p| p.name.as_str()).collect();
    packages.sort_unstable();
    assert_eq!(
        packages,
        ["example-operator", "sample-operator"],
        "docs/drafts/wip.yaml is ignored"
    );
    assert_eq!(config.channels.len(), 3);
    assert_eq!(config.bundles.len(), 7);
    assert_eq!(
        config.deprecations.len(),
        1,
        "olm.deprecations from the JSON stream"
    );
    // `docs/notes` has no extension and is read; its unknown schema is kept whole.
    assert_eq!(config.others.len(), 1);
    let note = &config.others[0];
    assert_eq!(
        (note.schema.as_str(), note.package.as_str()),
        ("example.com/catalog-notes", "example-operator")
    );
    let blob: serde_json::Value = serde_json::from_str(note.blob.get()).unwrap();
    assert_eq!(blob["note"], "Widgets are great.");
}

#[test]
fn typed_properties_and_unknown_ones_are_kept() {
    let config = fbc::load(&fixture("basic")).unwrap();
    let bundle = config
        .bundles
        .iter()
        .find(|b| b.name == "example-operator.v1.2.0")
        .unwrap();
    let types: Vec<&str> = bundle.properties.iter().map(Property::type_name).collect();
    assert_eq!(
        types,
        [
            "olm.package",
            "olm.gvk",
            "olm.gvk.required",
            "olm.package.required",
            "olm.bundle.object",
            "olm.bundle.object",
            "example.com/tier"
        ]
    );
    assert!(bundle.properties.contains(&Property::GvkRequired(Gvk {
        group: "cache.example.com".into(),
        kind: "Store".into(),
        version: "v1beta1".into(),
    })));
    assert!(
        bundle
            .properties
            .contains(&Property::PackageRequired(PackageRequired {
                package_name: "sample-operator".into(),
                version_range: ">=0.1.0".into(),
            }))
    );
    let Some(Property::Other { value, .. }) = bundle.properties.last() else {
        panic!("unknown property not kept: {:?}", bundle.properties.last())
    };
    assert_eq!(value.get(), r#"{"level":"gold","weight":3}"#);

    // Bundle objects stay base64 until asked for; YAML manifests decode to JSON too.
    let Property::BundleObject(crd) = &bundle.properties[4] else {
        panic!("not a bundle object")
    };
    assert_eq!(
        crd.manifest().unwrap()["metadata"]["name"],
        "widgets.example.com"
    );

    // olm.csv.metadata keeps its raw JSON and parses on request.
    let sample = config
        .bundles
        .iter()
        .find(|b| b.name == "sample-operator.v0.2.0")
        .unwrap();
    let Property::CsvMetadata(metadata) = &sample.properties[1] else {
        panic!("not csv metadata")
    };
    let metadata = metadata.parse().unwrap();
    assert_eq!(metadata.display_name, "Sample Operator");
    assert_eq!(metadata.provider.name, "Example Inc.");
    assert!(metadata.install_modes[0].supported);
}

#[test]
fn the_same_catalog_as_yaml_or_json_loads_the_same() {
    let yaml = std::fs::read_to_string(fixture("basic/example-operator/catalog.yaml")).unwrap();
    let from_yaml = DeclarativeConfig::parse(&yaml, Path::new("catalog.yaml")).unwrap();
    let mut rendered = Vec::new();
    fbc::render::render(&from_yaml, &mut rendered).unwrap();
    let from_json =
        DeclarativeConfig::parse(std::str::from_utf8(&rendered).unwrap(), Path::new("r.json"))
            .unwrap();
    // Render sorts blobs; compare the sets.
    let key = |c: &DeclarativeConfig| {
        let mut names: Vec<String> = c.bundles.iter().map(|b| format!("{b:?}")).collect();
        names.extend(c.channels.iter().map(|ch| format!("{ch:?}")));
        names.extend(c.packages.iter().map(|p| format!("{p:?}")));
        names.sort();
        names
    };
    assert_eq!(key(&from_yaml), key(&from_json));
}

#[test]
fn yaml_features_beyond_the_opm_subset_still_load() {
    // Anchors, flow collections, folded scalars and tags take the full YAML parser.
    let text = "schema: olm.package\nname: &n anchored\ndefaultChannel: *n\ndescription: >\n  folded\n  text\n---\n{schema: olm.channel, package: anchored, name: anchored, entries: [{name: anchored.v1}]}\n---\nschema: olm.bundle\npackage: anchored\nname: anchored.v1\nimage: !!str registry.example.com/a:v1\nproperties: [{type: olm.package, value: {packageName: anchored, version: 1.0.0}}]\n";
    let config = DeclarativeConfig::parse(text, Path::new("x.yaml")).unwrap();
    assert_eq!(config.packages[0].default_channel, "anchored");
    assert_eq!(config.packages[0].description, "folded text\n");
    let catalog = Catalog::new(config).unwrap();
    assert_eq!(
        catalog
            .package("anchored")
            .unwrap()
            .bundle("anchored.v1")
            .unwrap()
            .version
            .to_string(),
        "1.0.0"
    );
}

#[test]
fn every_bad_document_in_every_file_is_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "schema: olm.package\nname: ok\n---\nname: no-schema\n",
    );
    write(
        dir.path(),
        "b/c.yaml",
        "schema: olm.bundle\nname: b\nproperties:\n- type: olm.bundle.object\n  value:\n    data: not-base64!\n---\nkey: [unclosed\n",
    );
    write(
        dir.path(),
        "d.json",
        "{\"schema\": \"olm.package\", \"name\": 5}\n",
    );
    let error = fbc::load(dir.path()).unwrap_err();
    let LoadError::Documents(errors) = &error else {
        panic!("{error}")
    };
    let lines: Vec<String> = errors
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e.path.strip_prefix(dir.path()).unwrap().display(),
                e.line
            )
        })
        .collect();
    assert_eq!(lines, ["a.yaml:4", "b/c.yaml:1", "b/c.yaml:8", "d.json:1"]);
    let text = error.to_string();
    assert!(
        text.contains("a.yaml:4: object '{\"name\":\"no-schema\"}' is missing root schema field"),
        "{text}"
    );
    assert!(
        text.contains(
            "c.yaml:1: parse properties for bundle \"b\": parse property[0] of type \"olm.bundle.object\": illegal base64 data at input byte 3"
        ),
        "{text}"
    );
    assert!(text.contains("c.yaml:8: invalid YAML"), "{text}");
    assert!(
        text.contains("d.json:1: expected value for key \"name\" to be a string, got 5"),
        "{text}"
    );
}

#[test]
fn an_ignored_directory_gives_no_blobs() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".indexignore", "deprecations.yaml\n");
    write(
        dir.path(),
        "deprecations.yaml",
        "schema: olm.deprecations\npackage: gone\nentries: []\n",
    );
    assert!(fbc::load(dir.path()).unwrap().is_empty());
    // The same file loaded directly is read (and then rejected by validation).
    let config = fbc::load(&dir.path().join("deprecations.yaml")).unwrap();
    let error = fbc::validate(&config).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid index:\n└── cannot apply deprecations to an unknown package \"gone\""
    );
}

#[test]
fn a_missing_source_is_a_read_error() {
    let error = fbc::load(Path::new("/nonexistent/catalog")).unwrap_err();
    assert_eq!(error.kind(), "read");
    assert!(error.to_string().contains("/nonexistent/catalog"));
}

#[test]
fn a_catalog_can_be_shared_between_threads() {
    // The controller keeps one catalog per image digest behind an Arc and resolves from many
    // reconcilers at once.
    fn shareable<T: Send + Sync + 'static>(_: &T) {}
    let catalog = Catalog::load(&fixture("basic")).unwrap();
    shareable(&catalog);
    let catalog = std::sync::Arc::new(catalog);
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let catalog = std::sync::Arc::clone(&catalog);
            std::thread::spawn(move || {
                catalog
                    .package("example-operator")
                    .unwrap()
                    .default_channel()
                    .unwrap()
                    .head()
                    .name
                    .clone()
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), "example-operator.v1.2.0");
    }
}
