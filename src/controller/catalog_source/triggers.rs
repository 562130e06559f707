//! Secondary triggers (pure, reads the store snapshot it is given): which CatalogSources a source
//! Secret change concerns.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use crate::api::CatalogSource;

/// The CatalogSources in `namespace` whose `spec.secrets` lists `secret`.
pub fn catalogs_using(
    catalog_sources: &[Arc<CatalogSource>],
    namespace: &str,
    secret: &str,
) -> Vec<ObjectRef<CatalogSource>> {
    catalog_sources
        .iter()
        .filter(|catalog| catalog.namespace().as_deref() == Some(namespace))
        .filter(|catalog| catalog.spec.secret_names().any(|name| name == secret))
        .map(|catalog| ObjectRef::from_obj(catalog.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;
    use crate::api::CatalogSourceSpec;

    fn catalog(namespace: &str, name: &str, secrets: &[&str]) -> Arc<CatalogSource> {
        Arc::new(CatalogSource {
            metadata: ObjectMeta {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: CatalogSourceSpec {
                source_type: "grpc".to_owned(),
                secrets: Some(secrets.iter().map(|s| (*s).to_owned()).collect()),
                ..CatalogSourceSpec::default()
            },
            status: None,
        })
    }

    #[test]
    fn a_secret_change_reaches_only_catalogs_in_its_namespace_that_list_it() {
        let catalogs = [
            catalog("olm", "a", &["pull", "other"]),
            catalog("olm", "b", &["other"]),
            catalog("team", "c", &["pull"]),
            catalog("olm", "d", &["pull"]),
        ];
        let names: Vec<String> = catalogs_using(&catalogs, "olm", "pull")
            .into_iter()
            .map(|reference| reference.name)
            .collect();
        assert_eq!(names, ["a", "d"]);
        assert!(catalogs_using(&catalogs, "olm", "missing").is_empty());
    }
}
