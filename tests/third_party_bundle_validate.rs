//! `opcat bundle validate` on every bundle of the shared third-party data: the ones opcat can
//! install pass; the others fail, each with the problem its publisher (operator-registry's
//! `validate_test.go`, `expected/operator-registry/bundle_validate_test.cases.tsv`) expects.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use test_registry::shared_data_dir;

const OPERATOR_REGISTRY: &str = "operator-registry/pkg/lib/bundle/testdata/validate";

/// What `bundle validate` must say about each bundle directory (below `bundles/`): `None` valid,
/// else the messages stderr must contain.
const BUNDLES: &[(&str, Option<&[&str]>)] = &[
    (
        "community-operators-prod/operators/assisted-service-operator/0.0.1",
        None,
    ),
    (
        "community-operators-prod/operators/cluster-aas-operator/0.1.5",
        None,
    ),
    (
        "community-operators-prod/operators/community-kubevirt-hyperconverged/1.1.0",
        Some(&["uses apiextensions.k8s.io/v1beta1, which Kubernetes no longer serves"]),
    ),
    (
        "community-operators-prod/operators/community-windows-machine-config-operator/6.0.0",
        None,
    ),
    (
        "community-operators-prod/operators/dbaas-operator/0.5.0",
        None,
    ),
    (
        "community-operators-prod/operators/silicom-sts-operator/0.0.1",
        None,
    ),
    (
        "operator-controller/test/regression/convert/testdata/bundles/argocd-operator.v0.6.0",
        None,
    ),
    (
        "operator-controller/test/regression/convert/testdata/bundles/webhook-operator.v0.0.5",
        None,
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_annotations_bundle",
        Some(&["error: metadata/annotations.yaml: media type \"registry+v2\" is not supported"]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_dependencies_bundle/invalid_dependency_type",
        Some(&[
            "error: metadata/dependencies.yaml: dependencies[0]: couldn't parse dependency of type olm.crd",
        ]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_dependencies_bundle/invalid_gvk_dependency",
        Some(&[
            "error: metadata/dependencies.yaml: dependencies[0]: couldn't parse dependency of type olm.gvk",
        ]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_dependencies_bundle/invalid_label_dependency",
        Some(&["error: metadata/dependencies.yaml: dependencies[0]: Label information is missing"]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_dependencies_bundle/invalid_package_dependency",
        Some(&[
            "dependencies[0]: Package name is empty",
            "dependencies[1]: Invalid semver format version",
            "dependencies[2]: Package version is empty",
        ]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/invalid_manifests_bundle/invalid_v1_crd",
        Some(&[
            "CustomResourceDefinition objectbuckets.objectbucket.io: spec.version is not a field of apiextensions.k8s.io/v1",
            "CustomResourceDefinition objectbuckets.objectbucket.io: version v1alpha1 has no schema.openAPIV3Schema",
        ]),
    ),
    // operator-registry's valid bundles: valid for OLM when they were written, but their CRDs
    // are apiextensions.k8s.io/v1beta1, which Kubernetes 1.22+ does not serve.
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/valid_bundle",
        Some(&["uses apiextensions.k8s.io/v1beta1, which Kubernetes no longer serves"]),
    ),
    (
        "operator-registry/pkg/lib/bundle/testdata/validate/valid_bundle_2",
        Some(&["uses apiextensions.k8s.io/v1beta1, which Kubernetes no longer serves"]),
    ),
];

/// operator-registry's flat manifest directories (`invalid_manifests_bundle/<dir>`), checked
/// as the manifests of a bundle with `valid_bundle`'s annotations, and what each must report
/// (`ValidateBundleContent` cases).
const FLAT: &[(&str, &str)] = &[
    (
        "invalid_csv",
        "spec.installModes is empty: install modes not found",
    ),
    (
        "invalid_crd",
        "spec.versions must contain unique version names",
    ),
    (
        "invalid_sa",
        "etcd.serviceaccount.yaml is not a Kubernetes object: metadata.namespace",
    ),
    (
        "invalid_type",
        "kind ResourceQuota (v1) is not allowed in a registry+v1 bundle",
    ),
    (
        "invalid_bundle",
        "owned CRD etcdclusters.etcd.database.coreos.com/v1beta2 not found in bundle \"etcdoperator.v0.9.4\"",
    ),
    (
        "invalid_annotation_name",
        "provided annotation olm.operatorgroup uses wrong case and should be olm.operatorGroup instead",
    ),
];

fn validate(dir: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(["bundle", "validate", &dir.display().to_string()])
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Directories below `root` that hold a `manifests/` directory, relative to `root`.
fn bundle_dirs(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "manifests") {
                found.push(dir.strip_prefix(root).unwrap().display().to_string());
            } else {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn third_party_bundles_validate_or_fail_with_the_expected_problem() {
    let root = shared_data_dir().join("bundles");
    let listed: Vec<&str> = BUNDLES.iter().map(|(dir, _)| *dir).collect();
    assert_eq!(
        bundle_dirs(&root),
        listed,
        "every bundle of the data set is checked"
    );
    for (dir, expected) in BUNDLES {
        let out = validate(&root.join(dir));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        match expected {
            None => {
                assert_eq!(out.status.code(), Some(0), "{dir}:\n{stderr}");
                assert!(stdout.contains(" is valid: "), "{dir}: {stdout}");
                assert!(!stderr.contains("error: "), "{dir}:\n{stderr}");
            }
            Some(messages) => {
                assert_eq!(out.status.code(), Some(1), "{dir}: {stdout}");
                assert_eq!(stdout, "", "{dir}");
                for message in *messages {
                    assert!(
                        stderr.contains(message),
                        "{dir}: no {message:?} in\n{stderr}"
                    );
                }
                assert!(stderr.contains(" is invalid: "), "{dir}:\n{stderr}");
            }
        }
    }
}

#[test]
fn third_party_invalid_manifests_fail_with_the_expected_problem() {
    let data = shared_data_dir().join("bundles").join(OPERATOR_REGISTRY);
    let annotations = data.join("valid_bundle/metadata/annotations.yaml");
    for (flat, message) in FLAT {
        let bundle = tempfile::tempdir().unwrap();
        let manifests: PathBuf = bundle.path().join("manifests");
        std::fs::create_dir(&manifests).unwrap();
        std::fs::create_dir(bundle.path().join("metadata")).unwrap();
        std::fs::copy(
            &annotations,
            bundle.path().join("metadata/annotations.yaml"),
        )
        .unwrap();
        for entry in std::fs::read_dir(data.join("invalid_manifests_bundle").join(flat)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), manifests.join(entry.file_name())).unwrap();
        }
        let out = validate(bundle.path());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flat}");
        assert!(
            stderr.contains(message),
            "{flat}: no {message:?} in\n{stderr}"
        );
    }
    // operator-registry's "extra crd" case is a warning there and here.
    let bundle = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bundle.path().join("manifests")).unwrap();
    std::fs::create_dir(bundle.path().join("metadata")).unwrap();
    std::fs::copy(
        &annotations,
        bundle.path().join("metadata/annotations.yaml"),
    )
    .unwrap();
    for entry in std::fs::read_dir(data.join("invalid_manifests_bundle/invalid_bundle_2")).unwrap()
    {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            bundle.path().join("manifests").join(entry.file_name()),
        )
        .unwrap();
    }
    let stderr = text(&validate(bundle.path()).stderr);
    assert!(
        stderr.contains(
            "warning: manifests/etcdclusters.etcd.database.coreos.com.crd.yaml: CRD \
             etcdclusters.etcd.database.coreos.com is present in bundle \"etcdoperator.v0.9.4\" \
             but not defined in CSV"
        ),
        "{stderr}"
    );
}
