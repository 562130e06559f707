//! `opcat bundle validate` and `opcat bundle render`, run as a user runs them, on the example
//! bundles of this repository and on broken copies of them.

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn widget(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("bundles/widget-operator/{version}"))
}

/// A copy of widget-operator 1.2.0 in a temporary directory, to break.
fn widget_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(widget("1.2.0").join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path().join(sub).join(entry.file_name())).unwrap();
        }
    }
    dir
}

const CSV: &str = "manifests/widget-operator.clusterserviceversion.yaml";

fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let content = std::fs::read_to_string(&path).unwrap();
    assert!(content.contains(from), "{file} has no {from:?}");
    std::fs::write(&path, content.replacen(from, to, 1)).unwrap();
}

#[test]
fn validate_accepts_the_example_bundles_with_a_summary() {
    for version in ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0"] {
        let dir = widget(version);
        let out = opcat_in(
            Path::new("/"),
            &["bundle", "validate", &dir.display().to_string()],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{version}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{version}");
        assert_eq!(
            text(&out.stdout),
            format!(
                "bundle {} is valid: widget-operator.v{version} (package widget-operator), 3 \
                 manifests, 0 warnings\n",
                dir.display()
            )
        );
    }
}

#[test]
fn validate_reports_every_problem_at_once_and_exits_1() {
    let dir = widget_copy();
    edit(dir.path(), CSV, "  version: 1.2.0\n", "  version: \"\"\n");
    edit(
        dir.path(),
        CSV,
        "  annotations:\n",
        "  annotations:\n    olm.skiprange: '<1.2.0'\n",
    );
    edit(
        dir.path(),
        "metadata/annotations.yaml",
        "registry+v1",
        "registry+v2",
    );
    std::fs::write(
        dir.path().join("manifests/quota.yaml"),
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("metadata/dependencies.yaml"),
        "dependencies:\n  - type: olm.package\n    value:\n      packageName: gadget-operator\n  - type: olm.crd\n    value: {}\n",
    )
    .unwrap();
    let out = opcat_in(dir.path(), &["bundle", "validate", "."]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    for expected in [
        "error: metadata/annotations.yaml: media type \"registry+v2\" is not supported",
        "error: manifests/quota.yaml: kind ResourceQuota (v1) is not allowed in a registry+v1 bundle",
        "error: manifests/widget-operator.clusterserviceversion.yaml: spec.version is missing",
        "error: manifests/widget-operator.clusterserviceversion.yaml: provided annotation olm.skiprange uses wrong case and should be olm.skipRange instead",
        "error: metadata/dependencies.yaml: dependencies[0]: Package version is empty",
        "error: metadata/dependencies.yaml: dependencies[1]: couldn't parse dependency of type olm.crd",
        "bundle . is invalid: 6 errors, 0 warnings\n",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
    assert_eq!(err.matches("error: ").count(), 6, "{err}");
}

#[test]
fn validate_warnings_do_not_fail() {
    let dir = widget_copy();
    // A CRD the CSV does not own: shipped and installed, but worth a warning.
    let crd = std::fs::read_to_string(dir.path().join("manifests/example.opcat.dev_widgets.yaml"))
        .unwrap()
        .replace("widgets.example.opcat.dev", "gizmos.example.opcat.dev")
        .replace("plural: widgets", "plural: gizmos");
    std::fs::write(dir.path().join("manifests/gizmos.yaml"), crd).unwrap();
    let out = opcat_in(dir.path(), &["bundle", "validate", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "warning: manifests/gizmos.yaml: CRD gizmos.example.opcat.dev is present in bundle \
         \"widget-operator.v1.2.0\" but not defined in CSV (spec.customresourcedefinitions.owned)\n"
    );
    assert!(
        text(&out.stdout).ends_with("4 manifests, 1 warning\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn validate_refuses_what_is_not_a_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let out = opcat_in(dir.path(), &["bundle", "validate", "widgte"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "error: no such directory: widgte\n");
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = opcat_in(dir.path(), &["bundle", "validate", "empty"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "error: cannot read bundle annotations metadata/annotations.yaml: No such file"
        ),
        "{err}"
    );
    assert!(err.contains("error: cannot read manifests/"), "{err}");
}

fn render(args: &[&str]) -> Output {
    let bundle = widget("1.2.0").display().to_string();
    let mut all = vec!["bundle", "render", bundle.as_str()];
    all.extend_from_slice(args);
    opcat_in(Path::new("/"), &all)
}

#[test]
fn render_shows_the_objects_and_the_copies_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("vendor-pull.yaml");
    std::fs::write(
        &secret,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: vendor-pull\n  namespace: olm\n\
         type: kubernetes.io/dockerconfigjson\n\
         stringData:\n  .dockerconfigjson: '{\"auths\":{\"registry.example.com\":{\"auth\":\"dXNlcjpzM2NyZXQ=\"}}}'\n",
    )
    .unwrap();
    let out = render(&[
        "--namespace",
        "widgets",
        "--catalog",
        "olm/vendor",
        "--pull-secret",
        &secret.display().to_string(),
        "--pull-secret",
        "other-pull",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    let copy = opcat::pull_secrets::names::copy_name("olm", "vendor", "vendor-pull");
    let other = opcat::pull_secrets::names::copy_name("olm", "vendor", "other-pull");
    let mut copies = [copy.clone(), other.clone()];
    copies.sort();
    assert!(
        yaml.starts_with(&format!(
            "# widget-operator.v1.2.0 into namespace widgets, watching all namespaces\n\
             # pull-secret copies opcat creates in widgets (data: the source's entries for the operator's images; not shown):\n\
             #   Secret {} (copy of olm/{})\n\
             #   Secret {} (copy of olm/{})\n\
             # attached to ServiceAccounts (imagePullSecrets, kept beside existing entries): default, widget-auditor, widget-controller\n\
             # listed in the pod templates of Deployments: widget-controller, widget-dashboard\n",
            copies[0],
            if copies[0] == copy { "vendor-pull" } else { "other-pull" },
            copies[1],
            if copies[1] == copy { "vendor-pull" } else { "other-pull" },
        )),
        "{yaml}"
    );
    // Never the secret's data.
    assert!(!yaml.contains("dXNlcjpzM2NyZXQ"), "{yaml}");
    assert!(!yaml.contains("dockerconfigjson"), "{yaml}");
    let documents: Vec<serde_json::Value> = yaml
        .split("\n---\n")
        .skip(1)
        .map(|doc| serde_saphyr::from_str(doc).unwrap())
        .collect();
    let kinds: Vec<&str> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"OperatorCondition"), "{kinds:?}");
    assert!(!kinds.contains(&"Secret"), "{kinds:?}");
    for account in documents.iter().filter(|d| d["kind"] == "ServiceAccount") {
        let attached: Vec<&str> = account["imagePullSecrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(attached, copies, "{account}");
        assert_eq!(account["metadata"]["namespace"], "widgets");
    }
    let deployments: Vec<&serde_json::Value> = documents
        .iter()
        .filter(|d| d["kind"] == "Deployment")
        .collect();
    assert_eq!(deployments.len(), 2);
    for deployment in deployments {
        let in_pods: Vec<&str> = deployment["spec"]["template"]["spec"]["imagePullSecrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(in_pods, copies);
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
            ""
        );
    }
}

#[test]
fn render_follows_the_install_mode() {
    let out = render(&[
        "--namespace",
        "widgets",
        "--install-mode",
        "SingleNamespace",
        "--target-namespaces",
        "team-a",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    assert!(yaml.starts_with("# widget-operator.v1.2.0 into namespace widgets, watching namespaces [team-a]\n# no pull secrets"), "{yaml}");
    assert!(yaml.contains("olm.targetNamespaces: team-a"), "{yaml}");
    // MultiNamespace is not supported by this CSV: the controller's own refusal.
    let out = render(&["--namespace", "widgets", "--target-namespaces", "a,b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("MultiNamespace"),
        "{}",
        text(&out.stderr)
    );
    let out = render(&[
        "--namespace",
        "widgets",
        "--install-mode",
        "SingleNamespace",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: --install-mode SingleNamespace needs exactly one --target-namespaces\n"
    );
    let out = render(&["--namespace", "widgets", "--pull-secret", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--pull-secret needs --catalog NAMESPACE/NAME"));
}
