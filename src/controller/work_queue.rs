//! A queue of keys for the reconcilers that are keyed by something other than one watched
//! object (kube-runtime's `Controller` skips a key whose object is not in its store): the
//! copied-CSV reconciler (an original that is gone must still be reconciled, to remove its
//! copies) and the Operator reconciler (an install whose Operator is gone must bring it back).
//! Each key waits once however often it is pushed; failures are retried with the shared
//! back-off. No client calls of its own.

use std::collections::HashSet;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::controller::Action;
use tokio::sync::mpsc;

use super::context::Context;
use super::manager::Shutdown;
use crate::failure::ReconcileFailure;

/// The keys waiting for a reconcile, each once.
pub struct Queue<K> {
    pending: Arc<Mutex<HashSet<K>>>,
    sender: mpsc::UnboundedSender<K>,
}

impl<K> Clone for Queue<K> {
    fn clone(&self) -> Self {
        Self {
            pending: self.pending.clone(),
            sender: self.sender.clone(),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Queue<K> {
    /// A queue and the receiver its worker reads.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<K>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let queue = Self {
            pending: Arc::default(),
            sender,
        };
        (queue, receiver)
    }

    /// Queues `key` unless it is waiting already.
    pub fn push(&self, key: K) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        if pending.insert(key.clone()) {
            // The worker stopped: nothing left to do.
            let _ = self.sender.send(key);
        }
    }

    /// Queues `key` after `delay` unless it is waiting already: the events of a burst (an
    /// install's objects changing one after the other) make one reconcile, `delay` after the
    /// first, which sees them all.
    pub fn push_settled(&self, key: K, delay: Duration) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        if pending.insert(key.clone()) {
            let sender = self.sender.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                // The worker stopped: nothing left to do.
                let _ = sender.send(key);
            });
        }
    }

    /// `key` was taken by the worker: pushing it again queues it again.
    pub fn taken(&self, key: &K) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(key);
        }
    }

    /// Queues `key` after `delay`.
    pub fn push_later(&self, key: K, delay: Duration) {
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.push(key);
        });
    }
}

/// Reconciles queued keys one at a time until `shutdown`: each reconcile timed and counted as
/// `controller` in the metrics; a failure logged and retried after the shared back-off of
/// `backoff_key(key)` (a [`super::wiring::backoff_key`]). A reconcile that must look again
/// later pushes its key with [`Queue::push_later`] itself.
pub async fn serve<K, E, F, Fut>(
    context: &Context,
    controller: &'static str,
    queue: &Queue<K>,
    mut receiver: mpsc::UnboundedReceiver<K>,
    shutdown: Shutdown,
    backoff_key: impl Fn(&K) -> String,
    mut reconcile: F,
) where
    K: Clone + Eq + Hash + Send + 'static,
    E: ReconcileFailure,
    F: FnMut(K) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    loop {
        let key = tokio::select! {
            _ = shutdown.clone() => return,
            key = receiver.recv() => match key {
                Some(key) => key,
                None => return,
            },
        };
        queue.taken(&key);
        let backoff = backoff_key(&key);
        let reconciled = context
            .metrics
            .instrument(controller, reconcile(key.clone()))
            .await;
        match reconciled {
            Ok(_) => context.backoffs.succeeded(&backoff),
            Err(error) => {
                let delay = context.backoffs.failed(&backoff, error.is_transient());
                tracing::warn!(
                    controller,
                    object = backoff,
                    error = %crate::failure::error_chain(&error),
                    retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "reconcile failed"
                );
                queue.push_later(key, delay);
            }
        }
    }
}
