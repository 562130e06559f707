//! What authentication and RBAC cost per request: 200 GETs of a ConfigMap through
//! `kube::Client`, as the admin (no credentials: `system:masters` is allowed before any rule is
//! read), as a token user in `system:masters` (the token lookup alone) and as a token user
//! allowed by a RoleBinding, in a cluster holding 1 000 namespaces
//! with a RoleBinding each and 300 ClusterRoleBindings of other users. The user's cost must
//! stay close to the admin's: bindings are read in place, and only the request's namespace's
//! RoleBindings are visited. Run with `scripts/bench-authz.sh`.

// Bench code: a failed unwrap aborts the measurement, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{Api, ObjectMeta};

const GETS: usize = 200;
const NAMESPACES: usize = 1_000;
const CLUSTER_BINDINGS: usize = 300;

fn binding_json(name: &str, namespace: Option<&str>, user: &str, role: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

/// The cluster: many namespaces and bindings, the user allowed to view `team`.
fn cluster() -> FakeApiServer {
    let server = FakeApiServer::builder()
        .user_token("reader-token", "reader", &["readers"])
        .user_token("root-token", "root", &["system:masters"])
        .build();
    for i in 0..NAMESPACES {
        let ns = format!("ns-{i:04}");
        server
            .seed(&Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            })
            .unwrap();
        let rb: RoleBinding = serde_json::from_value(binding_json(
            "edit",
            Some(&ns),
            &format!("user-{i}"),
            "edit",
        ))
        .unwrap();
        server.seed(&rb).unwrap();
    }
    for i in 0..CLUSTER_BINDINGS {
        let crb: ClusterRoleBinding = serde_json::from_value(binding_json(
            &format!("crb-{i}"),
            None,
            &format!("user-{i}"),
            "view",
        ))
        .unwrap();
        server.seed(&crb).unwrap();
    }
    let team = "ns-0500";
    let rb: RoleBinding =
        serde_json::from_value(binding_json("reader", Some(team), "reader", "view")).unwrap();
    server.seed(&rb).unwrap();
    server
        .seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: Some(team.into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("k".into(), "v".into())])),
            ..ConfigMap::default()
        })
        .unwrap();
    server
}

async fn gets(client: kube::Client) {
    let api: Api<ConfigMap> = Api::namespaced(client, "ns-0500");
    for _ in 0..GETS {
        api.get("settings").await.unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = cluster();
    let (admin, root, reader) = rt.block_on(async {
        (
            server.client(),
            server.client_with_token("root-token"),
            server.client_with_token("reader-token"),
        )
    });
    let mut group = c.benchmark_group("authorize_200_gets");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("admin (system:masters)", |b| {
        b.iter(|| rt.block_on(gets(admin.clone())));
    });
    group.bench_function("token user in system:masters", |b| {
        b.iter(|| rt.block_on(gets(root.clone())));
    });
    group.bench_function("token user through RBAC", |b| {
        b.iter(|| rt.block_on(gets(reader.clone())));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
