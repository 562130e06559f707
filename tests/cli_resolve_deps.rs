//! `opcat resolve` with dependencies across catalogs (issue 13), run as a user runs it on the
//! catalogs in `tests/fixtures/fbc/deps`.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fbc_support;

use fbc_support::{fixture, opcat, stderr, stdout};

fn ops() -> String {
    fixture("deps/ops").display().to_string()
}

fn community() -> String {
    format!("olm/community={}", fixture("deps/community").display())
}

fn resolve(package: &str, extra: &[&str]) -> std::process::Output {
    let (ops, community) = (ops(), community());
    let mut args = vec![
        "resolve",
        &ops,
        "--catalog",
        &community,
        "--namespace",
        "team-a",
        "--package",
        package,
    ];
    args.extend_from_slice(extra);
    opcat(&args)
}

#[test]
fn the_plan_is_printed_as_a_dependency_tree() {
    let out = resolve("app", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "bundle:   app.v1.1.0\n\
         version:  1.1.0\n\
         image:    registry.example.com/app-bundle:v1.1.0\n\
         channel:  stable\n\
         package:  app\n\
         dependencies:\n\
         app.v1.1.0\n\
         ├── requires package etcd >=0.9.0: etcd.v0.9.2 (0.9.2, channel stable, catalog olm/community)\n\
         └── requires API db.example.com/v1 Database: db-operator.v1.0.0 (1.0.0, channel stable, catalog team-a/ops)\n    \
         └── requires package storage >=1.0.0: storage.v1.0.0 (1.0.0, channel stable, catalog team-a/ops)\n\
         install order: etcd.v0.9.2, storage.v1.0.0, db-operator.v1.0.0, app.v1.1.0\n"
    );
}

#[test]
fn the_plan_as_json_lists_dependencies_in_install_order() {
    let out = resolve("app", &["-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["result"], "install");
    assert_eq!(json["bundle"], "app.v1.1.0");
    assert_eq!(json["catalog"], "team-a/ops");
    let dependencies: Vec<(String, String, String)> = json["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["bundle"].as_str().unwrap().to_owned(),
                d["catalog"].as_str().unwrap().to_owned(),
                format!(
                    "{} {}",
                    d["requiredBy"]["bundle"], d["requiredBy"]["requirement"]
                ),
            )
        })
        .collect();
    assert_eq!(
        dependencies,
        [
            (
                "etcd.v0.9.2".into(),
                "olm/community".into(),
                r#""app.v1.1.0" "requires package etcd >=0.9.0""#.into()
            ),
            (
                "storage.v1.0.0".into(),
                "team-a/ops".into(),
                r#""db-operator.v1.0.0" "requires package storage >=1.0.0""#.into()
            ),
            (
                "db-operator.v1.0.0".into(),
                "team-a/ops".into(),
                r#""app.v1.1.0" "requires API db.example.com/v1 Database""#.into()
            ),
        ]
    );
}

#[test]
fn what_is_missing_is_named_and_exits_1() {
    let out = resolve("broken", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "error: broken.v1.0.0 requires API etcd.database.coreos.com/v1beta2 EtcdCluster; no \
         catalog visible to namespace team-a provides it\n"
    );
    let out = resolve("picky", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: picky.v1.0.0 requires package etcd >=2.0.0; no version of etcd in that range is \
         visible to namespace team-a (found 0.9.0, 0.9.2)\n"
    );
}

#[test]
fn without_the_second_catalog_the_dependency_is_missing() {
    let ops = format!("ops={}", ops());
    let out = opcat(&[
        "resolve",
        &ops,
        "--package",
        "app",
        "--starting-csv",
        "app.v1.1.0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: app.v1.1.0 requires package etcd >=0.9.0; no catalog visible to namespace \
         default provides it\n"
    );
    // Without a starting CSV, as OLM does, the newest bundle whose dependencies are met wins.
    let out = opcat(&["resolve", &ops, "--package", "app"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("bundle:   app.v1.0.0\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn catalog_arguments_are_checked_and_described() {
    let (ops, community) = (ops(), community());
    let out = opcat(&[
        "resolve",
        &format!("olm/community={ops}"),
        "--catalog",
        &community,
        "--package",
        "app",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: two catalogs are named olm/community; name them with NAME=SOURCE\n"
    );
    let out = opcat(&["resolve", "x@high=dir", "--package", "app"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid priority"),
        "{}",
        stderr(&out)
    );
    let out = opcat(&["resolve", "--help"]);
    let help = stdout(&out);
    for text in [
        "--catalog <[NAME[@PRIORITY]=]SOURCE>",
        "--namespace <NAMESPACE>",
        "[[NAMESPACE/]NAME[@PRIORITY]=]SOURCE",
        "one\nprovider per API",
    ] {
        assert!(help.contains(text), "{help}");
    }
}
