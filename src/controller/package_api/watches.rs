//! What the package API's controller follows, each through a narrow watch (DESIGN invariant
//! 11): its certificate Secret and the APIService by name, the cluster's authentication
//! ConfigMap by name, and the pods carrying the serving label in opcat's namespace (metadata
//! only). A converged term makes no request: these watches are all it reads.

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// The object a by-name watch shows: `None` until the first list, then whether it exists.
pub type Named<K> = Option<Option<Arc<K>>>;

/// Follows `name` through `api`, publishing what it sees into `views`.
pub async fn watch_named<K>(api: Api<K>, name: String, views: watch::Sender<Named<K>>)
where
    K: kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut listed: Option<Arc<K>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listed = None,
            Ok(Event::InitApply(object)) => listed = Some(Arc::new(object)),
            Ok(Event::InitDone) => {
                views.send_replace(Some(listed.take()));
            }
            Ok(Event::Apply(object)) => {
                views.send_replace(Some(Some(Arc::new(object))));
            }
            Ok(Event::Delete(_)) => {
                views.send_replace(Some(None));
            }
            Err(error) => tracing::warn!(
                kind = %K::kind(&()),
                name = %name,
                error = %crate::failure::error_chain(&error),
                "package API: watch failed; retrying"
            ),
        }
    }
}

/// Names of the pods matching `selector` in `api`'s namespace, kept current.
pub async fn watch_labelled_pods(
    api: Api<PartialObjectMeta<Pod>>,
    selector: String,
    views: watch::Sender<Option<Vec<String>>>,
) {
    let config = watcher::Config::default().labels(&selector);
    let mut names: std::collections::BTreeSet<String> = Default::default();
    let mut listing: std::collections::BTreeSet<String> = Default::default();
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let name = |meta: &PartialObjectMeta<Pod>| meta.metadata.name.clone().unwrap_or_default();
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(pod)) => {
                listing.insert(name(&pod));
            }
            Ok(Event::InitDone) => {
                names = std::mem::take(&mut listing);
                views.send_replace(Some(names.iter().cloned().collect()));
            }
            Ok(Event::Apply(pod)) => {
                names.insert(name(&pod));
                views.send_replace(Some(names.iter().cloned().collect()));
            }
            Ok(Event::Delete(pod)) => {
                names.remove(&name(&pod));
                views.send_replace(Some(names.iter().cloned().collect()));
            }
            Err(error) => tracing::warn!(
                selector = %selector,
                error = %crate::failure::error_chain(&error),
                "package API: watch of serving pods failed; retrying"
            ),
        }
    }
}
