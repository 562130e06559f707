//! One InstallPlan reconcile: approval → pull the bundle with the catalog's credentials (fetch,
//! registry only) → check it (pure) → create the CSV (the only write besides status) → status.

use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::InstallPlanContext;
use super::csv_builder::{CsvInputs, build_csv, steps};
use super::error::InstallPlanError;
use super::fetch::{Credentials, FetchError, Fetched, credentials, fetch};
use super::status::{Lookup, LookupProgress, complete, failed, installing, requires_approval};
use super::triggers::{is_finished, plan_catalog};
use crate::api::install_plan::InstallPlanStatus;
use crate::api::install_plan_status::{PHASE_INSTALLING, STEP_CREATED, STEP_PRESENT};
use crate::api::{CatalogSource, ClusterServiceVersion, InstallPlan};
use crate::bundle::validate_for_install;
use crate::controller::apply;
use crate::controller::clock::status_time;
use crate::controller::context::Context;
use crate::controller::keys;
use crate::controller::own_writes::OwnWrites;
use crate::controller::wiring::backoff_key_of;

/// Bundle lookup reason: the pull is in progress.
pub const REASON_UNPACKING: &str = "UnpackingInProgress";
/// Bundle lookup reason: the catalog's pull secrets have not been read yet.
pub const REASON_WAITING_FOR_PULL_SECRETS: &str = "WaitingForPullSecrets";
/// Bundle lookup reason: the bundle image names another CSV than the catalog.
pub const REASON_BUNDLE_MISMATCH: &str = "BundleMismatch";
/// Event: the CSV was created.
pub const EVENT_CSV_CREATED: &str = "ClusterServiceVersionCreated";
/// Event: pulling the bundle failed; it is retried.
pub const EVENT_BUNDLE_PULL_FAILED: &str = "BundlePullFailed";
/// Event: the plan failed for good.
pub const EVENT_INSTALL_PLAN_FAILED: &str = "InstallPlanFailed";

/// Reconciles one InstallPlan.
pub async fn reconcile(
    plan: Arc<InstallPlan>,
    ctx: Arc<InstallPlanContext>,
) -> Result<Action, InstallPlanError> {
    let context = &ctx.context;
    // Complete and Failed plans are records: never changed again.
    if plan.meta().deletion_timestamp.is_some() || is_finished(&plan) {
        return Ok(Action::await_change());
    }
    if ctx.own_writes.is_stale(
        plan.meta().uid.as_deref(),
        plan.meta().resource_version.as_deref(),
    ) {
        // The store still shows the version before our last status write (which may have
        // finished the plan); its watch event brings the next reconcile.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    let writer = StatusWriter::new(context, &ctx.own_writes, &plan);
    let (catalog_namespace, catalog_name) = plan_catalog(&plan).unwrap_or_default();
    if !plan.spec.approved {
        writer
            .write(requires_approval(plan.status.as_ref(), &catalog_name))
            .await?;
        return Ok(Action::requeue(context.settings.resync));
    }

    let annotations = plan.annotations();
    let csv_name = plan
        .spec
        .cluster_service_version_names
        .first()
        .cloned()
        .unwrap_or_default();
    let image = annotations
        .get(keys::install_plan::BUNDLE_IMAGE)
        .cloned()
        .unwrap_or_default();
    let replaces = annotations
        .get(keys::install_plan::REPLACES)
        .cloned()
        .unwrap_or_default();
    let lookup = Lookup {
        image: &image,
        csv: &csv_name,
        replaces: &replaces,
        catalog: (&catalog_namespace, &catalog_name),
    };
    let now = status_time(context.clock.now());

    let mut status = plan.status.clone();
    if status.as_ref().map(|s| s.phase.as_str()) != Some(PHASE_INSTALLING) {
        let message = format!("pulling bundle image {image}");
        let next = installing(
            status.as_ref(),
            &lookup,
            &LookupProgress::pending(REASON_UNPACKING, &message),
            &now,
        );
        writer.write_from(status.as_ref(), next.clone()).await?;
        status = Some(next);
    }

    let catalog = context
        .stores
        .catalog_sources
        .get(&ObjectRef::<CatalogSource>::new(&catalog_name).within(&catalog_namespace));
    let keyring = match credentials(context, catalog.as_deref()) {
        Credentials::Ready(keyring) => keyring,
        Credentials::Waiting { namespace, secret } => {
            let message = format!(
                "waiting for pull secret {namespace}/{secret} of catalog source \
                 {catalog_namespace}/{catalog_name} to be read"
            );
            let next = installing(
                status.as_ref(),
                &lookup,
                &LookupProgress::pending(REASON_WAITING_FOR_PULL_SECRETS, &message),
                &now,
            );
            writer.write_from(status.as_ref(), next).await?;
            return Ok(Action::requeue(context.settings.wait_requeue));
        }
    };

    let package = annotations
        .get(keys::install_plan::PACKAGE)
        .map(String::as_str);
    let fetched = match fetch(context, &csv_name, &image, package, &keyring).await {
        Ok(fetched) => fetched,
        Err(FetchError::Pull(source)) if source.is_transient() => {
            let message = crate::failure::error_chain(&source);
            let next = installing(
                status.as_ref(),
                &lookup,
                &LookupProgress::pending(EVENT_BUNDLE_PULL_FAILED, &message),
                &now,
            );
            if writer.write_from(status.as_ref(), next).await? {
                tracing::warn!(
                    namespace = %writer.namespace,
                    name = %writer.name,
                    %image,
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
        Err(error) => {
            let message = crate::failure::error_chain(&error);
            let unpack = LookupProgress::failed(error.reason(), &message);
            writer
                .fail(status.as_ref(), &lookup, &message, Some(&unpack), &now)
                .await?;
            return Ok(Action::await_change());
        }
    };

    if let Some(message) = check(&fetched, &csv_name, &image) {
        let unpack = LookupProgress::failed(REASON_BUNDLE_MISMATCH, &message);
        writer
            .fail(status.as_ref(), &lookup, &message, Some(&unpack), &now)
            .await?;
        return Ok(Action::await_change());
    }
    if let Err(error) = validate_for_install(&fetched.bundle.csv) {
        let message = error.to_string();
        writer
            .fail(status.as_ref(), &lookup, &message, None, &now)
            .await?;
        return Ok(Action::await_change());
    }

    let step_status = create_csv(
        context,
        &writer,
        &plan,
        &fetched,
        (&catalog_namespace, &catalog_name),
    )
    .await?;
    let done = complete(
        status.as_ref(),
        &catalog_name,
        steps(
            &fetched.bundle,
            (&catalog_namespace, &catalog_name),
            step_status,
        ),
        &now,
    );
    writer.write_from(status.as_ref(), done).await?;
    tracing::info!(
        namespace = %writer.namespace,
        name = %writer.name,
        csv = %csv_name,
        image = %fetched.pinned,
        "InstallPlan complete"
    );
    context
        .backoffs
        .succeeded(&backoff_key_of(super::CONTROLLER, plan.as_ref()));
    Ok(Action::await_change())
}

/// The bundle must hold the CSV the catalog promised.
fn check(fetched: &Fetched, csv_name: &str, image: &str) -> Option<String> {
    let found = fetched.bundle.name();
    (found != csv_name).then(|| {
        format!(
            "bundle image {image} holds ClusterServiceVersion {found}, but the catalog lists it \
             as {csv_name}"
        )
    })
}

/// Creates the CSV unless one of that name exists (then it is left alone). Returns the step
/// status: `Created` when this plan created it, `Present` otherwise.
async fn create_csv(
    context: &Context,
    writer: &StatusWriter<'_>,
    plan: &InstallPlan,
    fetched: &Fetched,
    catalog: (&str, &str),
) -> Result<&'static str, InstallPlanError> {
    let namespace = &writer.namespace;
    let csv = build_csv(&CsvInputs {
        plan,
        bundle_csv: &fetched.bundle.csv,
        pinned_image: &fetched.pinned,
        catalog,
    });
    let csv_name = csv.name_any();
    let existing = context
        .stores
        .csvs
        .get(&ObjectRef::<ClusterServiceVersion>::new(&csv_name).within(namespace));
    if let Some(existing) = existing {
        let ours = existing.annotations().get(keys::csv::INSTALL_PLAN) == Some(&writer.name);
        return Ok(if ours { STEP_CREATED } else { STEP_PRESENT });
    }
    let api: Api<ClusterServiceVersion> = Api::namespaced(context.client.clone(), namespace);
    match apply::create_typed(&api, &csv).await {
        Ok(_) => {
            tracing::info!(
                %namespace,
                install_plan = %writer.name,
                csv = %csv_name,
                image = %fetched.pinned,
                "created ClusterServiceVersion"
            );
            writer
                .event(
                    EventType::Normal,
                    EVENT_CSV_CREATED,
                    format!(
                        "created ClusterServiceVersion {csv_name} from bundle image {}",
                        fetched.pinned
                    ),
                )
                .await;
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

/// Writes one plan's status (only when it changes) and its events, and records each write as
/// superseding the version it was made from.
struct StatusWriter<'a> {
    context: &'a Context,
    own_writes: &'a OwnWrites,
    plan: &'a InstallPlan,
    namespace: String,
    name: String,
    /// The plan's latest version: as read, then as last written.
    version: Mutex<Option<String>>,
}

impl<'a> StatusWriter<'a> {
    fn new(context: &'a Context, own_writes: &'a OwnWrites, plan: &'a InstallPlan) -> Self {
        Self {
            context,
            own_writes,
            plan,
            namespace: plan.namespace().unwrap_or_default(),
            name: plan.name_any(),
            version: Mutex::new(plan.meta().resource_version.clone()),
        }
    }

    /// Writes `status` over the stored one.
    async fn write(&self, status: InstallPlanStatus) -> Result<bool, InstallPlanError> {
        self.write_from(self.plan.status.as_ref(), status).await
    }

    /// Writes `status` unless it equals `current`. Returns whether it wrote.
    async fn write_from(
        &self,
        current: Option<&InstallPlanStatus>,
        status: InstallPlanStatus,
    ) -> Result<bool, InstallPlanError> {
        let api: Api<InstallPlan> = Api::namespaced(self.context.client.clone(), &self.namespace);
        let written = apply::apply_status_typed(&api, &self.name, current, &status)
            .await
            .map_err(|source| InstallPlanError::Status {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                source,
            })?;
        let Some(written) = written else {
            return Ok(false);
        };
        let new_version = written.meta().resource_version.clone();
        if let Ok(mut version) = self.version.lock() {
            self.own_writes.wrote(
                &self.plan.uid().unwrap_or_default(),
                version.as_deref(),
                new_version.as_deref(),
            );
            *version = new_version;
        }
        tracing::debug!(
            namespace = %self.namespace,
            name = %self.name,
            phase = %status.phase,
            "InstallPlan status updated"
        );
        Ok(true)
    }

    /// Fails the plan for good.
    async fn fail(
        &self,
        current: Option<&InstallPlanStatus>,
        lookup: &Lookup<'_>,
        message: &str,
        unpack: Option<&LookupProgress<'_>>,
        now: &Time,
    ) -> Result<(), InstallPlanError> {
        let status = failed(current, lookup, message, unpack, now);
        self.write_from(current, status).await?;
        tracing::warn!(
            namespace = %self.namespace,
            name = %self.name,
            csv = lookup.csv,
            %message,
            "InstallPlan failed"
        );
        self.event(
            EventType::Warning,
            EVENT_INSTALL_PLAN_FAILED,
            message.to_owned(),
        )
        .await;
        Ok(())
    }

    async fn event(&self, type_: EventType, reason: &str, note: String) {
        self.context
            .event(
                &self.plan.object_ref(&()),
                type_,
                reason,
                "Install",
                Some(note),
            )
            .await;
    }
}
