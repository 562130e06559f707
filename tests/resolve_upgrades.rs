//! Channel heads and resolution (olm-api.md §6): the graph decides the head, upgrades follow
//! replaces / skips / skipRange (blang semantics) and the candidate closest to the head wins.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use fbc_support::{bundle, catalog, channel, fixture, one_channel, package};
use opcat::fbc::Catalog;
use opcat::resolve::{Resolution, ResolveError, ResolveRequest, resolve};
use serde_json::json;

fn request(package: &str) -> ResolveRequest {
    ResolveRequest {
        package: package.to_owned(),
        ..ResolveRequest::default()
    }
}

fn upgrade(package: &str, installed: &str) -> ResolveRequest {
    ResolveRequest {
        installed: Some(installed.to_owned()),
        ..request(package)
    }
}

#[track_caller]
fn installs(catalog: &Catalog, request: &ResolveRequest) -> String {
    match resolve(catalog, request).unwrap() {
        Resolution::Install(bundle) => bundle.name,
        other => panic!("expected an install, got {other:?}"),
    }
}

fn head(catalog: &Catalog, package: &str, channel: &str) -> String {
    catalog
        .package(package)
        .unwrap()
        .channel(channel)
        .unwrap()
        .head()
        .name
        .clone()
}

#[test]
fn the_graph_decides_the_head_not_the_version() {
    // Like slurm-operator: v1.0.1-1 (a lower semver than 1.0.1) replaces v1.0.1.
    let c = catalog(&one_channel(
        "slurm",
        "release-1.0",
        json!([
            {"name": "slurm.v1.0.0"},
            {"name": "slurm.v1.0.1", "replaces": "slurm.v1.0.0"},
            {"name": "slurm.v1.0.1-1", "replaces": "slurm.v1.0.1"}
        ]),
        &[
            ("slurm.v1.0.0", "1.0.0"),
            ("slurm.v1.0.1", "1.0.1"),
            ("slurm.v1.0.1-1", "1.0.1-1"),
        ],
    ));
    assert_eq!(head(&c, "slurm", "release-1.0"), "slurm.v1.0.1-1");
    assert_eq!(installs(&c, &request("slurm")), "slurm.v1.0.1-1");
    assert_eq!(
        installs(&c, &upgrade("slurm", "slurm.v1.0.1")),
        "slurm.v1.0.1-1"
    );
}

#[test]
fn skips_only_channels_have_the_skipper_as_head() {
    let c = catalog(&one_channel(
        "desched",
        "stable",
        json!([
            {"name": "desched.v1.0.0"},
            {"name": "desched.v1.1.0"},
            {"name": "desched.v1.2.0", "skips": ["desched.v1.0.0", "desched.v1.1.0", "desched.v0.9.0"], "skipRange": ">=0.1.0 <1.2.0"}
        ]),
        &[
            ("desched.v1.0.0", "1.0.0"),
            ("desched.v1.1.0", "1.1.0"),
            ("desched.v1.2.0", "1.2.0"),
        ],
    ));
    assert_eq!(head(&c, "desched", "stable"), "desched.v1.2.0");
    assert_eq!(
        installs(&c, &upgrade("desched", "desched.v1.0.0")),
        "desched.v1.2.0"
    );
    // A bundle the catalog no longer has, known by name only (skips) or by version (skipRange).
    assert_eq!(
        installs(&c, &upgrade("desched", "desched.v0.9.0")),
        "desched.v1.2.0"
    );
    let gone = ResolveRequest {
        installed_version: Some(semver::Version::parse("0.5.0").unwrap()),
        ..upgrade("desched", "desched.v0.5.0")
    };
    assert_eq!(installs(&c, &gone), "desched.v1.2.0");
    assert_eq!(
        resolve(&c, &upgrade("desched", "desched.v0.5.0")).unwrap(),
        Resolution::AtLatest {
            installed: "desched.v0.5.0".into(),
            channel: "stable".into()
        },
        "without a version only replaces/skips edges can match"
    );
}

#[test]
fn first_install_takes_the_head_of_the_default_or_named_channel() {
    let c = basic();
    assert_eq!(
        installs(&c, &request("example-operator")),
        "example-operator.v1.2.0"
    );
    let empty_channel = ResolveRequest {
        channel: Some(String::new()),
        ..request("example-operator")
    };
    assert_eq!(
        installs(&c, &empty_channel),
        "example-operator.v1.2.0",
        "empty channel = default"
    );
    let candidate = ResolveRequest {
        channel: Some("candidate".into()),
        ..request("example-operator")
    };
    let Resolution::Install(bundle) = resolve(&c, &candidate).unwrap() else {
        panic!("no install")
    };
    assert_eq!(bundle.name, "example-operator.v2.0.0-rc.1");
    assert_eq!(bundle.channel, "candidate");
    assert_eq!(bundle.version.to_string(), "2.0.0-rc.1");
    assert_eq!(
        bundle.image,
        "registry.example.com/example/bundle:v2.0.0-rc.1"
    );
    assert_eq!(bundle.replaces, None);
}

/// `tests/fixtures/fbc/basic`: example-operator's stable channel is
/// v1.2.0 (skips v1.1.1, skipRange >=1.1.0 <1.2.0) → v1.1.0 (skipRange >=1.0.0 <1.1.0) → v1.0.0.
fn basic() -> Catalog {
    Catalog::load(&fixture("basic")).unwrap()
}

#[test]
fn starting_csv_is_installed_first_and_must_exist() {
    let c = basic();
    let start = |csv: &str| ResolveRequest {
        starting_csv: Some(csv.to_owned()),
        ..request("example-operator")
    };
    assert_eq!(
        installs(&c, &start("example-operator.v1.0.0")),
        "example-operator.v1.0.0"
    );
    // A skipped entry can still be a starting CSV (OLM filters by name before ordering).
    assert_eq!(
        installs(&c, &start("example-operator.v1.1.1")),
        "example-operator.v1.1.1"
    );
    assert_eq!(
        resolve(&c, &start("example-operator.v9.9.9"))
            .unwrap_err()
            .to_string(),
        "no operators found with name example-operator.v9.9.9 in channel stable of package example-operator in the catalog"
    );
    // An installed CSV wins over startingCSV.
    let both = ResolveRequest {
        installed: Some("example-operator.v1.1.0".into()),
        ..start("example-operator.v1.0.0")
    };
    assert_eq!(installs(&c, &both), "example-operator.v1.2.0");
}

#[test]
fn upgrades_take_the_candidate_closest_to_the_head() {
    let c = basic();
    // v1.0.0: the head v1.2.0 neither replaces, skips nor covers it (its range is
    // >=1.1.0 <1.2.0); v1.1.0 replaces it. One hop.
    let Resolution::Install(next) =
        resolve(&c, &upgrade("example-operator", "example-operator.v1.0.0")).unwrap()
    else {
        panic!("no install")
    };
    assert_eq!(next.name, "example-operator.v1.1.0");
    assert_eq!(next.replaces.as_deref(), Some("example-operator.v1.0.0"));
    // v1.1.0 → v1.2.0 (replaces); the skipped v1.1.1 → v1.2.0 (skips and skipRange).
    assert_eq!(
        installs(&c, &upgrade("example-operator", "example-operator.v1.1.0")),
        "example-operator.v1.2.0"
    );
    assert_eq!(
        installs(&c, &upgrade("example-operator", "example-operator.v1.1.1")),
        "example-operator.v1.2.0"
    );
    // The head itself: nothing newer.
    assert_eq!(
        resolve(&c, &upgrade("example-operator", "example-operator.v1.2.0")).unwrap(),
        Resolution::AtLatest {
            installed: "example-operator.v1.2.0".into(),
            channel: "stable".into()
        }
    );
}

#[test]
fn a_skip_range_closer_to_the_head_beats_a_replaces_edge() {
    let c = catalog(&one_channel(
        "jump",
        "stable",
        json!([
            {"name": "jump.v1"},
            {"name": "jump.v2", "replaces": "jump.v1"},
            {"name": "jump.v3", "replaces": "jump.v2", "skipRange": ">=1.0.0 <3.0.0"}
        ]),
        &[
            ("jump.v1", "1.0.0"),
            ("jump.v2", "2.0.0"),
            ("jump.v3", "3.0.0"),
        ],
    ));
    assert_eq!(installs(&c, &upgrade("jump", "jump.v1")), "jump.v3");
}

#[test]
fn skip_ranges_have_blang_semantics() {
    let c = catalog(&one_channel(
        "ranges",
        "stable",
        json!([
            {"name": "ranges.v1"},
            {"name": "ranges.v2", "replaces": "ranges.v1", "skipRange": "<1.0.0 || 1.5.x"}
        ]),
        &[("ranges.v1", "1.0.0"), ("ranges.v2", "2.0.0")],
    ));
    let from = |version: &str| ResolveRequest {
        installed_version: Some(semver::Version::parse(version).unwrap()),
        ..upgrade("ranges", "old.csv")
    };
    // Pre-releases are not excluded (Cargo/npm would exclude 1.0.0-rc.1 from <1.0.0).
    assert_eq!(installs(&c, &from("1.0.0-rc.1")), "ranges.v2");
    // `||` is OR and `1.5.x` expands to >=1.5.0 <1.6.0.
    assert_eq!(installs(&c, &from("1.5.7")), "ranges.v2");
    assert!(matches!(
        resolve(&c, &from("1.6.0")).unwrap(),
        Resolution::AtLatest { .. }
    ));
    assert!(matches!(
        resolve(&c, &from("1.0.0")).unwrap(),
        Resolution::AtLatest { .. }
    ));
}

#[test]
fn skipped_entries_are_never_upgrade_targets() {
    // v2b replaces v1 but is skipped by the head, so OLM leaves it out of the channel order.
    let c = catalog(&one_channel(
        "skipped",
        "stable",
        json!([
            {"name": "skipped.v1"},
            {"name": "skipped.v2", "replaces": "skipped.v1"},
            {"name": "skipped.v2b", "replaces": "skipped.v1"},
            {"name": "skipped.v3", "replaces": "skipped.v2", "skips": ["skipped.v2b"]}
        ]),
        &[
            ("skipped.v1", "1.0.0"),
            ("skipped.v2", "2.0.0"),
            ("skipped.v2b", "2.0.1"),
            ("skipped.v3", "3.0.0"),
        ],
    ));
    assert_eq!(
        installs(&c, &upgrade("skipped", "skipped.v1")),
        "skipped.v2"
    );
    assert_eq!(
        installs(&c, &upgrade("skipped", "skipped.v2b")),
        "skipped.v3"
    );
}

#[test]
fn missing_packages_and_channels_are_errors_naming_them() {
    let c = catalog(&[
        package("foo", "alpha"),
        channel("foo", "alpha", json!([{"name": "foo.v1"}])),
        bundle("foo", "foo.v1", "1.0.0"),
    ]);
    let error = resolve(&c, &request("bar")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no operators found in package bar in the catalog"
    );
    assert_eq!(error.kind(), "package_not_found");
    let error = resolve(
        &c,
        &ResolveRequest {
            channel: Some("beta".into()),
            ..request("foo")
        },
    )
    .unwrap_err();
    assert_eq!(
        error,
        ResolveError::ChannelNotFound {
            package: "foo".into(),
            channel: "beta".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "no operators found in channel beta of package foo in the catalog"
    );
}
