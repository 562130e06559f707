//! The body of a watch response: newline-delimited `{"type": ..., "object": ...}` events,
//! BOOKMARK events (periodic, and the `k8s.io/initial-events-end` one for streaming lists),
//! and the end of the stream at `timeoutSeconds`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http_body::Frame;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cluster::present;
use crate::resources::ResourceInfo;
use crate::server::Shared;
use crate::status::ApiError;
use crate::store::{EventType, WatchMsg};

/// Everything a watch stream needs once started.
pub(crate) struct WatchStream {
    pub(crate) info: Arc<ResourceInfo>,
    pub(crate) version: String,
    pub(crate) initial: VecDeque<(EventType, Arc<Value>)>,
    /// Send the `initial-events-end` bookmark at this version after `initial`.
    pub(crate) initial_end: Option<u64>,
    pub(crate) rx: mpsc::UnboundedReceiver<WatchMsg>,
    pub(crate) bookmarks: bool,
    /// Events carry `PartialObjectMetadata` ([`crate::partial`]).
    pub(crate) meta_only: bool,
    pub(crate) bookmark_interval: Duration,
    pub(crate) deadline: Option<Instant>,
    pub(crate) shared: Weak<Shared>,
}

/// One watch event as a real API server encodes it (`metav1.WatchEvent`): `type` first, then
/// `object`. A `json!` map would sort the keys and send `object` first, which makes clients
/// that read the tag first (kube's `WatchEvent`) buffer and parse every object twice.
#[derive(Serialize)]
struct Event<'a, T> {
    #[serde(rename = "type")]
    type_: &'a str,
    object: T,
}

fn line(type_: &str, object: &impl Serialize) -> Bytes {
    let mut bytes = serde_json::to_vec(&Event { type_, object }).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn event_line(
    info: &ResourceInfo,
    version: &str,
    kind: EventType,
    obj: &Value,
    meta_only: bool,
) -> Bytes {
    let object = if meta_only {
        crate::partial::object(obj)
    } else {
        present(info, version, obj)
    };
    line(kind.as_str(), &object)
}

fn bookmark_line(info: &ResourceInfo, version: &str, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": info.kind, "apiVersion": info.api_version(version), "metadata": metadata}),
    )
}

/// A stream with one ERROR event (a watch from a `resourceVersion` that is too old).
pub(crate) fn error_stream(
    err: &ApiError,
) -> impl Stream<Item = Result<Frame<Bytes>, Infallible>> + use<> {
    let bytes = line("ERROR", &err.to_status());
    futures::stream::once(async move { Ok(Frame::data(bytes)) })
}

enum Step {
    Send(Bytes),
    End,
}

impl WatchStream {
    async fn next_bytes(&mut self) -> Step {
        if let Some((kind, obj)) = self.initial.pop_front() {
            return Step::Send(event_line(
                &self.info,
                &self.version,
                kind,
                &obj,
                self.meta_only,
            ));
        }
        if let Some(rv) = self.initial_end.take() {
            return Step::Send(bookmark_line(&self.info, &self.version, rv, true));
        }
        loop {
            let bookmark_at = Instant::now() + self.bookmark_interval;
            let deadline = self.deadline;
            tokio::select! {
                msg = self.rx.recv() => {
                    return match msg {
                        Some(WatchMsg::Event(kind, obj, at)) => {
                            if let Some(lag) = self.lag() {
                                tokio::time::sleep_until(at + lag).await;
                            }
                            Step::Send(event_line(
                                &self.info,
                                &self.version,
                                kind,
                                &obj,
                                self.meta_only,
                            ))
                        }
                        Some(WatchMsg::Closed) | None => Step::End,
                    };
                }
                () = tokio::time::sleep_until(bookmark_at), if self.bookmarks => {
                    if let Some(rv) = self.progress() {
                        return Step::Send(bookmark_line(&self.info, &self.version, rv, false));
                    }
                }
                () = sleep_until_opt(deadline) => return Step::End,
            }
        }
    }

    /// How late this resource's events reach watchers ([`crate::FakeApiServer::set_watch_lag`]).
    fn lag(&self) -> Option<Duration> {
        let shared = self.shared.upgrade()?;
        let lags = shared.watch_lags.read().ok()?;
        lags.get(&self.info.plural).copied()
    }

    /// The version this watcher has certainly seen everything up to: the current version,
    /// read under the lock while nothing is queued for this watcher.
    fn progress(&self) -> Option<u64> {
        let shared = self.shared.upgrade()?;
        let cluster = shared.cluster.lock().ok()?;
        self.rx.is_empty().then(|| cluster.store.current_rv())
    }

    /// The response body stream.
    pub(crate) fn into_stream(self) -> impl Stream<Item = Result<Frame<Bytes>, Infallible>> {
        futures::stream::unfold(self, |mut state| async move {
            match state.next_bytes().await {
                Step::Send(bytes) => Some((Ok(Frame::data(bytes)), state)),
                Step::End => None,
            }
        })
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => futures::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_name_their_type_before_the_object_as_a_real_server_does() {
        let bytes = line("ADDED", &json!({"kind": "Secret", "apiVersion": "v1"}));
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}}\n"
        );
    }
}
