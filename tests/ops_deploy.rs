//! Offline validation of `deploy/`: every manifest passes `kubernetes-validate --strict` (the
//! Kubernetes OpenAPI schemas, rejecting unknown fields) for the oldest and newest Kubernetes
//! versions opcat supports, every kustomization names files that exist, and the optional
//! registry-trust patch applies to the Deployment and still validates. Nothing needs a
//! cluster or kubectl; the tool is installed by `scripts/install-test-deps.sh` and the test
//! fails, never skips, without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Oldest (k8s-openapi's `v1_33` feature) and newest Kubernetes versions validated.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33", "1.37"];

/// Kinds `kubernetes-validate` has no schema for: opcat's custom resources (validated against
/// the generated CRDs by `tests/api_examples.rs`).
const CUSTOM_KINDS: [&str; 5] = [
    "CatalogSource",
    "Subscription",
    "OperatorGroup",
    "InstallPlan",
    "ClusterServiceVersion",
];

fn deploy_dir() -> PathBuf {
    ops_support::repo_root().join("deploy")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()))
        .into_iter()
        .filter(|doc| !doc.is_null())
        .collect()
}

fn kind(doc: &Value) -> &str {
    doc["kind"].as_str().unwrap_or_default()
}

fn is_kustomization(doc: &Value) -> bool {
    matches!(kind(doc), "Kustomization" | "Component")
}

/// Runs `kubernetes-validate --strict` on `files` for every supported version; returns the
/// output lines.
fn kubernetes_validate(files: &[PathBuf]) -> Vec<String> {
    let tool = ops_support::test_venv().join("bin/kubernetes-validate");
    let mut lines = Vec::new();
    for version in KUBERNETES_VERSIONS {
        let output = Command::new(&tool)
            .args(["--strict", "--kubernetes-version", version])
            .args(files)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", tool.display()));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "kubernetes-validate {version} failed:\n{text}"
        );
        lines.extend(text.lines().map(str::to_owned));
    }
    lines
}

#[test]
fn every_manifest_in_deploy_passes_kubernetes_validate_strict() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    let mut manifests = Vec::new();
    let mut expected_passes = 0;
    let mut custom_resources = 0;
    for file in &files {
        let docs = documents(file);
        if docs.iter().any(is_kustomization) {
            continue; // checked by the next test
        }
        if docs.iter().all(Value::is_array) {
            continue; // JSON patches, checked by the registry-trust test
        }
        for doc in &docs {
            assert!(
                doc["apiVersion"].is_string() && doc["kind"].is_string(),
                "{}: a document without apiVersion and kind",
                file.display()
            );
            if CUSTOM_KINDS.contains(&kind(doc)) {
                custom_resources += 1;
            } else {
                expected_passes += 1;
            }
        }
        manifests.push(file.clone());
    }
    assert!(
        expected_passes > 10,
        "found only {expected_passes} objects in deploy/"
    );

    let lines = kubernetes_validate(&manifests);
    let passes = lines
        .iter()
        .filter(|l| l.contains(" passed for resource "))
        .count();
    let expected = |line: &str| {
        let passed = line.contains(" passed for resource ");
        let custom_resource = line.starts_with("WARN")
            && line.contains("Couldn't find schema for kind")
            && CUSTOM_KINDS
                .iter()
                .any(|k| line.contains(&format!("kind {k} ")));
        passed || custom_resource
    };
    let problems: Vec<&String> = lines.iter().filter(|l| !expected(l)).collect();
    assert!(
        problems.is_empty(),
        "kubernetes-validate reported:\n{problems:#?}"
    );
    assert_eq!(
        passes,
        expected_passes * KUBERNETES_VERSIONS.len(),
        "every object was validated:\n{lines:#?}"
    );
    let skipped = lines.len() - passes;
    assert_eq!(skipped, custom_resources * KUBERNETES_VERSIONS.len());
}

#[test]
fn kustomizations_name_files_that_exist_and_cover_the_controller() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    let mut checked = 0;
    for file in files {
        let docs = documents(&file);
        let Some(kustomization) = docs.iter().find(|d| is_kustomization(d)) else {
            continue;
        };
        let dir = file.parent().unwrap();
        let mut named = Vec::new();
        for key in ["resources", "components"] {
            for entry in kustomization[key].as_array().into_iter().flatten() {
                named.push(entry.as_str().unwrap().to_owned());
            }
        }
        for patch in kustomization["patches"].as_array().into_iter().flatten() {
            named.push(patch["path"].as_str().unwrap().to_owned());
        }
        for name in named {
            let path = dir.join(&name);
            let exists = path.is_file() || path.join("kustomization.yaml").is_file();
            assert!(
                exists,
                "{} names {name}, which does not exist",
                file.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 3, "deploy/, deploy/crds and the component");

    // The top-level kustomization installs everything opcat needs, in opcat-system.
    let top = &documents(&deploy_dir().join("kustomization.yaml"))[0];
    assert_eq!(top["namespace"], "opcat-system");
    let resources: Vec<&str> = top["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for needed in [
        "crds",
        "namespace.yaml",
        "rbac.yaml",
        "manager.yaml",
        "service.yaml",
        "package-api.yaml",
    ] {
        assert!(
            resources.contains(&needed),
            "deploy/kustomization.yaml lacks {needed}"
        );
    }
}

/// The Deployment of `deploy/manager.yaml`.
fn deployment() -> Value {
    documents(&deploy_dir().join("manager.yaml"))
        .into_iter()
        .find(|d| kind(d) == "Deployment")
        .unwrap()
}

#[test]
fn the_deployment_is_hardened_and_runs_with_leader_election() {
    let deployment = deployment();
    let spec = &deployment["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    assert_eq!(deployment["spec"]["replicas"], 2);
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "run");
    assert!(args.contains(&"--leader-elect"));
    assert!(args.contains(&"--admin-address=0.0.0.0:8080"));
    assert!(args.contains(&"--cache-dir=/var/cache/opcat"));
    assert!(args.contains(&"--global-catalog-namespace=olm"));

    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    for kind in ["requests", "limits"] {
        assert!(container["resources"][kind]["memory"].is_string(), "{kind}");
        assert!(container["resources"][kind]["cpu"].is_string(), "{kind}");
    }

    // The cache directory is a writable volume.
    let mounts: BTreeMap<&str, &str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap(),
                m["name"].as_str().unwrap(),
            )
        })
        .collect();
    let cache_volume = mounts["/var/cache/opcat"];
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == cache_volume)
        .unwrap();
    assert!(volume["emptyDir"].is_object());

    // Probes on the admin port; identity and Lease namespace from the downward API.
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/livez");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    let env: BTreeMap<&str, &Value> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                &e["valueFrom"]["fieldRef"]["fieldPath"],
            )
        })
        .collect();
    assert_eq!(env["POD_NAME"], "metadata.name");
    assert_eq!(env["POD_NAMESPACE"], "metadata.namespace");
    // Room for --shutdown-timeout (20s) and releasing the lease.
    assert!(spec["terminationGracePeriodSeconds"].as_u64().unwrap() > 25);
}

#[test]
fn the_registry_trust_component_patches_the_deployment_into_a_valid_one() {
    let dir = deploy_dir().join("optional/registry-trust");
    let component = &documents(&dir.join("kustomization.yaml"))[0];
    assert_eq!(component["kind"], "Component");
    let patch_entry = &component["patches"][0];
    assert_eq!(patch_entry["target"]["kind"], "Deployment");
    assert_eq!(
        patch_entry["target"]["name"],
        deployment()["metadata"]["name"]
    );
    let ops = documents(&dir.join(patch_entry["path"].as_str().unwrap()))
        .into_iter()
        .next()
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_value(ops).unwrap();
    let mut patched = deployment();
    json_patch::patch(&mut patched, &patch).expect("the patch applies to deploy/manager.yaml");

    let container = &patched["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .contains(&Value::from("--ca-file=/etc/opcat/registry-ca/ca.crt"))
    );
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("deployment-with-registry-trust.yaml");
    std::fs::write(&file, serde_json::to_string_pretty(&patched).unwrap()).unwrap();
    let lines = kubernetes_validate(&[file]);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(" passed for resource "))
            .count(),
        KUBERNETES_VERSIONS.len(),
        "{lines:#?}"
    );
}
