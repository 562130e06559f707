//! Throughput target of the fake API server: creating 1 000 objects through `kube::Client`
//! while a `kube::runtime::watcher` sees every one of them must take well under a second
//! in release mode. Run with `cargo bench -p fake-apiserver --bench create_and_watch`.

// Bench code: a failed unwrap aborts the measurement, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fake_apiserver::FakeApiServer;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

const OBJECTS: usize = 1_000;

fn config_map(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(BTreeMap::from([(
                "opcat.dev/managed".into(),
                "true".into(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("key".into(), "value".into())])),
        ..ConfigMap::default()
    }
}

/// Creates `OBJECTS` ConfigMaps and waits until a watcher has seen all of them.
async fn create_and_watch() {
    let server = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut seen = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let writer = tokio::spawn(async move {
        for i in 0..OBJECTS {
            api.create(&PostParams::default(), &config_map(format!("obj-{i:04}")))
                .await
                .unwrap();
        }
    });
    let mut count = 0;
    while count < OBJECTS {
        seen.next().await.unwrap().unwrap();
        count += 1;
    }
    writer.await.unwrap();
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("fake_apiserver");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("create_1000_and_watch", |b| {
        b.iter(|| rt.block_on(create_and_watch()));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
