//! Serving `kube::Client` in-process and over HTTP with a kubeconfig.

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::common::config_map;

/// The in-process client behaves like a client of a real API server: objects written through
/// it are read back through it (`kube::Client::new` over a tower `Service`).
#[tokio::test]
async fn in_process_client_round_trips_objects() {
    let server = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));
}

/// A separate process reaches the server over HTTP on 127.0.0.1 through an ordinary
/// kubeconfig (`kube::Config::from_custom_kubeconfig`, as `Client::try_default` would with
/// `KUBECONFIG` set), and sees the same objects as the in-process client.
#[tokio::test]
async fn http_mode_serves_kube_config_clients() {
    let server = FakeApiServer::new();
    let http = server.serve_http().await.unwrap();
    assert!(http.kubeconfig_yaml().contains(&http.url()));
    let kubeconfig = Kubeconfig::read_from(http.kubeconfig_path()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(config.default_namespace, "default");
    let remote = kube::Client::try_from(config).unwrap();

    let remote_api: Api<ConfigMap> = Api::default_namespaced(remote.clone());
    remote_api
        .create(&PostParams::default(), &config_map("over-http", &[]))
        .await
        .unwrap();
    let local_api: Api<ConfigMap> = Api::default_namespaced(server.client());
    assert!(local_api.get("over-http").await.is_ok());

    let version = remote.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    // Errors travel as Status bodies over HTTP too.
    let err = crate::common::status(remote_api.get("missing").await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
}

/// Watches work over HTTP as a chunked stream of JSON lines (`kube::runtime::watcher`).
#[tokio::test]
async fn http_mode_streams_watch_events() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let server = FakeApiServer::new();
    let http = server.serve_http().await.unwrap();
    let kubeconfig = Kubeconfig::read_from(http.kubeconfig_path()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let remote = kube::Client::try_from(config).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(remote);
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    api.create(&PostParams::default(), &config_map("seen", &[]))
        .await
        .unwrap();
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), objects.next())
        .await
        .expect("an event within 5s")
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("seen"));
}
