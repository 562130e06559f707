//! RBAC from `permissions` and `clusterPermissions`, placed as OLM v0 places it:
//!
//! - each `permissions` entry → a Role and a RoleBinding (subject: the service account in the
//!   install namespace) in the install namespace (OLM's InstallPlan) and in every other target
//!   namespace (OLM's `ensureTenantRBAC`);
//! - for AllNamespaces, each `permissions` entry also becomes a ClusterRole and a
//!   ClusterRoleBinding, with OLM's extra rule to get/list/watch namespaces (OLM's
//!   `ensureSingletonRBAC`);
//! - each `clusterPermissions` entry → a ClusterRole and a ClusterRoleBinding.
//!
//! Names come from [`generated_name`]; a Role and its RoleBinding share a name, as in OLM.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use super::{RenderContext, RenderError, Stamp, to_dynamic};
use crate::api::csv_install::StrategyDeploymentPermissions;
use crate::bundle::kinds::{CLUSTER_ROLE, RBAC_GROUP, ROLE, SERVICE_ACCOUNT};
use crate::bundle::ownership::generated_name;
use crate::bundle::service_accounts::service_account_or_default;
use kube::api::DynamicObject;

/// What a generated RBAC name is for; part of the hash, so the three never share a name.
#[derive(Clone, Copy)]
enum Scope {
    /// Role/RoleBinding from `permissions`.
    Namespaced,
    /// ClusterRole/ClusterRoleBinding from `permissions` in AllNamespaces mode.
    AllNamespaces,
    /// ClusterRole/ClusterRoleBinding from `clusterPermissions`.
    Cluster,
}

impl Scope {
    fn tag(self) -> &'static str {
        match self {
            Self::Namespaced => "permissions",
            Self::AllNamespaces => "permissions-all-namespaces",
            Self::Cluster => "clusterPermissions",
        }
    }
}

/// The Roles, RoleBindings, ClusterRoles and ClusterRoleBindings for the CSV's permissions.
pub(super) fn rbac(
    permissions: &[StrategyDeploymentPermissions],
    cluster_permissions: &[StrategyDeploymentPermissions],
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<Vec<DynamicObject>, RenderError> {
    let install_namespace = context.install_namespace;
    let mut namespaces = vec![install_namespace];
    namespaces.extend(
        context
            .targets
            .listed()
            .filter(|ns| *ns != install_namespace),
    );

    let mut objects = Vec::new();
    for permission in permissions {
        let name = name_for(Scope::Namespaced, permission, context);
        let subject = subject(permission, install_namespace);
        for namespace in &namespaces {
            let metadata = stamp.metadata(&name, Some(namespace), None, None);
            objects.push(to_dynamic(&Role {
                metadata: metadata.clone(),
                rules: Some(permission.rules.clone()),
            })?);
            objects.push(to_dynamic(&RoleBinding {
                metadata,
                role_ref: role_ref(ROLE, &name),
                subjects: Some(vec![subject.clone()]),
            })?);
        }
        if context.targets.is_all() {
            let mut rules = permission.rules.clone();
            rules.push(view_namespaces());
            objects.extend(cluster_role_and_binding(
                Scope::AllNamespaces,
                permission,
                rules,
                context,
                stamp,
            )?);
        }
    }
    for permission in cluster_permissions {
        objects.extend(cluster_role_and_binding(
            Scope::Cluster,
            permission,
            permission.rules.clone(),
            context,
            stamp,
        )?);
    }
    Ok(objects)
}

fn cluster_role_and_binding(
    scope: Scope,
    permission: &StrategyDeploymentPermissions,
    rules: Vec<PolicyRule>,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<[DynamicObject; 2], RenderError> {
    let name = name_for(scope, permission, context);
    let metadata = stamp.metadata(&name, None, None, None);
    Ok([
        to_dynamic(&ClusterRole {
            metadata: metadata.clone(),
            rules: Some(rules),
            aggregation_rule: None,
        })?,
        to_dynamic(&ClusterRoleBinding {
            metadata,
            role_ref: role_ref(CLUSTER_ROLE, &name),
            subjects: Some(vec![subject(permission, context.install_namespace)]),
        })?,
    ])
}

/// `<csv>-<service account>-<hash of scope, install namespace, CSV, service account, rules>`.
fn name_for(
    scope: Scope,
    permission: &StrategyDeploymentPermissions,
    context: &RenderContext<'_>,
) -> String {
    let account = service_account_or_default(&permission.service_account_name);
    // Serialising plain data into a String cannot fail; an empty string would still give a
    // deterministic name.
    let rules = serde_json::to_string(&permission.rules).unwrap_or_default();
    generated_name(
        &format!("{}-{account}", context.csv.name),
        &[
            scope.tag(),
            context.install_namespace,
            &context.csv.name,
            account,
            &rules,
        ],
    )
}

fn subject(permission: &StrategyDeploymentPermissions, install_namespace: &str) -> Subject {
    Subject {
        kind: SERVICE_ACCOUNT.to_owned(),
        name: service_account_or_default(&permission.service_account_name).to_owned(),
        namespace: Some(install_namespace.to_owned()),
        api_group: None,
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: RBAC_GROUP.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

/// The rule OLM adds to lifted permissions: an operator watching all namespaces may list them.
fn view_namespaces() -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["namespaces".to_owned()]),
        verbs: vec!["get".to_owned(), "list".to_owned(), "watch".to_owned()],
        ..PolicyRule::default()
    }
}
