//! Loading bundle directories: what opm accepts is accepted, what opcat cannot install is refused
//! with an error that names the bundle, the file and the cause, and every problem is reported at
//! once.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use bundle_support::{fixture, load, minimal_csv, temp_bundle, widget};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use opcat::bundle::{Bundle, LoadError, LoadWarning, ManifestProblem};

fn load_error(name: &str) -> LoadError {
    match Bundle::load(&fixture(name)) {
        Ok(bundle) => panic!("{name} must not load, got {}", bundle.name()),
        Err(error) => error,
    }
}

fn problem_kinds(error: &LoadError) -> Vec<&'static str> {
    error.problems().iter().map(ManifestProblem::kind).collect()
}

#[test]
fn the_example_bundles_load() {
    for version in ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0"] {
        let bundle = load(&widget(version));
        assert_eq!(bundle.name(), format!("widget-operator.v{version}"));
        assert_eq!(
            bundle.csv_file,
            "widget-operator.clusterserviceversion.yaml"
        );
        let kinds: Vec<&str> = bundle.objects.iter().map(|o| o.kind()).collect();
        assert_eq!(kinds, ["CustomResourceDefinition", "Service"]);
        assert!(bundle.warnings.is_empty(), "{:?}", bundle.warnings);
        assert!(
            bundle.metadata.is_empty(),
            "annotations.yaml is left to bundle::annotations"
        );
    }
}

#[test]
fn dot_files_and_sub_directories_are_skipped_and_json_manifests_read() {
    let bundle = load(&fixture("gizmo"));
    let mut files: Vec<&str> = bundle.objects.iter().map(|o| o.file.as_str()).collect();
    files.sort_unstable();
    assert_eq!(
        files,
        [
            "default_v1_serviceaccount.yaml",
            "gizmo-critical_scheduling.k8s.io_v1_priorityclass.yaml",
            "gizmo-leader_rbac.authorization.k8s.io_v1_role.yaml",
            "gizmo-leader_rbac.authorization.k8s.io_v1_rolebinding.yaml",
            "gizmo-metrics_v1_service.json",
            "gizmo-settings_v1_configmap.yaml",
            "gizmo-viewer_rbac.authorization.k8s.io_v1_clusterrole.yaml",
            "gizmo_v1_serviceaccount.yaml",
            "gizmos.example.com.crd.yaml",
        ],
        "the broken .editor-backup.yaml and notes/README.md must not be read"
    );
    let service = bundle
        .objects
        .iter()
        .find(|o| o.kind() == "Service")
        .unwrap();
    assert_eq!(service.name(), "gizmo-metrics");
    assert_eq!(
        bundle.crds().map(|c| c.name()).collect::<Vec<_>>(),
        ["gizmos.example.com"]
    );
}

#[test]
fn a_missing_api_version_is_filled_in_only_for_kinds_olm_creates_with_typed_clients() {
    let bundle = load(&fixture("gizmo"));
    assert_eq!(
        bundle.warnings,
        [LoadWarning::DefaultedApiVersion {
            file: "gizmo-viewer_rbac.authorization.k8s.io_v1_clusterrole.yaml".to_owned(),
            kind: "ClusterRole".to_owned(),
            api_version: "rbac.authorization.k8s.io/v1",
        }]
    );
    let role = bundle
        .objects
        .iter()
        .find(|o| o.name() == "gizmo-viewer")
        .unwrap();
    assert_eq!(role.api_version(), "rbac.authorization.k8s.io/v1");

    let dir = temp_bundle(&[(
        "manifests/pdb.yaml",
        "kind: PodDisruptionBudget\nmetadata:\n  name: tiny\n",
    )]);
    let error = Bundle::load(dir.path()).unwrap_err();
    assert_eq!(problem_kinds(&error), ["NotAnObject"]);
    assert!(
        error.to_string().contains(
            "manifests/pdb.yaml is not a Kubernetes object: apiVersion and kind are required"
        ),
        "{error}"
    );
}

#[test]
fn dependencies_and_properties_are_kept_as_json() {
    let bundle = load(&fixture("gizmo"));
    assert_eq!(
        bundle.metadata.keys().collect::<Vec<_>>(),
        ["dependencies.yaml", "properties.yaml"]
    );
    let dependencies = bundle.dependencies();
    assert_eq!(dependencies.len(), 1);
    assert_eq!(dependencies[0]["type"], "olm.package");
    assert_eq!(dependencies[0]["value"]["packageName"], "widget-operator");
    let properties = bundle.properties();
    assert_eq!(properties.len(), 1);
    assert_eq!(properties[0]["type"], "olm.maxOpenShiftVersion");
}

#[test]
fn a_bundle_without_csv_is_refused() {
    let error = load_error("no-csv");
    assert_eq!(problem_kinds(&error), ["NoClusterServiceVersion"]);
    let message = error.to_string();
    assert!(message.contains("no-csv"), "names the bundle: {message}");
    assert!(
        message.contains("no ClusterServiceVersion in manifests/"),
        "{message}"
    );
    assert_eq!(error.kind(), "BundleInvalid");
}

#[test]
fn a_bundle_with_two_csvs_is_refused_naming_both_files() {
    let error = load_error("two-csvs");
    assert_eq!(problem_kinds(&error), ["SeveralClusterServiceVersions"]);
    let message = error.to_string();
    assert!(
        message.contains(
            "more than one ClusterServiceVersion: manifests/a.clusterserviceversion.yaml, \
             manifests/b.clusterserviceversion.yaml"
        ),
        "{message}"
    );
}

#[test]
fn an_unsupported_kind_is_refused_with_the_allowed_list() {
    let error = load_error("unsupported-kind");
    assert_eq!(problem_kinds(&error), ["UnsupportedKind"]);
    let message = error.to_string();
    assert!(
        message.contains(
            "manifests/quota_v1_resourcequota.yaml: kind ResourceQuota (v1) is not allowed in a \
             registry+v1 bundle; allowed kinds: ClusterServiceVersion, CustomResourceDefinition,"
        ),
        "{message}"
    );
    assert!(message.contains("NetworkPolicy, PodMonitor"), "{message}");
}

#[test]
fn a_v1beta1_crd_is_refused_with_a_clear_reason() {
    let error = load_error("crd-v1beta1");
    assert_eq!(problem_kinds(&error), ["CrdV1beta1"]);
    let message = error.to_string();
    assert!(
        message.contains(
            "manifests/tinies.example.com.crd.yaml: CustomResourceDefinition tinies.example.com \
             uses apiextensions.k8s.io/v1beta1, which Kubernetes no longer serves"
        ),
        "{message}"
    );
    assert!(
        message.contains("apiextensions.k8s.io/v1 CRDs"),
        "{message}"
    );
}

#[test]
fn a_multi_document_file_contributes_its_first_document_with_a_warning() {
    let bundle = load(&fixture("multi-doc"));
    let names: Vec<&str> = bundle.objects.iter().map(|o| o.name()).collect();
    assert_eq!(names, ["settings"]);
    assert_eq!(
        bundle.warnings,
        [LoadWarning::ExtraDocuments {
            file: "settings_v1_configmap.yaml".to_owned(),
            ignored: 1,
        }]
    );
    assert_eq!(
        bundle.warnings[0].to_string(),
        "manifests/settings_v1_configmap.yaml holds 2 YAML documents; only the first is used, \
         as opm does"
    );
}

#[test]
fn bare_numbers_are_accepted_as_resource_quantities() {
    let bundle = load(&fixture("numeric-quantities"));
    let deployment = &bundle.csv.spec.install.deployments()[0];
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    let resources = pod.containers[0].resources.as_ref().unwrap();
    let limits = resources.limits.as_ref().unwrap();
    let requests = resources.requests.as_ref().unwrap();
    assert_eq!(limits["cpu"], Quantity("1".to_owned()));
    assert_eq!(limits["memory"], Quantity("134217728".to_owned()));
    assert_eq!(requests["cpu"], Quantity("0.5".to_owned()));
    assert_eq!(requests["memory"], Quantity("64Mi".to_owned()));
    let init = pod.init_containers.as_ref().unwrap()[0]
        .resources
        .as_ref()
        .unwrap();
    assert_eq!(
        init.requests.as_ref().unwrap()["cpu"],
        Quantity("2".to_owned())
    );
    assert_eq!(
        pod.overhead.as_ref().unwrap()["cpu"],
        Quantity("1".to_owned())
    );
    let volume = &pod.volumes.as_ref().unwrap()[0];
    assert_eq!(
        volume.empty_dir.as_ref().unwrap().size_limit,
        Some(Quantity("1073741824".to_owned()))
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let error = load_error("several-problems");
    let mut kinds = problem_kinds(&error);
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "CrdV1beta1",
            "NotAnObject",
            "SeveralClusterServiceVersions",
            "Syntax",
            "UnsupportedKind",
        ]
    );
    let message = error.to_string();
    for expected in [
        "manifests/broken.yaml is not valid YAML or JSON",
        "manifests/nameless_v1_configmap.yaml is not a Kubernetes object: ConfigMap has no \
         metadata.name",
        "kind ResourceQuota",
        "CustomResourceDefinition tinies.example.com uses apiextensions.k8s.io/v1beta1",
        "more than one ClusterServiceVersion",
    ] {
        assert!(
            message.contains(expected),
            "missing {expected:?} in {message}"
        );
    }
}

#[test]
fn a_directory_without_manifests_names_the_missing_path() {
    let dir = fixture("does-not-exist");
    let error = Bundle::load(&dir).unwrap_err();
    assert_eq!(error.kind(), "BundleUnreadable");
    assert!(error.problems().is_empty());
    let message = error.to_string();
    assert!(
        message.contains(&dir.join("manifests").display().to_string()),
        "{message}"
    );
}

#[test]
fn a_csv_that_does_not_match_the_schema_names_the_field() {
    let csv = minimal_csv().replace("version: 0.1.0", "version: [0, 1, 0]");
    let dir = temp_bundle(&[("manifests/csv.yaml", &csv)]);
    let error = Bundle::load(dir.path()).unwrap_err();
    assert_eq!(problem_kinds(&error), ["InvalidClusterServiceVersion"]);
    let message = error.to_string();
    assert!(
        message.contains("ClusterServiceVersion in manifests/csv.yaml is invalid: spec.version"),
        "{message}"
    );
}

#[test]
fn metadata_that_is_not_yaml_is_reported() {
    let dir = temp_bundle(&[("metadata/dependencies.yaml", "dependencies: [unclosed\n")]);
    let error = Bundle::load(dir.path()).unwrap_err();
    assert_eq!(problem_kinds(&error), ["Syntax"]);
    assert!(
        error
            .to_string()
            .contains("metadata/dependencies.yaml is not valid YAML or JSON"),
        "{error}"
    );
}

#[test]
fn the_same_object_in_two_files_is_refused() {
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n";
    let dir = temp_bundle(&[
        ("manifests/one.yaml", config_map),
        ("manifests/two.yaml", config_map),
    ]);
    let error = Bundle::load(dir.path()).unwrap_err();
    assert_eq!(problem_kinds(&error), ["Duplicate"]);
    assert!(
        error.to_string().contains(
            "ConfigMap settings is defined twice: manifests/one.yaml, manifests/two.yaml"
        ),
        "{error}"
    );
}
