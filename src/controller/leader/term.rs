//! A term: the controllers running, from start to stop. With leader election there is one term
//! per lease held; without it, one term for the life of the process.
//!
//! A term stops in one of two ways:
//! - gracefully ([`Term::stop`]): the controllers stop taking work and in-flight reconciles get
//!   until a deadline, after which they are abandoned;
//! - at once ([`Term::abandon`]): the lease is lost, so nothing may be written any more.
//!   Reconciles are idempotent; the next leader redoes whatever was cut short.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Client;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::admin::{Health, Phase};
use crate::controller::clock::Clock;
use crate::controller::context::Settings;
use crate::controller::manager::{self, Shutdown};
use crate::controller::package_api::{self, PackageApi};
use crate::metrics::Metrics;
use crate::registry::Registry;

/// How a graceful stop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopOutcome {
    /// Every in-flight reconcile finished.
    Finished,
    /// The deadline passed; the rest were abandoned.
    TimedOut,
    /// Stopping was cut short (the lease was lost); the rest were abandoned.
    Interrupted,
}

/// A running term (a spawned task; dropping the term aborts it).
pub struct Term {
    /// `None` once the task has ended.
    task: Option<JoinHandle<()>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Term {
    /// Starts a term on its own task: `start` gets the shutdown signal and returns the future
    /// that runs the controllers until that signal and their in-flight work are done.
    pub fn start<S>(start: &mut S) -> Self
    where
        S: FnMut(Shutdown) -> BoxFuture<'static, ()> + ?Sized,
    {
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown: Shutdown = async move {
            // Fires on `send` and when the sender is dropped (an abandoned term).
            let _ = stopped.await;
        }
        .boxed()
        .shared();
        Self {
            task: Some(tokio::spawn(start(shutdown))),
            stop: Some(stop),
        }
    }

    /// Completes when the term's task ends: by itself (its controllers or watches stopped,
    /// which only happens on a failure) or after [`Term::stop`]'s signal. A term that ended
    /// stays ended.
    pub async fn ended(&mut self) {
        if let Some(task) = &mut self.task {
            if let Err(error) = task.await
                && error.is_panic()
            {
                tracing::error!("the controllers panicked");
            }
            self.task = None;
        }
    }

    /// Stops taking work and waits for in-flight reconciles, at most `timeout`, and only while
    /// `interrupt` has not fired.
    pub async fn stop(
        mut self,
        timeout: Duration,
        interrupt: impl Future<Output = ()>,
    ) -> StopOutcome {
        let started = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let outcome = tokio::select! {
            () = self.ended() => StopOutcome::Finished,
            () = tokio::time::sleep(timeout) => StopOutcome::TimedOut,
            () = interrupt => StopOutcome::Interrupted,
        };
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match outcome {
            StopOutcome::Finished => {
                tracing::info!(
                    elapsed_ms,
                    "controllers stopped; in-flight reconciles finished"
                );
            }
            StopOutcome::TimedOut => tracing::warn!(
                elapsed_ms,
                "shutdown timeout reached; abandoning in-flight reconciles"
            ),
            StopOutcome::Interrupted => tracing::warn!(
                elapsed_ms,
                "lease lost while stopping; abandoning in-flight reconciles"
            ),
        }
        outcome
    }

    /// Stops at once: in-flight reconciles are dropped where they are. Returns once the task
    /// is gone (a request already sent cannot be recalled, but nothing new starts).
    pub async fn abandon(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The term factory of `opcat run`: each term starts a fresh manager (watches, stores,
/// controllers) sharing the process's registry cache and metrics, and marks the replica ready
/// once every watch has listed.
pub fn manager_term(
    client: Client,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> impl FnMut(Shutdown) -> BoxFuture<'static, ()> + Send + 'static {
    manager_term_with(client, registry, clock, settings, metrics, health, None)
}

/// [`manager_term`], each term also serving the package API when `package_api` is set
/// ([`crate::controller::package_api`]).
pub fn manager_term_with(
    client: Client,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    package_api: Option<PackageApi>,
) -> impl FnMut(Shutdown) -> BoxFuture<'static, ()> + Send + 'static {
    move |shutdown| {
        health.set(Phase::Syncing);
        let running = manager::start_with_metrics(
            client.clone(),
            registry.clone(),
            clock.clone(),
            settings.clone(),
            metrics.clone(),
            shutdown.clone(),
        );
        let context = running.context;
        let health = health.clone();
        let package_api = package_api
            .clone()
            .map(|api| package_api::run(context.clone(), api, shutdown).boxed());
        async move {
            let package_api = async move {
                match package_api {
                    Some(run) => run.await,
                    None => std::future::pending().await,
                }
            };
            // The context lives as long as the term (the metrics sampler reads it).
            let ready = async move {
                if context.stores.wait_until_ready().await.is_ok() {
                    tracing::info!("every watch has listed; reconciling");
                    health.set(Phase::Reconciling);
                }
                std::future::pending::<()>().await;
            };
            let running = running.future;
            tokio::select! {
                () = futures::future::join(running, package_api).map(|_| ()) => {}
                () = ready => {}
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A term whose in-flight work takes `work` after the signal.
    fn factory(
        work: Duration,
        finished: Arc<AtomicBool>,
    ) -> impl FnMut(Shutdown) -> BoxFuture<'static, ()> {
        move |shutdown| {
            let finished = finished.clone();
            async move {
                shutdown.await;
                tokio::time::sleep(work).await;
                finished.store(true, Ordering::SeqCst);
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn graceful_stop_waits_for_in_flight_work_within_the_deadline() {
        let finished = Arc::new(AtomicBool::new(false));
        let mut start = factory(Duration::from_millis(20), finished.clone());
        let term = Term::start(&mut start);
        let outcome = term
            .stop(Duration::from_secs(10), std::future::pending())
            .await;
        assert_eq!(outcome, StopOutcome::Finished);
        assert!(finished.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn graceful_stop_abandons_work_past_the_deadline_or_on_interrupt() {
        let finished = Arc::new(AtomicBool::new(false));
        let mut start = factory(Duration::from_secs(3600), finished.clone());
        let term = Term::start(&mut start);
        let outcome = term
            .stop(Duration::from_millis(20), std::future::pending())
            .await;
        assert_eq!(outcome, StopOutcome::TimedOut);
        let term = Term::start(&mut start);
        let outcome = term.stop(Duration::from_secs(3600), async {}).await;
        assert_eq!(outcome, StopOutcome::Interrupted);
        assert!(!finished.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_term_that_ends_by_itself_is_noticed() {
        let mut start = |_shutdown: Shutdown| async {}.boxed();
        let mut term = Term::start(&mut start);
        tokio::time::timeout(Duration::from_secs(5), term.ended())
            .await
            .expect("ended");
        // Asking again does not poll a finished future.
        tokio::time::timeout(Duration::from_secs(5), term.ended())
            .await
            .expect("still ended");
    }
}
