//! Shared watches: one watch per kind, feeding an in-memory store that every reconciler reads
//! and a stream every interested controller subscribes to (what controller-runtime's shared
//! informer cache does). Watches are narrow (DESIGN invariant 11): objects opcat creates are
//! selected by label, Secrets are never watched wholesale (copies by label here, sources by name in
//! [`super::source_secrets`]), Namespaces as metadata only.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ReflectHandle, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, watch};

use super::attached_service_account::AttachedServiceAccount;
use super::copied_csvs::CopiedCsvs;
use super::deployment_rollout::DeploymentRollout;
pub use super::namespace_index::{Indexed, NamespaceIndex};
use super::owned_objects::OwnedObjects;
use super::store_trim::Trim;
use super::stored_copy::StoredCopy;
use super::stored_namespace::StoredNamespace;
use super::stored_object::{StoredCsv, StoredPlan, StoredSubscription};
use crate::api::olm_keys::COPIED_FROM;
use crate::api::{
    CatalogSource, MANAGED_LABEL, MANAGED_LABEL_VALUE, OLMConfig, OperatorCondition, OperatorGroup,
};
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

/// How many watch events a slow subscriber may lag behind before the watch waits for it.
const SUBSCRIBER_BUFFER: usize = 1024;

/// Which namespaces opcat watches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (the default).
    #[default]
    Cluster,
    /// One namespace only (`opcat run --namespace`).
    Namespace(String),
}

impl Scope {
    fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match self {
            Scope::Cluster => Api::all(client.clone()),
            Scope::Namespace(namespace) => Api::namespaced(client.clone(), namespace),
        }
    }
}

/// Label selector of objects opcat created (CSVs, InstallPlans, Deployments, RBAC, ...).
pub fn created_by_opcat() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
}

/// Label selector of the CSVs opcat installed: created by opcat and not a copy (copies are
/// watched as metadata only, see [`super::copied_csvs::store`]).
pub fn installed_csvs() -> String {
    format!("{},!{COPIED_FROM}", created_by_opcat())
}

/// Label selector of the ServiceAccounts opcat attached pull secrets to.
pub fn attached_service_accounts() -> String {
    crate::pull_secrets::names::PULL_SECRETS_LABEL.to_owned()
}

/// Label selector of opcat's pull-secret copies.
pub fn pull_secret_copies() -> String {
    format!("{MANAGED_LABEL}={MANAGED_LABEL_VALUE}")
}

/// One shared watch: its store, and the writer that subscribers subscribe to before it runs.
pub struct Shared<K: Resource + Clone + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store: Store<K>,
    writer: Writer<K>,
    deleted: broadcast::Sender<Arc<K>>,
    /// `true` once the watch has listed (see [`Listed`]).
    listed: watch::Sender<bool>,
    index: NamespaceIndex,
}

impl<K> Shared<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    fn new() -> Self {
        let (store, writer) = reflector::store_shared(SUBSCRIBER_BUFFER);
        let (deleted, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        let (listed, _) = watch::channel(false);
        Self {
            store,
            writer,
            deleted,
            listed,
            index: NamespaceIndex::default(),
        }
    }

    /// The store with its namespace index.
    pub fn indexed(&self) -> Indexed<K> {
        Indexed::new(self.store.clone(), self.index.clone())
    }

    /// The store (cheap to clone).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// A stream of every object the watch sees, for a controller's trigger.
    pub fn subscribe(&self) -> ReflectHandle<K> {
        // `subscribe` only returns None for writers created without a buffer; `new` always
        // creates a shared one.
        self.writer
            .subscribe()
            .unwrap_or_else(|| unreachable!("shared writers always accept subscribers"))
    }

    /// A stream of the objects the watch sees deleted. [`Shared::subscribe`] only carries
    /// objects that were applied (kube's dispatcher does not broadcast deletions), so a
    /// controller that must react to a deleted child (a pull-secret copy someone deleted, a
    /// removed OperatorGroup) subscribes here too. Like `subscribe`, call it before
    /// [`Reflectors::drive`]; a subscriber that lags more than the buffer skips the oldest.
    pub fn subscribe_deleted(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        let receiver = self.deleted.subscribe();
        futures::stream::unfold(receiver, |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(object) => return Some((object, receiver)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }
}

/// The readers every reconciler uses.
///
/// Wait for the stores with [`Stores::wait_until_ready`] or check [`Stores::is_ready`], never
/// with kube's `Store::wait_until_ready`: that one keeps a single waker (a oneshot receiver
/// behind a mutex), so of several tasks waiting at once only the last one to poll is woken, and
/// polling it without waiting (`now_or_never`) steals the wake-up of whoever waits. A reconcile
/// that lost its wake-up never finished: its Subscription was not reconciled again, and the
/// graceful stop waited for it until the shutdown timeout. kube's controller runner is left as
/// the only waiter of its own store.
#[derive(Clone)]
pub struct Stores {
    pub catalog_sources: Store<CatalogSource>,
    pub subscriptions: Store<StoredSubscription>,
    pub csvs: Store<StoredCsv>,
    pub install_plans: Store<StoredPlan>,
    pub operator_groups: Store<OperatorGroup>,
    pub deployments: Store<DeploymentRollout>,
    pub copies: Store<StoredCopy>,
    pub namespaces: Store<StoredNamespace>,
    /// ServiceAccounts carrying opcat's pull-secret edits (label-selected).
    pub service_accounts: Store<AttachedServiceAccount>,
    /// The OperatorConditions opcat created, one per CSV (label-selected).
    pub operator_conditions: Store<OperatorCondition>,
    /// OLMConfigs (OLM's is the one named `cluster`).
    pub olm_configs: Store<OLMConfig>,
    /// The copied CSVs, metadata only, by original.
    pub copied_csvs: CopiedCsvs,
    /// What opcat created, metadata only, by the CSV it belongs to.
    pub owned: OwnedObjects,
    /// The namespaced stores that reconcilers and triggers read by namespace, with an index.
    pub namespaced: Namespaced,
    listed: Listed,
}

/// Stores read by namespace, each with its index (see [`Indexed`]).
#[derive(Clone)]
pub struct Namespaced {
    pub catalog_sources: Indexed<CatalogSource>,
    pub subscriptions: Indexed<StoredSubscription>,
    pub csvs: Indexed<StoredCsv>,
    pub install_plans: Indexed<StoredPlan>,
    pub operator_groups: Indexed<OperatorGroup>,
    pub copies: Indexed<StoredCopy>,
}

/// The shared watches stopped (the manager is stopping) before every one had listed.
#[derive(Debug, thiserror::Error)]
#[error("the shared watches stopped before every one had listed")]
pub struct WatchesStopped;

impl Stores {
    /// Waits until every watch has listed once (readiness). Any number of tasks may wait at
    /// once; each is woken.
    pub async fn wait_until_ready(&self) -> Result<(), WatchesStopped> {
        self.listed.wait().await
    }

    /// Whether every watch has listed once, without waiting. A reconcile that decides from
    /// several stores checks this first: right after a start, a store that has not listed yet
    /// looks empty, and acting on that (a Subscription "gone", a namespace "without labels")
    /// would write what the next reconcile takes back.
    pub fn is_ready(&self) -> bool {
        self.listed.all()
    }
}

/// Whether each shared watch has listed once: one `watch` channel per watch, set by
/// [`Reflectors::drive`] after the store took the list. Unlike kube's store readiness it
/// wakes every waiter, and reading it registers nothing.
#[derive(Clone)]
struct Listed {
    watches: Vec<watch::Receiver<bool>>,
}

impl Listed {
    fn all(&self) -> bool {
        self.watches.iter().all(|listed| *listed.borrow())
    }

    async fn wait(&self) -> Result<(), WatchesStopped> {
        for listed in &self.watches {
            let mut listed = listed.clone();
            listed
                .wait_for(|listed| *listed)
                .await
                .map_err(|_| WatchesStopped)?;
        }
        Ok(())
    }
}

/// All shared watches. Controllers subscribe first; then [`Reflectors::drive`] starts the
/// watches.
pub struct Reflectors {
    client: Client,
    scope: Scope,
    pub catalog_sources: Shared<CatalogSource>,
    pub subscriptions: Shared<StoredSubscription>,
    pub csvs: Shared<StoredCsv>,
    pub install_plans: Shared<StoredPlan>,
    pub operator_groups: Shared<OperatorGroup>,
    pub deployments: Shared<DeploymentRollout>,
    pub copies: Shared<StoredCopy>,
    pub namespaces: Shared<StoredNamespace>,
    pub service_accounts: Shared<AttachedServiceAccount>,
    pub operator_conditions: Shared<OperatorCondition>,
    pub olm_configs: Shared<OLMConfig>,
    pub copied_csvs: CopiedCsvs,
    pub owned: OwnedObjects,
}

/// A future that drives watches until the process stops.
pub type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Reflectors {
    pub fn new(client: Client, scope: Scope) -> Self {
        Self {
            client,
            scope,
            catalog_sources: Shared::new(),
            subscriptions: Shared::new(),
            csvs: Shared::new(),
            install_plans: Shared::new(),
            operator_groups: Shared::new(),
            deployments: Shared::new(),
            copies: Shared::new(),
            namespaces: Shared::new(),
            service_accounts: Shared::new(),
            operator_conditions: Shared::new(),
            olm_configs: Shared::new(),
            copied_csvs: CopiedCsvs::new(),
            owned: OwnedObjects::new(),
        }
    }

    /// The readers.
    pub fn stores(&self) -> Stores {
        Stores {
            catalog_sources: self.catalog_sources.store(),
            subscriptions: self.subscriptions.store(),
            csvs: self.csvs.store(),
            install_plans: self.install_plans.store(),
            operator_groups: self.operator_groups.store(),
            deployments: self.deployments.store(),
            copies: self.copies.store(),
            namespaces: self.namespaces.store(),
            service_accounts: self.service_accounts.store(),
            operator_conditions: self.operator_conditions.store(),
            olm_configs: self.olm_configs.store(),
            copied_csvs: self.copied_csvs.clone(),
            owned: self.owned.clone(),
            namespaced: Namespaced {
                catalog_sources: self.catalog_sources.indexed(),
                subscriptions: self.subscriptions.indexed(),
                csvs: self.csvs.indexed(),
                install_plans: self.install_plans.indexed(),
                operator_groups: self.operator_groups.indexed(),
                copies: self.copies.indexed(),
            },
            listed: Listed {
                watches: [
                    self.catalog_sources.listed.subscribe(),
                    self.subscriptions.listed.subscribe(),
                    self.csvs.listed.subscribe(),
                    self.install_plans.listed.subscribe(),
                    self.operator_groups.listed.subscribe(),
                    self.deployments.listed.subscribe(),
                    self.copies.listed.subscribe(),
                    self.namespaces.listed.subscribe(),
                    self.service_accounts.listed.subscribe(),
                    self.operator_conditions.listed.subscribe(),
                    self.olm_configs.listed.subscribe(),
                    self.copied_csvs.listed(),
                ]
                .into_iter()
                .chain(self.owned.listed())
                .collect(),
            },
        }
    }

    /// Starts every watch. Call after all controllers subscribed.
    pub fn drive(self) -> Vec<Driver> {
        let all = watcher::Config::default();
        let ours = watcher::Config::default().labels(&created_by_opcat());
        let installed = watcher::Config::default().labels(&installed_csvs());
        let copies = watcher::Config::default().labels(&pull_secret_copies());
        let attached = watcher::Config::default().labels(&attached_service_accounts());
        let client = &self.client;
        let scope = &self.scope;
        // Metadata-only requests (see `StoredNamespace`): labels are all opcat needs.
        let namespaces: Api<StoredNamespace> = Api::all(client.clone());
        let namespace_config = match scope {
            Scope::Cluster => watcher::Config::default(),
            Scope::Namespace(namespace) => {
                watcher::Config::default().fields(&format!("metadata.name={namespace}"))
            }
        };
        let mut drivers = self.owned.drive(client, scope);
        // Copies and the cluster-scoped OLMConfig only matter to a manager of every namespace.
        if *scope == Scope::Cluster {
            drivers.push(self.copied_csvs.drive(client));
            drivers.push(drive_watch(
                "olmconfigs",
                Api::all(client.clone()),
                watcher::Config::default(),
                self.olm_configs,
            ));
        } else {
            self.copied_csvs.mark_listed();
            self.olm_configs.listed.send_replace(true);
        }
        drivers.extend([
            drive_watch(
                "catalogsources",
                scope.api(client),
                all.clone(),
                self.catalog_sources,
            ),
            drive_watch(
                "subscriptions",
                scope.api(client),
                all.clone(),
                self.subscriptions,
            ),
            drive_watch(
                "clusterserviceversions",
                scope.api(client),
                installed,
                self.csvs,
            ),
            drive_watch(
                "installplans",
                scope.api(client),
                ours.clone(),
                self.install_plans,
            ),
            drive_watch(
                "operatorgroups",
                scope.api(client),
                all,
                self.operator_groups,
            ),
            drive_watch(
                "operatorconditions",
                scope.api(client),
                ours.clone(),
                self.operator_conditions,
            ),
            drive_watch("deployments", scope.api(client), ours, self.deployments),
            drive_watch("secrets", scope.api(client), copies, self.copies),
            drive_watch("namespaces", namespaces, namespace_config, self.namespaces),
            drive_watch(
                "serviceaccounts",
                scope.api(client),
                attached,
                self.service_accounts,
            ),
        ]);
        drivers
    }
}

fn drive_watch<K>(
    name: &'static str,
    api: Api<K>,
    config: watcher::Config,
    shared: Shared<K>,
) -> Driver
where
    K: Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let deleted = shared.deleted;
    let listed = shared.listed;
    let index = shared.index;
    Box::pin(
        watcher(api, config)
            .default_backoff()
            .modify(Trim::trim)
            .reflect_shared(shared.writer)
            .for_each(move |event| {
                if let Ok(event) = &event {
                    index.apply(event);
                }
                match event {
                    Ok(watcher::Event::Delete(object)) => {
                        // No subscriber is not an error.
                        let _ = deleted.send(Arc::new(object));
                    }
                    // The reflector has swapped the list into the store before passing this on.
                    Ok(watcher::Event::InitDone) => {
                        listed.send_replace(true);
                    }
                    Ok(_) => {}
                    Err(error) => log_watch_error(name, Some(error)),
                }
                std::future::ready(())
            }),
    )
}

fn log_watch_error(resource: &'static str, error: Option<watcher::Error>) {
    if let Some(error) = error {
        tracing::warn!(resource, error = %crate::failure::error_chain(&error), "watch failed; retrying");
    }
}

#[cfg(test)]
#[path = "stores_tests.rs"]
mod tests;
