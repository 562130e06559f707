//! Server-side apply (`sigs.k8s.io/structured-merge-diff`, documented in
//! "Server-Side Apply" on kubernetes.io).

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{server, status};
use crate::resources::{install_widgets, widgets_resource};

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn managers(obj: &ConfigMap) -> Vec<(String, String)> {
    obj.metadata
        .managed_fields
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.manager.unwrap_or_default(),
                m.operation.unwrap_or_default(),
            )
        })
        .collect()
}

/// Apply creates the object and records the applied fields under the manager with operation
/// `Apply` in `managedFields` (FieldsV1).
#[tokio::test]
async fn apply_records_ownership_per_manager() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let out = api
        .patch(
            "own",
            &PatchParams::apply("opcat"),
            &Patch::Apply(cm("own", json!({"a": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(managers(&out), [("opcat".to_string(), "Apply".to_string())]);
    let fields = out.metadata.managed_fields.unwrap()[0]
        .fields_v1
        .clone()
        .unwrap()
        .0;
    assert_eq!(fields, json!({"f:data": {"f:a": {}}}));
}

/// Applying a value another manager owns is 409 Conflict whose causes name the manager and
/// the field (`FieldManagerConflict`); `force` takes the field over.
#[tokio::test]
async fn conflicting_apply_is_409_unless_forced() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.patch(
        "c",
        &PatchParams::apply("first"),
        &Patch::Apply(cm("c", json!({"a": "1"}))),
    )
    .await
    .unwrap();
    let err = status(
        api.patch(
            "c",
            &PatchParams::apply("second"),
            &Patch::Apply(cm("c", json!({"a": "2"}))),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"first\": .data.a"
    );
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.reason, "FieldManagerConflict");
    assert_eq!(cause.field, ".data.a");
    assert_eq!(cause.message, "conflict with \"first\"");

    let forced = api
        .patch(
            "c",
            &PatchParams::apply("second").force(),
            &Patch::Apply(cm("c", json!({"a": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "2");
    assert_eq!(
        managers(&forced),
        [("second".to_string(), "Apply".to_string())]
    );
}

/// A field the manager applied before and omits now is removed, unless another manager
/// also owns it (shared ownership after applying the same value).
#[tokio::test]
async fn fields_no_longer_applied_are_removed_unless_shared() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let a = PatchParams::apply("a");
    api.patch(
        "p",
        &a,
        &Patch::Apply(cm("p", json!({"x": "1", "y": "2", "z": "3"}))),
    )
    .await
    .unwrap();
    api.patch(
        "p",
        &PatchParams::apply("b"),
        &Patch::Apply(cm("p", json!({"z": "3"}))),
    )
    .await
    .unwrap();
    let out = api
        .patch("p", &a, &Patch::Apply(cm("p", json!({"x": "1"}))))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.get("x").map(String::as_str), Some("1"));
    assert!(!data.contains_key("y"), "y was only a's and is pruned");
    assert_eq!(
        data.get("z").map(String::as_str),
        Some("3"),
        "z is still b's"
    );
}

/// An Update (PUT/merge patch) takes ownership of the fields it changes, so a later Apply
/// that omits those fields leaves them alone, and re-applying the old value conflicts with
/// the updater ("using v1").
#[tokio::test]
async fn update_takes_ownership_from_an_applier() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let ssa = PatchParams::apply("opcat");
    api.patch(
        "u",
        &ssa,
        &Patch::Apply(cm("u", json!({"mine": "1", "shared": "a"}))),
    )
    .await
    .unwrap();
    let edit = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    };
    api.patch(
        "u",
        &edit,
        &Patch::Merge(json!({"data": {"shared": "b", "theirs": "t"}})),
    )
    .await
    .unwrap();

    let out = api
        .patch("u", &ssa, &Patch::Apply(cm("u", json!({"mine": "1"}))))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data["shared"], "b", "taken over by the Update, not pruned");
    assert_eq!(data["theirs"], "t");

    let err = status(
        api.patch(
            "u",
            &ssa,
            &Patch::Apply(cm("u", json!({"mine": "1", "shared": "a"}))),
        )
        .await,
    );
    assert_eq!(err.code, 409);
    assert!(
        err.message
            .contains("conflict with \"kubectl-edit\" using v1"),
        "{}",
        err.message
    );
}

/// `listType=atomic` lists (here `ServiceAccount.imagePullSecrets`) belong to one manager
/// and are replaced whole: a second applier's different list conflicts, and forcing it
/// drops the first applier's entries.
#[tokio::test]
async fn atomic_lists_are_owned_and_replaced_whole() {
    let (_server, client) = server();
    let api: Api<ServiceAccount> = Api::default_namespaced(client);
    let sa = |names: &[&str]| {
        let refs: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}, "imagePullSecrets": refs})
    };
    api.patch(
        "op",
        &PatchParams::apply("openshift"),
        &Patch::Apply(sa(&["op-dockercfg-abc"])),
    )
    .await
    .unwrap();
    let err = status(
        api.patch(
            "op",
            &PatchParams::apply("opcat"),
            &Patch::Apply(sa(&["ours"])),
        )
        .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.details.unwrap().causes[0].field, ".imagePullSecrets");
    let forced = api
        .patch(
            "op",
            &PatchParams::apply("opcat").force(),
            &Patch::Apply(sa(&["ours"])),
        )
        .await
        .unwrap();
    let names: Vec<_> = forced
        .image_pull_secrets
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["ours"]);
}

/// `listType=map` items are merged by key and owned item by item; `listType=set` values
/// likewise; an item a manager stops applying is removed only if it owned it alone.
#[tokio::test]
async fn map_and_set_lists_merge_per_item() {
    let (_server, client) = server();
    install_widgets(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widgets_resource());
    let w = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    api.patch(
        "w",
        &PatchParams::apply("a"),
        &Patch::Apply(w(
            json!({"ports": [{"name": "http", "port": 80}], "tags": ["x"]}),
        )),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "w",
            &PatchParams::apply("b"),
            &Patch::Apply(w(
                json!({"ports": [{"name": "metrics", "port": 9090}], "tags": ["y"]}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(out.data["spec"]["tags"], json!(["x", "y"]));

    let out = api
        .patch(
            "w",
            &PatchParams::apply("a"),
            &Patch::Apply(w(json!({"tags": ["x"]}))),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090}])
    );

    let err = status(
        api.patch(
            "w",
            &PatchParams::apply("a"),
            &Patch::Apply(w(json!({"ports": [{"name": "metrics", "port": 1}]}))),
        )
        .await,
    );
    assert_eq!(
        err.details.unwrap().causes[0].field,
        ".spec.ports[name=\"metrics\"].port"
    );
}

/// Apply without `fieldManager` is 422, and a body without `apiVersion`/`kind` is 400
/// (`PatchOptions` validation, apply decoding).
#[tokio::test]
async fn apply_requires_a_field_manager_and_type_meta() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &crate::common::config_map("v", &[]))
        .await
        .unwrap();
    let req = kube::core::Request::new("/api/v1/namespaces/default/configmaps")
        .patch(
            "v",
            &PatchParams::default(),
            &Patch::Apply(cm("v", json!({}))),
        )
        .unwrap();
    let err = status(client.request::<ConfigMap>(req).await);
    assert_eq!(err.code, 422);
    let err = status(
        api.patch(
            "v",
            &PatchParams::apply("m"),
            &Patch::Apply(json!({"metadata": {"name": "v"}})),
        )
        .await,
    );
    assert_eq!(err.code, 400);
}

/// Re-applying the same Deployment is a no-op even though the server defaulted fields and
/// the Deployment controller wrote status in between: same `resourceVersion`, no event
/// (the steady state of a controller that applies its desired objects every reconcile).
#[tokio::test]
async fn reapplying_a_defaulted_deployment_is_a_no_op() {
    use k8s_openapi::api::apps::v1::Deployment;
    let (_server, client) = server();
    let api: Api<Deployment> = Api::default_namespaced(client);
    let mut desired = serde_json::to_value(crate::metadata::deployment("op")).unwrap();
    desired["apiVersion"] = json!("apps/v1");
    desired["kind"] = json!("Deployment");
    desired["spec"]["template"]["spec"]["imagePullSecrets"] = json!([{"name": "opcat-pull"}]);
    desired["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 8080}]);
    let ssa = PatchParams::apply("opcat");
    let first = api
        .patch("op", &ssa, &Patch::Apply(&desired))
        .await
        .unwrap();
    let pod = first.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(
        pod.restart_policy.as_deref(),
        Some("Always"),
        "defaulted by the server"
    );
    let settled = api.get("op").await.unwrap();
    assert!(
        settled.status.is_some(),
        "the Deployment controller wrote status"
    );
    let again = api
        .patch("op", &ssa, &Patch::Apply(&desired))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        settled.metadata.resource_version
    );
}
