//! Why a ClusterServiceVersion reconcile failed. Only failures reach the error policy: expected
//! waits and terminal problems of the CSV itself (no OperatorGroup, an invalid bundle) are
//! status plus a requeue, decided by the reconciler (DESIGN invariant 7).

use crate::controller::apply::ApplyError;
use crate::controller::resources::ResourceError;
use crate::failure::ReconcileFailure;
use crate::registry::RegistryError;

/// A failed ClusterServiceVersion reconcile. Messages name the object and the cause, never
/// secret data.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// A write (or a read that precedes a write) to the API failed.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// A read from the API failed.
    #[error("cannot read {what}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// The bundle image could not be pulled.
    #[error("cannot pull bundle image {image} of ClusterServiceVersion {csv}")]
    Bundle {
        csv: String,
        image: String,
        #[source]
        source: RegistryError,
    },
    /// Loading the unpacked bundle from the cache failed unexpectedly (not a content problem).
    #[error("cannot load bundle {image} of ClusterServiceVersion {csv}: {message}")]
    BundleTask {
        csv: String,
        image: String,
        message: String,
    },
    /// A kind the bundle holds is not served by the cluster.
    #[error(transparent)]
    Resource(#[from] ResourceError),
    /// A ServiceAccount kept changing under opcat's precondition.
    #[error(
        "ServiceAccount {namespace}/{name} changed {attempts} times while opcat edited its \
         imagePullSecrets; retrying later"
    )]
    ServiceAccountContention {
        namespace: String,
        name: String,
        attempts: u32,
    },
    /// An object opcat would write is not its own (a Secret of the bundle without opcat's
    /// labels, for instance).
    #[error("{kind} {object} exists and is not managed by opcat; opcat will not take it over")]
    Foreign { kind: String, object: String },
    /// A serving certificate could not be generated.
    #[error(transparent)]
    Certificate(#[from] crate::certificates::CertificateError),
    /// A cluster-wide object only one install can hold (an APIService, a CRD's conversion
    /// webhook) is held by an install of the operator in another namespace.
    #[error(
        "{kind} {object} is served by the install in namespace {holder}; only one install of an \
         operator can serve it"
    )]
    HeldElsewhere {
        kind: String,
        object: String,
        holder: String,
    },
}

impl CsvError {
    /// `namespace/name` of a read target, for [`CsvError::Read`].
    pub fn read(what: impl Into<String>, source: kube::Error) -> Self {
        Self::Read {
            what: what.into(),
            source,
        }
    }
}

impl ReconcileFailure for CsvError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Apply(error) => error.kind(),
            Self::Read { source, .. } => crate::controller::apply::api_error_kind(source),
            Self::Bundle { source, .. } => source.kind(),
            Self::BundleTask { .. } => "bundle_load",
            Self::Resource(error) => error.kind(),
            Self::ServiceAccountContention { .. } => "conflict",
            Self::Foreign { .. } => "foreign_object",
            Self::Certificate(_) => "certificate",
            Self::HeldElsewhere { .. } => "held_elsewhere",
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Apply(error) => error.is_transient(),
            Self::Read { source, .. } => crate::controller::apply::is_transient(source),
            Self::Bundle { source, .. } => source.is_transient(),
            Self::BundleTask { .. } | Self::ServiceAccountContention { .. } => true,
            // A kind may become served once its CRD is installed.
            Self::Resource(_) => true,
            Self::Foreign { .. } | Self::Certificate(_) | Self::HeldElsewhere { .. } => false,
        }
    }
}
