//! CLI answers that cannot mislead: a missing path is "no such directory" (never an image
//! pull), a bundle directory is not a catalog, an empty catalog is an error, a valid one gets a
//! one-line summary, `--installed` outside the channel is an error, and errors name their file.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use std::path::Path;
use std::process::{Command, Output};

use fbc_support::{fixture, stderr, stdout};

/// Runs opcat in `dir` with `HOME` there too (no docker config, no cache elsewhere).
fn opcat_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("DOCKER_CONFIG")
        .env_remove("OPCAT_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .expect("run opcat")
}

fn basic() -> String {
    fixture("basic").display().to_string()
}

fn widget_bundle() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bundles/widget-operator/1.2.0")
        .display()
        .to_string()
}

#[test]
fn a_missing_path_is_no_such_directory_not_an_image_pull() {
    let dir = tempfile::tempdir().unwrap();
    for (arg, answer) in [
        ("catalgo", "error: no such directory: catalgo\n"),
        ("./catalog", "error: no such directory: ./catalog\n"),
        ("catalog/", "error: no such directory: catalog/\n"),
        (
            "/no/such/catalog",
            "error: no such directory: /no/such/catalog\n",
        ),
        ("org/catalog", "error: no such directory: org/catalog\n"),
        ("catalog.yaml", "error: no such file: catalog.yaml\n"),
    ] {
        for command in [
            vec!["catalog", "validate", arg],
            vec!["catalog", "render", arg],
            vec!["resolve", arg, "--package", "x"],
        ] {
            let out = opcat_in(dir.path(), &command);
            assert_eq!(out.status.code(), Some(1), "{command:?}");
            assert_eq!(stderr(&out), answer, "{command:?}");
        }
    }
    // Nothing was pulled: no cache directory appeared.
    assert!(!dir.path().join(".cache").exists());
}

#[test]
fn an_argument_that_looks_like_an_image_is_pulled() {
    let dir = tempfile::tempdir().unwrap();
    // A loopback registry that is not there: the answer is about the pull, not a directory.
    let out = opcat_in(
        dir.path(),
        &[
            "catalog",
            "validate",
            "127.0.0.1:9/catalog:v1",
            "--plain-http",
            "127.0.0.1:9",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("127.0.0.1:9/catalog:v1"), "{err}");
    assert!(!err.contains("no such directory"), "{err}");
}

#[test]
fn a_bundle_directory_is_not_a_catalog() {
    let bundle = widget_bundle();
    let out = opcat_in(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["catalog", "validate", &bundle],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {bundle} is a registry+v1 bundle directory (manifests/ and metadata/), not a \
             catalog; check it with `opcat bundle validate {bundle}`\n"
        )
    );
}

#[test]
fn an_empty_catalog_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = opcat_in(dir.path(), &["catalog", "validate", "empty"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: catalog empty has no packages: none of its files holds an olm.package blob\n"
    );
    assert_eq!(stdout(&out), "");
    let out = opcat_in(dir.path(), &["resolve", "empty", "--package", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has no packages"), "{}", stderr(&out));
}

#[test]
fn a_valid_catalog_gets_a_one_line_summary() {
    let out = opcat_in(Path::new("/"), &["catalog", "validate", &basic()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "catalog {} is valid: 2 packages, 3 channels, 7 bundles\n",
            basic()
        )
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn installed_outside_the_channel_is_an_error_naming_the_channel() {
    let out = opcat_in(
        Path::new("/"),
        &[
            "resolve",
            &basic(),
            "--package",
            "sample-operator",
            "--installed",
            "bogus",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "error: --installed bogus is not an entry of channel alpha of package sample-operator \
             in catalog {}; name a CSV of that channel, or give --installed-version to resolve \
             the upgrade of a CSV the catalog no longer lists\n",
            basic()
        )
    );
    // With a version, the upgrade of a CSV the catalog no longer lists is resolved; when no
    // entry upgrades from it, that is an error too.
    let out = opcat_in(
        Path::new("/"),
        &[
            "resolve",
            &basic(),
            "--package",
            "example-operator",
            "--installed",
            "example-operator.v0.9.0",
            "--installed-version",
            "0.9.0",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let covered = opcat_in(
        Path::new("/"),
        &[
            "resolve",
            &basic(),
            "--package",
            "example-operator",
            "--installed",
            "example-operator.v1.0.5",
            "--installed-version",
            "1.0.5",
        ],
    );
    assert_eq!(covered.status.code(), Some(0), "{}", stderr(&covered));
    assert!(stdout(&covered).starts_with("bundle:   example-operator.v1."));
    assert_eq!(
        stderr(&out),
        "error: no entry of channel stable of package example-operator upgrades from \
         example-operator.v0.9.0 (0.9.0), which the channel does not list: none replaces or skips \
         it or has a skipRange containing 0.9.0\n"
    );
}

#[test]
fn duplicate_packages_name_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog");
    for sub in ["a", "b"] {
        std::fs::create_dir_all(catalog.join(sub)).unwrap();
        std::fs::write(
            catalog.join(sub).join("index.yaml"),
            "schema: olm.package\nname: dup\ndefaultChannel: stable\n",
        )
        .unwrap();
    }
    let out = opcat_in(dir.path(), &["catalog", "validate", "catalog"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("duplicate package \"dup\"\n"), "{err}");
    assert!(
        err.contains(
            "error: duplicate package \"dup\" is defined in catalog/a/index.yaml, catalog/b/index.yaml\n"
        ),
        "{err}"
    );
}

#[test]
fn a_bad_ca_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), "not a certificate\n").unwrap();
    let out = opcat_in(
        dir.path(),
        &[
            "catalog",
            "validate",
            "registry.example.com/catalog:v1",
            "--ca-file",
            "ca.pem",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: --ca-file ca.pem contains no certificate\n"
    );
}
