//! Uninstall (the CSV is being deleted and carries opcat's finalizer): remove what opcat added
//! for this CSV and nothing else, then let go.
//!
//! 1. Pull secrets: the plan for the catalog in the namespace *without* this CSV, with its
//!    ServiceAccounts still passed in: names only it needed are detached, copies nobody uses are
//!    deleted, the others lose it as an owner. A ServiceAccount no remaining CSV of opcat uses
//!    loses every name opcat recorded on it (copies and the bundle's own names) and keeps the
//!    rest of its list.
//! 2. CRDs whose conversion webhook is this install's Service go back to `strategy: None`
//!    (unless another CSV in the namespace converts them: an upgrade). Every object labelled
//!    with this CSV is deleted — RBAC in other target namespaces and
//!    cluster-scoped objects included (they carry no ownerReference) — except CRDs (DESIGN
//!    invariant 10); the CSV's OperatorCondition last, after its Deployments (invariant 14). ServiceAccounts opcat created are among them; `default` and pre-existing
//!    ones are not. Objects an upgrade relabelled for the newer CSV are not labelled with this
//!    one any more and stay. The CRDs it owns lose the install's component label, unless a
//!    CSV of the same install remains (see `component_release`).
//! 3. The finalizer is removed (JSON patch testing the list as read).
//!
//! Every step is idempotent and derived from labels and annotations, not memory: a failure
//! keeps the finalizer, and the retry (or a restarted manager) finishes the job. Touches the
//! client.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::error::CsvError;
use super::events::{Audience, observe_plan, publish, reference};
use super::labelled::{self, SWEPT_KINDS};
use super::observe::{self, Sources};
use super::propagation::{self, PropagationInputs};
use super::{
    Csvs, component_release, copies, csv_writes, objects, operator_condition, service_accounts,
    webhooks,
};
use crate::api::ClusterServiceVersion;
use crate::pull_secrets::service_account::{detach, recorded};
use crate::pull_secrets::{
    CatalogRef, CopyDeletion, DeletionReason, ServiceAccountEdit, propagation_allowed,
};

pub async fn reconcile(state: &Csvs, csv: &ClusterServiceVersion) -> Result<Action, CsvError> {
    if !csv_writes::has_finalizer(csv) {
        return Ok(Action::await_change());
    }
    let context = &state.context;
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let now = Time(context.clock.now());
    match run(state, csv, &namespace, &now).await {
        Ok(()) => {
            csv_writes::remove_finalizer(&context.client, csv).await?;
            tracing::info!(namespace = %namespace, csv = %name, "uninstalled");
            Ok(Action::await_change())
        }
        Err(error) => {
            context
                .event(
                    &reference(csv),
                    EventType::Warning,
                    "CleanupFailed",
                    "Uninstall",
                    Some(format!(
                        "uninstall incomplete, the finalizer stays and it is retried: {}",
                        crate::failure::error_chain(&error)
                    )),
                )
                .await;
            Err(error)
        }
    }
}

async fn run(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    namespace: &str,
    now: &Time,
) -> Result<(), CsvError> {
    let context = &state.context;
    let client = &context.client;
    let name = csv.name_any();
    let kinds = SWEPT_KINDS
        .iter()
        .map(|(version, kind)| ((*version).to_owned(), (*kind).to_owned()))
        .collect();
    let live = labelled::labelled_objects(context, &name, namespace, &kinds).await?;
    // ServiceAccounts opcat created for this CSV: deleted with it below, so never edited.
    let deleted_accounts: BTreeSet<String> = live
        .objects
        .keys()
        .filter(|key| key.group.is_empty() && key.kind == "ServiceAccount")
        .map(|key| key.name.clone())
        .collect();
    let mut own_accounts = propagation::spec_service_accounts(csv);
    own_accounts.extend(deleted_accounts.iter().cloned());

    // Every other CSV of opcat in the namespace, and what it uses: a ServiceAccount none of
    // them uses loses everything opcat recorded on it.
    let remaining = observe::other_csvs(context, namespace, &name);
    let mut remaining_installed: Vec<_> = remaining
        .iter()
        .map(|other| propagation::installed(other, propagation::spec_service_accounts(other)))
        .collect();

    let catalog = observe::catalog_of(csv);
    let catalog_source = catalog
        .as_ref()
        .and_then(|catalog| observe::catalog_source(context, catalog));
    let secret_names = propagation::secret_names(catalog_source.as_deref());
    let wanted = catalog
        .as_ref()
        .map(|catalog| propagation::wanted_copy_names(catalog, &secret_names))
        .unwrap_or_default();
    let secrets = match &catalog {
        Some(catalog) => {
            observe::secrets(context, &state.clashes, namespace, catalog, &wanted).await?
        }
        None => Vec::new(),
    };
    let account_names: BTreeSet<String> = own_accounts
        .iter()
        .cloned()
        .chain(
            remaining_installed
                .iter()
                .flat_map(|csv| csv.service_accounts.iter().cloned()),
        )
        .collect();
    let read_accounts = observe::service_accounts(client, namespace, &account_names).await?;
    propagation::add_labelled_service_accounts(&mut remaining_installed, &read_accounts);
    let used_by_others: BTreeSet<&String> = remaining_installed
        .iter()
        .flat_map(|csv| &csv.service_accounts)
        .collect();

    let same_catalog: Vec<_> = remaining
        .iter()
        .zip(&remaining_installed)
        .filter(|(other, _)| catalog.is_some() && observe::catalog_of(other) == catalog)
        .map(|(_, installed)| installed.clone())
        .collect();
    let used_by_same_catalog: BTreeSet<&String> = same_catalog
        .iter()
        .flat_map(|csv| &csv.service_accounts)
        .collect();

    let plan = match (&catalog, &catalog_source) {
        (Some(catalog), Some(catalog_source)) => {
            let sources = match observe::sources(context, catalog_source) {
                Sources::Known(sources) => sources,
                // Data is not needed to remove: existing copies are kept as they are.
                Sources::Unknown(_) => Default::default(),
            };
            let inputs = PropagationInputs {
                catalog: catalog.clone(),
                secret_names,
                sources,
                csvs: same_catalog.clone(),
                secrets: secrets.clone(),
                service_accounts: read_accounts.clone(),
                scope: propagation_allowed(
                    catalog,
                    catalog_source.metadata.annotations.as_ref(),
                    namespace,
                    observe::namespace_labels(context, namespace).as_ref(),
                ),
                copy_whole: propagation::copy_whole(Some(&**catalog_source)),
            };
            Some(inputs.plan(namespace, now.0, &state.restore_policy))
        }
        _ => None,
    };

    // Pull secrets: owner updates of kept copies, then the ServiceAccount edits.
    if let Some(plan) = &plan {
        copies::write_all(state, namespace, &plan.copy_writes).await?;
    }
    let mut written = Vec::new();
    for sa in &read_accounts {
        let sa_name = sa.name_any();
        if deleted_accounts.contains(&sa_name) {
            continue;
        }
        let exclusive = !used_by_others.contains(&sa_name);
        let planned = plan.as_ref().and_then(|plan| {
            plan.service_account_edits
                .iter()
                .find(|edit| edit.name == sa_name)
                .cloned()
        });
        let catalog_copies = catalog_copy_names(catalog.as_ref(), &secrets);
        let recompute = |fresh: &ServiceAccount| -> Option<ServiceAccountEdit> {
            if exclusive {
                detach(fresh, &recorded(fresh).into_iter().collect::<Vec<_>>())
            } else if plan.is_some() {
                // Recomputing the plan needs everything again; detaching this catalog's names
                // that the plan removed is the same edit on the fresh object.
                let removed = planned.as_ref().map(|edit| edit.removed.clone())?;
                detach(fresh, &removed)
            } else if used_by_same_catalog.contains(&sa_name) {
                // No CatalogSource to plan with: another CSV of the catalog still needs them.
                None
            } else {
                detach(fresh, &catalog_copies)
            }
        };
        let edit = if exclusive || plan.is_none() {
            recompute(sa)
        } else {
            planned.clone()
        };
        if let Some(edit) = edit {
            let outcome = service_accounts::write_edit(client, namespace, edit, recompute).await?;
            written.extend(outcome.written);
        }
    }

    // CRD conversions that call this install, then objects labelled with this CSV (never
    // CRDs), then copies nobody uses.
    webhooks::restore_conversions(context, csv, namespace).await?;
    component_release::release(context, csv, namespace).await?;
    let deleted = objects::delete_unlisted(client, &live, &BTreeSet::new()).await?;
    for key in &deleted {
        tracing::info!(namespace, csv = %name, object = %key, "deleted on uninstall");
    }
    // Last, now that no Deployment of this CSV names it (DESIGN invariant 14).
    for condition in operator_condition::delete(context, &name, namespace).await? {
        tracing::info!(namespace, csv = %name, operator_condition = %condition, "deleted on uninstall");
    }
    if plan.is_none() && same_catalog.is_empty() {
        // No CatalogSource to plan with, and no CSV of the catalog left: its copies here are
        // opcat's and unused.
        for secret in secrets.iter().filter(|secret| {
            catalog
                .as_ref()
                .is_some_and(|catalog| catalog.is_catalog_copy(secret))
        }) {
            let deletion = CopyDeletion {
                name: secret.name_any(),
                uid: secret.uid(),
                resource_version: secret.resource_version(),
                reason: DeletionReason::Unused,
            };
            copies::delete(client, namespace, &deletion).await?;
        }
    }
    if let Some(plan) = &plan {
        for deletion in &plan.deletions {
            copies::delete(client, namespace, deletion).await?;
        }
        let mut done = plan.clone();
        done.service_account_edits = written;
        observe_plan(context, csv, &done, &Default::default());
        let subscription = observe::subscription(context, csv);
        let audience = Audience {
            subscription: subscription.as_deref(),
            csv,
        };
        let events: Vec<_> = done
            .events()
            .into_iter()
            .filter(|event| {
                event.reason != crate::pull_secrets::vocabulary::EVENT_PULL_SECRET_CONFLICT
            })
            .collect();
        publish(context, namespace, &events, &audience).await;
    }
    Ok(())
}

/// Names of the catalog's copies present in the namespace.
fn catalog_copy_names(
    catalog: Option<&CatalogRef>,
    secrets: &[k8s_openapi::api::core::v1::Secret],
) -> Vec<String> {
    let Some(catalog) = catalog else {
        return Vec::new();
    };
    secrets
        .iter()
        .filter(|secret| catalog.is_catalog_copy(secret))
        .map(ResourceExt::name_any)
        .collect()
}
