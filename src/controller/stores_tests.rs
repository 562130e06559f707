//! Tests of the shared watches ([`super`]).

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;

use super::*;

/// Waits (10 s at most) until `store` holds `key`.
async fn stored<K>(store: &Store<K>, key: &ObjectRef<K>, what: &str) -> Arc<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(stored) = store.get(key) {
                return stored;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect(what)
}

#[tokio::test]
async fn stored_objects_carry_no_managed_fields() {
    let server = FakeApiServer::new();
    let client = server.client();
    server
        .seed(&Namespace {
            metadata: ObjectMeta {
                name: Some("ops".into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        })
        .unwrap();
    let copy = Secret {
        metadata: ObjectMeta {
            name: Some("copy".into()),
            namespace: Some("ops".into()),
            labels: Some([(MANAGED_LABEL.to_owned(), MANAGED_LABEL_VALUE.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), "ops");
    let applied = api
        .patch("copy", &PatchParams::apply("opcat"), &Patch::Apply(&copy))
        .await
        .unwrap();
    assert!(
        applied.metadata.managed_fields.is_some(),
        "the server records managers"
    );

    let reflectors = Reflectors::new(client, Scope::Cluster);
    let stores = reflectors.stores();
    let drivers: Vec<_> = reflectors.drive().into_iter().map(tokio::spawn).collect();
    let key = ObjectRef::new("copy").within("ops");
    let stored = stored(&stores.copies, &key, "the copy reaches the store").await;
    let stored = stored.to_secret();
    assert_eq!(stored.metadata.managed_fields, None);
    assert_eq!(stored.metadata.labels, copy.metadata.labels);
    for driver in drivers {
        driver.abort();
    }
}

#[tokio::test]
async fn stored_csvs_share_their_install_strategy_and_drop_bundle_presentation() {
    let server = FakeApiServer::new();
    let client = server.client();
    for crd in crate::api::crds() {
        server.seed(&crd).unwrap();
    }
    let ours = [(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned())];
    for namespace in ["a", "b"] {
        server
            .seed(&Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            })
            .unwrap();
        let mut csv = super::super::store_trim::tests::csv(namespace, "widget-operator");
        csv.metadata.labels = Some(ours.clone().into());
        server.seed(&csv).unwrap();
    }

    let reflectors = Reflectors::new(client, Scope::Cluster);
    let stores = reflectors.stores();
    let drivers: Vec<_> = reflectors.drive().into_iter().map(tokio::spawn).collect();
    let stored = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let key = |namespace| ObjectRef::new("widget.v1").within(namespace);
            if let (Some(a), Some(b)) = (stores.csvs.get(&key("a")), stores.csvs.get(&key("b"))) {
                return [a, b];
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("both CSVs reach the store");
    let [a, b] = stored.map(|csv| csv.spec.clone());
    assert!(Arc::ptr_eq(&a, &b), "one copy of the spec");
    let strategy = a.install.spec.clone().unwrap();
    assert_eq!(strategy.deployments[0].name, "widget-operator");
    for csv in stores.csvs.state() {
        assert_eq!(csv.annotation("alm-examples"), None);
        assert_eq!(csv.annotation("opcat.dev/subscription"), Some("widget"));
        assert_eq!(csv.spec.provider, None);
        // Readers that need the whole object get it back, maps included.
        let whole = csv.object();
        let annotations = whole.metadata.annotations.unwrap();
        assert!(!annotations.contains_key("alm-examples"));
        assert_eq!(annotations["opcat.dev/subscription"], "widget");
        assert_eq!(whole.metadata.labels, Some(ours.clone().into()));
    }
    for driver in drivers {
        driver.abort();
    }
}

#[tokio::test]
async fn stored_deployments_keep_what_health_needs_but_not_the_pod_template() {
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

    use crate::bundle::ownership::{CSV_ANNOTATION, CSV_LABEL, CSV_NAMESPACE_LABEL};

    let server = FakeApiServer::new();
    let client = server.client();
    let pairs = |list: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
        list.iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    };
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("operator".into()),
            namespace: Some("default".into()),
            labels: Some(pairs(&[
                (MANAGED_BY_LABEL, MANAGED_BY_VALUE),
                (CSV_LABEL, "widget.v1"),
                (CSV_NAMESPACE_LABEL, "default"),
                ("app.kubernetes.io/name", "operator"),
            ])),
            annotations: Some(pairs(&[
                ("opcat.dev/applied-hash", "0123456789"),
                ("deployment.kubernetes.io/revision", "1"),
                (CSV_ANNOTATION, "widget.v1"),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([("app".to_owned(), "operator".to_owned())].into()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("app".to_owned(), "operator".to_owned())].into()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "manager".into(),
                        image: Some("registry.example.com/operator:v1".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    server.seed(&deployment).unwrap();

    let reflectors = Reflectors::new(client, Scope::Cluster);
    let stores = reflectors.stores();
    let drivers: Vec<_> = reflectors.drive().into_iter().map(tokio::spawn).collect();
    let key = ObjectRef::new("operator").within("default");
    let stored = stored(
        &stores.deployments,
        &key,
        "the Deployment reaches the store",
    )
    .await;
    // The stored type has no pod template at all (see `DeploymentRollout`).
    assert_eq!(stored.spec.as_ref().unwrap().replicas, Some(2));
    // Of the metadata maps, only what the health check and the CSV trigger read.
    let meta = stored.full_meta();
    let wanted = pairs(&[(CSV_LABEL, "widget.v1"), (CSV_NAMESPACE_LABEL, "default")]);
    assert_eq!(meta.labels.as_ref(), Some(&wanted));
    let wanted = pairs(&[(CSV_ANNOTATION, "widget.v1")]);
    assert_eq!(meta.annotations.as_ref(), Some(&wanted));
    for driver in drivers {
        driver.abort();
    }
}
