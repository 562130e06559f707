//! Dereference: everything a reconcile reads. Stores first (CSVs, OperatorGroups,
//! Subscriptions, CatalogSources, Namespaces, copies, Deployments, source Secrets); GETs only for
//! what has no store (ServiceAccounts, and a Secret holding a copy's name without opcat's label,
//! which the label-selected store cannot see). The objects of a CSV are read by
//! [`super::labelled`]. Touches the client (reads only).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};

use super::clashes::NameClashes;
use super::error::CsvError;
use crate::api::{CatalogSource, ClusterServiceVersion, OperatorGroup, Subscription};
use crate::controller::apply::is_not_found;
use crate::controller::context::Context;
use crate::controller::keys::{self, csv as csv_keys};
use crate::controller::source_secrets::SourceState;
use crate::controller::stored_object::Labelled;
use crate::pull_secrets::CatalogRef;
use crate::registry::{Keyring, PullSecret};

/// Whether opcat manages `csv` (the CSV watch is label-selected already; this guards a CSV
/// whose label was removed while it was queued).
pub fn is_managed(csv: &impl Labelled) -> bool {
    csv.label(crate::bundle::ownership::MANAGED_BY_LABEL)
        == Some(crate::bundle::ownership::MANAGED_BY_VALUE)
}

/// Whether `csv` is being deleted.
pub fn is_deleting(csv: &impl Resource) -> bool {
    csv.meta().deletion_timestamp.is_some()
}

/// The catalog `csv` was installed from (annotation [`csv_keys::CATALOG`]).
pub fn catalog_of(csv: &impl Labelled) -> Option<CatalogRef> {
    let value = csv.annotation(csv_keys::CATALOG)?;
    let (namespace, name) = keys::split_ref(value)?;
    Some(CatalogRef {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}

/// The component label of `csv`'s install (OLM's `operators.coreos.com/<package>.<namespace>`),
/// which every object opcat renders for it carries; none for a CSV without the package
/// annotation.
pub fn component_labels(csv: &(impl Labelled + Resource)) -> BTreeMap<String, String> {
    match (
        csv.annotation(csv_keys::PACKAGE),
        csv.meta().namespace.as_deref(),
    ) {
        (Some(package), Some(namespace)) if !package.is_empty() => {
            crate::api::operator::component_labels(package, namespace)
        }
        _ => BTreeMap::new(),
    }
}

/// The OperatorGroups in `namespace`.
pub fn operator_groups(context: &Context, namespace: &str) -> Vec<Arc<OperatorGroup>> {
    context
        .stores
        .namespaced
        .operator_groups
        .in_namespace(namespace)
}

/// The CatalogSource `catalog`, from the store.
pub fn catalog_source(context: &Context, catalog: &CatalogRef) -> Option<Arc<CatalogSource>> {
    context
        .stores
        .catalog_sources
        .get(&ObjectRef::new(&catalog.name).within(&catalog.namespace))
}

/// The Subscription named in the CSV's annotation, from the store.
pub fn subscription(
    context: &Context,
    csv: &(impl Labelled + Resource),
) -> Option<Arc<Subscription>> {
    let name = csv.annotation(csv_keys::SUBSCRIPTION)?;
    let namespace = csv.namespace()?;
    context
        .stores
        .subscriptions
        .get(&ObjectRef::new(name).within(&namespace))
        .map(|subscription| Arc::new(subscription.object()))
}

/// Labels of `namespace`, from the metadata-only store.
pub fn namespace_labels(context: &Context, namespace: &str) -> Option<BTreeMap<String, String>> {
    context
        .stores
        .namespaces
        .get(&ObjectRef::new(namespace))
        .and_then(|ns| ns.labels())
}

/// The CSVs opcat manages in `namespace` other than `except` that are not being deleted.
pub fn other_csvs(
    context: &Context,
    namespace: &str,
    except: &str,
) -> Vec<Arc<ClusterServiceVersion>> {
    context
        .stores
        .namespaced
        .csvs
        .in_namespace(namespace)
        .into_iter()
        .filter(|csv| csv.name_any() != except && is_managed(&**csv) && !is_deleting(&**csv))
        .map(|csv| Arc::new(csv.object()))
        .collect()
}

/// Other CSVs opcat manages in `namespace` that come from `catalog` and are not being deleted.
pub fn catalog_csvs(
    context: &Context,
    namespace: &str,
    catalog: &CatalogRef,
    except: &str,
) -> Vec<Arc<ClusterServiceVersion>> {
    let mut csvs = other_csvs(context, namespace, except);
    csvs.retain(|csv| catalog_of(csv).as_ref() == Some(catalog));
    csvs.sort_by_key(|csv| csv.name_any());
    csvs
}

/// The live CSV that replaces `name` in `namespace` (its `spec.replaces`), if any.
pub fn replacer(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Option<Arc<ClusterServiceVersion>> {
    context
        .stores
        .namespaced
        .csvs
        .in_namespace(namespace)
        .into_iter()
        .filter(|csv| !is_deleting(&**csv))
        .find(|csv| csv.spec.replaces.as_deref() == Some(name))
        .map(|csv| Arc::new(csv.object()))
}

/// The source Secrets of a CatalogSource, or the first one whose state is not known yet.
pub enum Sources {
    /// Every named source's state is known; these exist.
    Known(BTreeMap<String, Secret>),
    /// The watch of this source has not listed yet.
    Unknown(String),
}

/// The states of `catalog`'s `spec.secrets`.
pub fn sources(context: &Context, catalog: &CatalogSource) -> Sources {
    let namespace = catalog.namespace().unwrap_or_default();
    let mut found = BTreeMap::new();
    for name in catalog.spec.secret_names() {
        match context.source_secrets.get(&namespace, name) {
            SourceState::Unknown => return Sources::Unknown(name.to_owned()),
            SourceState::Missing => {}
            SourceState::Present(secret) => {
                found.insert(name.to_owned(), (*secret).clone());
            }
        }
    }
    Sources::Known(found)
}

/// A keyring of `sources`, each credential named `name(source name)`. Unusable secrets are
/// skipped (their problems are reported by the copy planning and the CatalogSource).
pub fn keyring<'a>(
    sources: impl IntoIterator<Item = (&'a String, &'a Secret)>,
    name: impl Fn(&str) -> String,
) -> Keyring {
    let secrets: Vec<PullSecret> = sources
        .into_iter()
        .map(|(source_name, secret)| {
            let mut pull = PullSecret::from(secret);
            pull.name = name(source_name);
            pull
        })
        .collect();
    Keyring::from_secrets(&secrets).0
}

/// Secrets in `namespace` the plan needs: the catalog's copies (label-selected store) plus, by
/// name, a Secret a create found holding a wanted copy name (a foreign Secret in the way).
pub async fn secrets(
    context: &Context,
    clashes: &NameClashes,
    namespace: &str,
    catalog: &CatalogRef,
    wanted: &BTreeSet<String>,
) -> Result<Vec<Secret>, CsvError> {
    let mut found: BTreeMap<String, Secret> = context
        .stores
        .namespaced
        .copies
        .in_namespace(namespace)
        .into_iter()
        .map(|stored| stored.to_secret())
        .filter(|secret| catalog.is_catalog_copy(secret))
        .map(|secret| (secret.name_any(), secret))
        .collect();
    // A wanted name missing from the cache is free, unless a create found it taken: only those
    // names are read (see `clashes`).
    let api: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    for name in clashes.in_namespace(namespace) {
        if found.contains_key(&name) || !wanted.contains(&name) {
            continue;
        }
        match api.get_opt(&name).await {
            Ok(Some(secret)) => {
                if catalog.is_catalog_copy(&secret) {
                    clashes.forget(namespace, &name);
                }
                found.insert(name, secret);
            }
            Ok(None) => clashes.forget(namespace, &name),
            Err(source) => {
                return Err(CsvError::read(format!("Secret {namespace}/{name}"), source));
            }
        }
    }
    Ok(found.into_values().collect())
}

/// The ServiceAccounts `names` of `namespace` that exist (GET by name: opcat keeps no
/// cluster-wide ServiceAccount cache).
pub async fn service_accounts(
    client: &Client,
    namespace: &str,
    names: &BTreeSet<String>,
) -> Result<Vec<ServiceAccount>, CsvError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let mut found = Vec::new();
    for name in names {
        match api.get_opt(name).await {
            Ok(Some(sa)) => found.push(sa),
            Ok(None) => {}
            Err(source) => {
                return Err(CsvError::read(
                    format!("ServiceAccount {namespace}/{name}"),
                    source,
                ));
            }
        }
    }
    Ok(found)
}

/// The ServiceAccounts `names` of `namespace` that exist: from the label-selected store those
/// opcat attached pull secrets to, by GET the others (a first attach, or one that lost the
/// label). A store that lags behind opcat's own edit makes the next edit fail its
/// `resourceVersion` test; it is then read again and retried (DESIGN invariant 1).
pub async fn cached_service_accounts(
    context: &Context,
    namespace: &str,
    names: &BTreeSet<String>,
) -> Result<Vec<ServiceAccount>, CsvError> {
    let store = &context.stores.service_accounts;
    let mut found = Vec::new();
    let mut missing = BTreeSet::new();
    for name in names {
        match store.get(&ObjectRef::new(name).within(namespace)) {
            Some(sa) => found.push(sa.to_service_account()),
            None => {
                missing.insert(name.clone());
            }
        }
    }
    found.extend(service_accounts(&context.client, namespace, &missing).await?);
    found.sort_by_key(ResourceExt::name_any);
    Ok(found)
}

/// The ServiceAccounts `names` after some were just applied: the applied ones as the server
/// returned them, the others as read before, GETs only for names still missing (a
/// ServiceAccount the bundle uses but does not ship, which someone else may have created).
pub async fn after_create(
    client: &Client,
    namespace: &str,
    names: &BTreeSet<String>,
    applied: Vec<ServiceAccount>,
    read: &[ServiceAccount],
) -> Result<Vec<ServiceAccount>, CsvError> {
    let mut found: BTreeMap<String, ServiceAccount> = read
        .iter()
        .chain(&applied)
        .filter(|sa| names.contains(&sa.name_any()))
        .map(|sa| (sa.name_any(), sa.clone()))
        .collect();
    let missing: BTreeSet<String> = names
        .iter()
        .filter(|name| !found.contains_key(*name))
        .cloned()
        .collect();
    for sa in service_accounts(client, namespace, &missing).await? {
        found.insert(sa.name_any(), sa);
    }
    Ok(found.into_values().collect())
}

/// Reads one ServiceAccount again (after a conflict).
pub async fn service_account(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<ServiceAccount>, CsvError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    match api.get(name).await {
        Ok(sa) => Ok(Some(sa)),
        Err(error) if is_not_found(&error) => Ok(None),
        Err(source) => Err(CsvError::read(
            format!("ServiceAccount {namespace}/{name}"),
            source,
        )),
    }
}
