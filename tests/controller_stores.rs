//! The shared stores' readiness, which reconciles wait for after a start: every task waiting
//! for the watches to list is woken, however many wait and whoever checks in between.
//!
//! kube's own `Store::wait_until_ready` wakes only the last of several waiters, and a check
//! with `now_or_never` steals the wake-up: a Subscription reconcile that started before the
//! other stores had listed then waited forever (the install stalled after a restart, and the
//! graceful stop ran into its timeout waiting for that reconcile).
// Test code: a failed step aborts the test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use opcat::controller::stores::{Reflectors, Scope};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_waiting_for_the_stores_is_woken_once_the_watches_have_listed() {
    let api = FakeApiServer::new();
    let client = api.client();
    support::install_crds(&client).await;
    let reflectors = Reflectors::new(client, Scope::Cluster);
    let stores = reflectors.stores();

    // Several reconciles wait at once, as right after a start...
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let stores = stores.clone();
            tokio::spawn(async move { stores.wait_until_ready().await })
        })
        .collect();
    // ... each has polled (and registered) before the watches run ...
    tokio::time::sleep(Duration::from_millis(200)).await;
    // ... and another one only checks, without waiting.
    assert!(!stores.is_ready(), "nothing has listed yet");

    let watches = tokio::spawn(futures::future::join_all(reflectors.drive()));
    for (index, waiter) in waiters.into_iter().enumerate() {
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .unwrap_or_else(|_| panic!("waiter {index} was never woken"))
            .expect("waiter task")
            .expect("the watches listed");
    }
    assert!(stores.is_ready());
    watches.abort();
}
