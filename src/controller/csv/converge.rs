//! Converge one installable CSV (its requirements are met): build the pull-secret plan and the
//! render, apply both in DESIGN §4's order, then report and set the phase from the
//! Deployments' health.
//!
//! Apply order (DESIGN invariant 2: copies exist and are attached before any Deployment):
//!
//! 1. pull-secret copies;
//! 2. ServiceAccounts opcat creates, then the `imagePullSecrets` edits (copies, and the names
//!    the bundle's ServiceAccount manifests list);
//! 3. RBAC (the OperatorCondition's Role and RoleBinding included), then the CSV's
//!    OperatorCondition (DESIGN invariant 14: it exists before any Deployment names it);
//! 4. CRDs, and the wait for `Established` when the bundle holds objects of their kinds; then
//!    the preflight;
//! 5. the serving certificates of webhook and API-service Deployments (decided before the
//!    render, which puts their CA into pod templates and `caBundle`s), then the Deployments
//!    (their pod templates list the copies);
//! 6. the other objects; the webhook configurations, APIServices and CRD conversions, now that
//!    the Deployments serving them exist; the ClusterRoles of the provided APIs; then the sweep
//!    of what the render no longer produces, and last the copies nobody needs any more.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use super::attach::{attach, attach_bundle_pull_secrets};
use super::error::CsvError;
use super::events::{Audience, observe_plan, publish};
use super::hold;
use super::install::{Read, unmet_status};
use super::labelled::{self, ObjectKey};
use super::observe;
use super::propagation::{self, PropagationInputs};
use super::requirements::Unmet;
use super::status::{self, Health, PhaseUpdate};
use super::{
    Csvs, certificates, copies, csv_writes, objects, operator_condition, provided_api_roles,
    report, service_accounts, webhooks,
};
use crate::api::{ClusterServiceVersion, ClusterServiceVersionPhase as Phase, csv_reasons};
use crate::bundle::{RenderContext, ownership::CsvOwner, render};
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_SECRET_SOURCE_MISSING, EVENT_PULL_SECRET_CONFLICT, REASON_SOURCE_NOT_FOUND,
};
use crate::pull_secrets::{
    CatalogRef, ConditionStatus, NamespacePlan, PullSecretCondition, ServiceAccountEdit,
    propagation_allowed,
};

/// Plans, applies and reports; returns the requeue.
pub(super) async fn install(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    namespace: &str,
    read: &Read,
    now: &Time,
) -> Result<Action, CsvError> {
    let context = &state.context;
    let client = &context.client;
    let name = csv.name_any();

    // Build the pull-secret inputs and plan.
    let own_accounts = crate::bundle::service_accounts(&read.bundle).used;
    let mut inputs = propagation_inputs(state, csv, namespace, read, own_accounts).await?;
    let mut plan = inputs.plan(namespace, now.0, &state.restore_policy);
    let deferred = state
        .rotating
        .defer(&read.catalog.namespace, &mut plan.copy_writes);
    if deferred > 0 {
        tracing::debug!(namespace, csv = %name, deferred, "copy data left to the rotation fast path");
    }
    let frozen = read.catalog_source.is_none();
    let pod_template_secrets = if frozen {
        existing_copy_names(&inputs)
    } else {
        plan.pod_template_secrets.clone()
    };

    // Render.
    let subscription = observe::subscription(context, csv);
    let owner = CsvOwner {
        name: name.clone(),
        uid: csv.uid().unwrap_or_default(),
    };
    let extra_labels = observe::component_labels(csv);
    let certificates = certificates::plan(
        context,
        &read.bundle.csv,
        namespace,
        &owner,
        &extra_labels,
        now.0,
    )
    .await?;
    let rendered = match render(
        &read.bundle,
        &RenderContext {
            csv: &owner,
            install_namespace: namespace,
            targets: &read.targets.namespaces,
            operator_group: &read.targets.operator_group,
            subscription_config: subscription.as_ref().and_then(|s| s.spec.config.as_deref()),
            pull_secret_names: &pod_template_secrets,
            extra_labels: &extra_labels,
            serving_certificates: &certificates.serving,
        },
    ) {
        Ok(rendered) => rendered,
        Err(error) => {
            let unmet = Unmet::Failed {
                reason: csv_reasons::INVALID_INSTALL_STRATEGY,
                message: crate::failure::error_chain(&error),
            };
            return unmet_status(state, csv, &unmet, now).await;
        }
    };
    let live = labelled::cached_objects(
        context,
        &name,
        namespace,
        &labelled::kinds_to_list(rendered.in_apply_order()),
    )
    .await?;

    // (1) Copies.
    if !frozen {
        copies::write_all(state, namespace, &plan.copy_writes).await?;
    }
    // (2) ServiceAccounts, then their imagePullSecrets.
    let written_edits = if frozen {
        service_accounts::apply_created(
            client,
            &rendered.service_accounts,
            &inputs.service_accounts,
        )
        .await?;
        Vec::new()
    } else {
        attach(state, namespace, &mut inputs, &plan, &rendered, now).await?
    };
    attach_bundle_pull_secrets(state, namespace, &rendered, now).await?;
    // (3) RBAC, (4) CRDs.
    let no_force = |_: &DynamicObject, _: &DynamicObject| false;
    let hashed = |object: &DynamicObject| rendered.has_hashed_name(object);
    objects::apply_all(context, &rendered.rbac, &live, hashed, no_force).await?;
    operator_condition::ensure(context, &rendered.operator_condition).await?;
    objects::apply_all(context, &rendered.crds, &live, hashed, no_force).await?;
    let waiting = objects::unestablished_crds(client, &rendered.crds, &rendered.others).await?;
    // Preflight, before the Deployments exist on a first install; it reports, never blocks.
    let preflight = preflight(state, read, &plan, frozen, now).await;
    if !waiting.is_empty() {
        let update = PhaseUpdate::new(
            Phase::Installing,
            csv_reasons::INSTALL_WAITING,
            format!(
                "installing: waiting for CustomResourceDefinitions [{}] to be established",
                waiting.join(", ")
            ),
        );
        csv_writes::set_status(client, csv, &update, now).await?;
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    // (5) Deployments: a live template that still lists a copy opcat dropped is re-applied.
    let stale = if frozen {
        BTreeSet::new()
    } else {
        propagation::stale_pod_template_names(
            &plan,
            &propagation::wanted_copy_names(&inputs.catalog, &inputs.secret_names),
            &inputs.secrets,
        )
    };
    let lists_stale = |_: &DynamicObject, live: &DynamicObject| lists_any(live, &stale);
    certificates::write(context, csv, &certificates).await?;
    objects::apply_all(context, &rendered.deployments, &live, hashed, lists_stale).await?;
    // (6) The rest, webhooks, then the sweep and the copies nobody uses.
    objects::apply_all(context, &rendered.others, &live, hashed, no_force).await?;
    webhooks::apply(context, namespace, &rendered, &live).await?;
    provided_api_roles::ensure(context, csv).await?;
    let mut keep: BTreeSet<ObjectKey> = rendered.in_apply_order().map(ObjectKey::of).collect();
    keep.extend(certificates.keys());
    let swept = objects::delete_unlisted(client, &live, &keep).await?;
    for key in &swept {
        tracing::info!(namespace, csv = %name, object = %key, "deleted an object the bundle no longer has");
    }
    if !frozen {
        for deletion in &plan.deletions {
            copies::delete(client, namespace, deletion).await?;
        }
    }

    // Report, events, status.
    let report = Report {
        plan: &plan,
        frozen,
        preflight,
        written_edits,
    };
    report
        .publish(
            state,
            csv,
            namespace,
            read,
            &inputs,
            subscription.as_deref(),
        )
        .await?;

    let store = &context.stores.deployments;
    let health = status::health(
        &name,
        rendered
            .deployments
            .iter()
            .map(|d| d.metadata.name.as_deref().unwrap_or_default()),
        |deployment| store.get(&ObjectRef::new(deployment).within(namespace)),
    );
    let health = webhooks::api_service_health(context, &rendered, health).await?;
    let update = status::after_install(
        status::phase(csv.status.as_ref()),
        status::reason(csv.status.as_ref()),
        &health,
    );
    let created = csv.metadata.creation_timestamp.as_ref().map(|time| time.0);
    let phase = status::phase(csv.status.as_ref());
    // Wall-clock time, like the server's creationTimestamp (the status clock may be a test's).
    let wall = k8s_openapi::jiff::Timestamp::now();
    if let Some(wait) = hold::held_back(created, phase, &update, wall) {
        return Ok(Action::requeue(wait));
    }
    let written = csv_writes::set_status(client, csv, &update, now).await?;
    state.wrote(csv, written.as_deref());
    Ok(match health {
        Health::Ready => Action::requeue(context.settings.resync),
        Health::NotReady(_) => Action::requeue(context.settings.wait_requeue),
    })
}

/// What a converge tells users: the report annotation, events and logs.
struct Report<'a> {
    plan: &'a NamespacePlan,
    frozen: bool,
    preflight: PullSecretCondition,
    written_edits: Vec<ServiceAccountEdit>,
}

impl Report<'_> {
    /// Writes the report annotation (when it changed) and publishes the plan's events. A name
    /// conflict persists across reconciles: its event is only repeated when the report changed.
    async fn publish(
        self,
        state: &Csvs,
        csv: &ClusterServiceVersion,
        namespace: &str,
        read: &Read,
        inputs: &PropagationInputs,
        subscription: Option<&crate::api::Subscription>,
    ) -> Result<(), CsvError> {
        let context = &state.context;
        let mut conditions = if self.frozen {
            vec![catalog_missing_condition(&read.catalog)]
        } else {
            self.plan.conditions()
        };
        conditions.push(self.preflight);
        let encoded = report::encode(&conditions);
        let written = csv_writes::set_report(&context.client, csv, &encoded).await?;
        state.wrote(csv, written.as_deref());
        let changed = written.is_some();
        if self.frozen {
            return Ok(());
        }
        let mut done = self.plan.clone();
        done.service_account_edits = self.written_edits;
        observe_plan(context, csv, &done, &inputs.sources);
        let mut events = done.events();
        if !changed {
            events.retain(|event| event.reason != EVENT_PULL_SECRET_CONFLICT);
        }
        let audience = Audience { subscription, csv };
        publish(context, namespace, &events, &audience).await;
        Ok(())
    }
}

/// Reads the pull-secret inputs for the catalog in the namespace.
async fn propagation_inputs(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    namespace: &str,
    read: &Read,
    own_accounts: BTreeSet<String>,
) -> Result<PropagationInputs, CsvError> {
    let context = &state.context;
    let name = csv.name_any();
    let mut csvs = vec![propagation::installed(csv, own_accounts)];
    for other in observe::catalog_csvs(context, namespace, &read.catalog, &name) {
        let accounts = propagation::spec_service_accounts(&other);
        csvs.push(propagation::installed(&other, accounts));
    }
    let secret_names = propagation::secret_names(read.catalog_source.as_deref());
    let wanted = propagation::wanted_copy_names(&read.catalog, &secret_names);
    let secrets =
        observe::secrets(context, &state.clashes, namespace, &read.catalog, &wanted).await?;
    let names: BTreeSet<String> = csvs
        .iter()
        .flat_map(|csv| csv.service_accounts.iter().cloned())
        .collect();
    let service_accounts = observe::cached_service_accounts(context, namespace, &names).await?;
    propagation::add_labelled_service_accounts(&mut csvs, &service_accounts);
    let scope = match &read.catalog_source {
        Some(catalog_source) => propagation_allowed(
            &read.catalog,
            catalog_source.metadata.annotations.as_ref(),
            namespace,
            observe::namespace_labels(context, namespace).as_ref(),
        ),
        None => Ok(()),
    };
    Ok(PropagationInputs {
        catalog: read.catalog.clone(),
        secret_names,
        sources: read.sources.clone(),
        csvs,
        secrets,
        service_accounts,
        scope,
        copy_whole: propagation::copy_whole(read.catalog_source.as_deref()),
    })
}

/// The preflight condition, with the credentials pods will actually get.
async fn preflight(
    state: &Csvs,
    read: &Read,
    plan: &NamespacePlan,
    frozen: bool,
    now: &Time,
) -> PullSecretCondition {
    let credentials: super::preflight::Credentials = if frozen {
        BTreeMap::new()
    } else {
        read.sources
            .iter()
            .map(|(source, secret)| (read.catalog.copy_name(source), secret.clone()))
            .filter(|(copy, _)| plan.pod_template_secrets.contains(copy))
            .collect()
    };
    let images = crate::bundle::images(&read.bundle);
    state
        .preflight
        .condition(
            &state.context.registry,
            &read.bundle_image,
            &images,
            &credentials,
            now.0,
        )
        .await
}

/// Names of the catalog's copies present in the namespace (used as they are while the
/// CatalogSource is missing).
fn existing_copy_names(inputs: &PropagationInputs) -> Vec<String> {
    inputs
        .secrets
        .iter()
        .filter(|secret| inputs.catalog.is_catalog_copy(secret))
        .map(ResourceExt::name_any)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The report while the CatalogSource is missing: copies are kept, nothing is propagated.
fn catalog_missing_condition(catalog: &CatalogRef) -> PullSecretCondition {
    PullSecretCondition {
        type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
        status: ConditionStatus::True,
        reason: REASON_SOURCE_NOT_FOUND,
        message: format!(
            "catalog source {catalog} not found; existing pull-secret copies are kept and \
             nothing is propagated until it exists again"
        ),
    }
}

/// Whether a live Deployment's pod template lists any of `names`.
fn lists_any(live: &DynamicObject, names: &BTreeSet<String>) -> bool {
    live.data
        .pointer("/spec/template/spec/imagePullSecrets")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("name").and_then(serde_json::Value::as_str))
        .any(|name| names.contains(name))
}
