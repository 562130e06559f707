//! Pulling one bundle of a plan with the pull secrets of its own catalog, and checking what was
//! pulled. Talks to the registry; reads the CatalogSource and source-Secret stores.

use kube::runtime::reflector::ObjectRef;

use super::fetch::{Credentials, FetchError, Fetched, LoadedBundles, credentials, fetch};
use crate::api::CatalogSource;
use crate::bundle::validate_for_install;
use crate::controller::context::Context;
use crate::controller::plan_record::PlanEntry;
use crate::registry::RegistryError;

/// Bundle lookup reason: the bundle image names another CSV than the catalog.
pub const REASON_BUNDLE_MISMATCH: &str = "BundleMismatch";

/// How pulling one bundle went.
pub enum Pulled {
    /// Pulled, read and installable.
    Ready(Box<Fetched>),
    /// The catalog's pull secrets have not been read yet (a wait, not a failure).
    Waiting(String),
    /// The registry failed in a way a retry may cure (outage, credentials being fixed).
    Retry(RegistryError),
    /// Never installable as it is: `reason` when the image could not be read as the bundle the
    /// catalog promised (a failed bundle lookup), `None` when its CSV is one opcat does not
    /// install.
    Failed {
        message: String,
        reason: Option<&'static str>,
    },
}

/// Pulls the bundle of `entry` with the credentials of the CatalogSource it comes from.
pub async fn pull(context: &Context, loaded: &LoadedBundles, entry: &PlanEntry) -> Pulled {
    let catalog = context.stores.catalog_sources.get(
        &ObjectRef::<CatalogSource>::new(&entry.catalog_name).within(&entry.catalog_namespace),
    );
    let keyring = match credentials(context, catalog.as_deref()) {
        Credentials::Ready(keyring) => keyring,
        Credentials::Waiting { namespace, secret } => {
            return Pulled::Waiting(format!(
                "waiting for pull secret {namespace}/{secret} of catalog source {} to be read",
                entry.catalog()
            ));
        }
    };
    let package = Some(entry.package.as_str()).filter(|package| !package.is_empty());
    let fetched = match fetch(
        context,
        loaded,
        &entry.name,
        &entry.image,
        package,
        &keyring,
    )
    .await
    {
        Ok(fetched) => fetched,
        Err(FetchError::Pull(source)) if source.is_transient() => return Pulled::Retry(source),
        Err(error) => {
            return Pulled::Failed {
                message: crate::failure::error_chain(&error),
                reason: Some(error.reason()),
            };
        }
    };
    let found = fetched.bundle.name();
    if found != entry.name {
        return Pulled::Failed {
            message: format!(
                "bundle image {} holds ClusterServiceVersion {found}, but the catalog lists it \
                 as {}",
                entry.image, entry.name
            ),
            reason: Some(REASON_BUNDLE_MISMATCH),
        };
    }
    if let Err(error) = validate_for_install(&fetched.bundle.csv) {
        return Pulled::Failed {
            message: error.to_string(),
            reason: None,
        };
    }
    Pulled::Ready(Box::new(fetched))
}
