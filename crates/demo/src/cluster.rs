//! Reading the (in-memory) cluster the way `kubectl get -o json` does: builtin kinds typed,
//! OLM kinds as JSON. Talks to the API server; no decisions here.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The OLM kinds opcat serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Olm {
    CatalogSource,
    Subscription,
    InstallPlan,
    ClusterServiceVersion,
    OperatorGroup,
}

impl Olm {
    /// Every kind, for scans.
    pub const ALL: [Olm; 5] = [
        Olm::CatalogSource,
        Olm::Subscription,
        Olm::InstallPlan,
        Olm::ClusterServiceVersion,
        Olm::OperatorGroup,
    ];

    fn resource(self) -> ApiResource {
        let (version, kind, plural) = match self {
            Olm::CatalogSource => ("v1alpha1", "CatalogSource", "catalogsources"),
            Olm::Subscription => ("v1alpha1", "Subscription", "subscriptions"),
            Olm::InstallPlan => ("v1alpha1", "InstallPlan", "installplans"),
            Olm::ClusterServiceVersion => (
                "v1alpha1",
                "ClusterServiceVersion",
                "clusterserviceversions",
            ),
            Olm::OperatorGroup => ("v1", "OperatorGroup", "operatorgroups"),
        };
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("operators.coreos.com", version, kind),
            plural,
        )
    }
}

/// Why the cluster could not be read, or a wait ran out.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{action} failed")]
    Api {
        action: String,
        #[source]
        source: kube::Error,
    },
    #[error("timed out after {waited:?} waiting for {what}; last seen: {last}")]
    Timeout {
        what: String,
        waited: Duration,
        last: String,
    },
}

/// A client and the reads the demo needs.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
}

impl Cluster {
    /// An OLM object as JSON, `None` when it does not exist.
    pub async fn olm(
        &self,
        kind: Olm,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &kind.resource());
        let found = api
            .get_opt(name)
            .await
            .map_err(|source| ClusterError::Api {
                action: format!("get {kind:?} {namespace}/{name}"),
                source,
            })?;
        Ok(found.map(to_json))
    }

    /// Every object of an OLM kind, in `namespace` or (`None`) everywhere.
    pub async fn olm_list(
        &self,
        kind: Olm,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ClusterError> {
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &kind.resource()),
            None => Api::all_with(self.client.clone(), &kind.resource()),
        };
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|source| ClusterError::Api {
                action: format!("list {kind:?}"),
                source,
            })?;
        Ok(list.items.into_iter().map(to_json).collect())
    }

    /// Waits until the OLM object exists and `accept` holds for it (at most `timeout`);
    /// returns it. A timeout names `what` and the object's last status.
    pub async fn wait_olm(
        &self,
        (kind, namespace, name): (Olm, &str, &str),
        what: &str,
        timeout: Duration,
        accept: impl Fn(&Value) -> bool,
    ) -> Result<Value, ClusterError> {
        wait_for(what, timeout, || async {
            Ok(match self.olm(kind, namespace, name).await? {
                Some(object) if accept(&object) => Ok(object),
                Some(object) => Err(format!("status {}", object["status"])),
                None => Err(format!("{kind:?} {namespace}/{name} does not exist")),
            })
        })
        .await
    }

    /// Deletes an OLM object (`kubectl delete`).
    pub async fn olm_delete(
        &self,
        kind: Olm,
        namespace: &str,
        name: &str,
    ) -> Result<(), ClusterError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &kind.resource());
        api.delete(name, &DeleteParams::default())
            .await
            .map_err(|source| ClusterError::Api {
                action: format!("delete {kind:?} {namespace}/{name}"),
                source,
            })?;
        Ok(())
    }

    /// A namespaced builtin object, `None` when it does not exist.
    pub async fn get<K>(&self, namespace: &str, name: &str) -> Result<Option<K>, ClusterError>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        api.get_opt(name).await.map_err(|source| ClusterError::Api {
            action: format!("get {} {namespace}/{name}", K::kind(&())),
            source,
        })
    }

    /// Builtin objects in `namespace` (or everywhere) matching `selector` (may be empty).
    pub async fn list<K>(
        &self,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<K>, ClusterError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(self.client.clone());
        let params = ListParams::default().labels(selector);
        let list = api
            .list(&params)
            .await
            .map_err(|source| ClusterError::Api {
                action: format!("list {}", K::kind(&())),
                source,
            })?;
        Ok(list
            .items
            .into_iter()
            .filter(|object| {
                namespace.is_none_or(|ns| object.meta().namespace.as_deref() == Some(ns))
            })
            .collect())
    }
}

fn to_json(object: DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// Polls `probe` every 100 ms until it returns `Some`, for at most `timeout`. `describe` says
/// what the last probe saw, for the timeout message.
pub async fn wait_for<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut probe: F,
) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Result<T, String>, ClusterError>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe().await? {
            Ok(found) => return Ok(found),
            Err(last) => last,
        };
        if Instant::now() > deadline {
            return Err(ClusterError::Timeout {
                what: what.to_owned(),
                waited: timeout,
                last,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
