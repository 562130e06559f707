//! Pulling one bundle of a plan with the pull secrets of its own catalog, and checking what was
//! pulled. Talks to the registry; reads the CatalogSource and source-Secret stores.

use kube::runtime::reflector::ObjectRef;

use super::fetch::{Credentials, FetchError, Fetched, LoadedBundles, credentials, fetch};
use crate::api::CatalogSource;
use crate::bundle::validate_for_install;
use crate::controller::context::Context;
use crate::controller::embedded_bundle::{Embedded, embedded_bundle, embedded_key};
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

/// Pulls the bundle of `entry` with the credentials of the CatalogSource it comes from, or, for
/// a bundle without an image, reads the manifests its catalog embeds.
pub async fn pull(context: &Context, loaded: &LoadedBundles, entry: &PlanEntry) -> Pulled {
    let pulled = if entry.image.is_empty() {
        embedded(context, loaded, entry)
    } else {
        pull_image(context, loaded, entry).await
    };
    let Pulled::Ready(fetched) = pulled else {
        return pulled;
    };
    let found = fetched.bundle.name();
    if found != entry.name {
        return Pulled::Failed {
            message: format!(
                "bundle {} holds ClusterServiceVersion {found}, but the catalog lists it as {}",
                shown(entry),
                entry.name
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
    Pulled::Ready(fetched)
}

/// Where the bundle of `entry` comes from, for messages.
fn shown(entry: &PlanEntry) -> String {
    if entry.image.is_empty() {
        format!(
            "{} embedded in catalog source {}",
            entry.name,
            entry.catalog()
        )
    } else {
        format!("image {}", entry.image)
    }
}

/// The bundle the catalog embeds (kept parsed by content key); `Ready` before the checks.
fn embedded(context: &Context, loaded: &LoadedBundles, entry: &PlanEntry) -> Pulled {
    let (namespace, catalog) = (&entry.catalog_namespace, &entry.catalog_name);
    let ready = |bundle| {
        Pulled::Ready(Box::new(Fetched {
            bundle,
            pinned: String::new(),
        }))
    };
    if let Some(bundle) = embedded_key(&context.catalogs, namespace, catalog, &entry.name)
        .and_then(|key| loaded.embedded(&key))
    {
        return ready(bundle);
    }
    match embedded_bundle(
        &context.catalogs,
        namespace,
        catalog,
        &entry.package,
        &entry.name,
    ) {
        Embedded::CatalogNotLoaded { catalog } => Pulled::Waiting(format!(
            "waiting for catalog source {catalog} to be read: bundle {} has no image, its \
             manifests are in the catalog",
            entry.name
        )),
        Embedded::Missing { message } => Pulled::Failed {
            message,
            reason: Some("InvalidBundleReference"),
        },
        Embedded::Found { key, bundle } => match *bundle {
            Ok(bundle) => ready(loaded.keep_embedded(key, bundle)),
            Err(error) => Pulled::Failed {
                message: crate::failure::error_chain(&error),
                reason: Some("BundleInvalid"),
            },
        },
    }
}

/// Pulls the bundle image of `entry`; `Ready` before the checks.
async fn pull_image(context: &Context, loaded: &LoadedBundles, entry: &PlanEntry) -> Pulled {
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
    match fetch(
        context,
        loaded,
        &entry.name,
        &entry.image,
        package,
        &keyring,
    )
    .await
    {
        Ok(fetched) => Pulled::Ready(Box::new(fetched)),
        Err(FetchError::Pull(source)) if source.is_transient() => Pulled::Retry(source),
        Err(error) => Pulled::Failed {
            message: crate::failure::error_chain(&error),
            reason: Some(error.reason()),
        },
    }
}
