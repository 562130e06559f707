//! The catalogs a term has loaded, as the package API reads them: the CatalogSource store (by
//! namespace) joined with [`CatalogIndex`](crate::controller::catalogs::CatalogIndex), at
//! request time, so the API always shows what resolution uses and nothing is copied.

use std::sync::Arc;

use kube::ResourceExt;

use crate::controller::catalogs::LoadedCatalog;
use crate::controller::context::Context;
use crate::fbc::Catalog;
use crate::package_server::storage::{AsCatalog, Catalogs, Served};

impl AsCatalog for LoadedCatalog {
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }
}

/// A term's loaded catalogs.
pub struct ContextCatalogs {
    context: Arc<Context>,
}

impl ContextCatalogs {
    /// The catalogs of `context`'s term.
    pub fn new(context: Arc<Context>) -> Self {
        Self { context }
    }

    fn served(&self, source: Arc<crate::api::CatalogSource>) -> Option<Served> {
        let namespace = source.namespace()?;
        let loaded = self.context.catalogs.get(&namespace, &source.name_any())?;
        Some(Served {
            source,
            catalog: loaded,
        })
    }
}

impl Catalogs for ContextCatalogs {
    fn in_namespace(&self, namespace: &str) -> Vec<Served> {
        self.context
            .stores
            .namespaced
            .catalog_sources
            .in_namespace(namespace)
            .into_iter()
            .filter_map(|source| self.served(source))
            .collect()
    }

    fn all(&self) -> Vec<Served> {
        self.context
            .stores
            .catalog_sources
            .state()
            .into_iter()
            .filter_map(|source| self.served(source))
            .collect()
    }

    fn global_namespace(&self) -> &str {
        &self.context.settings.global_catalog_namespace
    }
}
