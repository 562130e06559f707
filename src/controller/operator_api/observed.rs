//! The Operators in the cluster, from a watch that keeps of each only what the reconciler
//! compares: a hash of its status, and whether it is being deleted (about 100 bytes per install
//! instead of the whole status, which lists every component). So a converged install is checked
//! without a request, across restarts too (the watch lists the statuses written before).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::{mpsc, watch};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::api::{Operator, OperatorStatus};

/// An Operator as the watch reads it: metadata and status (an Operator written without `spec`
/// reads as well: OLM's has nothing in it).
#[derive(Clone, Debug, Deserialize)]
pub struct WatchedOperator {
    metadata: ObjectMeta,
    #[serde(default)]
    status: Option<OperatorStatus>,
}

impl kube::Resource for WatchedOperator {
    type DynamicType = ();
    type Scope = <Operator as kube::Resource>::Scope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        Operator::kind(dt)
    }

    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        Operator::group(dt)
    }

    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        Operator::version(dt)
    }

    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        Operator::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What is kept of one Operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    /// [`status_hash`] of its status.
    pub status: u64,
    /// Whether it is being deleted.
    pub deleting: bool,
}

/// The hash a status is compared by: of its JSON form (the same for the status opcat builds and
/// the one the server returns, both typed).
pub fn status_hash(status: Option<&OperatorStatus>) -> u64 {
    let text = status
        .and_then(|status| serde_json::to_string(status).ok())
        .unwrap_or_default();
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The watched Operators by name.
#[derive(Clone)]
pub struct Operators {
    by_name: Arc<RwLock<HashMap<Box<str>, Observed>>>,
    listed: watch::Sender<bool>,
}

impl Default for Operators {
    fn default() -> Self {
        Self {
            by_name: Arc::default(),
            listed: watch::channel(false).0,
        }
    }
}

impl Operators {
    /// The Operator `name`, if the watch shows it.
    pub fn get(&self, name: &str) -> Option<Observed> {
        self.by_name.read().ok()?.get(name).copied()
    }

    /// The names of every Operator the watch shows.
    pub fn names(&self) -> Vec<String> {
        self.by_name
            .read()
            .map(|by_name| by_name.keys().map(|name| name.to_string()).collect())
            .unwrap_or_default()
    }

    /// Waits until the watch has listed once; `false` when it stopped first.
    pub async fn wait_listed(&self) -> bool {
        let mut listed = self.listed.subscribe();
        listed.wait_for(|listed| *listed).await.is_ok()
    }

    fn apply(&self, operator: &WatchedOperator) {
        let observed = Observed {
            status: status_hash(operator.status.as_ref()),
            deleting: operator.metadata.deletion_timestamp.is_some(),
        };
        if let Ok(mut by_name) = self.by_name.write() {
            by_name.insert(operator.name_any().into(), observed);
        }
    }

    fn remove(&self, name: &str) {
        if let Ok(mut by_name) = self.by_name.write() {
            by_name.remove(name);
        }
    }

    /// Watches every Operator until the process stops; sends the name of each one seen
    /// (applied or deleted) to `changed`.
    pub async fn drive(self, client: Client, changed: mpsc::UnboundedSender<String>) {
        let api: Api<WatchedOperator> = Api::all(client);
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut relist: Option<Vec<WatchedOperator>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(operator)) => {
                    self.apply(&operator);
                    let _ = changed.send(operator.name_any());
                }
                Ok(watcher::Event::Delete(operator)) => {
                    self.remove(&operator.name_any());
                    let _ = changed.send(operator.name_any());
                }
                Ok(watcher::Event::Init) => relist = Some(Vec::new()),
                Ok(watcher::Event::InitApply(operator)) => {
                    relist.get_or_insert_default().push(operator);
                }
                Ok(watcher::Event::InitDone) => {
                    let listed = relist.take().unwrap_or_default();
                    if let Ok(mut by_name) = self.by_name.write() {
                        by_name.clear();
                    }
                    for operator in &listed {
                        self.apply(operator);
                    }
                    self.listed.send_replace(true);
                }
                Err(error) => {
                    tracing::warn!(
                        resource = "operators",
                        error = %crate::failure::error_chain(&error),
                        "watch failed; retrying"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::operator::{Components, component_selector};

    #[test]
    fn equal_statuses_hash_equal_and_a_changed_one_does_not() {
        let status = |refs| OperatorStatus {
            components: Some(Components {
                label_selector: Some(component_selector("etcd.ops")),
                refs,
            }),
        };
        assert_eq!(
            status_hash(Some(&status(None))),
            status_hash(Some(&status(None)))
        );
        assert_ne!(
            status_hash(Some(&status(None))),
            status_hash(Some(&status(Some(Vec::new()))))
        );
        assert_ne!(status_hash(None), status_hash(Some(&status(None))));
    }
}
