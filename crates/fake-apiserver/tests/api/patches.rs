//! JSON merge patch, JSON patch and strategic merge patch.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{config_map, server, status};
use crate::metadata::deployment;
use crate::resources::{install_widgets, widget, widgets_resource};

/// JSON merge patch (RFC 7386): objects merge, `null` deletes, lists are replaced.
#[tokio::test]
async fn merge_patch_follows_rfc_7386() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(
        &PostParams::default(),
        &config_map("mp", &[("a", "1"), ("b", "2")]),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "mp",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"k2": "v2"}}),
            ),
        )
        .await
        .unwrap();
    let labels = out.metadata.labels.unwrap();
    assert!(!labels.contains_key("a"));
    assert_eq!(labels["c"], "3");
    assert_eq!(out.data.unwrap().len(), 2);
}

/// JSON patch (RFC 6902) with a `test` operation: a failed test rejects the whole patch
/// with 422, as `kube::runtime::finalizer` relies on (`jsonpatch.Apply` errors in
/// `endpoints/handlers/patch.go`).
#[tokio::test]
async fn json_patch_with_test_is_atomic() {
    let (_server, client) = server();
    let api: Api<ServiceAccount> = Api::default_namespaced(client);
    let sa: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "op"}, "imagePullSecrets": [{"name": "theirs"}]
    }))
    .unwrap();
    api.create(&PostParams::default(), &sa).await.unwrap();
    let ok: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/imagePullSecrets", "value": [{"name": "theirs"}]},
        {"op": "add", "path": "/imagePullSecrets/-", "value": {"name": "ours"}}
    ]))
    .unwrap();
    let out = api
        .patch("op", &PatchParams::default(), &Patch::Json::<()>(ok))
        .await
        .unwrap();
    let names: Vec<_> = out
        .image_pull_secrets
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["theirs", "ours"]);

    let stale: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/imagePullSecrets", "value": [{"name": "theirs"}]},
        {"op": "replace", "path": "/imagePullSecrets", "value": []}
    ]))
    .unwrap();
    let err = status(
        api.patch("op", &PatchParams::default(), &Patch::Json::<()>(stale))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let unchanged = api.get("op").await.unwrap();
    assert_eq!(unchanged.image_pull_secrets.unwrap().len(), 2);
}

/// Strategic merge patch merges PodSpec `imagePullSecrets`, `containers`, `env` and
/// `volumes` by name (`patchStrategy=merge`, `patchMergeKey=name` in `core/v1/types.go`)
/// and keeps entries the patch does not mention.
#[tokio::test]
async fn strategic_merge_patch_merges_pod_spec_lists_by_name() {
    let server = fake_apiserver::FakeApiServer::builder()
        .deployment_mode(fake_apiserver::DeploymentMode::Disabled)
        .build();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    let mut d = serde_json::to_value(deployment("smp")).unwrap();
    d["spec"]["template"]["spec"]["imagePullSecrets"] = json!([{"name": "theirs"}]);
    d["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
    d["spec"]["template"]["spec"]["volumes"] = json!([{"name": "v1", "emptyDir": {}}]);
    api.create(&PostParams::default(), &serde_json::from_value(d).unwrap())
        .await
        .unwrap();

    let patch = json!({"spec": {"template": {"spec": {
        "imagePullSecrets": [{"name": "ours"}],
        "containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}],
        "volumes": [{"name": "v2", "emptyDir": {}}]
    }}}});
    let out = api
        .patch("smp", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let pod = out.spec.unwrap().template.spec.unwrap();
    let pulls: Vec<_> = pod
        .image_pull_secrets
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(pulls, ["theirs", "ours"]);
    assert_eq!(pod.containers.len(), 1);
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some("registry.example/op:1.0")
    );
    let env: Vec<_> = pod.containers[0]
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(env, ["A", "B"]);
    assert_eq!(pod.volumes.unwrap().len(), 2);

    let delete = json!({"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "ours", "$patch": "delete"}]}}}});
    let out = api
        .patch("smp", &PatchParams::default(), &Patch::Strategic(delete))
        .await
        .unwrap();
    let pulls: Vec<_> = out
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .image_pull_secrets
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(pulls, ["theirs"]);
}

/// `ServiceAccount.imagePullSecrets` has no patch strategy (`+listType=atomic`): a strategic
/// merge patch replaces the whole list, dropping entries other writers added.
#[tokio::test]
async fn service_account_image_pull_secrets_are_replaced_whole() {
    let (_server, client) = server();
    let api: Api<ServiceAccount> = Api::default_namespaced(client);
    let sa: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "op"}, "imagePullSecrets": [{"name": "op-dockercfg-x1y2z"}]
    }))
    .unwrap();
    api.create(&PostParams::default(), &sa).await.unwrap();
    let out = api
        .patch(
            "op",
            &PatchParams::default(),
            &Patch::Strategic(json!({"imagePullSecrets": [{"name": "ours"}]})),
        )
        .await
        .unwrap();
    let names: Vec<_> = out
        .image_pull_secrets
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(
        names,
        ["ours"],
        "the foreign entry is clobbered: SMP cannot be used to append here"
    );
}

/// Custom resources do not accept strategic merge patch (415, apiextensions
/// `crdHandler` supports only JSON, merge and apply patches).
#[tokio::test]
async fn strategic_merge_patch_is_refused_for_custom_resources() {
    let (_server, client) = server();
    install_widgets(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widgets_resource());
    api.create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let err = status(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
}

/// A CRD served at two versions without a conversion webhook (strategy `None`): a merge patch
/// through the version the object was not written at applies to the object as served there
/// (only `apiVersion` differs), as the apiserver converts before patching.
#[tokio::test]
async fn a_merge_patch_through_another_served_version_applies() {
    let (_server, client) = server();
    let mut crd = serde_json::to_value(crate::resources::widget_crd()).unwrap();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .unwrap();
    let at = |version: &str| -> Api<DynamicObject> {
        let resource = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", version, "Widget"),
            "widgets",
        );
        Api::default_namespaced_with(client.clone(), &resource)
    };
    let mut created = widget("two", json!({"size": 1}));
    created.types.as_mut().unwrap().api_version = "example.com/v2".into();
    at("v2")
        .create(&PostParams::default(), &created)
        .await
        .unwrap();
    let patched = at("v1")
        .patch(
            "two",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.types.unwrap().api_version, "example.com/v1");
    assert_eq!(patched.data["spec"]["size"], 2);
    let read = at("v2").get("two").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, "example.com/v2");
    assert_eq!(read.data["spec"]["size"], 2);
}
