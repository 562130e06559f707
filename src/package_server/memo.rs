//! The PackageManifests of each loaded catalog, built once and kept until the catalog or its
//! CatalogSource changes.
//!
//! Building a PackageManifest decodes every channel head's CSV from the catalog (base64, then
//! JSON): for the shared certified-operators v4.16 and community-operators v4.21 catalogs that
//! is most of a list request's time. Kept here per CatalogSource are the built manifests with
//! icons stripped (what get and list answer): the channel heads' descriptions, not the catalog.
//!
//! An entry is valid while its CatalogSource serves the same loaded catalog (the same
//! allocation, compared through a [`Weak`] reference, which keeps no catalog data alive) and
//! the fields a manifest copies from the CatalogSource are unchanged. A catalog re-push
//! replaces the loaded catalog, so the next request rebuilds. Entries are bounded by the
//! CatalogSources: one per source, replaced on change; entries whose catalog is gone are
//! dropped whenever an entry is stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::build::package_manifest;
use super::storage::{AsCatalog, Served};
use super::types::PackageManifest;
use crate::api::CatalogSource;

/// The built manifests of one CatalogSource's catalog.
pub struct Built {
    catalog: Weak<dyn AsCatalog>,
    source: SourceFields,
    /// PackageManifests (icons stripped, in the CatalogSource's namespace), by package name.
    pub manifests: Vec<PackageManifest>,
}

impl Built {
    /// The manifest of package `name`.
    pub fn manifest(&self, name: &str) -> Option<&PackageManifest> {
        self.manifests
            .binary_search_by(|manifest| manifest.status.package_name.as_str().cmp(name))
            .ok()
            .and_then(|index| self.manifests.get(index))
    }

    fn is_for(&self, served: &Served) -> bool {
        Weak::ptr_eq(&self.catalog, &Arc::downgrade(&served.catalog))
            && self.source == SourceFields::of(&served.source)
    }
}

/// What a PackageManifest copies from its CatalogSource ([`package_manifest`]).
#[derive(Clone, Debug, PartialEq)]
struct SourceFields {
    name: Option<String>,
    namespace: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    created: Option<Time>,
    display_name: Option<String>,
    publisher: Option<String>,
}

impl SourceFields {
    fn of(source: &CatalogSource) -> Self {
        Self {
            name: source.metadata.name.clone(),
            namespace: source.metadata.namespace.clone(),
            labels: source.metadata.labels.clone(),
            created: source.metadata.creation_timestamp.clone(),
            display_name: source.spec.display_name.clone(),
            publisher: source.spec.publisher.clone(),
        }
    }
}

/// Built manifests by CatalogSource (`namespace`, `name`).
#[derive(Default)]
pub struct Memo {
    entries: Mutex<HashMap<(String, String), Arc<Built>>>,
}

impl Memo {
    /// The built manifests of `served`, built now when its catalog or CatalogSource changed.
    pub fn built(&self, served: &Served) -> Arc<Built> {
        let key = (
            served.source.metadata.namespace.clone().unwrap_or_default(),
            served.source.metadata.name.clone().unwrap_or_default(),
        );
        if let Some(built) = self.lookup(&key)
            && built.is_for(served)
        {
            return built;
        }
        // Built outside the lock: other catalogs' requests are not held up meanwhile.
        let built = Arc::new(build(served));
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, entry| entry.catalog.strong_count() > 0);
            entries.insert(key, built.clone());
        }
        built
    }

    fn lookup(&self, key: &(String, String)) -> Option<Arc<Built>> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    /// Drops every entry (the catalogs were withdrawn or replaced).
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }

    /// How many CatalogSources have built manifests kept.
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |entries| entries.len())
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn build(served: &Served) -> Built {
    let catalog = served.catalog.catalog();
    let mut manifests: Vec<PackageManifest> = catalog
        .packages()
        .filter_map(|package| package_manifest(&served.source, package))
        .map(|mut manifest| {
            super::storage::strip_icons(&mut manifest);
            manifest
        })
        .collect();
    manifests.sort_by(|a, b| a.status.package_name.cmp(&b.status.package_name));
    Built {
        catalog: Arc::downgrade(&served.catalog),
        source: SourceFields::of(&served.source),
        manifests,
    }
}
