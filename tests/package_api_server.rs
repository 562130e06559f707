//! The package API server over TLS, called with a real `kube::Client` as kube-aggregator calls
//! it (front-proxy certificate and identity headers) and as users call it directly (bearer
//! tokens): packageserver's answers (namespaces, selectors, Table, icon, errors), discovery and
//! OpenAPI, authentication and authorization, and a certificate rotation under load.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod package_api_support;

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use package_api_support::*;
use serde_json::Value;

fn csv_json(name: &str, version: &str, provider: &str) -> String {
    serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "annotations": {"capabilities": "Basic Install"},
                     "labels": {"operatorframework.io/arch.arm64": "supported"}},
        "spec": {
            "displayName": "Etcd", "description": "A key-value store.", "version": version,
            "provider": {"name": provider, "url": "https://example.com"},
            "icon": [{"base64data": b64(ICON_SVG), "mediatype": "image/svg+xml"}],
            "installModes": [{"type": "OwnNamespace", "supported": true},
                             {"type": "AllNamespaces", "supported": true}],
            "customresourcedefinitions": {"owned": [{"name": "etcdclusters.etcd.database.coreos.com",
                "version": "v1beta2", "kind": "EtcdCluster", "displayName": "etcd Cluster",
                "specDescriptors": [{"path": "size"}]}]},
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "etcd-operator",
                "spec": {"template": {"spec": {"containers": [{"name": "o", "image": "quay.io/etcd/operator:v1"}]}}}}]}},
        },
    })
    .to_string()
}

/// `olm` catalog: `etcd` (CSVs embedded as bundle objects; channels alpha, default stable)
/// and `shared`.
fn global_catalog(etcd_head: &str) -> String {
    format!(
        r#"---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v0.9.0
  - name: {etcd_head}
    replaces: etcd.v0.9.0
---
schema: olm.channel
package: etcd
name: alpha
entries:
  - name: etcd.v0.9.0
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.0
image: registry.example.com/etcd-bundle:v0.9.0
properties:
  - type: olm.package
    value: {{packageName: etcd, version: 0.9.0}}
  - type: olm.bundle.object
    value: {{data: {}}}
---
schema: olm.bundle
package: etcd
name: {etcd_head}
image: registry.example.com/etcd-bundle:head
properties:
  - type: olm.package
    value: {{packageName: etcd, version: {}}}
  - type: olm.bundle.object
    value: {{data: {}}}
---
schema: olm.deprecations
package: etcd
entries:
  - reference: {{schema: olm.channel, name: alpha}}
    message: alpha is no longer updated
{}"#,
        b64(&csv_json("etcd.v0.9.0", "0.9.0", "CoreOS")),
        etcd_head.trim_start_matches("etcd.v"),
        b64(&csv_json(
            etcd_head,
            etcd_head.trim_start_matches("etcd.v"),
            "CoreOS"
        )),
        metadata_package("shared", "Global Corp"),
    )
}

async fn started() -> Running {
    let catalogs = Arc::new(TestCatalogs::default());
    catalogs.set(
        "olm",
        "operatorhub",
        "Community Operators",
        0,
        catalog(&global_catalog("etcd.v1.0.0")),
    );
    catalogs.set(
        "team-a",
        "private",
        "Team A Private",
        0,
        catalog(&format!(
            "{}{}",
            metadata_package("shared", "Team A"),
            metadata_package("private-only", "Team A")
        )),
    );
    start(catalogs).await
}

fn admin() -> Option<(&'static str, &'static [&'static str])> {
    Some(("admin", &["system:masters", "system:authenticated"]))
}

#[tokio::test]
async fn a_namespace_sees_its_catalogs_then_the_global_ones_and_its_own_package_wins() {
    let server = started().await;
    let client = server.as_aggregator(admin());
    let team_a: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-a", &resource());
    let list = team_a.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        names(&list.items),
        ["private-only", "shared", "etcd", "shared"]
    );
    assert!(
        list.items
            .iter()
            .all(|item| item.metadata.namespace.as_deref() == Some("team-a"))
    );

    // Only in the global namespace, seen from another namespace.
    let other: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-b", &resource());
    assert_eq!(
        names(&other.list(&ListParams::default()).await.unwrap().items),
        ["etcd", "shared"]
    );
    // A list's items are the objects get answers, byte for byte as JSON values.
    for item in other.list(&ListParams::default()).await.unwrap().items {
        let got = other.get(&item.name_any()).await.unwrap();
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            serde_json::to_value(&got).unwrap()
        );
    }
    let etcd = other.get("etcd").await.unwrap();
    assert_eq!(etcd.metadata.namespace.as_deref(), Some("team-b"));
    let status = &etcd.data["status"];
    assert_eq!(status["catalogSource"], "operatorhub");
    assert_eq!(status["catalogSourceNamespace"], "olm");
    assert_eq!(status["catalogSourceDisplayName"], "Community Operators");
    assert_eq!(status["catalogSourcePublisher"], "Example");
    assert_eq!(status["defaultChannel"], "stable");
    assert_eq!(status["provider"]["name"], "CoreOS");
    let stable = status["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "stable")
        .unwrap();
    assert_eq!(stable["currentCSV"], "etcd.v1.0.0");
    let desc = &stable["currentCSVDesc"];
    assert_eq!(desc["version"], "1.0.0");
    assert_eq!(desc["installModes"][0]["type"], "OwnNamespace");
    assert_eq!(
        desc["customresourcedefinitions"]["owned"][0]["kind"],
        "EtcdCluster"
    );
    assert!(
        desc["customresourcedefinitions"]["owned"][0]
            .get("specDescriptors")
            .is_none()
    );
    assert_eq!(
        desc["relatedImages"],
        serde_json::json!(["quay.io/etcd/operator:v1"])
    );
    assert!(
        desc.get("icon").is_none(),
        "icons are stripped from get: {desc}"
    );
    assert_eq!(
        stable["entries"],
        serde_json::json!([{"name": "etcd.v1.0.0", "version": "1.0.0"}, {"name": "etcd.v0.9.0", "version": "0.9.0"}])
    );
    let alpha = status["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "alpha")
        .unwrap();
    assert_eq!(
        alpha["deprecation"]["message"],
        "alpha is no longer updated"
    );

    // Own catalog wins; from elsewhere the global one answers.
    let own = team_a.get("shared").await.unwrap();
    assert_eq!(own.data["status"]["catalogSource"], "private");
    assert_eq!(
        own.data["status"]["channels"][0]["currentCSVDesc"]["description"],
        "shared from the package"
    );
    assert_eq!(
        other.get("shared").await.unwrap().data["status"]["catalogSource"],
        "operatorhub"
    );

    let missing = other.get("private-only").await.unwrap_err();
    let kube::Error::Api(status) = missing else {
        panic!("{missing}")
    };
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(
        status.message,
        "packagemanifests.packages.operators.coreos.com \"private-only\" not found"
    );

    // Across namespaces: everything, each in its catalog's namespace.
    let all: Api<DynamicObject> = Api::all_with(client, &resource());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        4
    );
}

#[tokio::test]
async fn label_and_field_selectors_filter_as_packageserver_does() {
    let server = started().await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.as_aggregator(admin()), "team-a", &resource());
    let select = |labels: &str| ListParams::default().labels(labels);
    let listed = |params: ListParams| {
        let api = api.clone();
        async move { names(&api.list(&params).await.unwrap().items) }
    };
    assert_eq!(
        listed(select("catalog=private")).await,
        ["private-only", "shared"]
    );
    assert_eq!(
        listed(select("catalog-namespace=olm")).await,
        ["etcd", "shared"]
    );
    assert_eq!(listed(select("provider=CoreOS")).await, ["etcd"]);
    assert_eq!(
        listed(select("team=platform,catalog!=private")).await,
        ["etcd", "shared"]
    );
    // etcd's CSV declares arm64, so it gets no amd64 default; the others get both defaults.
    assert_eq!(
        listed(select("operatorframework.io/arch.amd64=supported")).await,
        ["private-only", "shared", "shared"]
    );
    assert_eq!(
        listed(select("operatorframework.io/os.linux=supported"))
            .await
            .len(),
        4
    );
    assert_eq!(
        listed(ListParams::default().fields("metadata.name=shared")).await,
        ["shared", "shared"]
    );

    for (fields, message) in [
        ("spec.foo=bar", "\"spec.foo\" is not a known field selector"),
        (
            "metadata.namespace=team-a",
            "field label not supported: metadata.namespace",
        ),
    ] {
        let error = api
            .list(&ListParams::default().fields(fields))
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("{error}")
        };
        assert_eq!(status.code, 400, "{fields}");
        assert!(status.message.contains(message), "{}", status.message);
    }
    let error = api.list(&select("catalog in private")).await.unwrap_err();
    assert!(matches!(error, kube::Error::Api(status) if status.code == 400));
}

#[tokio::test]
async fn kubectl_gets_a_table_with_name_catalog_and_age_and_the_icon_with_its_media_type() {
    let server = started().await;
    let client = server.as_aggregator(admin());
    let base = "/apis/packages.operators.coreos.com/v1/namespaces/team-b/packagemanifests";
    let (status, body, _) = get_raw(
        &client,
        base,
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
    )
    .await;
    assert_eq!(status, 200);
    let table: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Catalog", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "etcd");
    assert_eq!(table["rows"][0]["cells"][1], "Community Operators");
    assert!(
        table["rows"][0]["cells"][2]
            .as_str()
            .unwrap()
            .ends_with('d')
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    let (status, bytes, content_type) = get_raw(&client, &format!("{base}/etcd/icon"), "*/*").await;
    assert_eq!((status, content_type.as_str()), (200, "image/svg+xml"));
    assert_eq!(String::from_utf8(bytes).unwrap(), ICON_SVG);
    // From olm.csv.metadata: the package's icon.
    let (status, bytes, _) = get_raw(&client, &format!("{base}/shared/icon"), "*/*").await;
    assert_eq!(
        (status, String::from_utf8(bytes).unwrap().as_str()),
        (200, ICON_SVG)
    );
    let (status, _, _) = get_raw(&client, &format!("{base}/nothing/icon"), "*/*").await;
    assert_eq!(status, 404);

    // No watch and no writes, as packageserver.
    let (status, body, _) =
        get_raw(&client, &format!("{base}?watch=true"), "application/json").await;
    assert_eq!(status, 405, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn discovery_and_openapi_describe_the_resource_for_kubectl_explain() {
    let server = started().await;
    let client = server.as_aggregator(Some(("system:kube-aggregator", &["system:masters"])));
    let (status, body, _) = get_raw(
        &client,
        "/apis/packages.operators.coreos.com/v1",
        "application/json",
    )
    .await;
    assert_eq!(status, 200);
    let resources: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(resources["kind"], "APIResourceList");
    assert_eq!(
        resources["resources"][0]["verbs"],
        serde_json::json!(["get", "list"])
    );
    assert_eq!(resources["resources"][1]["name"], "packagemanifests/icon");

    let (_, body, _) = get_raw(&client, "/openapi/v3", "application/json").await;
    let root: Value = serde_json::from_slice(&body).unwrap();
    let url = root["paths"]["apis/packages.operators.coreos.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body, _) = get_raw(&client, &url, "application/json").await;
    assert_eq!(status, 200);
    let document: Value = serde_json::from_slice(&body).unwrap();
    let schemas = document["components"]["schemas"].as_object().unwrap();
    // What `kubectl explain packagemanifest.status` walks: the kind by its GVK extension, then
    // the status reference.
    let (_, manifest) = schemas
        .iter()
        .find(|(_, schema)| {
            schema["x-kubernetes-group-version-kind"][0]["kind"] == "PackageManifest"
        })
        .expect("a schema for the kind");
    let status_ref = manifest["properties"]["status"]["$ref"]
        .as_str()
        .or_else(|| manifest["properties"]["status"]["allOf"][0]["$ref"].as_str())
        .unwrap();
    let status = &schemas[status_ref.trim_start_matches("#/components/schemas/")];
    for field in [
        "catalogSource",
        "catalogSourceNamespace",
        "channels",
        "defaultChannel",
        "packageName",
    ] {
        assert!(
            status["properties"].get(field).is_some(),
            "{field} missing: {status}"
        );
    }
    let (status, body, _) = get_raw(&client, "/openapi/v2", "application/json").await;
    assert_eq!(status, 200);
    let swagger: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(swagger["swagger"], "2.0");
    assert!(!String::from_utf8(body).unwrap().contains("nullable"));
}

#[tokio::test]
async fn only_the_front_proxy_may_name_the_user_and_everyone_is_authorized() {
    let server = started().await;
    server
        .reviewer
        .user("alice-token", "alice", &["system:authenticated"]);
    server
        .reviewer
        .user("bob-token", "bob", &["system:authenticated"]);
    server.reviewer.grant("alice", "*", "team-a");
    server.reviewer.grant("carol", "list", "team-a");
    let in_team_a =
        |client: kube::Client| Api::<DynamicObject>::namespaced_with(client, "team-a", &resource());
    let code = |result: Result<kube::core::ObjectList<DynamicObject>, kube::Error>| match result {
        Ok(_) => 200,
        Err(kube::Error::Api(status)) => status.code,
        Err(other) => panic!("{other}"),
    };

    // A token: reviewed, then authorized per namespace.
    assert_eq!(
        code(
            in_team_a(server.with_token(Some("alice-token"), None))
                .list(&ListParams::default())
                .await
        ),
        200
    );
    let denied = in_team_a(server.with_token(Some("bob-token"), None))
        .list(&ListParams::default())
        .await;
    let Err(kube::Error::Api(status)) = denied else {
        panic!("bob was allowed")
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "packagemanifests.packages.operators.coreos.com is forbidden: User \"bob\" cannot list resource \"packagemanifests\" in API group \"packages.operators.coreos.com\" in the namespace \"team-a\": no RBAC policy matched"
    );

    // No credentials, an unknown token, or identity headers without the front-proxy
    // certificate: 401, whatever the headers claim.
    assert_eq!(
        code(
            in_team_a(server.with_token(None, None))
                .list(&ListParams::default())
                .await
        ),
        401
    );
    assert_eq!(
        code(
            in_team_a(server.with_token(Some("forged"), None))
                .list(&ListParams::default())
                .await
        ),
        401
    );
    let spoofed = server.with_token(None, Some(("alice", &["system:masters"])));
    assert_eq!(
        code(in_team_a(spoofed).list(&ListParams::default()).await),
        401
    );
    let spoofed_with_token =
        server.with_token(Some("bob-token"), Some(("alice", &["system:masters"])));
    assert_eq!(
        code(
            in_team_a(spoofed_with_token)
                .list(&ListParams::default())
                .await
        ),
        403
    );
    // A certificate from another CA is no front proxy either.
    let impostor = client_pki("front-proxy-client", &[]);
    let forged = server.with_certificate(&impostor, Some(("alice", &["system:masters"])));
    assert_eq!(
        code(in_team_a(forged).list(&ListParams::default()).await),
        401
    );

    // Through the front proxy: the headers name the user, who is then authorized.
    assert_eq!(
        code(
            in_team_a(server.as_aggregator(Some(("carol", &["system:authenticated"]))))
                .list(&ListParams::default())
                .await
        ),
        200
    );
    let get = in_team_a(server.as_aggregator(Some(("carol", &["system:authenticated"]))))
        .get("etcd")
        .await;
    assert!(
        matches!(get, Err(kube::Error::Api(status)) if status.code == 403),
        "carol may list but not get"
    );
    // The front-proxy certificate without identity headers is nobody.
    assert_eq!(
        code(
            in_team_a(server.as_aggregator(None))
                .list(&ListParams::default())
                .await
        ),
        401
    );

    // Answers are cached: the same question again asks nothing.
    let reviews = *server.reviewer.access_reviews.lock().unwrap();
    let tokens = *server.reviewer.token_reviews.lock().unwrap();
    in_team_a(server.with_token(Some("alice-token"), None))
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(*server.reviewer.access_reviews.lock().unwrap(), reviews);
    assert_eq!(*server.reviewer.token_reviews.lock().unwrap(), tokens);
}

#[tokio::test]
async fn a_catalog_push_changes_what_the_api_returns_and_a_standby_answers_503() {
    let server = started().await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.as_aggregator(admin()), "team-b", &resource());
    let head = |object: DynamicObject| {
        object.data["status"]["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "stable")
            .unwrap()["currentCSV"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let listed_etcd = async || {
        let listed = api.list(&ListParams::default()).await.unwrap();
        listed
            .items
            .into_iter()
            .find(|item| item.metadata.name.as_deref() == Some("etcd"))
            .unwrap()
    };
    assert_eq!(head(api.get("etcd").await.unwrap()), "etcd.v1.0.0");
    assert_eq!(head(listed_etcd().await), "etcd.v1.0.0");
    assert_eq!(
        head(listed_etcd().await),
        "etcd.v1.0.0",
        "kept, still right"
    );
    server.catalogs.set(
        "olm",
        "operatorhub",
        "Community Operators",
        0,
        catalog(&global_catalog("etcd.v1.1.0")),
    );
    assert_eq!(head(api.get("etcd").await.unwrap()), "etcd.v1.1.0");
    assert_eq!(head(listed_etcd().await), "etcd.v1.1.0");

    // The same loaded catalog under a CatalogSource renamed for display: the manifests kept
    // for the catalog follow the CatalogSource.
    let same = server
        .catalogs
        .served
        .lock()
        .unwrap()
        .iter()
        .find(|(source, _)| source.metadata.name.as_deref() == Some("operatorhub"))
        .map(|(_, catalog)| catalog.clone())
        .unwrap();
    server
        .catalogs
        .set("olm", "operatorhub", "Renamed Operators", 0, same);
    assert_eq!(
        listed_etcd().await.data["status"]["catalogSourceDisplayName"],
        "Renamed Operators"
    );
    assert_eq!(
        api.get("etcd").await.unwrap().data["status"]["catalogSourceDisplayName"],
        "Renamed Operators"
    );

    server.server.withdraw();
    let error = api.get("etcd").await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 503),
        "{error}"
    );
    let (status, _, _) = get_raw(
        &server.as_aggregator(admin()),
        "/apis/packages.operators.coreos.com/v1",
        "application/json",
    )
    .await;
    assert_eq!(
        status, 503,
        "discovery fails too, so the APIService is not Available"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_certificate_rotates_without_a_failed_request() {
    let server = started().await;
    let rotated =
        opcat::certificates::issue(&identity(), k8s_openapi::jiff::Timestamp::now()).unwrap();
    // What the APIService's caBundle holds during a rotation: the new CA and the old one.
    let client = server.trusting(&[rotated.ca_pem(), server.material.ca_pem()]);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-b", &resource());
    let load = tokio::spawn(async move {
        let mut served = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while tokio::time::Instant::now() < deadline {
            api.list(&ListParams::default())
                .await
                .expect("every request succeeds");
            served += 1;
        }
        served
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    server
        .server
        .set_certificate(rotated.cert_pem(), rotated.key_pem())
        .unwrap();
    assert!(load.await.unwrap() > 10);
    // New connections get the new certificate: a client trusting only the new CA succeeds.
    let fresh = server.trusting(&[rotated.ca_pem()]);
    Api::<DynamicObject>::namespaced_with(fresh, "team-b", &resource())
        .list(&ListParams::default())
        .await
        .unwrap();
}
