//! Create, get, list, update, delete, deletecollection and their failure bodies.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::core::Status;

use crate::common::{config_map, server, status};

/// `metadata.generateName` gets a random 5-character suffix
/// (`k8s.io/apiserver/pkg/storage/names` SimpleNameGenerator).
#[tokio::test]
async fn generate_name_appends_a_suffix() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut cm = config_map("", &[]);
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("opcat-".into());
    let a = api.create(&PostParams::default(), &cm).await.unwrap();
    let b = api.create(&PostParams::default(), &cm).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(
        a.starts_with("opcat-") && a.len() == "opcat-".len() + 5,
        "{a}"
    );
    assert_ne!(a, b);
}

/// Label selectors support `=`, `==`, `!=`, `in`, `notin`, exists and `!` (not exists)
/// (`k8s.io/apimachinery/pkg/labels/selector.go`); field selectors `metadata.name` and
/// `metadata.namespace` (`fields.ParseSelector`).
#[tokio::test]
async fn list_filters_by_label_and_field_selectors() {
    let (_server, client) = server();
    crate::common::create_namespace(&client, "other").await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    api.create(
        &pp,
        &config_map("web", &[("app", "web"), ("tier", "front")]),
    )
    .await
    .unwrap();
    api.create(&pp, &config_map("db", &[("app", "db")]))
        .await
        .unwrap();
    api.create(&pp, &config_map("bare", &[])).await.unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "other")
        .create(&pp, &config_map("web", &[("app", "web")]))
        .await
        .unwrap();

    let names = |selector: &str| {
        let api = api.clone();
        let selector = selector.to_string();
        async move {
            let mut n: Vec<String> = api
                .list(&ListParams::default().labels(&selector))
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|c| c.metadata.name.unwrap())
                .collect();
            n.sort();
            n
        }
    };
    assert_eq!(names("app=web").await, ["web"]);
    assert_eq!(names("app==db").await, ["db"]);
    assert_eq!(names("app!=web").await, ["bare", "db"]);
    assert_eq!(names("app in (web,db)").await, ["db", "web"]);
    assert_eq!(names("app notin (web)").await, ["bare", "db"]);
    assert_eq!(names("tier").await, ["web"]);
    assert_eq!(names("!app").await, ["bare"]);

    let all: Api<ConfigMap> = Api::all(client);
    let by_name = all
        .list(&ListParams::default().fields("metadata.name=web"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 2);
    let by_ns = all
        .list(&ListParams::default().fields("metadata.name=web,metadata.namespace=other"))
        .await
        .unwrap();
    assert_eq!(by_ns.items.len(), 1);
    let err = status(all.list(&ListParams::default().fields("data.k=v")).await);
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
}

/// `limit` returns a page and a `continue` token; following it returns the rest, all at
/// the first page's `resourceVersion` (API concepts, "Retrieving large results sets in chunks").
#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..7 {
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}"), &[]))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let token = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    let third = api
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(second.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(third.items.len(), 1);
    assert!(third.metadata.continue_.is_none());
    assert_eq!(
        first.metadata.resource_version,
        third.metadata.resource_version
    );
    let mut names: Vec<_> = [first, second, third]
        .into_iter()
        .flat_map(|l| l.items)
        .map(|c| c.metadata.name.unwrap())
        .collect();
    names.dedup();
    assert_eq!(names.len(), 7);
}

/// 404 `configmaps "x" not found` and 409 `AlreadyExists` with `details{name,kind}`
/// (`errors.NewNotFound`, `errors.NewAlreadyExists`).
#[tokio::test]
async fn not_found_and_already_exists_bodies() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let err = status(api.get("x").await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"x\" not found");
    let details = err.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("x", "configmaps")
    );

    api.create(&PostParams::default(), &config_map("x", &[]))
        .await
        .unwrap();
    let err = status(
        api.create(&PostParams::default(), &config_map("x", &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"x\" already exists");
}

/// A missing name, or a namespaced object without a namespace, is 422 Invalid with a
/// `FieldValueRequired` cause (`ValidateObjectMeta`).
#[tokio::test]
async fn missing_name_or_namespace_is_invalid() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut cm = config_map("", &[]);
    cm.metadata.name = None;
    let err = status(api.create(&PostParams::default(), &cm).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.field, "metadata.name");
    assert_eq!(cause.reason, "FieldValueRequired");

    let no_ns: Api<ConfigMap> = Api::all(client);
    let err = status(
        no_ns
            .create(&PostParams::default(), &config_map("y", &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(err.details.unwrap().causes[0].field, "metadata.namespace");
}

/// Replace stores the new content; a stale `resourceVersion` is 409 Conflict with the
/// "object has been modified" message (optimistic concurrency, `storage.ErrCodeResourceVersionConflicts`).
#[tokio::test]
async fn update_with_stale_resource_version_conflicts() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &config_map("u", &[]))
        .await
        .unwrap();
    let mut first = created.clone();
    first.data = Some([("k".to_string(), "first".to_string())].into());
    let updated = api
        .replace("u", &PostParams::default(), &first)
        .await
        .unwrap();
    assert_eq!(updated.data.unwrap()["k"], "first");

    let mut stale = created;
    stale.data = Some([("k".to_string(), "stale".to_string())].into());
    let err = status(api.replace("u", &PostParams::default(), &stale).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"u\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

/// Delete of an object without finalizers removes it and answers with a `Success` Status
/// for builtin kinds; deletecollection removes what the selector matches.
#[tokio::test]
async fn delete_and_delete_collection() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();
    api.create(&pp, &config_map("a", &[("x", "1")]))
        .await
        .unwrap();
    api.create(&pp, &config_map("b", &[("x", "1")]))
        .await
        .unwrap();
    api.create(&pp, &config_map("c", &[])).await.unwrap();

    let answer = api.delete("a", &DeleteParams::default()).await.unwrap();
    let status: Status = answer.right().expect("a Status body for a builtin kind");
    assert_eq!(status.details.unwrap().name, "a");
    assert_eq!(crate::common::status(api.get("a").await).code, 404);

    let deleted = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("x=1"),
        )
        .await
        .unwrap()
        .left()
        .expect("the deleted items");
    assert_eq!(deleted.items.len(), 1);
    let left: Vec<_> = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].metadata.name.as_deref(), Some("c"));
}

/// A continue token older than the retained history is 410 Expired
/// (`storage.NewTooLargeResourceVersionError`/etcd compaction behaviour for `continue`).
#[tokio::test]
async fn expired_continue_token_is_gone() {
    let server = fake_apiserver::FakeApiServer::builder()
        .watch_history(2)
        .build();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    for i in 0..3 {
        api.create(&PostParams::default(), &config_map(&format!("p-{i}"), &[]))
            .await
            .unwrap();
    }
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    for i in 3..8 {
        api.create(&PostParams::default(), &config_map(&format!("p-{i}"), &[]))
            .await
            .unwrap();
    }
    let token = page.metadata.continue_.unwrap();
    let err = status(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

/// Names must be RFC 1123 subdomains (namespaces: labels); violations are 422 with the
/// upstream wording (`validation.IsDNS1123Subdomain`).
#[tokio::test]
async fn invalid_names_are_rejected() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = status(
        api.create(&PostParams::default(), &config_map("Not_Valid", &[]))
            .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("a lowercase RFC 1123 subdomain"),
        "{}",
        err.message
    );
    let ns: Api<Namespace> = Api::all(client);
    let bad = Namespace {
        metadata: ObjectMeta {
            name: Some("a.b".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    assert_eq!(
        status(ns.create(&PostParams::default(), &bad).await).code,
        422
    );
}
