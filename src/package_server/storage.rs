//! Get, list and the icon, over the loaded catalogs, as packageserver's storage answers them
//! (`operator-lifecycle-manager: pkg/package-server/storage/reststorage.go`,
//! `storage/subresources.go`, `provider/registry.go` `List` / `Get`):
//!
//! - list in namespace N: the packages of N's CatalogSources, then those of the global catalog
//!   namespace (unless N is it), every item's `metadata.namespace` set to N; across all
//!   namespaces: every package in its catalog's namespace;
//! - get: the first item of that list with the name, so N's own catalog wins over the global
//!   one;
//! - the label selector filters the list (not get); the field selector takes only
//!   `metadata.name` (exact); icons are stripped from get and list;
//! - the icon: the default channel's head CSV's first icon, with its media type and an ETag,
//!   else packageserver's default SVG.
//!
//! Order (packageserver's is a Go cache's, not stable): the request namespace's items before
//! the global namespace's; within each, by package name, then CatalogSource priority (higher
//! first, as the resolver prefers), then CatalogSource name. The same package in two catalogs
//! of one namespace is two items of the same name, as in packageserver.
//!
//! Manifests are built from the catalogs opcat holds for resolution and kept until the catalog
//! or its CatalogSource changes ([`super::memo`]); a list's JSON is written from the kept
//! statuses' text ([`Selection::to_chunks`]); the icon is built at request time.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::build::package_manifest;
use super::memo::{Built, Kept, Memo};
use super::selector::{FieldRequirement, LabelSelector};
use super::types::{API_VERSION, LIST_KIND, PackageManifest, PackageManifestList};
use crate::api::CatalogSource;
use crate::fbc::Catalog;

/// A CatalogSource and the catalog loaded for it.
#[derive(Clone)]
pub struct Served {
    /// The CatalogSource, as last seen.
    pub source: Arc<CatalogSource>,
    /// Its loaded catalog.
    pub catalog: Arc<dyn AsCatalog>,
}

/// Whatever holds a loaded [`Catalog`] (the controller's `LoadedCatalog`).
pub trait AsCatalog: Send + Sync {
    /// The catalog.
    fn catalog(&self) -> &Catalog;
}

impl AsCatalog for Catalog {
    fn catalog(&self) -> &Catalog {
        self
    }
}

/// The loaded catalogs, as the package API reads them at request time.
pub trait Catalogs: Send + Sync {
    /// CatalogSources of `namespace` that have a loaded catalog.
    fn in_namespace(&self, namespace: &str) -> Vec<Served>;
    /// Every CatalogSource that has a loaded catalog.
    fn all(&self) -> Vec<Served>;
    /// The namespace whose catalogs every namespace sees.
    fn global_namespace(&self) -> &str;
}

/// What a list asks for.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// The request namespace; `None` lists across all namespaces.
    pub namespace: Option<String>,
    /// The label selector.
    pub labels: LabelSelector,
    /// The name from a `metadata.name` field selector.
    pub name: Option<String>,
}

/// Why a field selector is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldSelectorError(pub String);

/// The name a field selector asks for, as packageserver reads it: the generic API server
/// accepts only `metadata.name` and `metadata.namespace` (`DefaultMetaV1FieldSelectorConversion`),
/// then packageserver's `nameFor` takes an exact `metadata.name` and refuses anything else.
pub fn name_from_fields(
    requirements: &[FieldRequirement],
) -> Result<Option<String>, FieldSelectorError> {
    for requirement in requirements {
        if requirement.field != "metadata.name" && requirement.field != "metadata.namespace" {
            return Err(FieldSelectorError(format!(
                "{:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                requirement.field
            )));
        }
    }
    if let Some(exact) = requirements
        .iter()
        .find(|requirement| requirement.field == "metadata.name" && requirement.equals)
    {
        return Ok(Some(exact.value.clone()));
    }
    match requirements.first() {
        None => Ok(None),
        Some(first) => Err(FieldSelectorError(format!(
            "field label not supported: {}",
            first.field
        ))),
    }
}

/// The sources a request in `namespace` sees, in answer order (see the module docs).
fn visible(catalogs: &dyn Catalogs, namespace: Option<&str>) -> Vec<(usize, Served)> {
    let mut sources: Vec<(usize, Served)> = match namespace {
        None => catalogs
            .all()
            .into_iter()
            .map(|served| (0, served))
            .collect(),
        Some(namespace) => {
            let mut sources: Vec<(usize, Served)> = catalogs
                .in_namespace(namespace)
                .into_iter()
                .map(|served| (0, served))
                .collect();
            let global = catalogs.global_namespace();
            if namespace != global {
                sources.extend(catalogs.in_namespace(global).into_iter().map(|s| (1, s)));
            }
            sources
        }
    };
    sources.sort_by_key(|(rank, served)| {
        (
            *rank,
            served.source.metadata.namespace.clone().unwrap_or_default(),
            Reverse(served.source.spec.priority.unwrap_or(0)),
            served.source.metadata.name.clone().unwrap_or_default(),
        )
    });
    sources
}

/// The items a list answers, in answer order: manifests `memo` keeps, seen from the request
/// namespace.
pub struct Selection {
    namespace: Option<String>,
    items: Vec<(Arc<Built>, usize)>,
}

impl Selection {
    fn kept(&self) -> impl Iterator<Item = &Kept> {
        self.items
            .iter()
            .filter_map(|(built, index)| built.manifests.get(*index))
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The PackageManifestList, statuses decoded (for the Table and YAML answers).
    pub fn to_list(&self) -> PackageManifestList {
        PackageManifestList {
            api_version: API_VERSION.to_owned(),
            kind: LIST_KIND.to_owned(),
            metadata: Default::default(),
            items: self
                .kept()
                .filter_map(|kept| kept.manifest(self.namespace.as_deref()))
                .collect(),
        }
    }

    /// The PackageManifestList's JSON in chunks (the same bytes as serializing
    /// [`Selection::to_list`]): each item's metadata written now, in one chunk with the
    /// punctuation around it, then its status, the kept text shared rather than copied.
    pub fn to_chunks(&self) -> Vec<Bytes> {
        let namespace = self.namespace.as_deref();
        let mut chunks = Vec::with_capacity(self.items.len() * 2 + 1);
        let mut written = format!(
            r#"{{"apiVersion":"{API_VERSION}","kind":"{LIST_KIND}","metadata":{{}},"items":["#
        )
        .into_bytes();
        let mut first = true;
        for kept in self.kept() {
            let start = written.len();
            if !first {
                written.push(b',');
            }
            if let Err(error) = kept.write_head(namespace, &mut written) {
                tracing::error!(package = kept.name(), %error, "package API: cannot write a list item");
                written.truncate(start);
                continue;
            }
            first = false;
            chunks.push(Bytes::from(std::mem::replace(&mut written, b"}".to_vec())));
            chunks.push(kept.status());
        }
        written.extend_from_slice(b"]}");
        chunks.push(Bytes::from(written));
        chunks
    }

    /// The PackageManifestList's JSON ([`Selection::to_chunks`] in one buffer).
    pub fn to_json(&self) -> Vec<u8> {
        self.to_chunks().concat()
    }
}

/// Selects what a list answers (icons stripped), from the manifests `memo` keeps.
pub fn select(catalogs: &dyn Catalogs, memo: &Memo, query: &ListQuery) -> Selection {
    let sources = visible(catalogs, query.namespace.as_deref());
    let no_labels = BTreeMap::new();
    let mut items: Vec<(usize, usize, Arc<Built>, usize)> = Vec::new();
    for (position, (rank, served)) in sources.iter().enumerate() {
        let built = memo.built(served);
        let indices: Vec<usize> = match &query.name {
            Some(name) => built
                .manifests
                .binary_search_by(|kept| kept.name().cmp(name))
                .into_iter()
                .collect(),
            None => (0..built.manifests.len()).collect(),
        };
        for index in indices {
            let Some(kept) = built.manifests.get(index) else {
                continue;
            };
            if query
                .labels
                .matches(kept.metadata.labels.as_ref().unwrap_or(&no_labels))
            {
                items.push((*rank, position, built.clone(), index));
            }
        }
    }
    // Every item of a namespaced list is in the request namespace: the order is by name there.
    let namespace_of = |built: &Built, index: usize| {
        built
            .manifests
            .get(index)
            .and_then(|kept| kept.metadata.namespace.clone())
    };
    let name_of = |built: &Built, index: usize| {
        built
            .manifests
            .get(index)
            .map(|kept| kept.name().to_owned())
    };
    items.sort_by_cached_key(|(rank, position, built, index)| {
        let namespace = match &query.namespace {
            Some(_) => None,
            None => namespace_of(built, *index),
        };
        (*rank, namespace, name_of(built, *index), *position)
    });
    Selection {
        namespace: query.namespace.clone(),
        items: items
            .into_iter()
            .map(|(_, _, built, index)| (built, index))
            .collect(),
    }
}

/// Lists PackageManifests (icons stripped), from the manifests `memo` keeps.
pub fn list(catalogs: &dyn Catalogs, memo: &Memo, query: &ListQuery) -> PackageManifestList {
    select(catalogs, memo, query).to_list()
}

/// Gets the PackageManifest `name` as seen from `namespace`, icons kept (for the icon
/// subresource: built now, not kept).
fn find(catalogs: &dyn Catalogs, namespace: &str, name: &str) -> Option<PackageManifest> {
    for (_, served) in visible(catalogs, Some(namespace)) {
        let Some(package) = served.catalog.catalog().package(name) else {
            continue;
        };
        if let Some(mut manifest) = package_manifest(&served.source, package) {
            manifest.metadata.namespace = Some(namespace.to_owned());
            return Some(manifest);
        }
    }
    None
}

/// Gets one PackageManifest (icons stripped), from the manifests `memo` keeps.
pub fn get(
    catalogs: &dyn Catalogs,
    memo: &Memo,
    namespace: &str,
    name: &str,
) -> Option<PackageManifest> {
    for (_, served) in visible(catalogs, Some(namespace)) {
        if served.catalog.catalog().package(name).is_none() {
            continue;
        }
        if let Some(manifest) = memo
            .built(&served)
            .manifest(name)
            .and_then(|kept| kept.manifest(Some(namespace)))
        {
            return Some(manifest);
        }
    }
    None
}

/// An icon answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IconImage {
    /// The image.
    pub bytes: Vec<u8>,
    /// Its media type.
    pub media_type: String,
    /// `"<package>.<channel>.<csv>"`, quoted; empty for the default icon.
    pub etag: String,
}

/// The icon of the PackageManifest `name` as seen from `namespace`; `None` when there is no
/// such package.
pub fn icon(catalogs: &dyn Catalogs, namespace: &str, name: &str) -> Option<IconImage> {
    let manifest = find(catalogs, namespace, name)?;
    let channel = manifest
        .status
        .channels
        .iter()
        .find(|channel| channel.name == manifest.status.default_channel);
    if let Some(channel) = channel
        && let Some(first) = channel.current_csv_desc.icon.first()
    {
        // packageserver decodes leniently (a bad icon gives what decoded, possibly nothing).
        let bytes = base64_lenient(&first.base64data);
        return Some(IconImage {
            bytes,
            media_type: first.mediatype.clone(),
            etag: format!("\"{name}.{}.{}\"", channel.name, channel.current_csv),
        });
    }
    Some(IconImage {
        bytes: DEFAULT_ICON.as_bytes().to_vec(),
        media_type: "image/svg+xml".to_owned(),
        etag: String::new(),
    })
}

fn base64_lenient(text: &str) -> Vec<u8> {
    use base64::Engine;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .unwrap_or_default()
}

/// Leaves the icons out (get and list answers).
pub(super) fn strip_icons(manifest: &mut PackageManifest) {
    for channel in &mut Arc::make_mut(&mut manifest.status).channels {
        channel.current_csv_desc.icon.clear();
    }
}

/// packageserver's icon for packages without one (`storage/subresources.go` `defaultIcon`).
pub const DEFAULT_ICON: &str = r#"
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 258.51 258.51"><defs><style>.cls-1{fill:#d1d1d1;}.cls-2{fill:#8d8d8f;}</style></defs><title>Asset 4</title><g id="Layer_2" data-name="Layer 2"><g id="Layer_1-2" data-name="Layer 1"><path class="cls-1" d="M129.25,20A109.1,109.1,0,0,1,206.4,206.4,109.1,109.1,0,1,1,52.11,52.11,108.45,108.45,0,0,1,129.25,20m0-20h0C58.16,0,0,58.16,0,129.25H0c0,71.09,58.16,129.26,129.25,129.26h0c71.09,0,129.26-58.17,129.26-129.26h0C258.51,58.16,200.34,0,129.25,0Z"/><path class="cls-2" d="M177.54,103.41H141.66L154.9,65.76c1.25-4.4-2.33-8.76-7.21-8.76H102.93a7.32,7.32,0,0,0-7.4,6l-10,69.61c-.59,4.17,2.89,7.89,7.4,7.89h36.9L115.55,197c-1.12,4.41,2.48,8.55,7.24,8.55a7.58,7.58,0,0,0,6.47-3.48L184,113.85C186.86,109.24,183.29,103.41,177.54,103.41Z"/></g></g></svg>
"#;
