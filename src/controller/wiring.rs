//! What every controller wires the same way around kube-runtime's `Controller`: graceful
//! shutdown, `--concurrency`, each reconcile timed and counted in the metrics, the error policy
//! (per-object back-off, logged), and the object's key in the shared back-off counters. No
//! client calls of its own.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use futures::Stream;
use kube::Resource;
use kube::runtime::controller::{Action, Config, Controller, Error as ControllerError};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde::de::DeserializeOwned;

use super::context::Context;
use super::manager::Shutdown;
use crate::failure::ReconcileFailure;

/// Key of `namespace/name` in the shared back-off counters of `controller` (a
/// [`crate::metrics::controllers`] name).
pub fn backoff_key(controller: &str, namespace: &str, name: &str) -> String {
    format!("{controller}/{namespace}/{name}")
}

/// [`backoff_key`] of `object`.
pub fn backoff_key_of<K: Resource>(controller: &str, object: &K) -> String {
    let meta = object.meta();
    backoff_key(
        controller,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// Runs `controller` (its watches already attached) until `shutdown`: at most
/// `--concurrency` reconciles at once, each `reconcile` timed and counted as `name` in the
/// metrics, failures handed to the shared back-off. Returns kube-runtime's result stream; the
/// caller drives it.
pub fn run<K, S, E, F, Fut>(
    name: &'static str,
    controller: Controller<K>,
    context: &Arc<Context>,
    shutdown: Shutdown,
    mut reconcile: F,
    state: Arc<S>,
) -> impl Stream<Item = Result<(ObjectRef<K>, Action), ControllerError<E, watcher::Error>>>
+ use<K, S, E, F, Fut>
where
    K: Clone + Resource + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Debug + Unpin,
    S: Send + Sync + 'static,
    E: ReconcileFailure,
    F: FnMut(Arc<K>, Arc<S>) -> Fut,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
{
    let metrics = context.metrics.clone();
    let policy = context.clone();
    controller
        .graceful_shutdown_on(shutdown)
        .with_config(Config::default().concurrency(context.settings.concurrency))
        .run(
            move |object, state| {
                let metrics = metrics.clone();
                let reconciled = reconcile(object, state);
                async move { metrics.instrument(name, reconciled).await }
            },
            move |object: Arc<K>, error: &E, _: Arc<S>| {
                policy
                    .backoffs
                    .policy(name, &backoff_key_of(name, object.as_ref()), error)
            },
            state,
        )
}
