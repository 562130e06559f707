//! Why a Subscription reconcile failed.

use crate::controller::apply::ApplyError;
use crate::failure::ReconcileFailure;

/// A failed Subscription reconcile. Resolution failures are not errors: they are status
/// (`ResolutionFailed`) and a long requeue.
#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    /// Creating the Subscription of a dependency failed.
    #[error(
        "cannot create Subscription {dependency} for a dependency of Subscription \
         {namespace}/{name}"
    )]
    CreateSubscription {
        namespace: String,
        name: String,
        dependency: String,
        #[source]
        source: ApplyError,
    },
    /// Creating the InstallPlan failed.
    #[error("cannot create an InstallPlan installing {csv} for Subscription {namespace}/{name}")]
    CreateInstallPlan {
        namespace: String,
        name: String,
        csv: String,
        #[source]
        source: ApplyError,
    },
    /// Writing the status failed.
    #[error("cannot write the status of Subscription {namespace}/{name}")]
    Status {
        namespace: String,
        name: String,
        #[source]
        source: ApplyError,
    },
}

impl ReconcileFailure for SubscriptionError {
    fn kind(&self) -> &'static str {
        match self {
            Self::CreateSubscription { source, .. }
            | Self::CreateInstallPlan { source, .. }
            | Self::Status { source, .. } => source.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::CreateSubscription { source, .. }
            | Self::CreateInstallPlan { source, .. }
            | Self::Status { source, .. } => source.is_transient(),
        }
    }
}
