//! A list's JSON is sent as chunks of the kept manifests' texts: over HTTP/1.1 and HTTP/2 (as
//! kube-aggregator calls) the same bytes, their length announced exactly, and byte for byte
//! what serializing the list gives; the other forms (Table, YAML, protobuf asked first) still
//! answer over both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod package_api_support;

use std::sync::Arc;

use http::Version;
use opcat::package_server::memo::Memo;
use opcat::package_server::storage::{ListQuery, select};
use opcat::package_server::types::PackageManifestList;
use package_api_support::*;
use serde_json::Value;

const LIST: &str = "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests";

fn catalogs() -> Arc<TestCatalogs> {
    let catalogs = Arc::new(TestCatalogs::default());
    catalogs.set(
        "olm",
        "operatorhub",
        "Community Operators",
        0,
        catalog(&format!(
            "{}{}",
            metadata_package("shared", "Global Corp"),
            metadata_package("global-only", "Global Corp")
        )),
    );
    catalogs.set(
        "team-a",
        "private",
        "Team A Private",
        0,
        catalog(&metadata_package("shared", "Team A")),
    );
    catalogs
}

fn item_names(list: &PackageManifestList) -> Vec<&str> {
    list.items
        .iter()
        .map(|item| item.metadata.name.as_deref().unwrap())
        .collect()
}

#[test]
fn a_lists_chunks_are_the_bytes_of_the_serialized_list() {
    let catalogs = catalogs();
    let memo = Memo::default();
    for (namespace, name) in [
        (Some("team-a"), None),
        (None, None),
        (Some("team-a"), Some("shared")),
        (Some("team-a"), Some("nothing")),
    ] {
        let query = ListQuery {
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            ..Default::default()
        };
        let selection = select(catalogs.as_ref(), &memo, &query);
        let list = selection.to_list();
        assert_eq!(
            String::from_utf8(selection.to_chunks().concat()).unwrap(),
            serde_json::to_string(&list).unwrap(),
            "{query:?}"
        );
        assert_eq!(list.items.len(), selection.len());
    }
}

#[tokio::test]
async fn a_list_is_the_same_bytes_over_http_1_1_and_http_2_its_length_exact() {
    let server = start(catalogs()).await;
    let mut bodies = Vec::new();
    for version in [Version::HTTP_11, Version::HTTP_2] {
        for accept in [
            "application/json",
            "application/vnd.kubernetes.protobuf, application/json",
        ] {
            let answer = server.get_over(version, LIST, accept).await;
            assert_eq!((answer.version, answer.status), (version, 200), "{accept}");
            assert_eq!(
                answer.content_length(),
                Some(answer.body.len()),
                "{version:?}"
            );
            assert_eq!(
                answer.headers[http::header::CONTENT_TYPE],
                "application/json"
            );
            bodies.push(answer.body);
        }
    }
    assert!(bodies.iter().all(|body| *body == bodies[0]));
    let list: PackageManifestList = serde_json::from_slice(&bodies[0]).unwrap();
    // The namespace's own catalogs first, then the global ones.
    assert_eq!(item_names(&list), ["shared", "global-only", "shared"]);
    assert_eq!(list.items[0].status.catalog_source, "private");
    assert_eq!(serde_json::to_vec(&list).unwrap(), bodies[0]);
}

#[tokio::test]
async fn table_yaml_and_a_single_item_answer_over_both_versions() {
    let server = start(catalogs()).await;
    for version in [Version::HTTP_11, Version::HTTP_2] {
        let table = server
            .get_over(
                version,
                LIST,
                "application/json;as=Table;v=v1;g=meta.k8s.io",
            )
            .await;
        assert_eq!(table.status, 200, "{version:?}");
        assert_eq!(table.content_length(), Some(table.body.len()));
        let table: Value = serde_json::from_slice(&table.body).unwrap();
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["rows"].as_array().unwrap().len(), 3);

        let yaml = server.get_over(version, LIST, "application/yaml").await;
        assert_eq!(yaml.status, 200, "{version:?}");
        assert_eq!(yaml.content_length(), Some(yaml.body.len()));
        let list: PackageManifestList = serde_saphyr::from_slice(&yaml.body).unwrap();
        assert_eq!(item_names(&list), ["shared", "global-only", "shared"]);

        let one = server
            .get_over(version, &format!("{LIST}/shared"), "application/json")
            .await;
        assert_eq!(one.status, 200, "{version:?}");
        assert_eq!(one.content_length(), Some(one.body.len()));
        let one: Value = serde_json::from_slice(&one.body).unwrap();
        assert_eq!(one["status"]["catalogSource"], "private");

        let refused = server
            .get_over(version, LIST, "application/vnd.kubernetes.protobuf")
            .await;
        assert_eq!(refused.status, 406, "{version:?}");
    }
}
