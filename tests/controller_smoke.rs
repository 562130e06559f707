//! The harness itself: examples pushed, CRDs installed, manager starts and stops.
mod support;

use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_starts_and_stops_cleanly() {
    let mut env = support::Env::new().await;
    env.start_manager();
    tokio::time::timeout(
        Duration::from_secs(10),
        env.context().stores.wait_until_ready(),
    )
    .await
    .expect("watches sync within 10s")
    .expect("stores");
    env.stop_manager().await;
}
