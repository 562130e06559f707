//! Bundles without an image, whose manifests the catalog itself holds: `olm.bundle.object`
//! properties of a file-based catalog, or the `object` manifests a registry server sends
//! (`Bundle.object`, when `bundlePath` is empty). OLM installs such bundles from those manifests
//! (`pkg/controller/bundle/bundle_unpacker.go` unpacks only bundles with a `bundlePath`); so does
//! opcat, from the catalog it keeps in memory (reads [`CatalogIndex`]; no client, no registry).
//! The manifests are checked as a bundle image's `manifests/` files are.

use std::sync::Arc;

use super::catalogs::{CatalogIndex, LoadedCatalog};
use crate::bundle::Bundle;
use crate::bundle::load::LoadError;

/// What the catalog holds for a bundle without an image.
#[derive(Debug)]
pub enum Embedded {
    /// The catalog is not loaded (yet, or its server is away after a restart): a wait.
    CatalogNotLoaded { catalog: String },
    /// The catalog has no such bundle, or no manifests for it: never installable as it is.
    Missing { message: String },
    /// The bundle; `key` identifies its content (catalog digest and bundle name).
    Found {
        key: String,
        bundle: Box<Result<Bundle, LoadError>>,
    },
}

/// The bundle `name` of `package` (any package when empty) embedded in the catalog of the
/// CatalogSource `namespace/catalog`. Decodes the manifests: call it off the async runtime for
/// large bundles, or cache by `key`.
pub fn embedded_bundle(
    catalogs: &CatalogIndex,
    namespace: &str,
    catalog: &str,
    package: &str,
    name: &str,
) -> Embedded {
    let shown = format!("{namespace}/{catalog}");
    let Some(loaded) = catalogs.get(namespace, catalog) else {
        return Embedded::CatalogNotLoaded { catalog: shown };
    };
    find(&loaded, &shown, package, name)
}

/// The content key of an embedded bundle, without decoding it (`None` when the catalog is not
/// loaded).
pub fn embedded_key(
    catalogs: &CatalogIndex,
    namespace: &str,
    catalog: &str,
    name: &str,
) -> Option<String> {
    catalogs
        .get(namespace, catalog)
        .map(|loaded| key(&loaded, name))
}

fn key(loaded: &LoadedCatalog, name: &str) -> String {
    format!("embedded:{}:{name}", loaded.digest)
}

fn find(loaded: &Arc<LoadedCatalog>, shown: &str, package: &str, name: &str) -> Embedded {
    let found = loaded
        .catalog
        .packages()
        .filter(|p| package.is_empty() || p.name == package)
        .find_map(|p| p.bundle(name));
    let Some(bundle) = found else {
        return Embedded::Missing {
            message: format!("catalog {shown} has no bundle {name}"),
        };
    };
    if bundle.objects().next().is_none() {
        return Embedded::Missing {
            message: format!("bundle {name} has neither an image nor manifests in catalog {shown}"),
        };
    }
    let source = format!("bundle {name} embedded in catalog {shown}");
    let mut manifests = Vec::new();
    for (index, object) in bundle.objects().enumerate() {
        match object.manifest() {
            Ok(manifest) => manifests.push(manifest),
            Err(error) => {
                return Embedded::Missing {
                    message: format!("{source}: manifest {index} cannot be read: {error}"),
                };
            }
        }
    }
    Embedded::Found {
        key: key(loaded, name),
        bundle: Box::new(Bundle::from_manifests(&source, manifests)),
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;
    use crate::fbc::{Catalog, DeclarativeConfig};

    fn index(objects: &[&str]) -> CatalogIndex {
        let b64 = |text: &&str| base64::engine::general_purpose::STANDARD.encode(text);
        let properties: String = objects
            .iter()
            .map(|o| {
                format!(
                    "  - type: olm.bundle.object\n    value: {{data: {}}}\n",
                    b64(o)
                )
            })
            .collect();
        let text = format!(
            "---\nschema: olm.package\nname: p\ndefaultChannel: s\n---\nschema: olm.channel\n\
             package: p\nname: s\nentries:\n  - name: p.v1\n---\nschema: olm.bundle\npackage: p\n\
             name: p.v1\nimage: \"\"\nproperties:\n  - type: olm.package\n    value: \
             {{packageName: p, version: 1.0.0}}\n{properties}"
        );
        let config = DeclarativeConfig::parse(&text, std::path::Path::new("c.yaml")).unwrap();
        let index = CatalogIndex::default();
        index.insert(
            "olm",
            "acme",
            Arc::new(LoadedCatalog {
                digest: crate::registry::Digest::sha256_of(text.as_bytes()),
                image: "10.0.0.1:50051".to_owned(),
                catalog: Catalog::new(config).unwrap(),
                loaded_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            }),
        );
        index
    }

    const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
                       metadata:\n  name: p.v1\nspec:\n  displayName: P\n  install:\n    \
                       strategy: deployment\n";
    const SA: &str = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"p"}}"#;

    #[test]
    fn embedded_manifests_make_a_bundle() {
        let index = index(&[CSV, SA]);
        let Embedded::Found { key, bundle } = embedded_bundle(&index, "olm", "acme", "p", "p.v1")
        else {
            panic!("expected the bundle");
        };
        let bundle = bundle.unwrap();
        assert_eq!(bundle.name(), "p.v1");
        assert_eq!(bundle.objects.len(), 1);
        assert_eq!(bundle.objects[0].kind(), "ServiceAccount");
        assert!(
            key.starts_with("embedded:sha256:") && key.ends_with(":p.v1"),
            "{key}"
        );
        assert_eq!(embedded_key(&index, "olm", "acme", "p.v1"), Some(key));
    }

    #[test]
    fn a_missing_catalog_is_a_wait_and_bad_content_is_named() {
        let index = index(&[SA]);
        assert!(matches!(
            embedded_bundle(&index, "olm", "other", "p", "p.v1"),
            Embedded::CatalogNotLoaded { catalog } if catalog == "olm/other"
        ));
        assert!(matches!(
            embedded_bundle(&index, "olm", "acme", "", "p.v2"),
            Embedded::Missing { message } if message == "catalog olm/acme has no bundle p.v2"
        ));
        let Embedded::Found { bundle, .. } = embedded_bundle(&index, "olm", "acme", "", "p.v1")
        else {
            panic!("expected the bundle");
        };
        let error = bundle.unwrap_err().to_string();
        assert!(
            error.contains("bundle p.v1 embedded in catalog olm/acme"),
            "{error}"
        );
    }
}
