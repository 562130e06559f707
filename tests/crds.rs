//! `opcat crds` output: committed, parseable, structural, and named like OLM's CRDs.
// Test helpers outside #[test] functions panic on purpose: a failed expectation is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const REGENERATE: &str = "cargo run -- crds > deploy/crds/crds.yaml";

fn committed_crds_yaml() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crds/crds.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; create it with `{REGENERATE}`",
            path.display()
        )
    })
}

fn opcat_crds_output() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_opcat"))
        .arg("crds")
        .output()
        .expect("run opcat crds");
    assert!(
        output.status.success(),
        "opcat crds failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("opcat crds prints UTF-8")
}

/// The generated CRDs as JSON values, with their names (generated once per test binary).
fn crds_by_name() -> &'static [(String, Value)] {
    static CRDS: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    CRDS.get_or_init(|| {
        opcat::api::crds()
            .into_iter()
            .map(|crd| {
                let name = crd.metadata.name.clone().expect("CRD has a name");
                (name, serde_json::to_value(&crd).expect("CRD serializes"))
            })
            .collect()
    })
}

fn crd(name: &str) -> &'static Value {
    crds_by_name()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, crd)| crd)
        .unwrap_or_else(|| panic!("no CRD {name}"))
}

fn version<'a>(crd: &'a Value, version: &str) -> &'a Value {
    crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("no version {version}"))
}

/// The schema node at a dotted property path (`spec.install.spec.deployments[].name`).
fn schema_at<'a>(root: &'a Value, path: &str) -> &'a Value {
    let mut node = root;
    for part in path.split('.') {
        let (name, is_array) = match part.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (part, false),
        };
        node = node
            .get("properties")
            .and_then(|p| p.get(name))
            .unwrap_or_else(|| panic!("schema has no property {name} (in {path})"));
        if is_array {
            assert_eq!(node["type"], "array", "{path}: {name} is not an array");
            node = &node["items"];
        }
    }
    node
}

#[test]
fn opcat_crds_matches_committed_file() {
    let generated = opcat_crds_output();
    let committed = committed_crds_yaml();
    if generated != committed {
        let first_difference = generated
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "one output is a prefix of the other".to_owned(),
                |line| format!("first difference at line {}", line + 1),
            );
        panic!(
            "deploy/crds/crds.yaml is out of date ({first_difference}); regenerate it with \
             `{REGENERATE}` and commit it"
        );
    }
}

#[test]
fn committed_yaml_parses_back_to_the_generated_crds() {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&committed_crds_yaml()).expect("crds.yaml is valid YAML");
    let expected: Vec<&Value> = crds_by_name().iter().map(|(_, crd)| crd).collect();
    assert_eq!(documents.len(), expected.len(), "one document per CRD");
    for (parsed, expected) in documents.iter().zip(&expected) {
        assert!(
            parsed == *expected,
            "YAML of {} does not parse back to the same value",
            expected["metadata"]["name"]
        );
    }
}

#[test]
fn crds_come_in_a_stable_order() {
    let names: Vec<&str> = crds_by_name()
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "catalogsources.operators.coreos.com",
            "clusterserviceversions.operators.coreos.com",
            "installplans.operators.coreos.com",
            "olmconfigs.operators.coreos.com",
            "operatorconditions.operators.coreos.com",
            "operatorgroups.operators.coreos.com",
            "operators.operators.coreos.com",
            "subscriptions.operators.coreos.com",
        ]
    );
}

/// Checks the rules the apiserver applies to CRD schemas (structural schema, list types),
/// so a CRD the apiserver would reject fails here first.
fn assert_structural(node: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(object) = node.as_object() else {
        errors.push(format!("{path}: schema is not an object"));
        return;
    };
    for forbidden in [
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "definitions",
        "$schema",
    ] {
        if object.contains_key(forbidden) {
            errors.push(format!("{path}: has `{forbidden}`"));
        }
    }
    let preserves = object.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let int_or_string = object.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if object.get("type").is_none() && !preserves && !int_or_string {
        errors.push(format!("{path}: no `type`"));
    }
    if object.contains_key("properties") && object.contains_key("additionalProperties") {
        errors.push(format!(
            "{path}: both `properties` and `additionalProperties`"
        ));
    }
    if let Some(format) = object.get("format").and_then(Value::as_str)
        && !["int32", "int64", "date-time", "byte", "double", "float"].contains(&format)
    {
        errors.push(format!(
            "{path}: format `{format}` unknown to the apiserver"
        ));
    }
    match object.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let keys = object["x-kubernetes-list-map-keys"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let required = object["items"]["required"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if keys.is_empty() || keys.iter().any(|key| !required.contains(key)) {
                errors.push(format!(
                    "{path}: list-map keys must be required item fields"
                ));
            }
        }
        Some("set")
            if object["items"]["type"] == "object" || object["items"]["type"] == "array" =>
        {
            errors.push(format!("{path}: list-set items must be scalars"));
        }
        _ => {}
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            assert_structural(child, &format!("{path}.{name}"), errors);
        }
    }
    if let Some(items) = object.get("items") {
        assert_structural(items, &format!("{path}[]"), errors);
    }
    if let Some(additional) = object.get("additionalProperties")
        && additional.is_object()
    {
        assert_structural(additional, &format!("{path}{{}}"), errors);
    }
}

#[test]
fn every_schema_is_structural() {
    for (name, crd) in crds_by_name() {
        for version in crd["spec"]["versions"].as_array().expect("versions") {
            let schema = &version["schema"]["openAPIV3Schema"];
            let mut errors = Vec::new();
            assert_structural(schema, "", &mut errors);
            let root_properties: Vec<&String> = schema["properties"]
                .as_object()
                .expect("root properties")
                .keys()
                .collect();
            if root_properties
                .iter()
                .any(|p| !["spec", "status"].contains(&p.as_str()))
            {
                errors.push(format!("root properties {root_properties:?}"));
            }
            assert!(
                errors.is_empty(),
                "{name} {}: schema is not structural:\n{}",
                version["name"],
                errors.join("\n")
            );
        }
    }
}

#[test]
fn every_kind_has_olm_names_and_a_status_subresource() {
    let expected = [
        (
            "catalogsources",
            "CatalogSource",
            &["catsrc"][..],
            "v1alpha1",
        ),
        (
            "clusterserviceversions",
            "ClusterServiceVersion",
            &["csv", "csvs"][..],
            "v1alpha1",
        ),
        ("installplans", "InstallPlan", &["ip"][..], "v1alpha1"),
        ("operatorgroups", "OperatorGroup", &["og"][..], "v1"),
        (
            "subscriptions",
            "Subscription",
            &["sub", "subs"][..],
            "v1alpha1",
        ),
    ];
    for (plural, kind, short_names, storage) in expected {
        let crd = crd(&format!("{plural}.operators.coreos.com"));
        let names = &crd["spec"]["names"];
        assert_eq!(crd["spec"]["group"], "operators.coreos.com");
        assert_eq!(crd["spec"]["scope"], "Namespaced", "{kind}");
        assert_eq!(names["kind"], kind);
        assert_eq!(names["plural"], plural);
        assert_eq!(
            names["shortNames"],
            serde_json::json!(short_names),
            "{kind}"
        );
        assert_eq!(names["categories"], serde_json::json!(["olm"]), "{kind}");
        let storage_version = version(crd, storage);
        assert_eq!(storage_version["storage"], true, "{kind}");
        for v in crd["spec"]["versions"].as_array().expect("versions") {
            assert_eq!(v["served"], true, "{kind} {}", v["name"]);
            assert_eq!(v["subresources"]["status"], serde_json::json!({}), "{kind}");
        }
    }
}

fn printer_columns(name: &str, version_name: &str) -> Vec<(String, String)> {
    let crd = crd(name);
    version(crd, version_name)["additionalPrinterColumns"]
        .as_array()
        .map(|columns| {
            columns
                .iter()
                .map(|c| {
                    let name = c["name"].as_str().expect("name").to_owned();
                    let path = c["jsonPath"].as_str().expect("jsonPath").to_owned();
                    (name, path)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn printer_columns_are_olms() {
    let pairs = |columns: &[(&str, &str)]| -> Vec<(String, String)> {
        columns
            .iter()
            .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
            .collect()
    };
    assert_eq!(
        printer_columns("catalogsources.operators.coreos.com", "v1alpha1"),
        pairs(&[
            ("Display", ".spec.displayName"),
            ("Type", ".spec.sourceType"),
            ("Publisher", ".spec.publisher"),
            ("Age", ".metadata.creationTimestamp"),
        ])
    );
    assert_eq!(
        printer_columns("subscriptions.operators.coreos.com", "v1alpha1"),
        pairs(&[
            ("Package", ".spec.name"),
            ("Source", ".spec.source"),
            ("Channel", ".spec.channel"),
            ("Age", ".metadata.creationTimestamp"),
        ])
    );
    assert_eq!(
        printer_columns("clusterserviceversions.operators.coreos.com", "v1alpha1"),
        pairs(&[
            ("Display", ".spec.displayName"),
            ("Version", ".spec.version"),
            ("Replaces", ".spec.replaces"),
            ("Phase", ".status.phase"),
        ])
    );
    assert_eq!(
        printer_columns("installplans.operators.coreos.com", "v1alpha1"),
        pairs(&[
            ("CSV", ".spec.clusterServiceVersionNames[0]"),
            ("Approval", ".spec.approval"),
            ("Approved", ".spec.approved"),
            ("Age", ".metadata.creationTimestamp"),
        ])
    );
}

#[test]
fn schemas_use_olm_json_field_names() {
    let paths: &[(&str, &str, &[&str])] = &[
        (
            "catalogsources",
            "v1alpha1",
            &[
                "spec.sourceType",
                "spec.image",
                "spec.address",
                "spec.configMap",
                "spec.secrets[]",
                "spec.updateStrategy.registryPoll.interval",
                "spec.grpcPodConfig.nodeSelector",
                "spec.grpcPodConfig.tolerations[]",
                "spec.grpcPodConfig.securityContextConfig",
                "spec.grpcPodConfig.extractContent.catalogDir",
                "spec.priority",
                "spec.displayName",
                "spec.publisher",
                "spec.icon.base64data",
                "spec.icon.mediatype",
                "status.connectionState.address",
                "status.connectionState.lastObservedState",
                "status.connectionState.lastConnect",
                "status.latestImageRegistryPoll",
                "status.reason",
                "status.message",
                "status.registryService.serviceName",
                "status.conditions[].type",
                "status.resolvedImageDigest",
                "status.packageCount",
            ],
        ),
        (
            "subscriptions",
            "v1alpha1",
            &[
                "spec.name",
                "spec.source",
                "spec.sourceNamespace",
                "spec.channel",
                "spec.startingCSV",
                "spec.installPlanApproval",
                "spec.config.env[].name",
                "spec.config.envFrom[]",
                "spec.config.resources.limits",
                "spec.config.nodeSelector",
                "spec.config.tolerations[].key",
                "spec.config.affinity.nodeAffinity",
                "spec.config.volumes[].name",
                "spec.config.volumeMounts[].mountPath",
                "spec.config.annotations",
                "spec.config.selector",
                "status.installedCSV",
                "status.currentCSV",
                "status.installplan.uuid",
                "status.installPlanRef.name",
                "status.installPlanGeneration",
                "status.catalogHealth[].catalogSourceRef.name",
                "status.catalogHealth[].lastUpdated",
                "status.catalogHealth[].healthy",
                "status.conditions[].lastHeartbeatTime",
                "status.state",
                "status.lastUpdated",
            ],
        ),
        (
            "clusterserviceversions",
            "v1alpha1",
            &[
                "spec.install.strategy",
                "spec.install.spec.deployments[].name",
                "spec.install.spec.deployments[].spec.template.spec.containers[].image",
                "spec.install.spec.deployments[].label",
                "spec.install.spec.permissions[].serviceAccountName",
                "spec.install.spec.permissions[].rules[].verbs",
                "spec.install.spec.clusterPermissions[].rules[].apiGroups",
                "spec.customresourcedefinitions.owned[].name",
                "spec.customresourcedefinitions.required[].kind",
                "spec.apiservicedefinitions.owned[].group",
                "spec.webhookdefinitions[].generateName",
                "spec.webhookdefinitions[].conversionCRDs",
                "spec.installModes[].type",
                "spec.installModes[].supported",
                "spec.relatedImages[].image",
                "spec.replaces",
                "spec.skips",
                "spec.version",
                "spec.displayName",
                "spec.nativeAPIs[].kind",
                "spec.minKubeVersion",
                "spec.icon[].base64data",
                "status.phase",
                "status.conditions[].phase",
                "status.requirementStatus[].dependents[].status",
            ],
        ),
        (
            "installplans",
            "v1alpha1",
            &[
                "spec.clusterServiceVersionNames",
                "spec.approval",
                "spec.approved",
                "status.phase",
                "status.catalogSources",
                "status.plan[].resource.manifest",
                "status.bundleLookups[].catalogSourceRef",
            ],
        ),
        (
            "operatorgroups",
            "v1alpha2",
            &[
                "spec.targetNamespaces",
                "spec.selector.matchLabels",
                "spec.serviceAccountName",
                "spec.staticProvidedAPIs",
                "spec.upgradeStrategy",
                "status.namespaces",
                "status.lastUpdated",
            ],
        ),
    ];
    for (plural, version_name, fields) in paths {
        let crd = crd(&format!("{plural}.operators.coreos.com"));
        let root = &version(crd, version_name)["schema"]["openAPIV3Schema"];
        for field in *fields {
            schema_at(root, field);
        }
    }
}

#[test]
fn required_fields_match_olm() {
    let required = |plural: &str, path: &str| -> Vec<String> {
        let crd = crd(&format!("{plural}.operators.coreos.com"));
        let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let node = if path.is_empty() {
            root
        } else {
            schema_at(root, path)
        };
        let mut fields: Vec<String> = node["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|v| v.as_str().expect("name").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        fields.sort();
        fields
    };
    assert_eq!(required("catalogsources", "spec"), ["sourceType"]);
    assert_eq!(
        required("subscriptions", "spec"),
        ["name", "source", "sourceNamespace"]
    );
    assert_eq!(required("subscriptions", "status"), ["lastUpdated"]);
    assert_eq!(
        required("subscriptions", "status.installplan"),
        ["apiVersion", "kind", "name", "uuid"]
    );
    assert_eq!(
        required("clusterserviceversions", "spec"),
        ["displayName", "install"]
    );
    assert_eq!(
        required("installplans", "spec"),
        ["approval", "approved", "clusterServiceVersionNames"]
    );
    assert_eq!(required("installplans", "status"), ["catalogSources"]);
    // OperatorGroups without a spec are common (the "all namespaces" group): spec is optional
    // and defaulted, as in OLM.
    assert_eq!(required("operatorgroups", ""), Vec::<String>::new());
}

#[test]
fn operator_group_serves_v1alpha2_with_the_v1_schema_and_defaults_spec() {
    let crd = crd("operatorgroups.operators.coreos.com");
    let v1 = version(crd, "v1");
    let v1alpha2 = version(crd, "v1alpha2");
    assert_eq!(v1alpha2["storage"], false);
    assert_eq!(v1["schema"], v1alpha2["schema"]);
    assert_eq!(
        v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["default"],
        serde_json::json!({ "upgradeStrategy": "Default" })
    );
}

#[test]
fn csv_spec_keeps_unknown_fields_but_status_does_not() {
    let crd = crd("clusterserviceversions.operators.coreos.com");
    let root = &version(crd, "v1alpha1")["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema_at(root, "spec")["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert_eq!(
        schema_at(
            root,
            "spec.customresourcedefinitions.owned[].specDescriptors[].value"
        )["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert!(
        schema_at(root, "status")
            .get("x-kubernetes-preserve-unknown-fields")
            .is_none()
    );
}

#[test]
fn structural_check_rejects_what_the_apiserver_rejects() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "untyped": { "description": "no type" },
            "union": { "type": "object", "anyOf": [{ "type": "string" }] },
            "both": { "type": "object", "properties": {}, "additionalProperties": { "type": "string" } },
            "unsigned": { "type": "integer", "format": "uint32" },
            "badMap": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": { "type": "object", "properties": { "type": { "type": "string" } } }
            },
            "fine": { "x-kubernetes-preserve-unknown-fields": true },
        }
    });
    let mut errors = Vec::new();
    assert_structural(&schema, "", &mut errors);
    errors.sort();
    assert_eq!(
        errors,
        [
            ".badMap: list-map keys must be required item fields",
            ".both: both `properties` and `additionalProperties`",
            ".union: has `anyOf`",
            ".unsigned: format `uint32` unknown to the apiserver",
            ".untyped: no `type`",
        ]
    );
}
