//! Kubernetes Events (`events.k8s.io/v1`) about the objects opcat works on, with a small,
//! bounded memory of recent events: a repeat within [`SERIES_WINDOW`] becomes a count on the
//! first event (its `series`, as client-go and kube's `Recorder` do) instead of a new object.
//!
//! kube-runtime's `Recorder` keeps every event it published, whole, for six minutes, and scans
//! them all on every publish: at 1,000 installs (about fifteen events each while converging)
//! that was tens of MB of the controller's peak memory (`scripts/bench-scale.sh`). This keeps a
//! 64-bit key, the event's name and a count per remembered event, at most [`MEMORY`] of them.
//! Touches the client.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use serde_json::json;

use super::apply::is_not_found;

/// How many distinct recent events are remembered for counting repeats.
pub const MEMORY: usize = 1024;
/// How long after its last occurrence a repeat still counts on an event (as kube's Recorder).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// One event to publish.
#[derive(Debug)]
pub struct EventSpec<'a> {
    pub regarding: &'a ObjectReference,
    pub type_: EventType,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: Option<String>,
}

impl EventSpec<'_> {
    /// Identity of a repeat: the object, and everything the event says about it.
    fn key(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        let r = self.regarding;
        (&r.api_version, &r.kind, &r.namespace, &r.name, &r.uid).hash(&mut hasher);
        (self.type_, self.reason, self.action, &self.note).hash(&mut hasher);
        hasher.finish()
    }
}

#[derive(Debug)]
struct Seen {
    namespace: String,
    name: String,
    count: i32,
    last: Timestamp,
}

#[derive(Debug, Default)]
struct Recent {
    seen: HashMap<u64, Seen>,
    /// Keys, oldest first: who goes when [`MEMORY`] is reached.
    order: VecDeque<u64>,
}

impl Recent {
    /// The remembered event a repeat at `now` counts on, with its next count.
    fn repeat_of(&mut self, key: u64, now: Timestamp) -> Option<(String, String, i32)> {
        let seen = self.seen.get_mut(&key)?;
        if seen.last + SERIES_WINDOW < now {
            return None;
        }
        seen.count = seen.count.saturating_add(1);
        seen.last = now;
        Some((seen.namespace.clone(), seen.name.clone(), seen.count))
    }

    fn remember(&mut self, key: u64, namespace: String, name: String, now: Timestamp) {
        if self.seen.contains_key(&key) {
            self.order.retain(|k| *k != key);
        }
        while self.order.len() >= MEMORY {
            if let Some(oldest) = self.order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
        self.order.push_back(key);
        self.seen.insert(
            key,
            Seen {
                namespace,
                name,
                count: 1,
                last: now,
            },
        );
    }

    fn forget(&mut self, key: u64) {
        self.seen.remove(&key);
        self.order.retain(|k| *k != key);
    }
}

/// Publishes events as `controller` (`reportingController`) from `instance`.
pub struct EventPublisher {
    client: Client,
    controller: String,
    instance: String,
    recent: Mutex<Recent>,
}

impl EventPublisher {
    pub fn new(client: Client, controller: String, instance: String) -> Self {
        Self {
            client,
            controller,
            instance,
            recent: Mutex::new(Recent::default()),
        }
    }

    /// Creates the event, or counts a repeat on the one already published.
    pub async fn publish(&self, event: &EventSpec<'_>) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = event.key();
        let repeat = self
            .recent
            .lock()
            .ok()
            .and_then(|mut recent| recent.repeat_of(key, now));
        if let Some((namespace, name, count)) = repeat {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let series = EventSeries {
                count,
                last_observed_time: MicroTime(now),
            };
            match api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "series": series })),
                )
                .await
            {
                Ok(_) => return Ok(()),
                // Expired or deleted meanwhile: publish it anew.
                Err(error) if is_not_found(&error) => {
                    if let Ok(mut recent) = self.recent.lock() {
                        recent.forget(key);
                    }
                }
                Err(error) => return Err(error),
            }
        }
        let created = self.build(event, now);
        let namespace = created.metadata.namespace.clone().unwrap_or_default();
        let name = created.metadata.name.clone().unwrap_or_default();
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &created).await?;
        if let Ok(mut recent) = self.recent.lock() {
            recent.remember(key, namespace, name, now);
        }
        Ok(())
    }

    fn build(&self, event: &EventSpec<'_>, now: Timestamp) -> Event {
        let regarding = event.regarding;
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let object = regarding.name.as_deref().unwrap_or(&self.controller);
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            action: Some(event.action.to_owned()),
            reason: Some(event.reason.to_owned()),
            note: event.note.clone(),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            ..Event::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use fake_apiserver::{FakeApiServer, Verb};

    use super::*;

    fn pod(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Secret".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test]
    async fn a_repeat_counts_on_the_first_event_and_a_new_fact_is_a_new_event() {
        let server = FakeApiServer::new();
        let publisher = EventPublisher::new(server.client(), "opcat".into(), "test".into());
        let regarding = pod("copy");
        let event = |note: &str| EventSpec {
            regarding: &regarding,
            type_: EventType::Normal,
            reason: "PullSecretRotated",
            action: "PropagatePullSecrets",
            note: Some(note.to_owned()),
        };
        publisher.publish(&event("rotated")).await.unwrap();
        publisher.publish(&event("rotated")).await.unwrap();
        publisher.publish(&event("rotated")).await.unwrap();
        publisher.publish(&event("rotated again")).await.unwrap();

        let counts = server.request_counts();
        assert_eq!(counts.get(Verb::Create, "events"), 2);
        assert_eq!(counts.get(Verb::Patch, "events"), 2);
        let events = server.list::<Event>(Some("default"));
        assert_eq!(events.len(), 2);
        let counted = events
            .iter()
            .find(|e| e.note.as_deref() == Some("rotated"))
            .unwrap();
        assert_eq!(counted.series.as_ref().map(|s| s.count), Some(3));
        assert_eq!(counted.reporting_controller.as_deref(), Some("opcat"));
        assert_eq!(counted.type_.as_deref(), Some("Normal"));
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_oldest() {
        let mut recent = Recent::default();
        let now = Timestamp::now();
        for key in 0..(MEMORY as u64 + 10) {
            recent.remember(key, "ns".into(), format!("e{key}"), now);
        }
        assert_eq!(recent.seen.len(), MEMORY);
        assert!(
            recent.repeat_of(0, now).is_none(),
            "the oldest is forgotten"
        );
        assert_eq!(
            recent.repeat_of(MEMORY as u64 + 9, now).map(|(_, _, n)| n),
            Some(2)
        );
        let later = now + SERIES_WINDOW + SignedDuration::from_secs(1);
        assert!(
            recent.repeat_of(MEMORY as u64 + 8, later).is_none(),
            "a repeat after the window is a new event"
        );
    }
}
