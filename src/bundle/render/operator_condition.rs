//! The CSV's OperatorCondition and what lets its operator write it, as OLM v0 builds them
//! (`operator-lifecycle-manager: pkg/controller/operators/operatorconditiongenerator_controller.go`
//! and `operatorcondition_controller.go`):
//!
//! - one `operators.coreos.com/v2` OperatorCondition named like the CSV, in its namespace, owned
//!   by it; `spec.deployments`: the install strategy's Deployments in CSV order;
//!   `spec.serviceAccounts`: the ServiceAccounts of `clusterPermissions` and `permissions`
//!   (`default` when there are none), sorted and without repeats (OLM lists them as it finds
//!   them, repeats included);
//! - a Role and a RoleBinding named like it: `get`, `update`, `patch` on `operatorconditions`
//!   with `resourceNames: [<name>]`, bound to those ServiceAccounts (operator-lib's
//!   `conditions` package reads the object and updates `spec.conditions` with the operator's
//!   own client). Only OLM names objects so, for the same grant: they are created without a
//!   read first, like the RBAC opcat names with a hash;
//! - `OPERATOR_CONDITION_NAME=<name>` on every container of every Deployment of the CSV
//!   ([`inject_env`]; OLM `install/deployment.go`, `InjectEnvIntoDeployment`: a variable of that
//!   name is replaced in place, else appended; init containers are left alone).
//!
//! The controller creates the OperatorCondition before the Deployments, and removes it only
//! after them, so the variable never names a missing object (DESIGN invariant 14). The
//! OperatorCondition is kept out of [`RenderedBundle::in_apply_order`](super::RenderedBundle):
//! the controller applies it from its own watch (`spec.conditions` and `spec.overrides` belong to
//! the operator and the admin; opcat sets only the fields here).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{EnvVar, PodSpec};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::DynamicObject;

use super::{RenderContext, RenderError, Stamp, to_dynamic};
use crate::api::ClusterServiceVersion;
use crate::api::operator_condition::{OperatorCondition, OperatorConditionSpec};
use crate::api::{API_GROUP, olm_keys};
use crate::bundle::kinds::{RBAC_GROUP, ROLE, SERVICE_ACCOUNT};

/// Resource of the kind, for the Role's rule.
const RESOURCE: &str = "operatorconditions";

/// OLM's verbs for the operator on its own OperatorCondition.
const VERBS: [&str; 3] = ["get", "update", "patch"];

/// The ServiceAccount OLM names when the CSV has no permissions.
const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The OperatorCondition of the CSV being installed (named like it).
pub(super) fn operator_condition(
    csv: &ClusterServiceVersion,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> OperatorCondition {
    let name = &context.csv.name;
    let deployments: Vec<String> = csv
        .spec
        .install
        .deployments()
        .iter()
        .map(|entry| entry.name.clone())
        .filter(|name| !name.is_empty())
        .collect();
    OperatorCondition {
        metadata: stamp.metadata(name, Some(context.install_namespace), None, None),
        spec: OperatorConditionSpec {
            service_accounts: Some(service_accounts(csv)),
            deployments: Some(deployments),
            ..OperatorConditionSpec::default()
        },
        status: None,
    }
}

/// The ServiceAccounts of the CSV's permissions, sorted, or `default`.
fn service_accounts(csv: &ClusterServiceVersion) -> Vec<String> {
    let install = &csv.spec.install;
    let accounts: BTreeSet<String> = install
        .cluster_permissions()
        .iter()
        .chain(install.permissions())
        .map(|permission| permission.service_account_name.clone())
        .filter(|account| !account.is_empty())
        .collect();
    if accounts.is_empty() {
        return vec![DEFAULT_SERVICE_ACCOUNT.to_owned()];
    }
    accounts.into_iter().collect()
}

/// The Role and RoleBinding that let `condition`'s ServiceAccounts write it.
pub(super) fn rbac(
    condition: &OperatorCondition,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<[DynamicObject; 2], RenderError> {
    let name = &context.csv.name;
    let namespace = context.install_namespace;
    let metadata = stamp.metadata(name, Some(namespace), None, None);
    let subjects = condition
        .spec
        .service_accounts
        .iter()
        .flatten()
        .map(|account| Subject {
            kind: SERVICE_ACCOUNT.to_owned(),
            name: account.clone(),
            // OLM leaves it empty (a RoleBinding's ServiceAccount subjects default to its own
            // namespace); spelt out, it reads the same to every authorizer.
            namespace: Some(namespace.to_owned()),
            api_group: None,
        })
        .collect();
    Ok([
        to_dynamic(&Role {
            metadata: metadata.clone(),
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![API_GROUP.to_owned()]),
                resources: Some(vec![RESOURCE.to_owned()]),
                resource_names: Some(vec![name.clone()]),
                verbs: VERBS.iter().map(|verb| (*verb).to_owned()).collect(),
                ..PolicyRule::default()
            }]),
        })?,
        to_dynamic(&RoleBinding {
            metadata,
            role_ref: RoleRef {
                api_group: RBAC_GROUP.to_owned(),
                kind: ROLE.to_owned(),
                name: name.clone(),
            },
            subjects: Some(subjects),
        })?,
    ])
}

/// Sets `OPERATOR_CONDITION_NAME=<name>` on every container of `pod_spec`.
pub(super) fn inject_env(pod_spec: &mut PodSpec, name: &str) {
    let variable = EnvVar {
        name: olm_keys::OPERATOR_CONDITION_NAME_ENV.to_owned(),
        value: Some(name.to_owned()),
        value_from: None,
    };
    for container in &mut pod_spec.containers {
        let env = container.env.get_or_insert_default();
        match env
            .iter_mut()
            .find(|existing| existing.name == variable.name)
        {
            Some(existing) => *existing = variable.clone(),
            None => env.push(variable.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Container;

    use super::*;

    fn container(name: &str, env: &[(&str, &str)]) -> Container {
        Container {
            name: name.to_owned(),
            env: Some(
                env.iter()
                    .map(|(name, value)| EnvVar {
                        name: (*name).to_owned(),
                        value: Some((*value).to_owned()),
                        value_from: None,
                    })
                    .collect(),
            ),
            ..Container::default()
        }
    }

    fn env_of(container: &Container) -> Vec<(&str, &str)> {
        container
            .env
            .iter()
            .flatten()
            .map(|var| (var.name.as_str(), var.value.as_deref().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_container_gets_the_variable_and_an_existing_one_is_replaced_in_place() {
        let mut pod = PodSpec {
            containers: vec![
                container("manager", &[("A", "1")]),
                container("proxy", &[("OPERATOR_CONDITION_NAME", "stale"), ("B", "2")]),
            ],
            init_containers: Some(vec![container("init", &[])]),
            ..PodSpec::default()
        };
        inject_env(&mut pod, "op.v2");
        assert_eq!(
            env_of(&pod.containers[0]),
            [("A", "1"), ("OPERATOR_CONDITION_NAME", "op.v2")]
        );
        assert_eq!(
            env_of(&pod.containers[1]),
            [("OPERATOR_CONDITION_NAME", "op.v2"), ("B", "2")]
        );
        let init = &pod.init_containers.as_ref().unwrap()[0];
        assert!(env_of(init).is_empty(), "init containers are left alone");
        let again = pod.clone();
        inject_env(&mut pod, "op.v2");
        assert_eq!(pod, again, "injecting twice changes nothing");
    }
}
