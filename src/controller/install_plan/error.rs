//! Why an InstallPlan reconcile failed. Terminal problems (invalid bundles, unsupported CSVs)
//! are not errors: they fail the plan in its status.

use crate::controller::apply::ApplyError;
use crate::failure::ReconcileFailure;
use crate::registry::RegistryError;

/// A failed InstallPlan reconcile, retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum InstallPlanError {
    /// The bundle image could not be pulled; a retry may succeed (registry outage, credentials
    /// being fixed). The plan's status says the same.
    #[error("InstallPlan {namespace}/{name} cannot pull its bundle")]
    Pull {
        namespace: String,
        name: String,
        #[source]
        source: RegistryError,
    },
    /// Creating the CSV failed.
    #[error("InstallPlan {namespace}/{name} cannot create ClusterServiceVersion {csv}")]
    CreateCsv {
        namespace: String,
        name: String,
        csv: String,
        #[source]
        source: ApplyError,
    },
    /// Writing the status failed.
    #[error("cannot write the status of InstallPlan {namespace}/{name}")]
    Status {
        namespace: String,
        name: String,
        #[source]
        source: ApplyError,
    },
}

impl ReconcileFailure for InstallPlanError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Pull { source, .. } => source.kind(),
            Self::CreateCsv { source, .. } | Self::Status { source, .. } => source.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Pull { source, .. } => source.is_transient(),
            Self::CreateCsv { source, .. } | Self::Status { source, .. } => source.is_transient(),
        }
    }
}
