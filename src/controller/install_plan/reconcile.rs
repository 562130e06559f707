//! One InstallPlan reconcile: read the plan's record → approval → pull every bundle with the
//! credentials of its own catalog (`bundles`, registry only) → check them together (pure) →
//! create the CSVs, dependencies first (the only writes besides status) → status (`Complete`, or
//! `Installing` while an OperatorCondition holds the upgrade: `held`).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::InstallPlanContext;
use super::bundles::{Pulled, pull};
use super::csv_builder::{CsvInputs, build_csv, steps};
use super::declared::unmet;
use super::error::InstallPlanError;
use super::fetch::Fetched;
use super::held;
use super::properties::csv_properties;
use super::status::{Lookup, LookupProgress, complete, installing, requires_approval};
use super::status_writer::StatusWriter;
use super::triggers::is_finished;
use crate::api::install_plan::InstallPlanStatus;
use crate::api::install_plan_status::{PHASE_INSTALLING, STEP_CREATED, STEP_PRESENT};
use crate::api::{ClusterServiceVersion, InstallPlan};
use crate::bundle::Bundle;
use crate::controller::apply;
use crate::controller::clock::status_time;
use crate::controller::context::Context;
use crate::controller::keys;
use crate::controller::plan_record::{self, PlanEntry};
use crate::controller::stored_object::{StoredCsv, StoredPlan};
use crate::controller::wiring::backoff_key_of;

/// Bundle lookup reason: the pull is in progress.
pub const REASON_UNPACKING: &str = "UnpackingInProgress";
/// Bundle lookup reason: the catalog's pull secrets have not been read yet.
pub const REASON_WAITING_FOR_PULL_SECRETS: &str = "WaitingForPullSecrets";
/// How long the bundle pulls may take before the plan's status says `Installing`.
const SHOW_PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(2);
/// Event: pulling a bundle failed; it is retried.
pub const EVENT_BUNDLE_PULL_FAILED: &str = "BundlePullFailed";

/// Reconciles one InstallPlan.
pub async fn reconcile(
    stored: Arc<StoredPlan>,
    ctx: Arc<InstallPlanContext>,
) -> Result<Action, InstallPlanError> {
    let context = &ctx.context;
    // Complete and Failed plans are records: never changed again.
    if stored.meta().deletion_timestamp.is_some() || is_finished(stored.status.as_ref()) {
        return Ok(Action::await_change());
    }
    if ctx.own_writes.is_stale(
        stored.meta().uid.as_deref(),
        stored.meta().resource_version.as_deref(),
    ) {
        // The store still shows the version before our last status write (which may have
        // finished the plan); its watch event brings the next reconcile.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    if !context.stores.is_ready() {
        // The upgrade gate reads the CSV and OperatorCondition stores: right after a start, an
        // empty store would let a held upgrade through.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    let plan = stored.object();
    let writer = StatusWriter::new(context, &ctx.own_writes, &plan);
    let now = status_time(context.clock.now());
    let entries = match plan_record::entries(&plan) {
        Ok(entries) if !entries.is_empty() => entries,
        unreadable => {
            let message = match unreadable {
                Err(error) => error.to_string(),
                Ok(_) => "InstallPlan lists no ClusterServiceVersion".to_owned(),
            };
            let catalogs: Vec<&str> = plan.spec.source.as_deref().into_iter().collect();
            writer
                .fail(plan.status.as_ref(), &catalogs, &message, None, &now)
                .await?;
            return Ok(Action::await_change());
        }
    };
    let catalogs: Vec<&str> = entries
        .iter()
        .map(|entry| entry.catalog_name.as_str())
        .collect();
    // Manual approval holds the whole plan: every bundle in it.
    if !plan.spec.approved {
        writer
            .write(requires_approval(plan.status.as_ref(), &catalogs))
            .await?;
        return Ok(Action::requeue(context.settings.resync));
    }

    // Created its CSVs and held by the upgrade gate: only the gate decides what comes next.
    if let Some(steps) = held::recorded_steps(
        &context.stores,
        &writer.namespace,
        plan.status.as_ref(),
        &plan.spec.cluster_service_version_names,
    ) {
        let next = match held::message(&context.stores, &writer.namespace, &entries) {
            Some(message) => held::status(
                plan.status.as_ref(),
                &catalogs,
                steps.to_vec(),
                &message,
                &now,
            ),
            None => {
                tracing::info!(namespace = %writer.namespace, name = %writer.name, "upgrade no longer held; InstallPlan complete");
                complete(plan.status.as_ref(), &catalogs, steps.to_vec(), &now)
            }
        };
        writer.write(next).await?;
        // Held: the OperatorCondition's watch events bring the next look (resync: the safety
        // net). Complete: a record.
        return Ok(Action::requeue(context.settings.resync));
    }

    let lookups: Vec<Lookup<'_>> = entries.iter().map(lookup).collect();
    let pulling: Vec<String> = entries
        .iter()
        .map(|entry| format!("pulling bundle image {}", entry.image))
        .collect();
    // Every bundle pulling, but the one at `index` (if any) at `special`.
    let progress = |current: Option<&InstallPlanStatus>,
                    index: Option<usize>,
                    special: Option<LookupProgress<'_>>| {
        let mut all: Vec<(Lookup<'_>, LookupProgress<'_>)> = lookups
            .iter()
            .zip(&pulling)
            .map(|(lookup, message)| {
                (
                    lookup.clone(),
                    LookupProgress::pending(REASON_UNPACKING, message),
                )
            })
            .collect();
        if let (Some(index), Some(special)) = (index, special) {
            all[index].1 = special;
        }
        installing(current, &all, &now)
    };

    // `Installing` is written only when a pull takes long enough for someone to look: a plan
    // whose bundles are at hand goes to `Complete` in one status write (issue 12: two writes
    // per install before).
    let mut status = plan.status.clone();
    let mut told = status.as_ref().map(|s| s.phase.as_str()) == Some(PHASE_INSTALLING);

    // Every bundle with its own catalog's credentials, before anything is created.
    let mut fetched: Vec<Fetched> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let pulling = pull(context, &ctx.loaded, entry);
        let mut pulling = std::pin::pin!(pulling);
        let pulled = if told {
            pulling.await
        } else {
            tokio::select! {
                pulled = &mut pulling => pulled,
                () = tokio::time::sleep(SHOW_PROGRESS_AFTER) => {
                    let next = progress(status.as_ref(), None, None);
                    writer.write_from(status.as_ref(), next.clone()).await?;
                    status = Some(next);
                    told = true;
                    pulling.await
                }
            }
        };
        match pulled {
            Pulled::Ready(bundle) => fetched.push(*bundle),
            Pulled::Waiting(message) => {
                let waiting = LookupProgress::pending(REASON_WAITING_FOR_PULL_SECRETS, &message);
                let next = progress(status.as_ref(), Some(index), Some(waiting));
                writer.write_from(status.as_ref(), next).await?;
                return Ok(Action::requeue(context.settings.wait_requeue));
            }
            Pulled::Retry(source) => {
                let message = crate::failure::error_chain(&source);
                let retry = LookupProgress::pending(EVENT_BUNDLE_PULL_FAILED, &message);
                let next = progress(status.as_ref(), Some(index), Some(retry));
                if writer.write_from(status.as_ref(), next).await? {
                    tracing::warn!(
                        namespace = %writer.namespace,
                        name = %writer.name,
                        image = %entry.image,
                        catalog = %entry.catalog(),
                        error = %message,
                        "bundle pull failed; retrying"
                    );
                    writer
                        .event(EventType::Warning, EVENT_BUNDLE_PULL_FAILED, message)
                        .await;
                }
                return Err(InstallPlanError::Pull {
                    namespace: writer.namespace.clone(),
                    name: writer.name.clone(),
                    source,
                });
            }
            Pulled::Failed { message, reason } => {
                let failed = reason.map(|reason| LookupProgress::failed(reason, &message));
                let unpack = failed.as_ref().map(|progress| (&lookups[index], progress));
                writer
                    .fail(status.as_ref(), &catalogs, &message, unpack, &now)
                    .await?;
                return Ok(Action::await_change());
            }
        }
    }

    // What the images declare beyond the catalog must be met by the plan or the namespace.
    let csvs: Vec<ClusterServiceVersion> = entries
        .iter()
        .zip(&fetched)
        .map(|(entry, bundle)| csv_of(&plan, entry, bundle))
        .collect();
    // By the namespace index: filtering `state()` copied every CSV of the cluster per plan.
    let installed: BTreeMap<String, Arc<ClusterServiceVersion>> = context
        .stores
        .namespaced
        .csvs
        .in_namespace(&writer.namespace)
        .into_iter()
        .map(|csv| (csv.name_any(), Arc::new(csv.object())))
        .collect();
    let checked: Vec<(&Bundle, &ClusterServiceVersion)> = fetched
        .iter()
        .map(|bundle| bundle.bundle.as_ref())
        .zip(&csvs)
        .collect();
    if let Some(message) = unmet(&writer.namespace, &checked, &installed) {
        writer
            .fail(status.as_ref(), &catalogs, &message, None, &now)
            .await?;
        return Ok(Action::await_change());
    }

    // Dependencies first: the plan lists them first.
    let mut steps_done = Vec::new();
    for ((entry, bundle), csv) in entries.iter().zip(&fetched).zip(&csvs) {
        let step_status = create_csv(context, &writer, entry, bundle, csv).await?;
        steps_done.extend(steps(
            &bundle.bundle,
            (&entry.catalog_namespace, &entry.catalog_name),
            step_status,
        ));
    }
    if let Some(message) = held::message(&context.stores, &writer.namespace, &entries) {
        let waiting = held::status(status.as_ref(), &catalogs, steps_done, &message, &now);
        writer.write_from(status.as_ref(), waiting).await?;
        tracing::info!(
            namespace = %writer.namespace,
            name = %writer.name,
            reason = %message,
            "InstallPlan held by an OperatorCondition"
        );
        return Ok(Action::requeue(context.settings.resync));
    }
    let done = complete(status.as_ref(), &catalogs, steps_done, &now);
    writer.write_from(status.as_ref(), done).await?;
    tracing::info!(
        namespace = %writer.namespace,
        name = %writer.name,
        csvs = ?plan.spec.cluster_service_version_names,
        "InstallPlan complete"
    );
    context
        .backoffs
        .succeeded(&backoff_key_of(super::CONTROLLER, &plan));
    Ok(Action::await_change())
}

/// The status lookup of a bundle.
fn lookup(entry: &PlanEntry) -> Lookup<'_> {
    Lookup {
        image: &entry.image,
        csv: &entry.name,
        replaces: entry.replaces.as_deref().unwrap_or_default(),
        catalog: (&entry.catalog_namespace, &entry.catalog_name),
    }
}

/// The CSV to create for `entry`, from its pulled bundle.
fn csv_of(plan: &InstallPlan, entry: &PlanEntry, fetched: &Fetched) -> ClusterServiceVersion {
    let properties = csv_properties(entry, &fetched.bundle);
    build_csv(&CsvInputs {
        plan,
        entry,
        bundle_csv: &fetched.bundle.csv,
        pinned_image: &fetched.pinned,
        properties: &properties,
    })
}

/// Creates `csv` (of `entry`) unless one of that name exists (then it is left alone). Returns
/// the step status: `Created` when this plan created it, `Present` otherwise.
async fn create_csv(
    context: &Context,
    writer: &StatusWriter<'_>,
    entry: &PlanEntry,
    fetched: &Fetched,
    csv: &ClusterServiceVersion,
) -> Result<&'static str, InstallPlanError> {
    let namespace = &writer.namespace;
    let csv_name = csv.name_any();
    let existing = context
        .stores
        .csvs
        .get(&ObjectRef::<StoredCsv>::new(&csv_name).within(namespace));
    if let Some(existing) = existing {
        let ours = existing.annotation(keys::csv::INSTALL_PLAN) == Some(writer.name.as_str());
        return Ok(if ours { STEP_CREATED } else { STEP_PRESENT });
    }
    let api: Api<ClusterServiceVersion> = Api::namespaced(context.client.clone(), namespace);
    match apply::create_typed(&api, csv).await {
        Ok(_) => {
            tracing::info!(
                %namespace,
                install_plan = %writer.name,
                csv = %csv_name,
                image = %fetched.pinned,
                catalog = %entry.catalog(),
                "created ClusterServiceVersion"
            );
            // No Event: the plan's status lists the CSV as `Created`, and the Subscription's
            // `InstallPlanCreated` event already named it (issue 12: an Event per step).
            Ok(STEP_CREATED)
        }
        // A CSV of that name exists that opcat does not watch (not created by opcat): it is
        // left alone.
        Err(error) if error.kind() == "conflict" => Ok(STEP_PRESENT),
        Err(source) => Err(InstallPlanError::CreateCsv {
            namespace: namespace.clone(),
            name: writer.name.clone(),
            csv: csv_name,
            source,
        }),
    }
}
