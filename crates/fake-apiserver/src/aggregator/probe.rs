//! The discovery check of the remote availability controller
//! (`pkg/controllers/status/remote/remote_available_controller.go`, `sync`): `GET
//! /apis/<group>/<version>` on the backend with TLS verification off, the front-proxy client
//! certificate and the identity `system:kube-aggregator` in `system:masters`; a 2xx answer
//! passes, anything else — or no answer within 6 s — fails with the controller's message
//! (`failing or missing response from <url>: ...`).
//!
//! A background task probes every APIService whose Service has an endpoint, then sleeps for
//! the probe interval or until woken (an endpoint set, an APIService waiting for its first
//! check). It holds the server weakly and ends when the server is dropped.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;

use super::{Backend, client, discovery_url};
use crate::server::Shared;

/// `time.After(6 * time.Second)` of the check.
const PROBE_TIMEOUT: Duration = Duration::from_secs(6);

/// Headers of the aggregator's own requests to backends.
pub(crate) const AGGREGATOR_USER: &str = "system:kube-aggregator";

/// One discovery check.
async fn probe(pki: &super::Pki, backend: &Backend, target: &client::Target) -> Result<(), String> {
    let url = discovery_url(target.addr, &backend.group, &backend.version);
    let insecure = client::Target {
        insecure: true,
        ..target.clone()
    };
    let request = Request::get(format!("/apis/{}/{}", backend.group, backend.version))
        .header(http::header::HOST, target.addr.to_string())
        .header("X-Remote-User", AGGREGATOR_USER)
        .header("X-Remote-Group", "system:masters")
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let failing = |why: String| format!("failing or missing response from {url}: {why}");
    match tokio::time::timeout(PROBE_TIMEOUT, client::send(pki, &insecure, request)).await {
        Err(_) => Err(format!("timed out waiting for {url}")),
        Ok(Err(e)) => Err(failing(format!("Get {url:?}: {e}"))),
        Ok(Ok(resp)) if !resp.status().is_success() => Err(failing(format!(
            "bad status from {url}: {}",
            resp.status().as_u16()
        ))),
        Ok(Ok(_)) => Ok(()),
    }
}

/// Probes every APIService whose Service has an endpoint and records the outcomes.
pub(crate) async fn probe_all(shared: &Arc<Shared>) {
    let backends: Vec<(Backend, client::Target)> = shared
        .cluster()
        .remote_backends()
        .into_iter()
        .filter_map(|b| b.target.clone().map(|t| (b, t)))
        .collect();
    if backends.is_empty() {
        return;
    }
    let pki = &shared.aggregation.pki;
    let outcomes = futures::future::join_all(backends.iter().map(|(b, t)| probe(pki, b, t))).await;
    let mut cluster = shared.cluster();
    for ((backend, target), outcome) in backends.iter().zip(outcomes) {
        let url = discovery_url(target.addr, &backend.group, &backend.version);
        if let Err(e) = &outcome {
            tracing::debug!(apiservice = %backend.name, error = %e, "discovery check failed");
        }
        cluster.record_check(&backend.name, url, outcome);
    }
}

/// Starts the periodic prober once (needs a Tokio runtime; without one, checks run only
/// through [`crate::FakeApiServer::probe_api_services`]), and wakes it.
pub(crate) fn ensure_running(shared: &Arc<Shared>) {
    let wake = shared.cluster().aggregator.wake.clone();
    wake.notify_one();
    if shared
        .aggregation
        .prober_started
        .swap(true, Ordering::SeqCst)
    {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared
            .aggregation
            .prober_started
            .store(false, Ordering::SeqCst);
        return;
    };
    let server = Arc::downgrade(shared);
    let interval = shared.aggregation.probe_interval;
    runtime.spawn(async move {
        loop {
            {
                let Some(shared) = server.upgrade() else {
                    return;
                };
                probe_all(&shared).await;
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = wake.notified() => {}
            }
        }
    });
}
