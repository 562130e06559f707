//! The catalogs opcat has loaded, in memory, keyed by CatalogSource. The CatalogSource
//! reconciler is the only writer; the Subscription reconciler reads.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use k8s_openapi::jiff::Timestamp;

use crate::fbc::Catalog;
use crate::registry::Digest;

/// A catalog image, resolved, verified, unpacked, parsed and validated.
#[derive(Debug)]
pub struct LoadedCatalog {
    /// The digest the image resolved to.
    pub digest: Digest,
    /// The image reference as written in the CatalogSource.
    pub image: String,
    /// The validated catalog.
    pub catalog: Catalog,
    /// When it was loaded.
    pub loaded_at: Timestamp,
}

/// Sizes of the loaded catalogs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogCounts {
    /// CatalogSources with a loaded catalog.
    pub catalogs: usize,
    /// Packages across them.
    pub packages: usize,
    /// Bundles across them.
    pub bundles: usize,
}

/// `(namespace, name)` of a CatalogSource.
pub type CatalogKey = (String, String);

/// Loaded catalogs by CatalogSource.
#[derive(Debug, Default)]
pub struct CatalogIndex {
    catalogs: RwLock<HashMap<CatalogKey, Arc<LoadedCatalog>>>,
    /// CatalogSources whose first load of this term has been tried (loaded or failed): the
    /// package API serves once every CatalogSource is settled.
    settled: RwLock<HashSet<CatalogKey>>,
}

impl CatalogIndex {
    /// The catalog loaded for the CatalogSource `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<LoadedCatalog>> {
        let catalogs = self.catalogs.read().ok()?;
        catalogs
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Replaces the catalog of a CatalogSource.
    pub fn insert(&self, namespace: &str, name: &str, catalog: Arc<LoadedCatalog>) {
        if let Ok(mut catalogs) = self.catalogs.write() {
            catalogs.insert((namespace.to_owned(), name.to_owned()), catalog);
        }
    }

    /// Forgets a CatalogSource (deleted, or no longer servable).
    pub fn remove(&self, namespace: &str, name: &str) {
        if let Ok(mut catalogs) = self.catalogs.write() {
            catalogs.remove(&(namespace.to_owned(), name.to_owned()));
        }
    }

    /// Records that the CatalogSource `namespace/name` has been reconciled once: its catalog
    /// is loaded, or loading it failed and says so in its status.
    pub fn mark_settled(&self, namespace: &str, name: &str) {
        if let Ok(mut settled) = self.settled.write() {
            settled.insert((namespace.to_owned(), name.to_owned()));
        }
    }

    /// Whether [`CatalogIndex::mark_settled`] was called for `namespace/name`.
    pub fn is_settled(&self, namespace: &str, name: &str) -> bool {
        self.settled
            .read()
            .is_ok_and(|settled| settled.contains(&(namespace.to_owned(), name.to_owned())))
    }

    /// How much is loaded (for metrics).
    pub fn counts(&self) -> CatalogCounts {
        let Ok(catalogs) = self.catalogs.read() else {
            return CatalogCounts::default();
        };
        let mut counts = CatalogCounts {
            catalogs: catalogs.len(),
            ..CatalogCounts::default()
        };
        for loaded in catalogs.values() {
            for package in loaded.catalog.packages() {
                counts.packages += 1;
                counts.bundles += package.bundles().count();
            }
        }
        counts
    }

    /// Number of loaded catalogs and the total number of bundles in them (for metrics).
    pub fn sizes(&self) -> (usize, usize) {
        let Ok(catalogs) = self.catalogs.read() else {
            return (0, 0);
        };
        let bundles = catalogs
            .values()
            .map(|loaded| {
                loaded
                    .catalog
                    .packages()
                    .map(|package| package.bundles().count())
                    .sum::<usize>()
            })
            .sum();
        (catalogs.len(), bundles)
    }
}
