//! Rendering webhooks, conversion webhooks and API services (pure): the objects OLM v0 makes
//! for them, with opcat's certificates, checked on our fixtures and against the manifests OLM v1
//! publishes for its `webhook-operator.v0.0.5` test bundle.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;
mod webhook_support;

use bundle_support::{Install, fixture, kind, load, name, of_kind, targets};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::DynamicObject;
use opcat::api::cluster_service_version::{InstallMode, InstallModeType};
use opcat::bundle::{InstallModeError, RenderError, TargetNamespaces};
use serde_json::{Value, json};
use test_registry::shared_data_dir;
use webhook_support::handshake;

const NS: &str = "webhooks";
const SERVICE: &str = "webhook-operator-controller-service";
const SECRET: &str = "webhook-operator-controller-service-cert";

fn typed<K: serde::de::DeserializeOwned>(object: &DynamicObject) -> K {
    serde_json::from_value(serde_json::to_value(object).unwrap()).unwrap()
}

fn one<K: serde::de::DeserializeOwned>(objects: &[DynamicObject], wanted: &str) -> K {
    let found = of_kind(objects, wanted);
    assert_eq!(found.len(), 1, "one {wanted}");
    typed(found[0])
}

#[test]
fn a_webhook_deployment_gets_a_service_its_certificate_and_olms_configurations() {
    let bundle = load(&fixture("webhook-operator/0.1.0"));
    let install = Install::all(&bundle, NS);
    let rendered = install.render(&bundle);
    let certificate = &install.certificates["webhook-operator.controller"];
    let serving = &install.serving["webhook-operator.controller"];

    // The Service: OLM's name, the webhooks' one port, the Deployment's selector.
    let service: Service = one(&rendered.others, "Service");
    assert_eq!(service.metadata.name.as_deref(), Some(SERVICE));
    let spec = service.spec.unwrap();
    assert_eq!(
        serde_json::to_value(&spec.ports).unwrap(),
        json!([{"name": "443", "port": 443, "targetPort": 9443}])
    );
    assert_eq!(
        serde_json::to_value(&spec.selector).unwrap(),
        json!({"app": "webhook-operator"})
    );

    // The Deployment mounts the certificate where OLM does; kubebuilder's volume is gone.
    let deployment: Deployment = one(&rendered.deployments, "Deployment");
    let template = deployment.spec.unwrap().template;
    let pod = template.spec.unwrap();
    assert_eq!(
        serde_json::to_value(&pod.volumes).unwrap(),
        json!([
            {"name": "webhook-cert", "secret": {"secretName": SECRET, "items": [
                {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}},
            {"name": "apiservice-cert", "secret": {"secretName": SECRET, "items": [
                {"key": "tls.crt", "path": "apiserver.crt"},
                {"key": "tls.key", "path": "apiserver.key"}]}},
        ])
    );
    assert_eq!(
        serde_json::to_value(&pod.containers[0].volume_mounts).unwrap(),
        json!([
            {"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"},
            {"name": "apiservice-cert", "mountPath": "/apiserver.local.config/certificates"},
        ])
    );
    assert_eq!(
        template.metadata.unwrap().annotations.unwrap()["olmcahash"],
        serving.ca_hash
    );

    // The validating webhook: everything the CSV says, the Service, the CA; all namespaces.
    let validating: ValidatingWebhookConfiguration =
        one(&rendered.webhooks, "ValidatingWebhookConfiguration");
    let config_name = validating.metadata.name.clone().unwrap();
    assert!(
        config_name.starts_with("vgizmo.webhook.example.com-"),
        "{config_name}"
    );
    let mut webhook = serde_json::to_value(&validating.webhooks.unwrap()[0]).unwrap();
    let ca_bundle = take_ca_bundle(&mut webhook);
    assert_eq!(ca_bundle, serving.ca_bundle);
    assert_eq!(
        webhook,
        json!({
            "name": "vgizmo.webhook.example.com",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {
                "namespace": NS, "name": SERVICE, "path": "/validate-gizmo", "port": 443}},
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "objectSelector": {"matchLabels": {"validated": "true"}},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["webhook.example.com"],
                       "apiVersions": ["v1"], "resources": ["gizmos"]}],
            "sideEffects": "None",
            "timeoutSeconds": 5,
        })
    );
    let mutating: MutatingWebhookConfiguration =
        one(&rendered.webhooks, "MutatingWebhookConfiguration");
    let mutating = serde_json::to_value(&mutating.webhooks.unwrap()[0]).unwrap();
    assert_eq!(mutating["reinvocationPolicy"], "IfNeeded");
    assert_eq!(mutating["sideEffects"], "NoneOnDryRun");
    assert_eq!(mutating["clientConfig"]["service"]["path"], "/mutate-gizmo");
    assert!(mutating.get("namespaceSelector").is_none());

    // The CA bundle verifies the serving certificate for the name the API server calls.
    for host in [
        format!("{SERVICE}.{NS}.svc"),
        format!("{SERVICE}.{NS}.svc.cluster.local"),
    ] {
        handshake(
            &ca_bundle,
            certificate.cert_pem(),
            certificate.key_pem(),
            &host,
        )
        .unwrap_or_else(|error| panic!("handshake for {host}: {error}"));
    }
    assert!(
        handshake(
            &ca_bundle,
            certificate.cert_pem(),
            certificate.key_pem(),
            "other.webhooks.svc"
        )
        .is_err(),
        "the certificate is only for its Service"
    );

    // Conversion: the CRD is applied without the bundle's section; the controller writes
    // OLM's conversion once the Deployment exists.
    let crd = &rendered.crds[0];
    assert!(crd.data.pointer("/spec/conversion").is_none());
    assert_eq!(rendered.conversions.len(), 1);
    let conversion = &rendered.conversions[0];
    assert_eq!(conversion.crd, "gizmos.webhook.example.com");
    let mut value = conversion.conversion.clone();
    let ca = value["webhook"]["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle")
        .unwrap();
    assert_eq!(decode(&ca), serving.ca_bundle);
    assert_eq!(
        value,
        json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {
                "namespace": NS, "name": SERVICE, "path": "/convert", "port": 443}},
            "conversionReviewVersions": ["v1"]}})
    );

    // OLM's certificate RBAC for the Deployment's ServiceAccount.
    let rbac: Vec<(String, Option<String>, String)> = rendered
        .rbac
        .iter()
        .filter(|o| {
            name(o).contains("controller-service")
                || o.data.pointer("/roleRef/name").and_then(Value::as_str)
                    == Some("system:auth-delegator")
        })
        .map(|o| {
            (
                kind(o).to_owned(),
                o.metadata.namespace.clone(),
                o.data
                    .pointer("/roleRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or("-")
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rbac,
        [
            (
                "ClusterRoleBinding".to_owned(),
                None,
                "system:auth-delegator".to_owned()
            ),
            ("Role".to_owned(), Some(NS.to_owned()), "-".to_owned()),
            (
                "RoleBinding".to_owned(),
                Some("kube-system".to_owned()),
                "extension-apiserver-authentication-reader".to_owned()
            ),
            (
                "RoleBinding".to_owned(),
                Some(NS.to_owned()),
                SECRET.to_owned()
            ),
        ]
    );
}

fn take_ca_bundle(webhook: &mut Value) -> String {
    let value = webhook["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle")
        .expect("a caBundle");
    decode(&value)
}

fn decode(value: &Value) -> String {
    let bytes: k8s_openapi::ByteString = serde_json::from_value(value.clone()).unwrap();
    String::from_utf8(bytes.0).unwrap()
}

#[test]
fn admission_webhooks_are_scoped_to_the_target_namespaces_by_name() {
    let bundle = load(&fixture("webhook"));
    for (targets, expected) in [
        (targets(&["ops"]), Some(json!(["ops"]))),
        (
            targets(&["team-b", "team-a"]),
            Some(json!(["team-a", "team-b"])),
        ),
        (TargetNamespaces::All, None),
    ] {
        let mut bundle = bundle.clone();
        bundle.csv.spec.install_modes = Some(
            [
                InstallModeType::OwnNamespace,
                InstallModeType::MultiNamespace,
                InstallModeType::AllNamespaces,
            ]
            .map(|type_| InstallMode {
                type_,
                supported: true,
            })
            .to_vec(),
        );
        let rendered = Install::new(&bundle, "ops", targets).render(&bundle);
        let config: ValidatingWebhookConfiguration =
            one(&rendered.webhooks, "ValidatingWebhookConfiguration");
        let selector =
            serde_json::to_value(&config.webhooks.unwrap()[0].namespace_selector).unwrap();
        match expected {
            Some(values) => assert_eq!(
                selector,
                json!({"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "In", "values": values}]})
            ),
            None => assert_eq!(selector, Value::Null),
        }
    }
}

#[test]
fn an_owned_api_service_gets_a_service_and_an_apiservice_with_the_ca() {
    let bundle = load(&fixture("metrics-operator/0.1.0"));
    let install = Install::own(&bundle, "metrics");
    let rendered = install.render(&bundle);
    let api_service: APIService = one(&rendered.webhooks, "APIService");
    assert_eq!(
        api_service.metadata.name.as_deref(),
        Some("v1beta1.metrics.example.com")
    );
    let mut spec = serde_json::to_value(api_service.spec.unwrap()).unwrap();
    let ca = decode(&spec.as_object_mut().unwrap().remove("caBundle").unwrap());
    assert_eq!(ca, install.serving["metrics-server"].ca_bundle);
    assert_eq!(
        spec,
        json!({"group": "metrics.example.com", "version": "v1beta1",
               "groupPriorityMinimum": 2000, "versionPriority": 15,
               "service": {"name": "metrics-server-service", "namespace": "metrics", "port": 8443}})
    );
    let service: Service = one(&rendered.others, "Service");
    assert_eq!(
        serde_json::to_value(service.spec.unwrap().ports).unwrap(),
        json!([
            {"name": "443", "port": 443, "targetPort": 9443},
            {"name": "8443", "port": 8443, "targetPort": 8443},
        ])
    );
    let material = &install.certificates["metrics-server"];
    handshake(
        &ca,
        material.cert_pem(),
        material.key_pem(),
        "metrics-server-service.metrics.svc",
    )
    .unwrap();
}

#[test]
fn conversion_webhooks_need_an_all_namespaces_install() {
    let mut bundle = load(&fixture("webhook-operator/0.1.0"));
    bundle.csv.spec.install_modes = Some(vec![
        InstallMode {
            type_: InstallModeType::OwnNamespace,
            supported: true,
        },
        InstallMode {
            type_: InstallModeType::AllNamespaces,
            supported: true,
        },
    ]);
    let error = Install::own(&bundle, NS).try_render(&bundle).unwrap_err();
    let RenderError::InstallMode(InstallModeError::ConversionNeedsAllNamespaces {
        webhooks, ..
    }) = &error
    else {
        panic!("{error}");
    };
    assert_eq!(webhooks, "cgizmo.webhook.example.com");
    assert_eq!(error.kind(), "UnsupportedOperatorGroup");
    assert!(
        error.to_string().contains("need an AllNamespaces install"),
        "{error}"
    );
    Install::all(&bundle, NS).render(&bundle);
}

/// OLM v1 renders the shared `webhook-operator.v0.0.5` bundle (it copies OLM v0's rules):
/// opcat's Service, webhook configurations and CRD conversion agree with its published manifests
/// in everything but names opcat must make unique, the CA (theirs come from a certificate
/// provider that injects it later) and the ownership metadata.
#[test]
fn the_webhook_operator_renders_as_olm_does() {
    let root = "operator-controller/test/regression/convert/testdata";
    let bundle = load(
        &shared_data_dir()
            .join("bundles")
            .join(root)
            .join("bundles/webhook-operator.v0.0.5"),
    );
    let install = Install::all(&bundle, "webhook-system");
    let rendered = install.render(&bundle);
    let expected_dir = shared_data_dir()
        .join("expected")
        .join(root)
        .join("expected-manifests/webhook-operator.v0.0.5/all-webhook-types");
    let expected = |file: &str| -> Value {
        bundle_support::yaml(&std::fs::read_to_string(expected_dir.join(file)).unwrap())
    };

    let service: Service = one(&rendered.others, "Service");
    let olm_service = expected("07_service_webhook-operator-controller-manager-service.yaml");
    assert_eq!(
        service.metadata.name.as_deref(),
        olm_service["metadata"]["name"].as_str()
    );
    let spec = serde_json::to_value(service.spec.unwrap()).unwrap();
    assert_eq!(spec["ports"], olm_service["spec"]["ports"]);
    assert_eq!(spec["selector"], olm_service["spec"]["selector"]);

    for (kind, file) in [
        (
            "ValidatingWebhookConfiguration",
            "09_validatingwebhookconfiguration_vwebhooktest-v1.kb.io.yaml",
        ),
        (
            "MutatingWebhookConfiguration",
            "06_mutatingwebhookconfiguration_mwebhooktest-v1.kb.io.yaml",
        ),
    ] {
        let ours = serde_json::to_value(one::<Value>(&rendered.webhooks, kind)).unwrap();
        let mut webhook = ours["webhooks"][0].clone();
        take_ca_bundle(&mut webhook);
        assert_eq!(webhook, expected(file)["webhooks"][0], "{kind}");
    }

    let olm_crd =
        expected("04_customresourcedefinition_webhooktests.webhook.operators.coreos.io.yaml");
    let conversion = &rendered.conversions[0];
    let mut ours = conversion.conversion.clone();
    ours["webhook"]["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle");
    assert_eq!(ours, olm_crd["spec"]["conversion"]);
}
