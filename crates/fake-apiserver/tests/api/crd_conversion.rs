//! CustomResourceDefinition `spec.conversion`: defaults
//! (`apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`) and validation
//! (`apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`,
//! `validateCustomResourceConversion`), whose field paths name the internal type
//! (`spec.conversion.webhookClientConfig`, `spec.conversion.conversionReviewVersions`).

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{assert_invalid, server, status};

const NAME: &str = "gadgets.example.com";

/// A two-version CRD (`v1` stored, `v1beta1` served) with `conversion` as given.
fn crd(conversion: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let mut c = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema},
            ],
        },
    });
    if !conversion.is_null() {
        c["spec"]["conversion"] = conversion;
    }
    c
}

fn typed(v: Value) -> CustomResourceDefinition {
    serde_json::from_value(v).unwrap()
}

/// A CA certificate as the base64 `caBundle` the API carries.
fn ca_bundle() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let pem = params.self_signed(&key).unwrap().pem();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn webhook_conversion(ca: &str) -> Value {
    json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"namespace": "operators", "name": "gadget-webhook",
                                     "path": "/convert"}, "caBundle": ca},
        "conversionReviewVersions": ["v1", "v1beta1"]}})
}

/// `SetDefaults_CustomResourceDefinitionSpec`: `conversion: {strategy: None}`, singular and
/// list kind from the kind; `SetDefaults_ServiceReference`: the webhook service port is 443.
#[tokio::test]
async fn conversion_and_names_are_defaulted() {
    let (_server, client) = server();
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let created = api
        .create(&PostParams::default(), &typed(crd(Value::Null)))
        .await
        .unwrap();
    let conversion = created.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "None");
    assert!(conversion.webhook.is_none());
    assert_eq!(created.spec.names.singular.as_deref(), Some("gadget"));
    assert_eq!(created.spec.names.list_kind.as_deref(), Some("GadgetList"));

    let updated = api
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"conversion": webhook_conversion(&ca_bundle())}})),
        )
        .await
        .unwrap();
    let webhook = updated.spec.conversion.unwrap().webhook.unwrap();
    let service = webhook.client_config.unwrap().service.unwrap();
    assert_eq!(service.port, Some(443));
}

/// Each conversion rule a client can trip is 422 with the upstream field path and message.
#[tokio::test]
async fn invalid_conversions_are_rejected_with_the_upstream_field_errors() {
    let (_server, client) = server();
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let service = json!({"service": {"namespace": "operators", "name": "gadget-webhook"}});
    let cases: Vec<(Value, bool, &str, &str)> = vec![
        (
            json!({"strategy": "Webhook"}),
            false,
            "spec.conversion.webhookClientConfig",
            "Required value: required when strategy is set to Webhook",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": service}}),
            false,
            "spec.conversion.conversionReviewVersions",
            "Required value",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v1"]}}),
            false,
            "spec.conversion.webhookClientConfig",
            "Required value: exactly one of url or service is required",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": service, "conversionReviewVersions": ["v3"]}}),
            false,
            "spec.conversion.conversionReviewVersions",
            "Invalid value: []string{\"v3\"}: must include at least one of v1, v1beta1",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": service, "conversionReviewVersions": ["v1"]}}),
            true,
            "spec.conversion.strategy",
            "Invalid value: \"Webhook\": must be None if spec.preserveUnknownFields is true",
        ),
        (
            json!({"strategy": "Magic"}),
            false,
            "spec.conversion.strategy",
            "Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"",
        ),
        (
            json!({"strategy": "None", "webhook": {"clientConfig": service}}),
            false,
            "spec.conversion.webhookClientConfig",
            "Forbidden: should not be set when strategy is not set to Webhook",
        ),
        (
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}),
            false,
            "spec.conversion.conversionReviewVersions",
            "Forbidden: should not be set when strategy is not set to Webhook",
        ),
    ];
    for (conversion, preserve_unknown, field, message) in cases {
        let mut body = crd(conversion);
        if preserve_unknown {
            body["spec"]["preserveUnknownFields"] = json!(true);
        }
        let created = api.create(&PostParams::default(), &typed(body)).await;
        assert_invalid(created, field, message);
    }
}

/// Restoring `strategy: None` (what opcat does on uninstall) works by merge patch when the
/// webhook is removed with it, and by server-side apply when the applier stops applying the
/// webhook; leaving the webhook in place is `Forbidden`.
#[tokio::test]
async fn webhook_conversion_can_be_turned_back_to_none() {
    let (_server, client) = server();
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let ca = ca_bundle();
    api.create(&PostParams::default(), &typed(crd(webhook_conversion(&ca))))
        .await
        .unwrap();
    let kept_webhook = api
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"conversion": {"strategy": "None"}}})),
        )
        .await;
    assert_invalid(
        kept_webhook,
        "spec.conversion.webhookClientConfig",
        "Forbidden: should not be set when strategy is not set to Webhook",
    );
    let none = api
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(none.spec.conversion).unwrap(),
        json!({"strategy": "None"})
    );

    // Server-side apply: the applier owns the webhook and drops it with its next apply.
    let apply = |conversion: Value| Patch::Apply(crd(conversion));
    let params = PatchParams::apply("opcat").force();
    let on = api
        .patch(NAME, &params, &apply(webhook_conversion(&ca)))
        .await
        .unwrap();
    assert_eq!(on.spec.conversion.unwrap().strategy, "Webhook");
    let off = api
        .patch(NAME, &params, &apply(json!({"strategy": "None"})))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(off.spec.conversion).unwrap(),
        json!({"strategy": "None"})
    );
}

/// `allowInvalidCABundle`: a create takes any bundle, but once the CRD is `Established` an
/// update must carry a bundle that loads as root certificates (unless the stored one did
/// not either).
#[tokio::test]
async fn an_established_crd_needs_a_loadable_ca_bundle() {
    let (_server, client) = server();
    let api: Api<CustomResourceDefinition> = Api::all(client);
    api.create(&PostParams::default(), &typed(crd(Value::Null)))
        .await
        .unwrap();
    let garbage = base64::engine::general_purpose::STANDARD.encode("not a certificate");
    let err = status(
        api.patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"conversion": webhook_conversion(&garbage)}})),
        )
        .await,
    );
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.field, "spec.conversion.webhookClientConfig.caBundle");
    assert!(
        cause
            .message
            .ends_with("unable to load root certificates: unable to parse bytes as PEM block"),
        "{}",
        cause.message
    );
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"conversion": webhook_conversion(&ca_bundle())}})),
    )
    .await
    .unwrap();

    // Created with a bad bundle: later updates may keep it.
    let other = crd(webhook_conversion(&garbage));
    api.delete(NAME, &Default::default()).await.unwrap();
    api.create(&PostParams::default(), &typed(other))
        .await
        .unwrap();
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
}
