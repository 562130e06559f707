//! The whole propagation plan for one catalog in one namespace, in one pure function.
//!
//! The controller reads, calls [`plan_namespace`], and writes what it returns, in this order:
//!
//! 1. [`NamespacePlan::copy_writes`]: create, update (replace with the `resourceVersion`), or
//!    recreate (delete with uid + `resourceVersion` preconditions, then create) the copies;
//! 2. [`NamespacePlan::service_account_edits`]: attach and detach, each under its precondition,
//!    re-reading and re-planning on a conflict;
//! 3. Deployments, whose pod templates list [`NamespacePlan::pod_template_secrets`];
//! 4. [`NamespacePlan::deletions`], last, once no ServiceAccount lists them any more.
//!
//! Uninstalling one CSV is the same call without that CSV in `csvs`, and with its
//! ServiceAccounts still in `service_accounts`: names it alone needed are detached from them, and
//! copies no remaining CSV uses are deleted. A plan computed from a converged cluster has no
//! writes ([`NamespacePlan::is_converged`], DESIGN invariant 5).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::jiff::Timestamp;

use super::copy::{
    CopyAction, CopyConflict, CopyError, kept_copy, plan_copy, scoped_copy, with_components,
};
use super::owners::{CatalogRef, CsvOwner};
use super::scope::NotPropagated;
use super::scoping::{CopyScope, scope_source};
use super::service_account::{self, RestorePolicy, ServiceAccountEdit};

/// A ClusterServiceVersion installed in the namespace from the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledCsv {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// Every ServiceAccount its bundle uses: those in `permissions` and `clusterPermissions`,
    /// ServiceAccount manifests in the bundle, and each Deployment's pod-template ServiceAccount
    /// ([`pod_service_account`](super::pod_template::pod_service_account): `default` when it
    /// names none).
    pub service_accounts: BTreeSet<String>,
    /// Every image it runs or names: container and init-container images of its Deployments
    /// and `relatedImages` (`bundle::csv_images`). Its copies hold the entries these need.
    pub images: BTreeSet<String>,
    /// The component label key of its install (`operators.coreos.com/<package>.<namespace>`),
    /// which the copies it uses carry; `None` when its package is not known.
    pub component_label: Option<String>,
}

impl InstalledCsv {
    /// This CSV as an owner of copies.
    pub fn owner(&self) -> CsvOwner {
        CsvOwner {
            name: self.name.clone(),
            uid: self.uid.clone(),
        }
    }
}

/// What the controller read for one catalog and one namespace.
#[derive(Clone, Copy)]
pub struct NamespaceInput<'a> {
    /// The CatalogSource.
    pub catalog: &'a CatalogRef,
    /// The install namespace.
    pub namespace: &'a str,
    /// `spec.secrets` of the CatalogSource, as written (empty names and duplicates are ignored).
    pub secret_names: &'a [String],
    /// The source Secrets that exist, by name (read by name from the catalog's namespace).
    pub sources: &'a BTreeMap<String, Secret>,
    /// CSVs from this catalog installed in the namespace and not being deleted.
    pub csvs: &'a [InstalledCsv],
    /// Secrets in the namespace: the label-selected copies of this catalog
    /// ([`CatalogRef::copies_selector`]) plus any Secret holding a desired copy's name.
    pub secrets: &'a [Secret],
    /// ServiceAccounts the CSVs use, plus those of CSVs being uninstalled.
    pub service_accounts: &'a [ServiceAccount],
    /// Consent for this namespace ([`super::scope::propagation_allowed`]).
    pub scope: &'a Result<(), NotPropagated>,
    /// The CatalogSource opted out of scoping: copies hold whole secrets
    /// ([`copies_whole`](super::scoping::copies_whole)).
    pub copy_whole: bool,
    /// The time, for the ServiceAccount restore window.
    pub now: Timestamp,
    /// The restore rule for ServiceAccount entries others remove.
    pub restore_policy: &'a RestorePolicy,
}

/// A write to a copy (never [`CopyAction::InSync`] or [`CopyAction::Conflict`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CopyWrite {
    /// Name of the source Secret in the catalog's namespace.
    pub source_name: String,
    /// What to write.
    pub action: CopyAction,
}

/// Why a copy is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletionReason {
    /// Its name was removed from the catalog's `spec.secrets`.
    RemovedFromCatalog,
    /// No CSV from the catalog remains in the namespace.
    Unused,
    /// The namespace may no longer receive the catalog's secrets.
    NotPropagated,
    /// No image of the operators using it needs any of its source's registries.
    NoMatchingEntry,
}

/// A source no image needs: not copied, not attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// Name of the source Secret in the catalog's namespace.
    pub source_name: String,
    /// Its registry keys, none of which serves an image of the operators.
    pub registries: Vec<String>,
}

/// A copy to delete, with preconditions so a Secret replaced in the meantime is not deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyDeletion {
    /// Name of the copy.
    pub name: String,
    /// Precondition: `metadata.uid` as read.
    pub uid: Option<String>,
    /// Precondition: `metadata.resourceVersion` as read.
    pub resource_version: Option<String>,
    /// Why.
    pub reason: DeletionReason,
}

/// Everything to do, and to report, for one catalog in one namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespacePlan {
    /// The catalog.
    pub catalog: CatalogRef,
    /// The namespace.
    pub namespace: String,
    /// Copies to create, update or recreate (step 1).
    pub copy_writes: Vec<CopyWrite>,
    /// ServiceAccount edits, sorted by name (step 2).
    pub service_account_edits: Vec<ServiceAccountEdit>,
    /// Names every Deployment's pod template must list, sorted (step 3).
    pub pod_template_secrets: Vec<String>,
    /// Copies to delete (step 4).
    pub deletions: Vec<CopyDeletion>,
    /// Foreign Secrets holding a copy's name: untouched, reported.
    pub conflicts: Vec<CopyConflict>,
    /// Names in `spec.secrets` with no Secret (existing copies are kept).
    pub missing_sources: Vec<String>,
    /// Sources that are not pull secrets (existing copies are kept).
    pub invalid_sources: Vec<CopyError>,
    /// Registry keys each copy holds, by source name (keys only, never credentials).
    pub held: BTreeMap<String, Vec<String>>,
    /// Sources left out because no image needs them, by source name.
    pub left_out: Vec<LeftOut>,
    /// Whether copies hold whole secrets (the CatalogSource opted out of scoping).
    pub copy_whole: bool,
    /// ServiceAccounts the CSVs use that were not among the inputs (not created yet).
    pub missing_service_accounts: Vec<String>,
    /// Per ServiceAccount, names opcat stopped restoring because another writer removes them.
    pub withheld: BTreeMap<String, BTreeSet<String>>,
    /// Why the namespace gets no copies, if it does not.
    pub not_propagated: Option<NotPropagated>,
}

impl NamespacePlan {
    /// Whether the plan writes nothing.
    pub fn is_converged(&self) -> bool {
        self.copy_writes.is_empty()
            && self.service_account_edits.is_empty()
            && self.deletions.is_empty()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Copy, update and attach.
    Active,
    /// Consent cannot be known (invalid selector): write no copy, keep what exists.
    Frozen,
    /// Remove every copy of the catalog and detach it.
    Remove(DeletionReason),
}

/// Plans propagation of `input.catalog`'s pull secrets into `input.namespace`.
pub fn plan_namespace(input: &NamespaceInput<'_>) -> NamespacePlan {
    let catalog = input.catalog;
    let mut plan = NamespacePlan {
        catalog: catalog.clone(),
        namespace: input.namespace.to_owned(),
        copy_writes: Vec::new(),
        service_account_edits: Vec::new(),
        pod_template_secrets: Vec::new(),
        deletions: Vec::new(),
        conflicts: Vec::new(),
        missing_sources: Vec::new(),
        invalid_sources: Vec::new(),
        held: BTreeMap::new(),
        left_out: Vec::new(),
        copy_whole: input.copy_whole,
        missing_service_accounts: Vec::new(),
        withheld: BTreeMap::new(),
        not_propagated: input.scope.clone().err(),
    };
    let mode = match input.scope {
        _ if input.csvs.is_empty() => Mode::Remove(DeletionReason::Unused),
        Ok(()) => Mode::Active,
        Err(not) if not.withdraws_copies() => Mode::Remove(DeletionReason::NotPropagated),
        Err(_) => Mode::Frozen,
    };
    let by_name: BTreeMap<&str, &Secret> = input
        .secrets
        .iter()
        .filter_map(|secret| Some((secret.metadata.name.as_deref()?, secret)))
        .collect();
    let catalog_copies: BTreeMap<&str, &Secret> = by_name
        .iter()
        .filter(|(_, secret)| catalog.is_catalog_copy(secret))
        .map(|(name, secret)| (*name, *secret))
        .collect();
    let wanted: BTreeMap<String, &str> = input
        .secret_names
        .iter()
        .filter(|name| !name.is_empty())
        .map(|name| (catalog.copy_name(name), name.as_str()))
        .collect();
    let mut owners: Vec<CsvOwner> = input.csvs.iter().map(InstalledCsv::owner).collect();
    owners.sort();
    let components: BTreeSet<&str> = input
        .csvs
        .iter()
        .filter_map(|csv| csv.component_label.as_deref())
        .collect();
    let scope = if input.copy_whole {
        CopyScope::Whole
    } else {
        CopyScope::of(
            None,
            input
                .csvs
                .iter()
                .flat_map(|csv| &csv.images)
                .map(String::as_str),
        )
    };

    let mut attached = BTreeSet::new();
    if !matches!(mode, Mode::Remove(_)) {
        for (copy, source_name) in &wanted {
            let existing = by_name.get(copy.as_str()).copied();
            let action = match mode {
                Mode::Active => {
                    let owners = (owners.as_slice(), &components);
                    plan_active(input, &mut plan, owners, &scope, source_name, existing)
                }
                _ => frozen(catalog, source_name, existing),
            };
            match action {
                Some(CopyAction::Conflict(conflict)) => plan.conflicts.push(conflict),
                Some(CopyAction::InSync) => {
                    attached.insert(copy.clone());
                }
                Some(action) => {
                    attached.insert(copy.clone());
                    plan.copy_writes.push(CopyWrite {
                        source_name: (*source_name).to_owned(),
                        action,
                    });
                }
                None => {}
            }
        }
    }
    let left_out: BTreeSet<String> = plan
        .left_out
        .iter()
        .map(|left| catalog.copy_name(&left.source_name))
        .collect();
    for (name, secret) in &catalog_copies {
        let reason = match mode {
            Mode::Remove(reason) => reason,
            _ if !wanted.contains_key(*name) => DeletionReason::RemovedFromCatalog,
            _ if left_out.contains(*name) => DeletionReason::NoMatchingEntry,
            _ => continue,
        };
        plan.deletions.push(CopyDeletion {
            name: (*name).to_owned(),
            uid: secret.metadata.uid.clone(),
            resource_version: secret.metadata.resource_version.clone(),
            reason,
        });
    }

    // Every name of this catalog that may be recorded on a ServiceAccount.
    let catalog_names: BTreeSet<String> = wanted
        .keys()
        .cloned()
        .chain(catalog_copies.keys().map(|name| (*name).to_owned()))
        .collect();
    plan_service_accounts(input, &mut plan, &attached, &catalog_names);
    plan.pod_template_secrets = attached.into_iter().collect();
    plan
}

/// The action for one wanted copy while propagating; records missing and invalid sources,
/// whose existing copies are kept as they are (with current owners). The copy carries the
/// component label of each owner's install.
fn plan_active(
    input: &NamespaceInput<'_>,
    plan: &mut NamespacePlan,
    (owners, components): (&[CsvOwner], &BTreeSet<&str>),
    scope: &CopyScope,
    source_name: &str,
    existing: Option<&Secret>,
) -> Option<CopyAction> {
    let catalog = input.catalog;
    match input.sources.get(source_name) {
        None => plan.missing_sources.push(source_name.to_owned()),
        Some(source) => match scope_source(source, scope) {
            Ok(scoped) if scoped.is_empty() && matches!(scope, CopyScope::Images(_)) => {
                plan.left_out.push(LeftOut {
                    source_name: source_name.to_owned(),
                    registries: scoped.left_out,
                });
                return None;
            }
            Ok(scoped) => {
                plan.held
                    .insert(source_name.to_owned(), scoped.registries.clone());
                let desired = scoped_copy(
                    source,
                    catalog,
                    source_name,
                    input.namespace,
                    owners,
                    scoped,
                );
                return Some(plan_copy(existing, &with_components(desired, components)));
            }
            Err(error) => plan.invalid_sources.push(error),
        },
    }
    let existing = existing?;
    Some(plan_copy(
        Some(existing),
        &with_components(
            kept_copy(existing, catalog, source_name, owners),
            components,
        ),
    ))
}

/// While consent is unknown: no writes; a copy that is ours stays attached.
fn frozen(
    catalog: &CatalogRef,
    source_name: &str,
    existing: Option<&Secret>,
) -> Option<CopyAction> {
    let existing = existing?;
    match plan_copy(
        Some(existing),
        &kept_copy(existing, catalog, source_name, &[]),
    ) {
        CopyAction::Conflict(conflict) => Some(CopyAction::Conflict(conflict)),
        _ => Some(CopyAction::InSync),
    }
}

fn plan_service_accounts(
    input: &NamespaceInput<'_>,
    plan: &mut NamespacePlan,
    attached: &BTreeSet<String>,
    catalog_names: &BTreeSet<String>,
) {
    let used: BTreeSet<&str> = input
        .csvs
        .iter()
        .flat_map(|csv| &csv.service_accounts)
        .map(String::as_str)
        .collect();
    let mut accounts: BTreeMap<&str, &ServiceAccount> = BTreeMap::new();
    for sa in input.service_accounts {
        if let Some(name) = sa.metadata.name.as_deref() {
            accounts.entry(name).or_insert(sa);
        }
    }
    let attach: Vec<String> = attached.iter().cloned().collect();
    for (name, sa) in &accounts {
        let keep = if used.contains(name) {
            &attach[..]
        } else {
            &[]
        };
        let detach: Vec<String> = catalog_names
            .iter()
            .filter(|name| !keep.contains(name))
            .cloned()
            .collect();
        let edit = service_account::reconcile(sa, keep, &detach, input.now, input.restore_policy);
        let withheld = match &edit {
            Some(edit) => {
                let mut edited = (*sa).clone();
                edit.apply_to(&mut edited);
                service_account::withheld(&edited, input.now, input.restore_policy)
            }
            None => service_account::withheld(sa, input.now, input.restore_policy),
        };
        let withheld: BTreeSet<String> = withheld
            .into_iter()
            .filter(|name| catalog_names.contains(name))
            .collect();
        if !withheld.is_empty() {
            plan.withheld.insert((*name).to_owned(), withheld);
        }
        plan.service_account_edits.extend(edit);
    }
    plan.missing_service_accounts = used
        .iter()
        .filter(|name| !accounts.contains_key(*name))
        .map(|name| (*name).to_owned())
        .collect();
}
