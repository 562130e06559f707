//! Leader election on a `coordination.k8s.io/v1` Lease: with several replicas, only the holder
//! of the lease runs the controllers.
//!
//! Acquiring and renewing is done by [`kube_lease_manager`] (0.13, built for kube 5). What we
//! verified of its semantics, and what this module adds on top:
//!
//! - It renews `grace` seconds before the lease expires (`renewTime + leaseDurationSeconds`),
//!   and a standby checks the lease when it would expire, force-clears an expired holder, waits
//!   0.1–1 s and takes it with a server-side apply (conflicts stop two standbys taking it at
//!   once).
//! - Its watch channel reports `true` after an acquisition and `false` once it has *read* another
//!   holder. A failed renewal is only logged and retried (1 s doubling to 30 s) while the
//!   channel keeps saying `true`: the channel alone cannot tell a leader that it may have lost
//!   the lease. So this module also watches the Lease and lets the controllers run only while
//!   the Lease, as last read, names this replica with a renewal less than the renew deadline
//!   old ([`lease::may_lead`]). Past that deadline the controllers are dropped at once, which
//!   is `lease_duration - renew_deadline` (5 s by default) before any standby may take over.
//! - A standby only looks at the lease when its holder's lease would expire, so a released
//!   lease would wait for that moment. When the Lease watch shows a release, the standby
//!   restarts its lease manager, which takes the free lease at once.
//! - A standby's forced clear of an expired lease carries no precondition; if it races with a
//!   late renewal the leader sees the holder vanish from the Lease and stops at once, while the
//!   standby waits at least 0.1 s before taking the lease.
//! - The lease manager releases the lease when its channel is closed: that is how graceful
//!   shutdown hands over at once. Its release clears the holder without a precondition, so a
//!   replica that does not hold the lease (a standby, a leader past its deadline) aborts its
//!   manager instead of closing the channel.
//!
//! Identity is the pod name (`POD_NAME`); two processes must never share one.

mod client;
pub mod lease;
pub mod term;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client};
use tokio::sync::watch;

use self::client::{AbortOnDrop, LeaseClient, watch_lease};
use self::lease::{LeaseTimings, LeaseView, NotLeading, may_lead, was_released};
use self::term::{StopOutcome, Term};
use super::manager::Shutdown;
use crate::admin::{Health, Phase};
use crate::metrics::Metrics;
use crate::timing::elapsed;

/// Default name of the Lease.
pub const DEFAULT_LEASE_NAME: &str = "opcat-leader";

/// Retry delays when the lease manager cannot start (API server unreachable).
const START_RETRY_MIN: Duration = Duration::from_secs(1);
const START_RETRY_MAX: Duration = Duration::from_secs(30);

/// Who competes for which Lease, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Namespace of the Lease (the controller's own).
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's identity (the pod name).
    pub identity: String,
    /// Lease timings.
    pub timings: LeaseTimings,
}

/// Why leader election ended with an error.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error(
        "the controllers stopped by themselves while leading (see the errors logged above); the \
         lease was released"
    )]
    TermEnded,
}

impl LeaderError {
    /// Bounded label.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TermEnded => "term_ended",
        }
    }
}

/// A leader elector: run it with [`Elector::run`].
pub struct Elector {
    client: Client,
    config: LeaderConfig,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    shutdown_timeout: Duration,
}

/// How a leading phase ended.
enum Lead {
    /// The lease was lost; back to standby.
    Lost,
    /// Stopped on request; the lease should be released unless it was lost meanwhile.
    Stopped { release: bool },
    /// The controllers stopped by themselves.
    TermEnded,
}

impl Elector {
    /// An elector for `config`. `shutdown_timeout` bounds how long in-flight reconciles may
    /// take once `stop` fires.
    pub fn new(
        client: Client,
        config: LeaderConfig,
        health: Arc<Health>,
        metrics: Arc<Metrics>,
        shutdown_timeout: Duration,
    ) -> Self {
        Self {
            client,
            config,
            health,
            metrics,
            shutdown_timeout,
        }
    }

    /// Competes for the lease until `stop` fires, running a term from `start_term` whenever
    /// this replica leads. On `stop`: readiness off, the term stops gracefully (in-flight
    /// reconciles get `shutdown_timeout`), the lease is released.
    pub async fn run<S>(
        &self,
        start_term: &mut S,
        stop: impl Future<Output = ()>,
    ) -> Result<(), LeaderError>
    where
        S: FnMut(Shutdown) -> BoxFuture<'static, ()> + ?Sized,
    {
        let mut stop = pin!(stop);
        let identity = self.config.identity.as_str();
        let (view_tx, mut views) = watch::channel::<Option<LeaseView>>(None);
        let lease_watch = tokio::spawn(watch_lease(
            Api::namespaced(self.client.clone(), &self.config.namespace),
            self.config.lease_name.clone(),
            view_tx,
        ));
        let _lease_watch = AbortOnDrop(lease_watch.abort_handle());
        tracing::info!(
            namespace = %self.config.namespace,
            lease = %self.config.lease_name,
            identity,
            lease_duration_s = self.config.timings.lease_duration().as_secs(),
            renew_deadline_s = self.config.timings.renew_deadline().as_secs(),
            "leader election: waiting for the lease"
        );
        tokio::select! {
            _ = views.wait_for(Option::is_some) => {}
            () = &mut stop => return Ok(()),
        }
        let Some(mut manager) = self.start_manager(&mut stop).await else {
            return Ok(());
        };
        // Ready: the Lease is readable and this replica competes for it.
        self.health.set(Phase::Standby);

        let mut last_view: Option<LeaseView> = None;
        loop {
            let view = views.borrow_and_update().clone().unwrap_or_default();
            // The lease manager's own clock is the system clock (it writes `renewTime` with
            // it), so the decision uses the same clock.
            if may_lead(
                manager.is_leader(),
                &view,
                identity,
                &self.config.timings,
                Timestamp::now(),
            )
            .is_ok()
            {
                match self
                    .lead(&mut manager, &mut views, start_term, &mut stop)
                    .await
                {
                    Lead::Lost => {
                        last_view = views.borrow().clone();
                        continue;
                    }
                    Lead::Stopped { release } => {
                        if release {
                            manager.release().await;
                        } else {
                            manager.abandon().await;
                        }
                        return Ok(());
                    }
                    Lead::TermEnded => {
                        manager.release().await;
                        return Err(LeaderError::TermEnded);
                    }
                }
            }
            if was_released(last_view.as_ref(), &view) && !manager.is_leader() {
                tracing::info!("the leader released the lease; taking it over");
                manager.abandon().await;
                manager = match self.start_manager(&mut stop).await {
                    Some(manager) => manager,
                    None => return Ok(()),
                };
            }
            last_view = Some(view);
            tokio::select! {
                () = &mut stop => {
                    self.health.shutting_down();
                    manager.abandon().await;
                    return Ok(());
                }
                changed = manager.changed() => {
                    if changed.is_err() {
                        tracing::warn!("the lease manager stopped; restarting it");
                        manager = match self.start_manager(&mut stop).await {
                            Some(manager) => manager,
                            None => return Ok(()),
                        };
                    }
                }
                changed = views.changed() => if changed.is_err() {
                    // Unreachable in practice: the Lease watch retries forever.
                    tokio::time::sleep(START_RETRY_MIN).await;
                },
            }
        }
    }

    /// Runs a term while the lease proves leadership.
    async fn lead<S>(
        &self,
        manager: &mut LeaseClient,
        views: &mut watch::Receiver<Option<LeaseView>>,
        start_term: &mut S,
        stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> Lead
    where
        S: FnMut(Shutdown) -> BoxFuture<'static, ()> + ?Sized,
    {
        let identity = self.config.identity.as_str();
        tracing::info!(
            identity,
            "acquired the leader lease; starting the controllers"
        );
        self.metrics.set_leader(true);
        let mut term = Term::start(start_term);
        enum Happened {
            Ended,
            Lost(NotLeading),
            Stop,
        }
        let happened = tokio::select! {
            () = term.ended() => Happened::Ended,
            reason = lease_lost(manager, views, identity, &self.config.timings) => Happened::Lost(reason),
            () = stop.as_mut() => Happened::Stop,
        };
        match happened {
            Happened::Lost(reason) => {
                term.abandon().await;
                self.metrics.set_leader(false);
                self.health.set(Phase::Standby);
                tracing::warn!(
                    identity,
                    reason = reason.describe(),
                    "lost the leader lease; stopped reconciling at once"
                );
                Lead::Lost
            }
            Happened::Ended => {
                self.metrics.set_leader(false);
                tracing::error!(identity, "the controllers stopped by themselves");
                Lead::TermEnded
            }
            Happened::Stop => {
                self.health.shutting_down();
                tracing::info!(
                    identity,
                    timeout_s = self.shutdown_timeout.as_secs_f64(),
                    "stopping: no new reconciles, waiting for in-flight ones"
                );
                let timings = self.config.timings;
                let outcome = term
                    .stop(self.shutdown_timeout, async {
                        let reason = lease_lost(manager, views, identity, &timings).await;
                        tracing::warn!(reason = reason.describe(), "lease lost during shutdown");
                    })
                    .await;
                self.metrics.set_leader(false);
                Lead::Stopped {
                    release: outcome != StopOutcome::Interrupted,
                }
            }
        }
    }

    /// Starts the lease manager, retrying while the API server is unreachable; `None` if
    /// `stop` fired first.
    async fn start_manager(
        &self,
        stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> Option<LeaseClient> {
        let mut delay = START_RETRY_MIN;
        loop {
            let started = tokio::select! {
                started = LeaseClient::start(&self.client, &self.config) => started,
                () = stop.as_mut() => return None,
            };
            match started {
                Ok(manager) => return Some(manager),
                Err(error) => {
                    tracing::warn!(
                        error = %crate::failure::error_chain(&error),
                        retry_in_s = delay.as_secs(),
                        "cannot start leader election; retrying"
                    );
                }
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = stop.as_mut() => return None,
            }
            delay = (delay * 2).min(START_RETRY_MAX);
        }
    }
}

/// Completes when this replica may no longer reconcile, with the reason.
async fn lease_lost(
    manager: &mut LeaseClient,
    views: &mut watch::Receiver<Option<LeaseView>>,
    identity: &str,
    timings: &LeaseTimings,
) -> NotLeading {
    loop {
        let view = views.borrow_and_update().clone().unwrap_or_default();
        let now = Timestamp::now();
        let until = match may_lead(manager.is_leader(), &view, identity, timings, now) {
            Ok(until) => until,
            Err(reason) => return reason,
        };
        tokio::select! {
            () = tokio::time::sleep(elapsed(now, until)) => {}
            changed = manager.changed() => if changed.is_err() {
                return NotLeading::Standby;
            },
            changed = views.changed() => if changed.is_err() {
                // The Lease watch is gone: nothing can be proven any more.
                return NotLeading::RenewOverdue;
            },
        }
    }
}
