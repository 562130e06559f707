//! Is OLM itself running in the cluster? OLM v0's controllers and opcat serve the same
//! `operators.coreos.com` kinds: both would resolve every Subscription, write InstallPlans and
//! CSV status, and fight over the operators' Deployments. `opcat run` refuses to start while
//! they run, unless told otherwise.
//!
//! The signal is OLM's two controller Deployments as OLM installs them (upstream chart
//! `deploy/chart/templates/0000_50_olm_07-olm-operator.deployment.yaml` and
//! `..._08-catalog-operator.deployment.yaml`, and OpenShift's manifests): Deployments named
//! `olm-operator` and `catalog-operator` labelled `app=<their name>`, in `olm`,
//! `openshift-operator-lifecycle-manager` or wherever the chart put them. A Deployment scaled to
//! zero replicas is not running (the migration path: scale OLM down, then start opcat).

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};

/// The label selector of OLM's controller Deployments.
pub const OLM_SELECTOR: &str = "app in (olm-operator,catalog-operator)";

/// One OLM controller found running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OlmController {
    pub namespace: String,
    pub name: String,
    pub replicas: i32,
}

impl std::fmt::Display for OlmController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = if self.replicas == 1 { "" } else { "s" };
        write!(
            f,
            "Deployment {}/{} ({} replica{plural})",
            self.namespace, self.name, self.replicas
        )
    }
}

/// Why opcat does not start next to OLM.
#[derive(Debug, thiserror::Error)]
pub enum CoexistenceError {
    #[error(
        "OLM is running in this cluster ({}): OLM and opcat would both reconcile the same \
         operators.coreos.com Subscriptions, InstallPlans and ClusterServiceVersions. Scale \
         OLM's controllers to zero first ({}), see docs/operating.md \"Migrating from OLM\"; or \
         pass --allow-olm-coexistence to run both anyway",
        list(found),
        scale_command(found)
    )]
    OlmRunning { found: Vec<OlmController> },
    #[error(
        "cannot check whether OLM runs in this cluster (list Deployments with \
         labelSelector {OLM_SELECTOR:?} in all namespaces); grant opcat that read or pass \
         --allow-olm-coexistence"
    )]
    List(#[source] kube::Error),
}

fn list(found: &[OlmController]) -> String {
    let items: Vec<String> = found.iter().map(ToString::to_string).collect();
    items.join(", ")
}

/// `kubectl -n <ns> scale deployment <names> --replicas=0`, one per namespace.
fn scale_command(found: &[OlmController]) -> String {
    let mut namespaces: Vec<&str> = found.iter().map(|c| c.namespace.as_str()).collect();
    namespaces.dedup();
    let commands: Vec<String> = namespaces
        .iter()
        .map(|namespace| {
            let names: Vec<&str> = found
                .iter()
                .filter(|c| c.namespace == *namespace)
                .map(|c| c.name.as_str())
                .collect();
            format!(
                "kubectl -n {namespace} scale deployment {} --replicas=0",
                names.join(" ")
            )
        })
        .collect();
    commands.join("; ")
}

/// OLM's controllers among `deployments` that run at least one replica, sorted.
pub fn running_olm_controllers(deployments: &[Deployment]) -> Vec<OlmController> {
    let mut found: Vec<OlmController> = deployments
        .iter()
        .filter_map(|deployment| {
            let name = deployment.metadata.name.as_deref()?;
            let app = deployment.metadata.labels.as_ref()?.get("app")?;
            let is_olm = app == name && matches!(name, "olm-operator" | "catalog-operator");
            // An unset replicas field defaults to 1.
            let replicas = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.replicas)
                .unwrap_or(1);
            (is_olm && replicas > 0).then(|| OlmController {
                namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
                name: name.to_owned(),
                replicas,
            })
        })
        .collect();
    found.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    found
}

/// Lists OLM's controller Deployments (one label-selected request) and refuses when any runs.
pub async fn refuse_if_olm_runs(client: &kube::Client) -> Result<(), CoexistenceError> {
    let found = find(client).await?;
    if found.is_empty() {
        Ok(())
    } else {
        Err(CoexistenceError::OlmRunning { found })
    }
}

/// OLM's running controllers.
pub async fn find(client: &kube::Client) -> Result<Vec<OlmController>, CoexistenceError> {
    let api: Api<Deployment> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(OLM_SELECTOR))
        .await
        .map_err(CoexistenceError::List)?;
    Ok(running_olm_controllers(&list.items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn deployment(namespace: &str, name: &str, app: &str, replicas: Option<i32>) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                labels: Some([("app".to_owned(), app.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                replicas,
                ..DeploymentSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn only_olm_controllers_with_replicas_count() {
        let found = running_olm_controllers(&[
            deployment("olm", "olm-operator", "olm-operator", None),
            deployment("olm", "catalog-operator", "catalog-operator", Some(2)),
            deployment("old", "olm-operator", "olm-operator", Some(0)),
            deployment("team", "my-olm-operator", "olm-operator", Some(1)),
        ]);
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "Deployment olm/catalog-operator (2 replicas)",
                "Deployment olm/olm-operator (1 replica)"
            ]
        );
        let message = CoexistenceError::OlmRunning { found }.to_string();
        assert!(
            message.contains(
                "kubectl -n olm scale deployment catalog-operator olm-operator --replicas=0"
            ),
            "{message}"
        );
    }
}
