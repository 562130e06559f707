//! Tests against third-party catalogs in `/work/shared/data` (see its README). Every behaviour
//! checked here is also covered by tests on our own fixtures (`tests/fbc_*.rs`,
//! `tests/resolve_*.rs`, `tests/cli_catalog*.rs`).

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use opcat::fbc::{Catalog, list};
use opcat::resolve::{Resolution, ResolveRequest, resolve};

fn fbc_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![test_registry::shared_data_dir().join("fbc")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read data dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The fast YAML path and the full YAML parser give the same JSON value for every document of
/// every third-party catalog, and the fast path handles almost all of them.
#[test]
fn third_party_fast_yaml_path_equals_full_parser() {
    let (mut docs, mut fast_docs) = (0, 0);
    for path in fbc_files() {
        let text = std::fs::read_to_string(&path).expect("read catalog file");
        if text.trim_start().starts_with('{') || path.ends_with(".indexignore") {
            continue;
        }
        for doc in opcat::fbc::yaml::documents(&text) {
            docs += 1;
            let full = opcat::fbc::yaml::to_json_full(doc.text).unwrap_or_else(|e| {
                panic!("{}:{}: full parser: {e}", path.display(), doc.first_line)
            });
            let Some(fast) = opcat::fbc::yaml::to_json_fast(doc.text) else {
                eprintln!("fast path bailed: {}:{}", path.display(), doc.first_line);
                continue;
            };
            fast_docs += 1;
            let full: serde_json::Value = serde_json::from_str(&full).expect("full JSON");
            let fast: serde_json::Value = serde_json::from_str(&fast).expect("fast JSON");
            assert!(
                fast == full,
                "{}:{}: fast path and full parser disagree",
                path.display(),
                doc.first_line
            );
        }
    }
    assert!(
        docs > 1000,
        "expected the real catalogs, found {docs} documents"
    );
    assert_eq!(
        fast_docs, docs,
        "the fast path should handle every real document"
    );
}

fn fbc_root(relative: &str) -> PathBuf {
    test_registry::shared_data_dir().join("fbc").join(relative)
}

fn load_catalog(relative: &str) -> Catalog {
    Catalog::load(&fbc_root(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Package, channel and bundle counts of a catalog.
fn counts(catalog: &Catalog) -> (usize, usize, usize) {
    catalog.packages().fold((0, 0, 0), |(p, c, b), package| {
        (
            p + 1,
            c + package.channels().count(),
            b + package.bundles().count(),
        )
    })
}

const LIST_INDEX: &str = "small/operator-registry/alpha/action/testdata/list-index";
const INDEX_DECLCFGS: &str = "small/operator-registry/alpha/action/testdata/index-declcfgs";

/// Every real catalog root of the shared data loads and passes validation (they all passed
/// `opm validate`), with the counts the data README gives.
#[test]
fn third_party_real_catalogs_load_and_validate() {
    let certified = load_catalog("large/certified-operators/catalogs/v4.16");
    assert_eq!(counts(&certified), (46, 129, 379));
    let community = load_catalog("large/community-operators-prod/catalogs/v4.21");
    assert_eq!(counts(&community), (33, 78, 745));
    for root in [
        LIST_INDEX,
        "small/operator-registry/alpha/action/testdata/foo-index-v0.2.0-declcfg",
        "small/cluster-kube-descheduler-operator/v4.21/catalog",
        "small/cluster-kube-descheduler-operator/v4.12/catalog",
        "small/community-operators-prod/catalogs/v4.21/slurm-operator",
        "small/operator-lifecycle-manager/test/e2e/testdata/magiccatalog/fbc_catalog.json",
        "small/operator-lifecycle-manager/test/e2e/testdata/magiccatalog/fbc_initial.yaml",
        "small/operator-lifecycle-manager/test/e2e/testdata/magiccatalog/fbc_updated.yaml",
    ] {
        load_catalog(root);
    }
    for name in [
        "old",
        "latest",
        "exp-headsonly",
        "exp-latest",
        "exp-include-channel",
        "exp-include-pkg",
    ] {
        load_catalog(&format!("{INDEX_DECLCFGS}/{name}"));
    }
    let subscription_dir =
        fbc_root("small/operator-lifecycle-manager/test/e2e/testdata/subscription");
    for entry in std::fs::read_dir(subscription_dir).unwrap() {
        let path = entry.unwrap().path();
        Catalog::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// `opm alpha list` output for the list-index catalog, byte for byte
/// (`expected/operator-registry/list-index.*.txt`).
#[test]
fn third_party_list_output_is_byte_identical_to_opm() {
    let catalog = load_catalog(LIST_INDEX);
    let expected = |name: &str| {
        std::fs::read_to_string(
            test_registry::shared_data_dir()
                .join("expected/operator-registry")
                .join(name),
        )
        .unwrap()
    };
    assert_eq!(
        list::packages_text(&catalog, None).unwrap(),
        expected("list-index.list-packages.txt")
    );
    assert_eq!(
        list::channels_text(&catalog, None).unwrap(),
        expected("list-index.list-channels.txt")
    );
    assert_eq!(
        list::bundles_text(&catalog, None).unwrap(),
        expected("list-index.list-bundles.txt")
    );
    assert_eq!(
        list::channels_text(&catalog, Some("foo")).unwrap(),
        expected("list-index.list-channels.package-foo.txt")
    );
    assert_eq!(
        list::bundles_text(&catalog, Some("foo")).unwrap(),
        expected("list-index.list-bundles.package-foo.txt")
    );
}

/// `exp-headsonly` is the heads-only diff of `latest`: each of its channels holds the head of
/// the same channel in `latest`.
#[test]
fn third_party_heads_match_the_heads_only_diff() {
    let latest = load_catalog(&format!("{INDEX_DECLCFGS}/latest"));
    let heads_only = load_catalog(&format!("{INDEX_DECLCFGS}/exp-headsonly"));
    let mut compared = 0;
    for package in heads_only.packages() {
        for channel in package.channels() {
            let latest_head = &latest
                .package(&package.name)
                .unwrap()
                .channel(&channel.name)
                .unwrap()
                .head()
                .name;
            assert!(
                channel.entries.iter().any(|e| &e.name == latest_head),
                "{}/{}: head {latest_head} of latest is not in the heads-only diff",
                package.name,
                channel.name
            );
            compared += 1;
        }
    }
    assert!(compared >= 4, "compared {compared} channels");
}

/// The descheduler v4.12 catalog has no `replaces` at all: its head skips the others, which are
/// skipped, not stranded; any of them upgrades straight to the head.
#[test]
fn third_party_skips_only_graph() {
    let catalog = load_catalog("small/cluster-kube-descheduler-operator/v4.12/catalog");
    let package = catalog
        .package("cluster-kube-descheduler-operator")
        .unwrap();
    for channel in package.channels() {
        assert_eq!(
            channel.head().name,
            "clusterkubedescheduleroperator.v4.12.1"
        );
        assert!(channel.entries.iter().all(|e| e.replaces.is_none()));
        for entry in channel
            .entries
            .iter()
            .filter(|e| e.name != channel.head().name)
        {
            let request = ResolveRequest {
                package: package.name.clone(),
                channel: Some(channel.name.clone()),
                installed: Some(entry.name.clone()),
                ..ResolveRequest::default()
            };
            let Resolution::Install(next) = resolve(&catalog, &request).unwrap() else {
                panic!("{} should upgrade", entry.name)
            };
            assert_eq!(next.name, "clusterkubedescheduleroperator.v4.12.1");
        }
    }
}

/// slurm-operator's head `v1.0.1-1` has a lower semver (1.0.1-1) than the entry it replaces
/// (1.0.1): the graph decides.
#[test]
fn third_party_head_with_a_lower_version() {
    let catalog = load_catalog("small/community-operators-prod/catalogs/v4.21/slurm-operator");
    let package = catalog.package("slurm-operator").unwrap();
    let channel = package.channel("release-1.0").unwrap();
    assert_eq!(channel.head().name, "slurm-operator.v1.0.1-1");
    let head = package.bundle("slurm-operator.v1.0.1-1").unwrap();
    assert!(head.version < package.bundle("slurm-operator.v1.0.1").unwrap().version);
    let request = ResolveRequest {
        package: "slurm-operator".into(),
        installed: Some("slurm-operator.v1.0.1".into()),
        ..ResolveRequest::default()
    };
    let Resolution::Install(next) = resolve(&catalog, &request).unwrap() else {
        panic!("no upgrade")
    };
    assert_eq!(next.name, "slurm-operator.v1.0.1-1");
    // Also in the complete community catalog.
    let community = load_catalog("large/community-operators-prod/catalogs/v4.21");
    let slurm = community.package("slurm-operator").unwrap();
    assert_eq!(
        slurm.channel("release-1.0").unwrap().head().name,
        "slurm-operator.v1.0.1-1"
    );
}

/// `.indexignore` hides `deprecations.yaml`; loaded directly, it names an unknown package.
#[test]
fn third_party_indexignore_and_deprecation_references() {
    let dir =
        fbc_root("small/deprecated-catalog-content/redhat-operator-index/4.15/example-mypackage");
    assert!(opcat::fbc::load(&dir).unwrap().is_empty());
    let config = opcat::fbc::load(&dir.join("deprecations.yaml")).unwrap();
    let error = opcat::fbc::validate(&config).unwrap_err();
    assert!(
        error.contains("cannot apply deprecations to an unknown package \"mypackage\""),
        "{error}"
    );

    let catalog = load_catalog(
        "small/operator-lifecycle-manager/test/e2e/testdata/subscription/example-operator.v0.2.0-deprecations.yaml",
    );
    let package = catalog.package("test-package").unwrap();
    assert!(package.deprecation.is_some(), "package deprecation");
    assert!(
        package.channels().any(|c| c.deprecation.is_some()),
        "channel deprecation"
    );
    assert!(
        package.bundles().any(|b| b.deprecation.is_some()),
        "bundle deprecation"
    );
}

/// Every package of the certified catalog embeds its head's CSV as a bundle object; decoding
/// it (lazily, from base64) gives the display name.
#[test]
fn third_party_bundle_objects_decode() {
    let catalog = load_catalog("large/certified-operators/catalogs/v4.16");
    for package in catalog.packages() {
        let head = package.default_channel().unwrap().head();
        let csv = package.bundle(&head.name).unwrap().csv();
        let csv = csv.unwrap_or_else(|| {
            panic!(
                "{}: no CSV among the bundle objects of {}",
                package.name, head.name
            )
        });
        assert_eq!(
            csv["metadata"]["name"],
            head.name.as_str(),
            "{}",
            package.name
        );
    }
}
