//! Checks of the ClusterServiceVersion and of the CRDs against it, after operator-framework/api's
//! CSV and bundle validators: install modes, version, the case of OLM's annotations, owned CRDs
//! shipped by the bundle (and CRDs shipped but not owned), unique CRD version names.

use std::collections::BTreeMap;

use super::Finding;
use crate::api::cluster_service_version::InstallModeType;
use crate::api::olm_keys;
use crate::bundle::kinds::CRD_API_VERSION;
use crate::bundle::load::{Bundle, BundleObject};

/// OLM annotations whose case matters (operator-framework/api `validateAnnotationNames`).
const CASE_SENSITIVE_ANNOTATIONS: &[&str] = &[
    olm_keys::OPERATOR_GROUP,
    olm_keys::OPERATOR_NAMESPACE,
    olm_keys::TARGET_NAMESPACES,
    olm_keys::SKIP_RANGE,
    olm_keys::PROVIDED_APIS,
    olm_keys::SUBSTITUTES_FOR,
];

/// Install modes, version, minKubeVersion and annotation names of the CSV.
pub(super) fn csv_findings(bundle: &Bundle, file: Option<&str>) -> Vec<Finding> {
    let spec = &bundle.csv.spec;
    let mut findings = Vec::new();
    match spec.install_modes.as_deref() {
        None | Some([]) => findings.push(Finding::error(
            file,
            "spec.installModes is empty: install modes not found",
        )),
        Some(_) => {
            let supported = [
                InstallModeType::OwnNamespace,
                InstallModeType::SingleNamespace,
                InstallModeType::MultiNamespace,
                InstallModeType::AllNamespaces,
            ]
            .into_iter()
            .any(|mode| spec.supports_install_mode(mode));
            if !supported {
                findings.push(Finding::error(
                    file,
                    "spec.installModes supports no install mode: the operator cannot be installed",
                ));
            }
        }
    }
    match spec.version.as_deref() {
        None | Some("") => findings.push(Finding::error(file, "spec.version is missing")),
        Some(version) => {
            if let Err(error) = semver::Version::parse(version) {
                findings.push(Finding::error(
                    file,
                    format!("spec.version {version:?} is not a semantic version: {error}"),
                ));
            }
        }
    }
    if let Some(min) = spec.min_kube_version.as_deref().filter(|v| !v.is_empty())
        && semver::Version::parse(min.trim_start_matches('v')).is_err()
    {
        findings.push(Finding::error(
            file,
            format!("spec.minKubeVersion {min:?} is not a semantic version"),
        ));
    }
    for key in bundle
        .csv
        .metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if let Some(right) = CASE_SENSITIVE_ANNOTATIONS
            .iter()
            .find(|right| right.eq_ignore_ascii_case(key) && *right != key)
        {
            findings.push(Finding::error(
                file,
                format!("provided annotation {key} uses wrong case and should be {right} instead"),
            ));
        }
    }
    findings
}

/// Owned CRDs must be in the bundle with the owned version; CRDs in the bundle should be owned;
/// a CRD's versions have unique names; a v1 CRD has no v1beta1-only fields and a schema per
/// version. `refused` are CRDs the loader refused for their API version (reported already;
/// they still count as shipped).
pub(super) fn crd_findings(
    bundle: &Bundle,
    refused: &[BundleObject],
    file: Option<&str>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut shipped: BTreeMap<&str, (String, Vec<String>)> = BTreeMap::new();
    for crd in bundle.crds().chain(refused) {
        let crd_file = format!("manifests/{}", crd.file);
        let versions = crd_versions(crd);
        let mut seen = Vec::new();
        for version in &versions {
            if seen.contains(&version) {
                findings.push(Finding::error(
                    Some(&crd_file),
                    format!(
                        "CustomResourceDefinition {}: spec.versions must contain unique version \
                         names; {version} is listed more than once",
                        crd.name()
                    ),
                ));
            }
            seen.push(version);
        }
        if crd.api_version() == CRD_API_VERSION {
            findings.extend(
                v1_problems(crd)
                    .into_iter()
                    .map(|message| Finding::error(Some(&crd_file), message)),
            );
        }
        shipped.insert(crd.name(), (crd_file, versions));
    }
    let owned = bundle.csv.spec.owned_crds();
    let csv = bundle.name();
    for description in owned {
        let name = description.name.as_str();
        let found = shipped
            .get(name)
            .is_some_and(|(_, versions)| versions.contains(&description.version));
        if !found {
            findings.push(Finding::error(
                file,
                format!(
                    "owned CRD {name}/{} not found in bundle {csv:?}",
                    description.version
                ),
            ));
        }
    }
    for (name, (crd_file, _)) in &shipped {
        if !owned.iter().any(|d| d.name == *name) {
            findings.push(Finding::warning(
                Some(crd_file),
                format!(
                    "CRD {name} is present in bundle {csv:?} but not defined in CSV \
                     (spec.customresourcedefinitions.owned)"
                ),
            ));
        }
    }
    findings
}

/// `spec.versions[].name`, and the v1beta1 `spec.version`.
fn crd_versions(crd: &BundleObject) -> Vec<String> {
    let spec = crd.object.data.get("spec");
    let mut versions: Vec<String> = spec
        .and_then(|s| s.get("versions"))
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name")?.as_str().map(str::to_owned))
        .collect();
    if let Some(version) = spec.and_then(|s| s.get("version")).and_then(|v| v.as_str())
        && versions.is_empty()
    {
        versions.push(version.to_owned());
    }
    versions
}

/// What the API server refuses in an `apiextensions.k8s.io/v1` CRD written like a v1beta1 one.
fn v1_problems(crd: &BundleObject) -> Vec<String> {
    let name = crd.name();
    let Some(spec) = crd.object.data.get("spec") else {
        return vec![format!("CustomResourceDefinition {name} has no spec")];
    };
    let mut problems = Vec::new();
    for field in [
        "version",
        "validation",
        "subresources",
        "additionalPrinterColumns",
    ] {
        if spec.get(field).is_some() {
            problems.push(format!(
                "CustomResourceDefinition {name}: spec.{field} is not a field of \
                 {CRD_API_VERSION} (it belongs in each entry of spec.versions)"
            ));
        }
    }
    let versions = spec.get("versions").and_then(|v| v.as_array());
    if versions.is_none_or(|v| v.is_empty()) {
        problems.push(format!(
            "CustomResourceDefinition {name}: spec.versions is empty"
        ));
    }
    for version in versions.into_iter().flatten() {
        if version.pointer("/schema/openAPIV3Schema").is_none() {
            let version = version.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            problems.push(format!(
                "CustomResourceDefinition {name}: version {version} has no \
                 schema.openAPIV3Schema, which {CRD_API_VERSION} requires"
            ));
        }
    }
    problems
}
