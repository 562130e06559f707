//! The ServiceAccounts a bundle uses: the ones its permissions are granted to, the ones it ships
//! as manifests, and the ones its Deployments' pods run as (`default` when a pod names none).
//! Every one of them gets the catalog's pull-secret copies; opcat creates all of them except
//! `default`, which every namespace has and which OLM never creates either (OLM PR #1863).

use std::collections::BTreeSet;

use super::kinds::SERVICE_ACCOUNT;
use super::load::Bundle;
use crate::pull_secrets::pod_template::{DEFAULT_SERVICE_ACCOUNT, pod_service_account};

/// ServiceAccounts of a bundle, by name (all in the install namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccounts {
    /// Every ServiceAccount the bundle uses, `default` included when used: the ones the
    /// pull-secret copies are attached to.
    pub used: BTreeSet<String>,
    /// The ones opcat creates: [`ServiceAccounts::used`] without `default`.
    pub to_create: BTreeSet<String>,
}

/// The ServiceAccounts `bundle` uses and the ones opcat creates for it.
pub fn service_accounts(bundle: &Bundle) -> ServiceAccounts {
    let install = &bundle.csv.spec.install;
    let permission_accounts = install
        .permissions()
        .iter()
        .chain(install.cluster_permissions())
        .map(|permission| service_account_or_default(&permission.service_account_name));
    let manifest_accounts = bundle
        .objects
        .iter()
        .filter(|object| object.kind() == SERVICE_ACCOUNT)
        .map(|object| object.name());
    let pod_accounts = install.deployments().iter().map(|deployment| {
        deployment
            .spec
            .template
            .spec
            .as_ref()
            .map_or(DEFAULT_SERVICE_ACCOUNT, pod_service_account)
    });
    let used: BTreeSet<String> = permission_accounts
        .chain(manifest_accounts)
        .chain(pod_accounts)
        .map(str::to_owned)
        .collect();
    let to_create = used
        .iter()
        .filter(|name| name.as_str() != DEFAULT_SERVICE_ACCOUNT)
        .cloned()
        .collect();
    ServiceAccounts { used, to_create }
}

/// A permission's service account; an empty name means the namespace's `default` one.
pub fn service_account_or_default(name: &str) -> &str {
    if name.is_empty() {
        DEFAULT_SERVICE_ACCOUNT
    } else {
        name
    }
}
