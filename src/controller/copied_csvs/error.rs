//! Why bringing a CSV's copies in line failed.

use crate::controller::apply::ApplyError;
use crate::failure::ReconcileFailure;

/// A copied-CSV reconcile failed; it is retried with the shared back-off.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A read or write of a copy (or of the original) failed.
    #[error("cannot bring the copied ClusterServiceVersions in line")]
    Write(#[source] Box<ApplyError>),
    /// The OLMConfig's status could not be written.
    #[error("cannot write the status of OLMConfig cluster")]
    OlmConfigStatus(#[source] Box<ApplyError>),
}

impl ReconcileFailure for CopyError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Write(error) | Self::OlmConfigStatus(error) => error.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Write(error) | Self::OlmConfigStatus(error) => error.is_transient(),
        }
    }
}
