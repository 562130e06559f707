//! The two views of the lease this replica acts on: kube-lease-manager's (acquire, renew,
//! release) and a watch of the Lease itself.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseManagerError, LeaseParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::LeaderConfig;
use super::lease::LeaseView;

/// How long releasing the lease may take at shutdown.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// kube-lease-manager running in its watch mode.
pub(super) struct LeaseClient {
    leader: watch::Receiver<bool>,
    task: JoinHandle<Result<LeaseManager, LeaseManagerError>>,
}

impl LeaseClient {
    pub(super) async fn start(
        client: &Client,
        config: &LeaderConfig,
    ) -> Result<Self, LeaseManagerError> {
        let (duration, grace) = config.timings.lease_manager_params();
        // `LeaseParams::new` panics unless 0 < grace < duration, which `LeaseTimings`
        // guarantees.
        let params = LeaseParams::new(config.identity.clone(), duration, grace);
        let manager = LeaseManager::new(
            client.clone(),
            &config.lease_name,
            &config.namespace,
            params,
            LeaseCreateMode::AutoCreate,
        )
        .await?;
        let (leader, task) = manager.watch().await;
        Ok(Self { leader, task })
    }

    pub(super) fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    pub(super) async fn changed(&mut self) -> Result<(), watch::error::RecvError> {
        self.leader.changed().await
    }

    /// Stops the lease manager, which releases the lease. Only for a replica that holds it: the
    /// manager's release clears the holder without a precondition, which must never hit a
    /// lease another replica has taken meanwhile.
    pub(super) async fn release(self) {
        let identity_held = self.is_leader();
        match tokio::time::timeout(RELEASE_TIMEOUT, self.finish()).await {
            Ok(Ok(())) if identity_held => tracing::info!("released the leader lease"),
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(
                %error,
                "cannot release the leader lease; a standby takes over when it expires"
            ),
            Err(_) => tracing::warn!(
                "timed out releasing the leader lease; a standby takes over when it expires"
            ),
        }
    }

    /// Stops the lease manager without touching the Lease (a standby, or a leader that lost
    /// it).
    pub(super) async fn abandon(self) {
        let Self { leader, task } = self;
        task.abort();
        let _ = task.await;
        drop(leader);
    }

    async fn finish(self) -> Result<(), String> {
        let Self { leader, task } = self;
        // Closing the channel makes the manager release the lease and return.
        drop(leader);
        let _abort = AbortOnDrop(task.abort_handle());
        match task.await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(crate::failure::error_chain(&error)),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// Follows the Lease: `None` until the first list, then what it says (default when missing).
pub(super) async fn watch_lease(
    api: Api<Lease>,
    name: String,
    views: watch::Sender<Option<LeaseView>>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut listed: Option<LeaseView> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listed = None,
            Ok(Event::InitApply(lease)) => listed = Some(LeaseView::from_lease(&lease)),
            Ok(Event::InitDone) => {
                views.send_replace(Some(listed.take().unwrap_or_default()));
            }
            Ok(Event::Apply(lease)) => {
                views.send_replace(Some(LeaseView::from_lease(&lease)));
            }
            Ok(Event::Delete(_)) => {
                views.send_replace(Some(LeaseView::default()));
            }
            Err(error) => tracing::warn!(
                lease = %name,
                error = %crate::failure::error_chain(&error),
                "watch of the leader Lease failed; retrying"
            ),
        }
    }
}

/// Aborts a spawned task when dropped (a future cut short must not leave its task behind).
pub(super) struct AbortOnDrop(pub(super) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
