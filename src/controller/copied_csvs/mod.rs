//! The copied-CSV reconciler: keeps a copy of each ClusterServiceVersion opcat installed in every
//! target namespace of its OperatorGroup other than its own, as OLM does
//! ([`crate::copied_csv`]), in step with the original's status; removes them with the original
//! and from namespaces that leave the group's targets; and honours the OLMConfig `cluster`
//! (`spec.features.disableCopiedCSVs` removes the copies of AllNamespaces installs), whose
//! `DisabledCopiedCSVs` condition it writes.
//!
//! Cheap at scale (OLM's copies took clusters down, operator-lifecycle-manager #2701): copies are
//! watched as metadata only ([`store`]); a copy carries hashes of what it was written from, so a
//! reconcile compares hashes from the stores and a converged cluster makes no request; a write
//! reads the original once and writes only the copies that differ; an original is planned again
//! only once the copy store shows its last writes ([`expectations`]).
//!
//! A copy is not an install: opcat's CSV watch selects `!olm.copiedFrom`, so no other controller
//! sees copies (no pull-secret propagation, no Operator, no resolution as installed).
//!
//! Keyed by the original (`namespace`, `name`) on its own queue rather than kube-runtime's
//! `Controller`: an original that is gone must still be reconciled, to remove its copies.

mod error;
mod expectations;
mod olm_config;
mod reconcile;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use tokio::sync::{Notify, mpsc};

pub use error::CopyError;
pub use store::{CopiedCsvs, Origin};

use super::context::Context;
use super::manager::Shutdown;
use super::stores::{Reflectors, Scope};
use crate::copied_csv::Reach;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::COPIED_CSV;

/// How long a name held by a CSV that is not a copy is skipped before it is tried again.
const HELD_FOR: Duration = Duration::from_secs(10 * 60);

/// Names in target namespaces held by a CSV that is not a copy: skipped for a while, so a
/// converged cluster makes no request for them.
#[derive(Default)]
pub struct Held {
    held: Mutex<HashMap<(Origin, String), Instant>>,
}

impl Held {
    fn hold(&self, origin: &Origin, namespace: &str) {
        if let Ok(mut held) = self.held.lock() {
            held.insert((origin.clone(), namespace.to_owned()), Instant::now());
        }
    }

    fn holds(&self, origin: &Origin, namespace: &str) -> bool {
        let Ok(mut held) = self.held.lock() else {
            return false;
        };
        held.retain(|_, since| since.elapsed() < HELD_FOR);
        held.contains_key(&(origin.clone(), namespace.to_owned()))
    }
}

/// The originals waiting for a reconcile, each once.
type Queue = super::work_queue::Queue<Origin>;

fn origin_of<K: kube::Resource>(object: &K) -> Origin {
    (
        object.namespace().unwrap_or_default().into(),
        object.name_any().into(),
    )
}

/// Every CSV of the groups that may have copies (targets other than their own namespace): what
/// a namespace or OLMConfig change concerns.
fn spread_csvs(context: &Context) -> Vec<Origin> {
    let stores = &context.stores;
    let mut origins = Vec::new();
    for group in stores.operator_groups.state() {
        let namespace = group.namespace().unwrap_or_default();
        let Some(targets) = reconcile::group_targets(context, &namespace) else {
            continue;
        };
        let spreads = match Reach::of(&targets) {
            Reach::AllNamespaces => true,
            Reach::Namespaces(targets) => targets.iter().any(|target| *target != namespace),
        };
        if spreads {
            origins.extend(
                stores
                    .namespaced
                    .csvs
                    .in_namespace(&namespace)
                    .iter()
                    .map(|csv| origin_of(csv.as_ref())),
            );
        }
    }
    origins
}

/// Builds the controller; the future runs until `shutdown`. A namespace-scoped manager has no
/// copies (its one namespace is every target) and runs none.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    if context.settings.scope != Scope::Cluster {
        return futures::future::ready(()).boxed();
    }
    let (queue, receiver) = Queue::new();
    let wide = Arc::new(Notify::new());

    let csvs = reflectors
        .csvs
        .subscribe()
        .map(|csv| origin_of(csv.as_ref()));
    let deleted_csvs = reflectors
        .csvs
        .subscribe_deleted()
        .map(|csv| origin_of(csv.as_ref()));
    let copies = tokio_stream_of(context.stores.copied_csvs.subscribe());
    let direct = futures::stream::select_all([csvs.boxed(), deleted_csvs.boxed(), copies.boxed()]);
    let groups = futures::stream::select(
        reflectors
            .operator_groups
            .subscribe()
            .map(|group| group.namespace()),
        reflectors
            .operator_groups
            .subscribe_deleted()
            .map(|group| group.namespace()),
    );
    let namespaces = futures::stream::select(
        reflectors.namespaces.subscribe().map(|_| ()),
        reflectors.namespaces.subscribe_deleted().map(|_| ()),
    );
    let configs = futures::stream::select(
        reflectors.olm_configs.subscribe().map(|_| ()),
        reflectors.olm_configs.subscribe_deleted().map(|_| ()),
    );

    let triggers = {
        let queue = queue.clone();
        let context = context.clone();
        let wide = wide.clone();
        async move {
            let direct = direct.for_each(|origin| {
                queue.push(origin);
                std::future::ready(())
            });
            let groups = groups.for_each(|namespace| {
                if let Some(namespace) = namespace {
                    for csv in context.stores.namespaced.csvs.in_namespace(&namespace) {
                        queue.push(origin_of(csv.as_ref()));
                    }
                }
                std::future::ready(())
            });
            let wide_events = futures::stream::select(namespaces, configs).for_each(|()| {
                wide.notify_one();
                std::future::ready(())
            });
            futures::join!(direct, groups, wide_events);
        }
    };
    let spread = {
        let queue = queue.clone();
        let context = context.clone();
        async move {
            loop {
                wide.notified().await;
                for origin in spread_csvs(&context) {
                    queue.push(origin);
                }
                if let Err(error) = olm_config::write_status(&context).await {
                    tracing::warn!(error = %crate::failure::error_chain(&error), "OLMConfig status");
                }
            }
        }
    };
    let worker = work(context, queue, receiver, shutdown.clone());
    async move {
        tokio::select! {
            _ = worker => {}
            _ = triggers => {}
            _ = spread => {}
            _ = shutdown => {}
        }
    }
    .boxed()
}

fn tokio_stream_of(mut receiver: mpsc::UnboundedReceiver<Origin>) -> impl Stream<Item = Origin> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

/// Reconciles queued originals one at a time, once the stores have listed (an empty store
/// right after a start must not read as "no copies wanted").
async fn work(
    context: Arc<Context>,
    queue: Queue,
    receiver: mpsc::UnboundedReceiver<Origin>,
    shutdown: Shutdown,
) {
    if context.stores.wait_until_ready().await.is_err() {
        return;
    }
    for csv in context.stores.csvs.state() {
        queue.push(origin_of(csv.as_ref()));
    }
    for origin in context.stores.copied_csvs.origins() {
        queue.push(origin);
    }
    let held = Held::default();
    let expectations = expectations::Expectations::default();
    super::work_queue::serve(
        &context,
        CONTROLLER,
        &queue,
        receiver,
        shutdown,
        |origin: &Origin| super::wiring::backoff_key(CONTROLLER, &origin.0, &origin.1),
        |origin: Origin| {
            let context = &context;
            let held = &held;
            let expectations = &expectations;
            let queue = &queue;
            async move {
                if expectations.waiting(&origin, &context.stores.copied_csvs) {
                    // The store's event for the last write it shows, or the patience's end,
                    // queues it again.
                    return Ok(Action::await_change());
                }
                let made = match reconcile::reconcile(context, &origin, held).await {
                    Ok(made) => made,
                    Err(error) => {
                        expectations.forget(&origin);
                        return Err(error);
                    }
                };
                if !made.is_empty() {
                    expectations.expect(&origin, made);
                    queue.push_later(origin.clone(), expectations::PATIENCE);
                }
                olm_config::write_status(context).await?;
                Ok::<_, CopyError>(Action::await_change())
            }
        },
    )
    .await;
}
