//! Throughput: many objects created and watched (timed in release mode by the bench).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

use crate::common::{config_map, server};

/// 1 000 creates are each seen exactly once, in order, by a running `watcher`.
#[tokio::test]
async fn thousand_objects_created_and_watched() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut seen = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    // Wait for the watcher to be listed and watching before writing.
    api.create(&PostParams::default(), &config_map("warmup", &[]))
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), seen.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("warmup"));

    let writer = tokio::spawn(async move {
        for i in 0..1000 {
            api.create(
                &PostParams::default(),
                &config_map(&format!("obj-{i:04}"), &[]),
            )
            .await
            .unwrap();
        }
    });
    for i in 0..1000 {
        let obj = tokio::time::timeout(Duration::from_secs(10), seen.next())
            .await
            .expect("events keep flowing")
            .unwrap()
            .unwrap();
        assert_eq!(obj.metadata.name.unwrap(), format!("obj-{i:04}"));
    }
    writer.await.unwrap();
}
