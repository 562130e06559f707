//! The PackageManifests of each loaded catalog, built once and kept until the catalog or its
//! CatalogSource changes.
//!
//! Building a PackageManifest decodes every channel head's CSV from the catalog (base64, then
//! JSON): for the shared certified-operators v4.16 and community-operators v4.21 catalogs that
//! is most of a list request's time. Kept here per CatalogSource are the built manifests with
//! icons stripped (what get and list answer): the channel heads' descriptions, not the catalog.
//! Each is kept as its metadata and its status serialized once ([`Kept`]): the status is the
//! bulk of a manifest (descriptions, annotations, CRD descriptions) and the same whichever
//! namespace a request sees it from, so a list's JSON body is these texts sent one after the other
//! (shared, not copied), with only the metadata written per request; the JSON is also a third to a half the
//! size of the same data as Rust values. Structured answers (get, Table, YAML) decode the
//! status of the items they return.
//!
//! An entry is valid while its CatalogSource serves the same loaded catalog (the same
//! allocation, compared through a [`Weak`] reference, which keeps no catalog data alive) and
//! the fields a manifest copies from the CatalogSource are unchanged. A catalog re-push
//! replaces the loaded catalog, so the next request rebuilds. Entries are bounded by the
//! CatalogSources: one per source, replaced on change; entries whose catalog is gone are
//! dropped whenever an entry is stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Serialize;

use super::build::package_manifest;
use super::storage::{AsCatalog, Served};
use super::types::{API_VERSION, KIND, PackageManifest, PackageManifestSpec};
use crate::api::CatalogSource;

/// One kept PackageManifest (icons stripped, in the CatalogSource's namespace).
pub struct Kept {
    /// Its metadata.
    pub metadata: ObjectMeta,
    /// Its status, as JSON (shared with the answers being sent).
    status: Bytes,
}

/// A PackageManifest as JSON up to its status (the field order of [`PackageManifest`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    api_version: &'a str,
    kind: &'a str,
    metadata: &'a ObjectMeta,
    spec: PackageManifestSpec,
}

impl Kept {
    fn new(manifest: &PackageManifest) -> Result<Self, serde_json::Error> {
        Ok(Self {
            metadata: manifest.metadata.clone(),
            // A boxed slice: no spare capacity kept for as long as the catalog is served.
            status: Bytes::from(serde_json::to_vec(manifest.status.as_ref())?.into_boxed_slice()),
        })
    }

    /// The package's name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// The metadata as seen from `namespace` (`None`: the CatalogSource's).
    fn metadata_in(&self, namespace: Option<&str>) -> ObjectMeta {
        let mut metadata = self.metadata.clone();
        if let Some(namespace) = namespace {
            metadata.namespace = Some(namespace.to_owned());
        }
        metadata
    }

    /// The PackageManifest as seen from `namespace`, its status decoded; `None` if the kept
    /// text does not decode (it was encoded from the same type: not expected).
    pub fn manifest(&self, namespace: Option<&str>) -> Option<PackageManifest> {
        let status = serde_json::from_slice(&self.status)
            .inspect_err(|error| {
                tracing::error!(package = self.name(), %error, "package API: kept status does not decode");
            })
            .ok()?;
        Some(PackageManifest {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: self.metadata_in(namespace),
            spec: PackageManifestSpec {},
            status,
        })
    }

    /// Appends to `out` the PackageManifest's JSON as seen from `namespace` up to its status:
    /// `{"apiVersion":...,"status":`. Followed by [`Kept::status`] and `}`, the same bytes as
    /// serializing [`Kept::manifest`]. On an error `out` may hold part of it.
    pub fn write_head(
        &self,
        namespace: Option<&str>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        serde_json::to_writer(
            &mut *out,
            &Head {
                api_version: API_VERSION,
                kind: KIND,
                metadata: &self.metadata_in(namespace),
                spec: PackageManifestSpec {},
            },
        )?;
        // `{...}` → `{...,"status":`.
        out.pop();
        out.extend_from_slice(b",\"status\":");
        Ok(())
    }

    /// The status's JSON, shared (not copied) with the answers being sent.
    pub fn status(&self) -> Bytes {
        self.status.clone()
    }
}

/// The built manifests of one CatalogSource's catalog.
pub struct Built {
    catalog: Weak<dyn AsCatalog>,
    source: SourceFields,
    /// The kept PackageManifests, by package name.
    pub manifests: Vec<Kept>,
}

impl Built {
    /// The manifest of package `name`.
    pub fn manifest(&self, name: &str) -> Option<&Kept> {
        self.manifests
            .binary_search_by(|kept| kept.name().cmp(name))
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
    let mut manifests: Vec<Kept> = catalog
        .packages()
        .filter_map(|package| package_manifest(&served.source, package))
        .filter_map(|mut manifest| {
            super::storage::strip_icons(&mut manifest);
            Kept::new(&manifest)
                .inspect_err(|error| {
                    tracing::error!(package = %manifest.status.package_name, %error, "package API: cannot encode a PackageManifest's status");
                })
                .ok()
        })
        .collect();
    manifests.sort_by(|a, b| a.name().cmp(b.name()));
    Built {
        catalog: Arc::downgrade(&served.catalog),
        source: SourceFields::of(&served.source),
        manifests,
    }
}
