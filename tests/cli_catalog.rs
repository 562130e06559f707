//! The `opcat catalog` and `opcat resolve` commands, run as a user runs them.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use fbc_support::{fixture, opcat, stderr, stdout};

fn basic() -> String {
    fixture("basic").display().to_string()
}

#[test]
fn validate_accepts_a_valid_catalog_with_a_summary() {
    let out = opcat(&["catalog", "validate", &basic()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with(" is valid: 2 packages, 3 channels, 7 bundles\n"));
    assert_eq!(stderr(&out), "");
}

#[test]
fn validate_prints_every_problem_and_exits_1() {
    let out = opcat(&[
        "catalog",
        "validate",
        &fixture("invalid").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "invalid index:\n\
         ├── unknown package \"orphan-operator\" for bundle \"orphan-operator.v1.0.0\"\n\
         └── invalid package \"broken-operator\":\n    \
         ├── invalid channel \"stable\":\n    \
         │   └── multiple channel heads found in graph: broken-operator.v1.0.0, broken-operator.v2.0.0\n    \
         ├── invalid bundle \"broken-operator.v2.0.0\":\n    \
         │   └── error parsing bundle \"broken-operator.v2.0.0\" version \"v2.0.0\": unexpected character 'v' while parsing major version number\n    \
         └── default channel \"fast\" not found in channels list\n"
    );
}

#[test]
fn unreadable_sources_are_errors_with_exit_1() {
    let out = opcat(&["catalog", "validate", "/nonexistent/catalog"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no such directory: /nonexistent/catalog\n"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "schema: olm.package\nname: [unclosed\n",
    )
    .unwrap();
    let out = opcat(&["catalog", "render", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad.yaml:1: invalid YAML"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn list_matches_opm_alpha_list_byte_for_byte() {
    let out = opcat(&["catalog", "list", "packages", &basic()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "NAME              DISPLAY NAME      DEFAULT CHANNEL\n\
         example-operator  Example Operator  stable\n\
         sample-operator                     alpha\n"
    );
    let out = opcat(&["catalog", "list", "channels", &basic()]);
    assert_eq!(
        stdout(&out),
        "PACKAGE           CHANNEL    HEAD\n\
         example-operator  candidate  example-operator.v2.0.0-rc.1\n\
         example-operator  stable     example-operator.v1.2.0\n\
         sample-operator   alpha      sample-operator.v0.2.0\n"
    );
    let out = opcat(&[
        "catalog",
        "list",
        "bundles",
        &basic(),
        "--package",
        "sample-operator",
    ]);
    assert_eq!(
        stdout(&out),
        "PACKAGE          CHANNEL  BUNDLE                  REPLACES  SKIPS                   SKIP RANGE  IMAGE\n\
         sample-operator  alpha    sample-operator.v0.1.0                                                registry.example.com/sample/bundle:v0.1.0\n\
         sample-operator  alpha    sample-operator.v0.2.0            sample-operator.v0.1.0              registry.example.com/sample/bundle:v0.2.0\n"
    );
    let out = opcat(&["catalog", "list", "bundles", &basic()]);
    let text = stdout(&out);
    assert!(
        text.contains(
            "example-operator  stable     example-operator.v1.2.0       example-operator.v1.1.0  example-operator.v1.1.1  >=1.1.0 <1.2.0  registry.example.com/example/bundle@sha256:"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 9);
}

#[test]
fn list_json_is_sorted_and_carries_heads_and_entries() {
    let out = opcat(&["catalog", "list", "channels", &basic(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let packages = json["packages"].as_array().unwrap();
    assert_eq!(packages.len(), 2);
    assert_eq!(packages[0]["name"], "example-operator");
    assert_eq!(packages[0]["defaultChannel"], "stable");
    let channels = packages[0]["channels"].as_array().unwrap();
    assert_eq!(channels[0]["name"], "candidate");
    assert_eq!(channels[1]["name"], "stable");
    assert_eq!(channels[1]["head"], "example-operator.v1.2.0");
    let entries: Vec<&str> = channels[1]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        entries,
        [
            "example-operator.v1.2.0",
            "example-operator.v1.1.0",
            "example-operator.v1.0.0",
            "example-operator.v1.1.1"
        ],
        "head first along replaces, then skipped entries"
    );
    assert_eq!(
        channels[1]["entries"][0]["skips"],
        serde_json::json!(["example-operator.v1.1.1"])
    );
    assert_eq!(
        packages[1]["channels"][0]["entries"][1]["deprecation"],
        "sample-operator.v0.1.0 is deprecated; use v0.2.0."
    );
}

#[test]
fn list_of_an_unknown_package_fails() {
    let out = opcat(&["catalog", "list", "channels", &basic(), "--package", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "error: package \"nope\" not found\n");
}

#[test]
fn render_writes_a_json_stream_that_loads_back() {
    let out = opcat(&["catalog", "render", &basic()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("{\n    \"schema\": \"olm.package\",\n    \"name\": \"example-operator\"")
    );
    let rendered =
        opcat::fbc::DeclarativeConfig::parse(&text, std::path::Path::new("rendered.json")).unwrap();
    let original = opcat::fbc::load(&fixture("basic")).unwrap();
    assert_eq!(rendered.len(), original.len());
    assert_eq!(rendered.others, original.others);
}

#[test]
fn resolve_shows_the_next_bundle() {
    // The head, v1.2.0, requires an API no catalog provides: as in OLM, a first install takes
    // the newest bundle whose dependencies can be met.
    let out = opcat(&["resolve", &basic(), "--package", "example-operator"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "bundle:   example-operator.v1.1.0\nversion:  1.1.0\nimage:    registry.example.com/example/bundle:v1.1.0\nchannel:  stable\npackage:  example-operator\n",
    );
    let out = opcat(&[
        "resolve",
        &basic(),
        "--package",
        "example-operator",
        "--installed",
        "example-operator.v1.0.0",
        "-o",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "result": "install", "package": "example-operator", "channel": "stable",
            "bundle": "example-operator.v1.1.0", "version": "1.1.0",
            "image": "registry.example.com/example/bundle:v1.1.0", "replaces": "example-operator.v1.0.0",
            "catalog": "default/basic", "dependencies": []
        })
    );
}

#[test]
fn resolve_reports_at_latest_and_errors() {
    let out = opcat(&[
        "resolve",
        &basic(),
        "--package",
        "sample-operator",
        "--installed",
        "sample-operator.v0.2.0",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "sample-operator.v0.2.0 is already at the latest version in channel alpha of package sample-operator\n"
    );
    let out = opcat(&[
        "resolve",
        &basic(),
        "--package",
        "example-operator",
        "--channel",
        "fast",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no operators found in channel fast of package example-operator in the catalog\n"
    );
    let out = opcat(&[
        "resolve",
        &fixture("invalid").display().to_string(),
        "--package",
        "broken-operator",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("invalid index:\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2_and_help_reads_well() {
    let out = opcat(&[
        "resolve",
        &basic(),
        "--package",
        "x",
        "--installed",
        "a",
        "--starting-csv",
        "b",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    let out = opcat(&["catalog", "list", "things", &basic()]);
    assert_eq!(out.status.code(), Some(2));
    let out = opcat(&["catalog", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for line in ["validate", "list", "render"] {
        assert!(help.contains(line), "{help}");
    }
    let out = opcat(&["catalog", "list", "--help"]);
    let help = stdout(&out);
    assert!(
        help.contains("- channels: Channels with their head bundle"),
        "{help}"
    );
    assert!(help.contains("-o, --output"), "{help}");
}
