//! Real bundles from the shared third-party data: every one loads, or is refused for the reason
//! opcat documents; and the argocd-operator Deployments opcat renders agree with the ones OLM v1
//! (operator-controller's registry+v1 renderer, which copies OLM v0's Deployment rules) publishes
//! as expected output. Our own fixtures cover the same rules in `bundle_load.rs`,
//! `bundle_validate.rs`, `bundle_render.rs` and `bundle_config.rs`.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bundle_support::{Install, targets, yaml};
use opcat::api::cluster_service_version::InstallModeType;
use opcat::api::subscription::SubscriptionConfig;
use opcat::bundle::ownership::{CSV_LABEL, CSV_NAMESPACE_LABEL, MANAGED_BY_LABEL};
use opcat::bundle::{Bundle, ManifestProblem, TargetNamespaces, validate_for_install};
use serde_json::Value;
use test_registry::shared_data_dir;

/// What loading and validating a bundle must give.
#[derive(Debug)]
enum Expect {
    /// Loads, validates and renders.
    Installable,
    /// Loading fails; every problem is of this kind.
    Refused(&'static str),
}

/// Every bundle directory of the data set, by path below `bundles/`.
const BUNDLES: &[(&str, Expect)] = &[
    (
        "community-operators-prod/operators/assisted-service-operator/0.0.1",
        Expect::Installable,
    ),
    (
        "community-operators-prod/operators/cluster-aas-operator/0.1.5",
        Expect::Installable,
    ),
    (
        "community-operators-prod/operators/community-kubevirt-hyperconverged/1.1.0",
        Expect::Refused("CrdV1beta1"),
    ),
    (
        "community-operators-prod/operators/community-windows-machine-config-operator/6.0.0",
        Expect::Installable,
    ),
    (
        "community-operators-prod/operators/dbaas-operator/0.5.0",
        Expect::Installable,
    ),
    (
        "community-operators-prod/operators/silicom-sts-operator/0.0.1",
        Expect::Installable,
    ),
    (
        "operator-controller/test/regression/convert/testdata/bundles/argocd-operator.v0.6.0",
        Expect::Installable,
    ),
    (
        "operator-controller/test/regression/convert/testdata/bundles/webhook-operator.v0.0.5",
        Expect::Installable,
    ),
];

/// operator-registry's test bundles (below `OPERATOR_REGISTRY`): all ship
/// `apiextensions.k8s.io/v1beta1` CRDs, so all are refused with `CrdV1beta1`.
const OPERATOR_REGISTRY: &str = "operator-registry/pkg/lib/bundle/testdata/validate";
const OPERATOR_REGISTRY_BUNDLES: &[&str] = &[
    "invalid_annotations_bundle",
    "invalid_dependencies_bundle/invalid_dependency_type",
    "invalid_dependencies_bundle/invalid_gvk_dependency",
    "invalid_dependencies_bundle/invalid_label_dependency",
    "invalid_dependencies_bundle/invalid_package_dependency",
    "invalid_manifests_bundle/invalid_v1_crd",
    "valid_bundle",
    "valid_bundle_2",
];

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

/// An install mode the CSV supports, preferring AllNamespaces.
fn supported_targets(bundle: &Bundle) -> TargetNamespaces {
    let spec = &bundle.csv.spec;
    if spec.supports_install_mode(InstallModeType::AllNamespaces) {
        TargetNamespaces::All
    } else if spec.supports_install_mode(InstallModeType::OwnNamespace) {
        targets(&["operators"])
    } else {
        targets(&["workloads"])
    }
}

#[test]
fn third_party_bundles_load_or_are_refused_for_the_documented_reason() {
    let root = shared_data_dir().join("bundles");
    let expectations: Vec<(String, &Expect)> = BUNDLES
        .iter()
        .map(|(dir, expect)| ((*dir).to_owned(), expect))
        .chain(OPERATOR_REGISTRY_BUNDLES.iter().map(|dir| {
            (
                format!("{OPERATOR_REGISTRY}/{dir}"),
                &Expect::Refused("CrdV1beta1"),
            )
        }))
        .collect();
    let listed: Vec<&str> = expectations.iter().map(|(dir, _)| dir.as_str()).collect();
    assert_eq!(
        bundle_dirs(&root),
        listed,
        "every bundle of the data set has an expectation"
    );
    for (dir, expect) in &expectations {
        let loaded = Bundle::load(&root.join(dir));
        match (expect, loaded) {
            (Expect::Installable, Ok(bundle)) => {
                validate_for_install(&bundle.csv)
                    .unwrap_or_else(|e| panic!("{dir} must validate: {e}"));
                let install = Install::new(&bundle, "operators", supported_targets(&bundle));
                let rendered = install
                    .try_render(&bundle)
                    .unwrap_or_else(|e| panic!("{dir} must render: {e}"));
                assert_eq!(
                    rendered.deployments.len(),
                    bundle.csv.spec.install.deployments().len(),
                    "{dir}"
                );
            }
            (Expect::Refused(kind), Err(error)) => {
                let kinds: Vec<&str> = error.problems().iter().map(ManifestProblem::kind).collect();
                assert!(
                    !kinds.is_empty() && kinds.iter().all(|k| k == kind),
                    "{dir}: expected only {kind}, got {error}"
                );
            }
            (expect, Ok(_)) => panic!("{dir}: expected {expect:?}, but it loads"),
            (expect, Err(error)) => panic!("{dir}: expected {expect:?}, got {error}"),
        }
    }
}

#[test]
fn third_party_invalid_manifests_are_refused_like_operator_registry_does() {
    // operator-registry's validate_test.go expects "ResourceQuota is not supported type for
    // registryV1 bundle" and "cannot unmarshal number into ... metadata.namespace" for these
    // flat manifest directories.
    let dir = shared_data_dir().join(
        "bundles/operator-registry/pkg/lib/bundle/testdata/validate/invalid_manifests_bundle",
    );
    let error = Bundle::load_layout(&dir.join("invalid_type"), "", "metadata").unwrap_err();
    assert!(
        error
            .problems()
            .iter()
            .any(|p| p.kind() == "UnsupportedKind" && p.to_string().contains("kind ResourceQuota")),
        "{error}"
    );
    let error = Bundle::load_layout(&dir.join("invalid_sa"), "", "metadata").unwrap_err();
    assert!(
        error.problems().iter().any(|p| p.kind() == "NotAnObject"
            && p.to_string().contains("etcd.serviceaccount.yaml")
            && p.to_string().contains("metadata.namespace")),
        "{error}"
    );
}

/// The argocd bundle, loaded once (its CRDs are 1.2 MB of YAML).
fn argocd_bundle() -> &'static Bundle {
    static BUNDLE: OnceLock<Bundle> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let dir = shared_data_dir().join(
            "bundles/operator-controller/test/regression/convert/testdata/bundles/argocd-operator.v0.6.0",
        );
        Bundle::load(&dir).unwrap()
    })
}

fn expected_deployment(case: &str) -> Value {
    let dir: PathBuf = shared_data_dir().join(
        "expected/operator-controller/test/regression/convert/testdata/expected-manifests/argocd-operator.v0.6.0",
    ).join(case);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .contains("_deployment_argocd-operator-controller-manager")
        })
        .unwrap();
    yaml(&std::fs::read_to_string(file).unwrap())
}

/// Our Deployment for an install into `argocd-system`, reduced to what OLM v1 also renders.
///
/// Intentional differences, removed here: opcat adds its ownership labels and owner reference
/// (OLM v1 owns objects through its ClusterExtension), the `olm.operatorGroup` pod annotation
/// (OLM v0 sets it from the OperatorGroup; OLM v1 has no OperatorGroups) and the containers'
/// `OPERATOR_CONDITION_NAME` (OLM v0 injects it; OLM v1 has no OperatorConditions). Neither adds
/// pull secrets here (no copies are passed).
fn our_deployment(targets: TargetNamespaces, config: Option<&str>) -> Value {
    let bundle = argocd_bundle();
    let mut install = Install::new(bundle, "argocd-system", targets);
    install.pull_secrets.clear();
    if let Some(config) = config {
        install = install.with_config(yaml::<SubscriptionConfig>(config));
    }
    let rendered = install.render(bundle);
    let mut deployment = serde_json::to_value(&rendered.deployments[0]).unwrap();
    let metadata = deployment["metadata"].as_object_mut().unwrap();
    metadata.remove("ownerReferences");
    let labels = metadata["labels"].as_object_mut().unwrap();
    for ours in [MANAGED_BY_LABEL, CSV_LABEL, CSV_NAMESPACE_LABEL] {
        labels.remove(ours);
    }
    if labels.is_empty() {
        metadata.remove("labels");
    }
    deployment["spec"]["template"]["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("olm.operatorGroup");
    for container in deployment["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
    {
        let env = container["env"].as_array_mut().unwrap();
        env.retain(|var| var["name"] != "OPERATOR_CONDITION_NAME");
        if env.is_empty() {
            container.as_object_mut().unwrap().remove("env");
        }
    }
    deployment
}

/// The fields both renderers must agree on: the whole Deployment spec (containers, env,
/// volumes, affinity, tolerations, node selector, resources, pod annotations, revision history)
/// and the Deployment's name, namespace, labels and annotations.
fn assert_same_deployment(case: &str, ours: &Value) {
    let expected = expected_deployment(case);
    pretty_assertions::assert_eq!(expected["spec"], ours["spec"], "{case}: spec");
    for field in ["name", "namespace", "labels", "annotations"] {
        assert_eq!(
            expected["metadata"][field], ours["metadata"][field],
            "{case}: metadata.{field}"
        );
    }
}

#[test]
fn third_party_argocd_deployments_match_olm_for_each_install_mode() {
    assert_same_deployment(
        "all-namespaces",
        &our_deployment(TargetNamespaces::All, None),
    );
    assert_same_deployment(
        "own-namespace",
        &our_deployment(targets(&["argocd-system"]), None),
    );
    assert_same_deployment(
        "single-namespace",
        &our_deployment(targets(&["argocd-watch"]), None),
    );
}

/// The `DeploymentConfig` of operator-controller's `generate-manifests.go`
/// (`WithDeploymentConfigOptions`), written as a Subscription `spec.config`.
const DEPLOYMENT_CONFIG_OPTIONS: &str = r#"
nodeSelector:
  kubernetes.io/os: linux
tolerations:
  - {key: some/key, operator: Equal, effect: NoSchedule}
  - {key: someother/key, operator: Exists, effect: NoExecute, tolerationSeconds: 120}
resources:
  requests: {cpu: 100m, memory: 128Mi}
  limits: {cpu: 500m, memory: 512Mi}
env:
  - {name: CUSTOM_ENV_VAR, value: custom-value}
  - {name: LOG_LEVEL, value: debug}
envFrom:
  - prefix: test
  - configMapRef: {name: configmapForTest}
  - secretRef: {name: secretForTest}
volumes:
  - name: test-configmap-volume
    configMap: {name: testVolumeConfigMap}
  - name: test-emptydir-volume
    emptyDir: {}
volumeMounts:
  - {name: test-configmap-volume, mountPath: /test-volume-mount, readOnly: true}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: kubernetes.io/os, operator: In, values: [linux]}
          matchFields:
            - {key: key, operator: In, values: [val1, val2]}
  podAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels: {app.kubernetes.io/name: test-app}
        topologyKey: topKey
        namespaces: [test, test2]
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector:
            matchLabels: {app.kubernetes.io/name: test-app-2}
          topologyKey: topKey2
annotations:
  foo: bar
  testkey: testval
"#;

#[test]
fn third_party_argocd_deployment_config_matches_olm() {
    assert_same_deployment(
        "with-deploymentconfig-options",
        &our_deployment(TargetNamespaces::All, Some(DEPLOYMENT_CONFIG_OPTIONS)),
    );
    assert_same_deployment(
        "with-empty-affinity",
        &our_deployment(TargetNamespaces::All, Some("affinity: {}")),
    );
    // The bundle has no affinity. OLM v0 would copy the override as is
    // (`affinity: {nodeAffinity: {}}`, which constrains nothing); OLM v1 and opcat leave the
    // affinity out, which schedules the same.
    assert_same_deployment(
        "with-empty-affinity-subtype",
        &our_deployment(TargetNamespaces::All, Some("affinity:\n  nodeAffinity: {}")),
    );
}
