//! Tests of the pull-secret planning, on fixtures written for them. `World` plays the API
//! server: it applies a plan's writes the way the controller will, so tests can drive the plan to
//! a fixed point and look at what a user would see.

mod copy;
mod names;
mod plan;
mod pod_template;
mod preflight;
mod redaction;
mod scope;
mod scoping;
mod service_account;

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{LocalObjectReference, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use super::copy::{CopyAction, DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE};
use super::owners::CatalogRef;
use super::plan::{InstalledCsv, NamespaceInput, NamespacePlan, plan_namespace};
use super::scope::NotPropagated;
use super::service_account::RestorePolicy;

/// A password that must never show up in any rendered text.
pub(crate) const MARKER: &str = "hunter2-Zq9xK7-marker";
pub(crate) const NAMESPACE: &str = "team-a";

pub(crate) fn catalog() -> CatalogRef {
    CatalogRef {
        namespace: "olm".to_owned(),
        name: "private-catalog".to_owned(),
    }
}

pub(crate) fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// A `.dockerconfigjson` document as opcat writes a copy of it (keys sorted, compact), so that
/// copies equal their source byte for byte.
pub(crate) fn dockerconfig(password: &str) -> ByteString {
    let json = format!(
        r#"{{"auths":{{"registry.example.com":{{"password":"{password}","username":"robot"}}}}}}"#
    );
    ByteString(json.into_bytes())
}

/// A source pull secret in the catalog's namespace.
pub(crate) fn source(name: &str, password: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(catalog().namespace),
            uid: Some(format!("uid-source-{name}")),
            resource_version: Some("10".to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some(DOCKER_CONFIG_JSON_TYPE.to_owned()),
        data: Some(BTreeMap::from([(
            DOCKER_CONFIG_JSON_KEY.to_owned(),
            dockerconfig(password),
        )])),
        ..Secret::default()
    }
}

pub(crate) fn sources(secrets: &[Secret]) -> BTreeMap<String, Secret> {
    secrets
        .iter()
        .map(|secret| {
            (
                secret.metadata.name.clone().unwrap_or_default(),
                secret.clone(),
            )
        })
        .collect()
}

/// A ServiceAccount in [`NAMESPACE`] as read from the API (with a `resourceVersion`).
pub(crate) fn service_account(name: &str, entries: Option<&[&str]>) -> ServiceAccount {
    ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            resource_version: Some("1".to_owned()),
            uid: Some(format!("uid-sa-{name}")),
            ..ObjectMeta::default()
        },
        image_pull_secrets: entries.map(references),
        ..ServiceAccount::default()
    }
}

pub(crate) fn references(names: &[&str]) -> Vec<LocalObjectReference> {
    names
        .iter()
        .map(|name| LocalObjectReference {
            name: (*name).to_owned(),
        })
        .collect()
}

pub(crate) fn entries(sa: &ServiceAccount) -> Vec<String> {
    sa.image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.clone())
        .collect()
}

/// The image every [`csv`] runs: on the registry [`dockerconfig`] has credentials for.
pub(crate) const IMAGE: &str = "registry.example.com/operators/op:v1";

pub(crate) fn csv(name: &str, service_accounts: &[&str]) -> InstalledCsv {
    InstalledCsv {
        name: name.to_owned(),
        uid: format!("uid-csv-{name}"),
        service_accounts: service_accounts.iter().map(|sa| (*sa).to_owned()).collect(),
        images: [IMAGE.to_owned()].into(),
        component_label: None,
    }
}

pub(crate) fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_750_000_000 + second).expect("valid test time")
}

/// The API server, as far as these objects go.
#[derive(Default)]
pub(crate) struct World {
    pub secrets: BTreeMap<String, Secret>,
    pub service_accounts: BTreeMap<String, ServiceAccount>,
    pub sources: BTreeMap<String, Secret>,
    pub secret_names: Vec<String>,
    pub csvs: Vec<InstalledCsv>,
    /// ServiceAccounts of CSVs being uninstalled, still passed to the plan.
    pub leaving_service_accounts: Vec<String>,
    pub scope: Option<NotPropagated>,
    /// The CatalogSource's opt-out of scoping.
    pub copy_whole: bool,
    pub now: Timestamp,
    pub policy: RestorePolicy,
    version: u64,
    pub writes: usize,
}

impl World {
    pub fn new(secret_names: &[&str], csvs: Vec<InstalledCsv>) -> Self {
        let sources: Vec<Secret> = secret_names
            .iter()
            .map(|name| source(name, MARKER))
            .collect();
        let mut world = Self {
            sources: self::sources(&sources),
            secret_names: strings(secret_names),
            csvs,
            now: at(0),
            ..Self::default()
        };
        let used: Vec<String> = world
            .csvs
            .iter()
            .flat_map(|csv| csv.service_accounts.iter().cloned())
            .collect();
        for name in used {
            world.put_service_account(service_account(&name, None));
        }
        world
    }

    fn next_version(&mut self) -> String {
        self.version += 1;
        format!("{}", 100 + self.version)
    }

    /// Stores (or replaces) a ServiceAccount as a foreign writer would.
    pub fn put_service_account(&mut self, mut sa: ServiceAccount) {
        sa.metadata.resource_version = Some(self.next_version());
        let name = sa.metadata.name.clone().unwrap_or_default();
        self.service_accounts.insert(name, sa);
    }

    /// Stores (or replaces) a Secret in the namespace as a foreign writer would.
    pub fn put_secret(&mut self, mut secret: Secret) {
        secret.metadata.resource_version = Some(self.next_version());
        secret.metadata.namespace = Some(NAMESPACE.to_owned());
        if secret.metadata.uid.is_none() {
            secret.metadata.uid = Some(format!("uid-{}", self.version));
        }
        let name = secret.metadata.name.clone().unwrap_or_default();
        self.secrets.insert(name, secret);
    }

    pub fn service_account(&self, name: &str) -> &ServiceAccount {
        &self.service_accounts[name]
    }

    pub fn plan(&self) -> NamespacePlan {
        let catalog = catalog();
        let secrets: Vec<Secret> = self.secrets.values().cloned().collect();
        let mut wanted: Vec<&str> = self
            .csvs
            .iter()
            .flat_map(|csv| csv.service_accounts.iter().map(String::as_str))
            .collect();
        wanted.extend(self.leaving_service_accounts.iter().map(String::as_str));
        let service_accounts: Vec<ServiceAccount> = wanted
            .iter()
            .filter_map(|name| self.service_accounts.get(*name).cloned())
            .collect();
        let scope = match &self.scope {
            Some(not) => Err(not.clone()),
            None => Ok(()),
        };
        plan_namespace(&NamespaceInput {
            catalog: &catalog,
            namespace: NAMESPACE,
            secret_names: &self.secret_names,
            sources: &self.sources,
            csvs: &self.csvs,
            secrets: &secrets,
            service_accounts: &service_accounts,
            scope: &scope,
            copy_whole: self.copy_whole,
            now: self.now,
            restore_policy: &self.policy,
        })
    }

    /// Applies a plan's writes in the controller's order.
    pub fn apply(&mut self, plan: &NamespacePlan) {
        for write in &plan.copy_writes {
            self.writes += 1;
            match &write.action {
                CopyAction::Create(secret) => {
                    let name = secret.metadata.name.clone().unwrap_or_default();
                    assert!(!self.secrets.contains_key(&name), "create over {name}");
                    self.put_secret(secret.clone());
                }
                CopyAction::Update { secret, .. } => {
                    let name = secret.metadata.name.clone().unwrap_or_default();
                    let stored = &self.secrets[&name];
                    assert_eq!(
                        stored.metadata.resource_version,
                        secret.metadata.resource_version
                    );
                    assert_eq!(stored.metadata.uid, secret.metadata.uid, "update keeps uid");
                    assert_eq!(stored.type_, secret.type_, "type is immutable");
                    self.put_secret(secret.clone());
                }
                CopyAction::Recreate {
                    uid,
                    resource_version,
                    secret,
                } => {
                    let name = secret.metadata.name.clone().unwrap_or_default();
                    let stored = self
                        .secrets
                        .remove(&name)
                        .expect("recreate of a stored copy");
                    assert_eq!(&stored.metadata.uid, uid);
                    assert_eq!(&stored.metadata.resource_version, resource_version);
                    self.put_secret(secret.clone());
                }
                CopyAction::Conflict(_) | CopyAction::InSync => {
                    panic!("plan lists a non-write: {:?}", write.action)
                }
            }
        }
        for edit in &plan.service_account_edits {
            self.writes += 1;
            let stored = self.service_accounts[&edit.name].clone();
            assert_eq!(stored.metadata.resource_version, edit.resource_version);
            let mut updated = stored;
            edit.apply_to(&mut updated);
            self.put_service_account(updated);
        }
        for deletion in &plan.deletions {
            self.writes += 1;
            let stored = self
                .secrets
                .remove(&deletion.name)
                .expect("delete of a stored copy");
            assert_eq!(stored.metadata.uid, deletion.uid);
        }
    }

    /// Plans and applies until nothing is left to write; returns the last (converged) plan.
    pub fn converge(&mut self) -> NamespacePlan {
        for _ in 0..5 {
            let plan = self.plan();
            if plan.is_converged() {
                return plan;
            }
            self.apply(&plan);
        }
        panic!("plan did not converge: {:?}", self.plan());
    }

    /// Every `opcat.dev/` label or annotation key left on any object.
    pub fn opcat_marks(&self) -> Vec<String> {
        let metas = self
            .secrets
            .values()
            .map(|secret| &secret.metadata)
            .chain(self.service_accounts.values().map(|sa| &sa.metadata));
        let mut marks = Vec::new();
        for meta in metas {
            for map in [&meta.labels, &meta.annotations].into_iter().flatten() {
                for key in map.keys().filter(|key| key.starts_with("opcat.dev/")) {
                    marks.push(format!("{}: {key}", meta.name.clone().unwrap_or_default()));
                }
            }
        }
        marks
    }
}
