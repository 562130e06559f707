//! Validation with `opm validate`'s rules (olm-api.md §5.5). Most cases rebuild the inputs of
//! `operator-registry`'s `declcfg_to_model_test.go` and `model_test.go` (case names in the
//! comments) as our own blobs and expect `opm`'s message (see
//! `expected/operator-registry/*.cases.tsv` in the shared data).

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use fbc_support::{bundle, channel, config, package};
use opcat::fbc::{self, Catalog, ValidationError};
use serde_json::{Value, json};

fn with(mut blob: Value, key: &str, value: Value) -> Value {
    blob[key] = value;
    blob
}

/// A valid one-package catalog: foo, channel alpha, foo.v0.1.0.
fn valid_foo() -> Vec<Value> {
    vec![
        package("foo", "alpha"),
        channel("foo", "alpha", json!([{"name": "foo.v0.1.0"}])),
        bundle("foo", "foo.v0.1.0", "0.1.0"),
    ]
}

fn check(blobs: &[Value]) -> Result<(), ValidationError> {
    fbc::validate(&config(blobs))
}

#[track_caller]
fn assert_problem(blobs: &[Value], message: &str) {
    let error = check(blobs).expect_err("expected a validation error");
    assert!(error.contains(message), "expected {message:?} in:\n{error}");
}

#[track_caller]
fn assert_problem_starting(blobs: &[Value], start: &str) {
    let error = check(blobs).expect_err("expected a validation error");
    assert!(
        error.leaves().iter().any(|l| l.contains(start)),
        "expected a problem containing {start:?} in:\n{error}"
    );
}

#[test]
fn valid_catalogs_pass() {
    // Success/ValidModel
    check(&valid_foo()).unwrap();
    // Success/ValidModelWithChannelProperties and ...WithPackageProperties
    let mut blobs = valid_foo();
    blobs[0]["properties"] = json!([{"type": "owner", "value": {"group": "abc", "name": "xyz"}}]);
    blobs[1]["properties"] = json!([{"type": "user", "value": {"group": "xyz", "name": "abc"}}]);
    check(&blobs).unwrap();
    // Success/BundleWithDataButMissingImage: embedded objects replace the image.
    let mut blobs = valid_foo();
    blobs[2]["image"] = json!("");
    blobs[2]["properties"].as_array_mut().unwrap().push(
        json!({"type": "olm.bundle.object", "value": {"data": "eyJraW5kIjogIkNvbmZpZ01hcCJ9"}}),
    );
    check(&blobs).unwrap();
    // Bundle/Success/ReplacesNotInChannel: the tail may replace a bundle that does not exist.
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0", "replaces": "foo.v0.0.9"}]),
    );
    check(&blobs).unwrap();
    // Success/BundleImageValidSha256Digest and ...ValidTagWithDigest
    let digest = format!("sha256:{}", "f".repeat(64));
    let mut blobs = valid_foo();
    blobs[2]["image"] = json!(format!("registry.example.com/foo@{digest}"));
    blobs[2]["relatedImages"] =
        json!([{"name": "op", "image": format!("registry.example.com/foo:v1@{digest}")}]);
    check(&blobs).unwrap();
}

#[test]
fn packages() {
    // Error/PackageNoName
    assert_problem(
        &[package("", "alpha")],
        "config contains package with no name",
    );
    // Error/DuplicatePackage
    let mut blobs = valid_foo();
    blobs.push(package("foo", "alpha"));
    assert_problem(&blobs, "duplicate package \"foo\"");
    // Error/PackageBreaksRFC1123
    assert_problem(
        &[
            package("foo.bar", "alpha"),
            channel("foo.bar", "alpha", json!([{"name": "x.v1"}])),
            bundle("foo.bar", "x.v1", "1.0.0"),
        ],
        "invalid package name \"foo.bar\": [must not contain dots]",
    );
    // A package without channels.
    assert_problem(
        &[package("lonely", "alpha")],
        "package must contain at least one channel",
    );
}

#[test]
fn default_channels() {
    // Error/PackageMissingDefaultChannel: the whole tree, byte for byte.
    let mut blobs = valid_foo();
    blobs[0] = package("foo", "");
    assert_eq!(
        check(&blobs).unwrap_err().to_string(),
        "invalid index:\n└── invalid package \"foo\":\n    └── default channel must be set"
    );
    // Error/PackageNonExistentDefaultChannel (worded like opm's all-errors validator).
    let mut blobs = valid_foo();
    blobs[0] = package("foo", "bar");
    assert_eq!(
        check(&blobs).unwrap_err().to_string(),
        "invalid index:\n└── invalid package \"foo\":\n    └── default channel \"bar\" not found in channels list"
    );
}

#[test]
fn channels() {
    // Error/ChannelMissingName
    let mut blobs = valid_foo();
    blobs.push(channel("foo", "", json!([{"name": "foo.v0.1.0"}])));
    assert_problem(&blobs, "package \"foo\" contains channel with no name");
    // Error/ChannelMissingPackageName and Error/ChannelNonExistentPackage
    let mut blobs = valid_foo();
    blobs.push(channel("", "alpha", json!([])));
    blobs.push(channel("non-existent", "alpha", json!([])));
    let error = check(&blobs).unwrap_err();
    assert!(
        error.contains("unknown package \"\" for channel \"alpha\""),
        "{error}"
    );
    assert!(
        error.contains("unknown package \"non-existent\" for channel \"alpha\""),
        "{error}"
    );
    // Error/DuplicateChannel
    let mut blobs = valid_foo();
    blobs.push(channel("foo", "alpha", json!([{"name": "foo.v0.1.0"}])));
    assert_problem(&blobs, "package \"foo\" has duplicate channel \"alpha\"");
    // Error/ChannelDuplicateEntry
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0"}, {"name": "foo.v0.1.0"}]),
    );
    assert_problem(
        &blobs,
        "invalid package \"foo\", channel \"alpha\": duplicate entry \"foo.v0.1.0\"",
    );
    // Channel/Error/NoBundles
    let mut blobs = valid_foo();
    blobs.push(channel("foo", "empty", json!([])));
    assert_problem(&blobs, "channel must contain at least one bundle");
    // Error/ChannelEntryWithoutBundle
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0"}, {"name": "foo.v0.2.0", "replaces": "foo.v0.1.0"}]),
    );
    assert_problem(
        &blobs,
        "no olm.bundle blobs found in package \"foo\" for olm.channel entries [foo.v0.2.0]",
    );
}

#[test]
fn channel_graphs() {
    let graph = |entries: Value| {
        let names: Vec<String> = entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        let mut blobs = vec![
            package("anakin", "dark"),
            channel("anakin", "dark", entries),
        ];
        for (i, name) in names.iter().enumerate() {
            blobs.push(bundle("anakin", name, &format!("0.0.{i}")));
        }
        blobs
    };
    // Error/NoChannelHead
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1", "replaces": "anakin.v0.0.2"},
            {"name": "anakin.v0.0.2", "replaces": "anakin.v0.0.1"}
        ])),
        "no channel head found in graph",
    );
    // Error/MultipleChannelHeads
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.3", "replaces": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.4", "replaces": "anakin.v0.0.1"}
        ])),
        "multiple channel heads found in graph: anakin.v0.0.3, anakin.v0.0.4",
    );
    // Error/CycleNoHops
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.4", "replaces": "anakin.v0.0.4"},
            {"name": "anakin.v0.0.5", "replaces": "anakin.v0.0.4"}
        ])),
        "detected cycle in replaces chain of upgrade graph: anakin.v0.0.4 -> anakin.v0.0.4",
    );
    // Error/CycleMultipleHops
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1", "replaces": "anakin.v0.0.3"},
            {"name": "anakin.v0.0.2", "replaces": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.3", "replaces": "anakin.v0.0.2"},
            {"name": "anakin.v0.0.4", "replaces": "anakin.v0.0.3"}
        ])),
        "detected cycle in replaces chain of upgrade graph: anakin.v0.0.3 -> anakin.v0.0.2 -> anakin.v0.0.1 -> anakin.v0.0.3",
    );
    // Error/Stranded: v0.0.1 has an incoming edge (from the skipped v0.0.4) but is neither on
    // the replaces chain from the head nor skipped.
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.2"},
            {"name": "anakin.v0.0.4", "replaces": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.3", "replaces": "anakin.v0.0.2", "skips": ["anakin.v0.0.4"]}
        ])),
        "channel contains one or more stranded bundles: anakin.v0.0.1",
    );
    // Error/SkippedReplacesStranded: skipping the replaces target stops the walk.
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.2", "replaces": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.3", "replaces": "anakin.v0.0.2", "skips": ["anakin.v0.0.2"]}
        ])),
        "channel contains one or more stranded bundles: anakin.v0.0.1",
    );
    // Entries linked only by skipRange: skipRange is not an edge, so there are two heads.
    assert_problem(
        &graph(json!([
            {"name": "anakin.v0.0.1"},
            {"name": "anakin.v0.0.2", "skipRange": "<0.0.2"}
        ])),
        "multiple channel heads found in graph: anakin.v0.0.1, anakin.v0.0.2",
    );
    // A skips-only channel is valid: skipped entries are not stranded.
    check(&graph(json!([
        {"name": "anakin.v0.0.1"},
        {"name": "anakin.v0.0.2"},
        {"name": "anakin.v0.0.3", "skips": ["anakin.v0.0.1", "anakin.v0.0.2"]}
    ])))
    .unwrap();
}

#[test]
fn channel_entries() {
    // Bundle/Error/NoName: an entry without a name.
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0"}, {"name": "", "replaces": "foo.v0.1.0"}]),
    );
    assert_problem(&blobs, "name must be set");
    // Bundle/Error/EmptySkipsValue
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0", "skips": [""]}]),
    );
    assert_problem(&blobs, "skip[0] is empty");
    // Bundle/Error/InvalidSkipRange/LeadingV and /LeadingZero (blang's detail differs)
    for range in [">v0.1.0", ">1.00.1"] {
        let mut blobs = valid_foo();
        blobs[1] = channel(
            "foo",
            "alpha",
            json!([{"name": "foo.v0.1.0", "skipRange": range}]),
        );
        assert_problem_starting(&blobs, &format!("invalid skipRange {range:?}: "));
    }
    // Bundle/Success/ValidSkipRange
    let mut blobs = valid_foo();
    blobs[1] = channel(
        "foo",
        "alpha",
        json!([{"name": "foo.v0.1.0", "skipRange": ">=0.1.0 <0.2.0 || 1.x"}]),
    );
    check(&blobs).unwrap();
}

#[test]
fn bundles() {
    // Error/BundleMissingPackageName and Error/BundleUnknownPackage
    let mut blobs = valid_foo();
    blobs.push(with(
        bundle("foo", "foo.v0.1.0", "0.1.0"),
        "package",
        json!(""),
    ));
    blobs.push(bundle("bar", "bar.v0.1.0", "0.1.0"));
    let error = check(&blobs).unwrap_err();
    assert!(
        error.contains("package name must be set for bundle \"foo.v0.1.0\""),
        "{error}"
    );
    assert!(
        error.contains("unknown package \"bar\" for bundle \"bar.v0.1.0\""),
        "{error}"
    );
    // Error/DuplicateBundle
    let mut blobs = valid_foo();
    blobs.push(bundle("foo", "foo.v0.1.0", "0.1.0"));
    assert_problem(
        &blobs,
        "package \"foo\" has duplicate bundle \"foo.v0.1.0\"",
    );
    // Error/BundleMissingChannel and Error/BundleWithoutChannelEntry
    let mut blobs = valid_foo();
    blobs.push(bundle("foo", "foo.v0.2.0", "0.2.0"));
    assert_problem(
        &blobs,
        "package \"foo\", bundle \"foo.v0.2.0\" not found in any channel entries",
    );
    // Error/BundleMissingPackageProperty and Error/BundleMultiplePackageProperty
    let mut blobs = valid_foo();
    blobs[2]["properties"] = json!([]);
    assert_problem(
        &blobs,
        "package \"foo\" bundle \"foo.v0.1.0\" must have exactly 1 \"olm.package\" property, found 0",
    );
    let mut blobs = valid_foo();
    let property = blobs[2]["properties"][0].clone();
    blobs[2]["properties"]
        .as_array_mut()
        .unwrap()
        .push(property);
    assert_problem(
        &blobs,
        "package \"foo\" bundle \"foo.v0.1.0\" must have exactly 1 \"olm.package\" property, found 2",
    );
    // Error/BundlePackageMismatch
    let mut blobs = valid_foo();
    blobs[2]["properties"][0]["value"]["packageName"] = json!("foooperator");
    assert_problem(
        &blobs,
        "package \"foo\" does not match \"olm.package\" property \"foooperator\"",
    );
    // Error/BundleInvalidVersion and Error/BundleMissingVersion (semver crate's detail)
    let mut blobs = valid_foo();
    blobs[2]["properties"][0]["value"]["version"] = json!("0.1.0.1");
    assert_problem_starting(
        &blobs,
        "error parsing bundle \"foo.v0.1.0\" version \"0.1.0.1\": ",
    );
    let mut blobs = valid_foo();
    blobs[2]["properties"][0]["value"]["version"] = json!("");
    assert_problem_starting(&blobs, "error parsing bundle \"foo.v0.1.0\" version \"\": ");
    // Bundle/Error/NoBundleImage
    let mut blobs = valid_foo();
    blobs[2]["image"] = json!("");
    assert_problem(&blobs, "bundle image must be set");
}

#[test]
fn image_pull_specs() {
    // Error/BundleImageInvalidPullSpecUnsupportedDigestSsha256 / ...Md5 / BundleRelatedImage...
    for image in [
        format!("registry.example.com/foo@ssha256:{}", "f".repeat(64)),
        format!("registry.example.com/foo@md5:{}", "f".repeat(32)),
    ] {
        let mut blobs = valid_foo();
        blobs[2]["image"] = json!(image);
        assert_problem_starting(
            &blobs,
            &format!("invalid image pull spec {image:?} in image: "),
        );
    }
    let mut blobs = valid_foo();
    blobs[2]["relatedImages"] = json!([{"name": "x", "image": "Registry.example.com/UPPER/case"}]);
    assert_problem(
        &blobs,
        "invalid image pull spec \"Registry.example.com/UPPER/case\" in relatedImages[0].image: repository name must be lowercase",
    );
}

#[test]
fn versions_and_releases() {
    // Package/Error/DuplicateBundleVersions
    let mut blobs = vec![
        package("anakin", "dark"),
        channel(
            "anakin",
            "dark",
            json!([
                {"name": "anakin.v0.0.1"},
                {"name": "anakin.v0.0.2", "replaces": "anakin.v0.0.1"},
                {"name": "anakin.v1.0.1", "replaces": "anakin.v0.0.2"},
                {"name": "anakin.v1.0.2", "replaces": "anakin.v1.0.1"}
            ]),
        ),
    ];
    for (name, version) in [
        ("anakin.v0.0.1", "0.0.1"),
        ("anakin.v0.0.2", "0.0.1"),
        ("anakin.v1.0.1", "1.0.1"),
        ("anakin.v1.0.2", "1.0.1"),
    ] {
        blobs.push(bundle("anakin", name, version));
    }
    assert_problem(
        &blobs,
        "duplicate versions found in bundles: [{0.0.1: [anakin.v0.0.1, anakin.v0.0.2]} {1.0.1: [anakin.v1.0.1, anakin.v1.0.2]}]",
    );
    // Error/InvalidReleaseVersion
    let mut blobs = valid_foo();
    blobs[2]["properties"][0]["value"]["release"] = json!("!!!");
    assert_problem(
        &blobs,
        "error parsing bundle \"foo.v0.1.0\" release version \"!!!\": invalid release \"!!!\": segment 0: Invalid character(s) found in prerelease \"!!!\"",
    );
    // Error/InvalidBundleNormalizedName and Success/ValidBundleReleaseVersion
    let release = |name: &str, version: &str, release: &str| {
        let mut b = bundle("foo", name, version);
        b["properties"][0]["value"]["release"] = json!(release);
        vec![
            package("foo", "alpha"),
            channel("foo", "alpha", json!([{"name": name}])),
            b,
        ]
    };
    assert_problem(
        &release("foo.v0.1.0-alpha.1.0.0", "0.1.0", "alpha.1.0.0"),
        "name \"foo.v0.1.0-alpha.1.0.0\" does not match normalized name \"foo-v0.1.0-alpha.1.0.0\"",
    );
    check(&release("foo-v0.1.0-alpha.1.0.0", "0.1.0", "alpha.1.0.0")).unwrap();
    // Error/BundleReleaseWithBuildMetadata: both problems, under the bundle's node.
    let error = check(&release(
        "foo.v0.1.0+alpha.1.0.0-0.0.1",
        "0.1.0+alpha.1.0.0",
        "0.0.1",
    ))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid index:\n└── invalid package \"foo\":\n    └── invalid bundle \"foo.v0.1.0+alpha.1.0.0-0.0.1\":\n        ├── name \"foo.v0.1.0+alpha.1.0.0-0.0.1\" does not match normalized name \"foo-v0.1.0+alpha.1.0.0-0.0.1\"\n        └── cannot use build metadata in version with a release version"
    );
}

#[test]
fn deprecations() {
    let deprecation = |package: &str, entries: Value| json!({"schema": "olm.deprecations", "package": package, "entries": entries});
    let bundle_ref = |name: &str| json!({"reference": {"schema": "olm.bundle", "name": name}, "message": "deprecated"});
    // A valid deprecation of package, channel and bundle.
    let mut blobs = valid_foo();
    blobs.push(deprecation(
        "foo",
        json!([
            {"reference": {"schema": "olm.package"}, "message": "foo is deprecated"},
            {"reference": {"schema": "olm.channel", "name": "alpha"}, "message": "alpha is deprecated"},
            bundle_ref("foo.v0.1.0")
        ]),
    ));
    let catalog = Catalog::new(config(&blobs)).unwrap();
    let foo = catalog.package("foo").unwrap();
    assert_eq!(foo.deprecation.as_deref(), Some("foo is deprecated"));
    assert_eq!(
        foo.channel("alpha").unwrap().deprecation.as_deref(),
        Some("alpha is deprecated")
    );
    assert_eq!(
        foo.bundle("foo.v0.1.0").unwrap().deprecation.as_deref(),
        Some("deprecated")
    );

    // Error/Deprecation/UnspecifiedPackage
    let mut blobs = valid_foo();
    blobs.push(deprecation("", json!([bundle_ref("foo.v0.1.0")])));
    assert_problem(&blobs, "package name must be set for deprecation item 0");
    // Error/Deprecation/OutOfBoundsBundle
    let mut blobs = valid_foo();
    blobs.push(deprecation("foo", json!([bundle_ref("foo.v2.0.0")])));
    assert_problem(
        &blobs,
        "cannot deprecate bundle \"foo.v2.0.0\" for package \"foo\": bundle not found",
    );
    // Error/Deprecation/OutOfBoundsPackage
    let mut blobs = valid_foo();
    blobs.push(deprecation("nyarl", json!([bundle_ref("foo.v0.1.0")])));
    assert_problem(
        &blobs,
        "cannot apply deprecations to an unknown package \"nyarl\"",
    );
    // Error/Deprecation/MultiplePerPackage
    let mut blobs = valid_foo();
    blobs.push(deprecation("foo", json!([bundle_ref("foo.v0.1.0")])));
    blobs.push(deprecation("foo", json!([bundle_ref("foo.v0.1.0")])));
    assert_problem(
        &blobs,
        "expected a maximum of one deprecation per package: \"foo\"",
    );
    // Error/Deprecation/BadRefSchema
    let mut blobs = valid_foo();
    blobs.push(deprecation(
        "foo",
        json!([{"reference": {"schema": "badschema", "name": "foo.v2.0.0"}, "message": "x"}]),
    ));
    assert_problem(
        &blobs,
        "cannot deprecate object declcfg.PackageScopedReference{Schema:\"badschema\", Name:\"foo.v2.0.0\"} referenced by entry 0 for package \"foo\": object schema unknown",
    );
    // Error/Deprecation/DuplicateRef
    let mut blobs = valid_foo();
    blobs.push(deprecation(
        "foo",
        json!([bundle_ref("foo.v0.1.0"), bundle_ref("foo.v0.1.0")]),
    ));
    assert_problem(
        &blobs,
        "duplicate deprecation entry declcfg.PackageScopedReference{Schema:\"olm.bundle\", Name:\"foo.v0.1.0\"} for package \"foo\"",
    );
    // Unknown channel and a package reference with a name.
    let mut blobs = valid_foo();
    blobs.push(deprecation(
        "foo",
        json!([
            {"reference": {"schema": "olm.channel", "name": "beta"}, "message": "x"},
            {"reference": {"schema": "olm.package", "name": "foo"}, "message": "x"}
        ]),
    ));
    let error = check(&blobs).unwrap_err();
    assert!(
        error.contains("cannot deprecate channel \"beta\" for package \"foo\": channel not found"),
        "{error}"
    );
    assert!(
        error.contains(
            "package name must be empty for deprecated package \"foo\" (specified \"foo\")"
        ),
        "{error}"
    );
}

#[test]
fn every_problem_is_reported_at_once_in_opm_tree_form() {
    let blobs = vec![
        package("alpha-op", "stable"),
        channel(
            "alpha-op",
            "stable",
            json!([
                {"name": "alpha-op.v1", "skipRange": ">>1"},
                {"name": "alpha-op.v2"}
            ]),
        ),
        bundle("alpha-op", "alpha-op.v1", "1.0.0"),
        bundle("alpha-op", "alpha-op.v2", "1.0.0"),
        package("beta-op", "missing"),
        channel("beta-op", "beta", json!([{"name": "beta-op.v1"}])),
        bundle("beta-op", "beta-op.v1", "not-semver"),
        bundle("ghost", "ghost.v1", "1.0.0"),
    ];
    let error = check(&blobs).unwrap_err();
    let text = error.to_string();
    let expected_start = "invalid index:\n├── unknown package \"ghost\" for bundle \"ghost.v1\"\n├── invalid package \"alpha-op\":\n│   ├── invalid channel \"stable\":\n│   │   ├── multiple channel heads found in graph: alpha-op.v1, alpha-op.v2\n│   │   └── invalid bundle \"alpha-op.v1\":\n│   │       └── invalid skipRange \">>1\": ";
    assert!(text.starts_with(expected_start), "got:\n{text}");
    assert!(
        text.ends_with(
            "│   └── duplicate versions found in bundles: [{1.0.0: [alpha-op.v1, alpha-op.v2]}]\n└── invalid package \"beta-op\":\n    ├── invalid bundle \"beta-op.v1\":\n    │   └── error parsing bundle \"beta-op.v1\" version \"not-semver\": unexpected character 'n' while parsing major version number\n    └── default channel \"missing\" not found in channels list"
        ),
        "got:\n{text}"
    );
    assert_eq!(error.leaves().len(), 6);
}
