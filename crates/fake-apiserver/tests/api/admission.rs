//! `admissionregistration.k8s.io/v1` webhook configurations: storage
//! (`pkg/registry/admissionregistration/*webhookconfiguration`), defaults
//! (`pkg/apis/admissionregistration/v1/defaults.go`), validation
//! (`pkg/apis/admissionregistration/validation/validation.go`) and list semantics
//! (`k8s.io/api/admissionregistration/v1/types.go`: `webhooks` merges by `name`).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{
    Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::common::{assert_invalid, server, status};

/// A valid webhook named `name` (sideEffects and review versions given, the rest defaulted).
pub fn hook(name: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {
            "service": {"namespace": "operators", "name": "widget-webhook", "path": "/validate-widgets"},
            "caBundle": "bm90IGEgY2VydGlmaWNhdGU=",
        },
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"],
                   "apiVersions": ["v1"], "resources": ["widgets"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn configuration(kind: &str, name: &str, webhooks: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks,
    }))
    .unwrap()
}

/// Creates the ValidatingWebhookConfiguration `name` with `webhooks`.
async fn create(
    api: &Api<DynamicObject>,
    name: &str,
    webhooks: Value,
) -> Result<DynamicObject, kube::Error> {
    let config = configuration("ValidatingWebhookConfiguration", name, webhooks);
    api.create(&PostParams::default(), &config).await
}

fn validating_api(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
    )
}

/// Both kinds are discoverable and cluster-scoped, and answer create/get/list at
/// `/apis/admissionregistration.k8s.io/v1/...webhookconfigurations`.
#[tokio::test]
async fn webhook_configurations_are_cluster_scoped_resources() {
    let (_server, client) = server();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let gvk = kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
        let (ar, caps) = discovery.resolve_gvk(&gvk).unwrap();
        assert_eq!(caps.scope, Scope::Cluster, "{kind}");
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        api.create(
            &PostParams::default(),
            &configuration(kind, "widgets", json!([hook("check.widgets.example.com")])),
        )
        .await
        .unwrap();
        api.get("widgets").await.unwrap();
        assert_eq!(
            api.list(&ListParams::default()).await.unwrap().items.len(),
            1
        );
    }
}

/// `SetDefaults_ValidatingWebhook`/`SetDefaults_MutatingWebhook`, `SetDefaults_Rule` and
/// `SetDefaults_ServiceReference`: what the real server adds is visible on read, and the
/// strategy sets `generation: 1`.
#[tokio::test]
async fn v1_defaults_are_filled_in() {
    let (_server, client) = server();
    let api = validating_api(client.clone());
    create(&api, "widgets", json!([hook("check.widgets.example.com")]))
        .await
        .unwrap();
    let typed: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let got = typed.get("widgets").await.unwrap();
    assert_eq!(got.metadata.generation, Some(1));
    let h = &got.webhooks.unwrap()[0];
    assert_eq!(h.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(h.match_policy.as_deref(), Some("Equivalent"));
    assert_eq!(h.timeout_seconds, Some(10));
    assert_eq!(h.namespace_selector, Some(Default::default()));
    assert_eq!(h.object_selector, Some(Default::default()));
    assert_eq!(h.side_effects, "None");
    assert_eq!(h.rules.as_ref().unwrap()[0].scope.as_deref(), Some("*"));
    let svc = h.client_config.service.as_ref().unwrap();
    assert_eq!(svc.port, Some(443));

    let mutating: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<MutatingWebhookConfiguration>(&()),
    );
    let created = mutating
        .create(
            &PostParams::default(),
            &configuration(
                "MutatingWebhookConfiguration",
                "widgets",
                json!([hook("default.widgets.example.com")]),
            ),
        )
        .await
        .unwrap();
    assert_eq!(created.data["webhooks"][0]["reinvocationPolicy"], "Never");
    assert_eq!(created.data["webhooks"][0]["timeoutSeconds"], 10);
}

/// A watch sees the configuration added and then modified; changing `webhooks` bumps
/// `generation` (`PrepareForUpdate` of the strategy).
#[tokio::test]
async fn watch_sees_changes_and_generation_follows_webhooks() {
    let (_server, client) = server();
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut events = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    create(
        &validating_api(client),
        "widgets",
        json!([hook("check.widgets.example.com")]),
    )
    .await
    .unwrap();
    api.patch(
        "widgets",
        &PatchParams::default(),
        &Patch::Strategic(
            json!({"webhooks": [{"name": "check.widgets.example.com", "timeoutSeconds": 5}]}),
        ),
    )
    .await
    .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("an event within 5s")
            .expect("stream open")
            .unwrap();
        match ev {
            WatchEvent::Added(o) => seen.push(("ADDED", o.metadata.generation)),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o.metadata.generation)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, [("ADDED", Some(1)), ("MODIFIED", Some(2))]);
}

/// `webhooks` is `listType=map` keyed by `name`: two appliers own one webhook each, and a
/// manager that stops applying its webhook removes only that one. A strategic merge patch
/// merges by `name` (`patchMergeKey`).
#[tokio::test]
async fn webhooks_merge_by_name_in_apply_and_strategic_merge() {
    let (_server, client) = server();
    let api = validating_api(client);
    let apply = |hooks: Value| {
        Patch::Apply(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "widgets"}, "webhooks": hooks,
        }))
    };
    let names = |o: &DynamicObject| -> Vec<String> {
        o.data["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_string())
            .collect()
    };
    api.patch(
        "widgets",
        &PatchParams::apply("opcat"),
        &apply(json!([hook("a.widgets.example.com")])),
    )
    .await
    .unwrap();
    let both = api
        .patch(
            "widgets",
            &PatchParams::apply("other"),
            &apply(json!([hook("b.widgets.example.com")])),
        )
        .await
        .unwrap();
    assert_eq!(
        names(&both),
        ["a.widgets.example.com", "b.widgets.example.com"]
    );
    let pruned = api
        .patch("widgets", &PatchParams::apply("opcat"), &apply(json!([])))
        .await
        .unwrap();
    assert_eq!(names(&pruned), ["b.widgets.example.com"]);

    let merged = api
        .patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Strategic(json!({"webhooks": [hook("c.widgets.example.com")]})),
        )
        .await
        .unwrap();
    assert_eq!(
        names(&merged),
        ["b.widgets.example.com", "c.widgets.example.com"]
    );
}

/// Each rule a client can trip answers 422 with the real server's field path, reason and
/// message (`validateValidatingWebhook`, `validateAdmissionReviewVersions`,
/// `ValidateWebhookService`, `validateRuleWithOperations`, `ValidateLabelSelector`).
#[tokio::test]
async fn invalid_webhooks_are_rejected_with_the_upstream_field_errors() {
    let (_server, client) = server();
    let api = validating_api(client);
    let cases: Vec<(Value, &str, &str, &str)> = vec![
        (
            json!({"sideEffects": null}),
            "webhooks[0].sideEffects",
            "FieldValueRequired",
            "Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            json!({"sideEffects": "Some"}),
            "webhooks[0].sideEffects",
            "FieldValueNotSupported",
            "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        ),
        (
            json!({"admissionReviewVersions": null}),
            "webhooks[0].admissionReviewVersions",
            "FieldValueRequired",
            "Required value: must specify one of v1, v1beta1",
        ),
        (
            json!({"admissionReviewVersions": ["v2"]}),
            "webhooks[0].admissionReviewVersions",
            "FieldValueInvalid",
            "Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
        ),
        (
            json!({"name": "widgets.example"}),
            "webhooks[0].name",
            "FieldValueInvalid",
            "Invalid value: \"widgets.example\": should be a domain with at least three segments separated by dots",
        ),
        (
            json!({"clientConfig": {"url": "https://hook.example.com", "service": {"namespace": "n", "name": "s"}}}),
            "webhooks[0].clientConfig",
            "FieldValueRequired",
            "Required value: exactly one of url or service is required",
        ),
        (
            json!({"clientConfig": {"url": "http://hook.example.com/x"}}),
            "webhooks[0].clientConfig.url",
            "FieldValueInvalid",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            json!({"clientConfig": {"service": {"namespace": "n", "name": "s", "path": "validate"}}}),
            "webhooks[0].clientConfig.service.path",
            "FieldValueInvalid",
            "Invalid value: \"validate\": must start with a '/'",
        ),
        (
            json!({"clientConfig": {"service": {"namespace": "n", "name": "s", "port": 0}}}),
            "webhooks[0].clientConfig.service.port",
            "FieldValueInvalid",
            "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (
            json!({"timeoutSeconds": 31}),
            "webhooks[0].timeoutSeconds",
            "FieldValueInvalid",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            json!({"failurePolicy": "Retry"}),
            "webhooks[0].failurePolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Retry\": supported values: \"Fail\", \"Ignore\"",
        ),
        (
            json!({"rules": [{"operations": ["GET"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}),
            "webhooks[0].rules[0].operations[0]",
            "FieldValueNotSupported",
            "Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        ),
        (
            json!({"rules": [{"operations": ["*", "CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}),
            "webhooks[0].rules[0].operations",
            "FieldValueInvalid",
            "Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
        ),
        (
            json!({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": []}]}),
            "webhooks[0].rules[0].resources",
            "FieldValueRequired",
            "Required value",
        ),
        (
            json!({"namespaceSelector": {"matchExpressions": [{"key": "olm.operatorgroup", "operator": "Contains", "values": ["x"]}]}}),
            "webhooks[0].namespaceSelector.matchExpressions[0].operator",
            "FieldValueInvalid",
            "Invalid value: \"Contains\": not a valid selector operator",
        ),
    ];
    for (i, (change, field, reason, message)) in cases.into_iter().enumerate() {
        let mut h = hook("check.widgets.example.com");
        for (k, v) in change.as_object().unwrap() {
            h[k] = v.clone();
        }
        let name = format!("case-{i}");
        let err = assert_invalid(create(&api, &name, json!([h])).await, field, message);
        let causes = &err.details.as_ref().unwrap().causes;
        assert_eq!(causes.len(), 1, "case {i}: {causes:?}");
        assert_eq!(causes[0].reason, reason, "case {i}");
        assert_eq!(
            err.message,
            format!(
                "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"{name}\" is invalid: {field}: {message}"
            )
        );
    }
}

/// Webhook names must be unique in a configuration (`field.Duplicate`), also on update; a
/// `caBundle` that is no certificate is stored as given (admissionregistration does not
/// check it).
#[tokio::test]
async fn duplicate_names_are_refused_and_any_ca_bundle_is_kept() {
    let (_server, client) = server();
    let api = validating_api(client);
    let one = hook("check.widgets.example.com");
    let err = status(create(&api, "widgets", json!([one.clone(), one.clone()])).await);
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.field, "webhooks[1].name");
    assert_eq!(
        cause.message,
        "Duplicate value: \"check.widgets.example.com\""
    );

    let created = api
        .create(
            &PostParams::default(),
            &configuration("ValidatingWebhookConfiguration", "widgets", json!([one])),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["webhooks"][0]["clientConfig"]["caBundle"],
        "bm90IGEgY2VydGlmaWNhdGU="
    );
    let err = status(
        api.patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"webhooks": [hook("a.widgets.example.com"), hook("a.widgets.example.com")]}),
            ),
        )
        .await,
    );
    assert_eq!(err.code, 422);
}
