//! One Subscription reconcile: dereference (stores) → decide (pure) → create the InstallPlan if
//! one is missing (the only write besides status) → status (pure, written only when changed).

use std::sync::Arc;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};

use super::SubscriptionContext;
use super::catalog_health::catalog_health;
use super::decide::{Decision, Inputs, Step, decide};
use super::error::SubscriptionError;
use super::observe::{Observed, observe};
use super::plan_builder::{PlanInputs, build_install_plan};
use super::report::{Report, read_report};
use super::status::{StatusInputs, current_csv, desired_status, plan_for, report_source};
use crate::api::conditions::find_condition;
use crate::api::subscription_status::RESOLUTION_FAILED;
use crate::api::{InstallPlan, Subscription};
use crate::controller::apply;
use crate::controller::clock::status_time;
use crate::controller::context::Context;
use crate::controller::wiring::backoff_key_of;
use crate::resolve::BundleRef;

/// Event reason: an InstallPlan was created.
pub const EVENT_INSTALL_PLAN_CREATED: &str = "InstallPlanCreated";
/// Event reason: resolution failed (or failed differently).
pub const EVENT_RESOLUTION_FAILED: &str = "ResolutionFailed";

/// Reconciles one Subscription.
pub async fn reconcile(
    subscription: Arc<Subscription>,
    ctx: Arc<SubscriptionContext>,
) -> Result<Action, SubscriptionError> {
    let context = &ctx.context;
    let namespace = subscription.namespace().unwrap_or_default();
    let name = subscription.name_any();
    // Deleting a Subscription stops upgrades and nothing else (OLM): no finalizer, no cleanup;
    // the garbage collector removes its InstallPlans, the CSV keeps running.
    if subscription.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // Decisions read the InstallPlan and CSV stores: deciding before they listed once (right
    // after a restart) would create a second InstallPlan for a CSV.
    if !stores_ready(context).await {
        return Ok(Action::await_change());
    }
    if ctx.own_writes.is_stale(
        subscription.meta().uid.as_deref(),
        subscription.meta().resource_version.as_deref(),
    ) {
        // The store still shows the version before our last status write; its watch event
        // brings the next reconcile.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }

    let observed = observe(context, &ctx.created, &subscription);
    let decision = decide(&Inputs {
        subscription: &subscription,
        plans: &observed.plans,
        csvs: &observed.csvs,
        catalog: observed.catalog_state(),
    });
    tracing::debug!(%namespace, %name, step = ?decision.step, "subscription decision");
    if decision.step == (Step::CatalogNotLoaded { quiet: true }) {
        // The catalog is READY but not in memory yet (a restart): the CatalogSource reconciler
        // is loading it. Writing status now would only churn a converged Subscription.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }

    let mut plans = observed.plans.clone();
    if let Step::Install(bundle) = &decision.step
        && plan_for(&plans, &bundle.name).is_none()
    {
        let plan = create_plan(&ctx, &subscription, &observed, bundle).await?;
        plans.push(plan);
    }

    write_status(&ctx, &subscription, &observed, &decision, &plans).await?;
    context
        .backoffs
        .succeeded(&backoff_key_of(super::CONTROLLER, subscription.as_ref()));
    Ok(match decision.step {
        Step::AtLatest | Step::ResolutionFailed { .. } => Action::requeue(context.settings.resync),
        _ => Action::requeue(context.settings.wait_requeue),
    })
}

/// Waits until the stores listed once (`false`: the manager is stopping first).
async fn stores_ready(context: &Context) -> bool {
    context.stores.wait_until_ready().await.is_ok()
}

/// Creates the InstallPlan for `bundle` and records it until the store lists it.
async fn create_plan(
    ctx: &SubscriptionContext,
    subscription: &Subscription,
    observed: &Observed,
    bundle: &BundleRef,
) -> Result<InstallPlan, SubscriptionError> {
    let context = &ctx.context;
    let namespace = subscription.namespace().unwrap_or_default();
    let name = subscription.name_any();
    let spec = &subscription.spec;
    let digest = observed
        .loaded
        .as_ref()
        .map(|loaded| loaded.digest.to_string())
        .unwrap_or_default();
    let plan = build_install_plan(&PlanInputs {
        subscription,
        bundle,
        catalog: (&spec.catalog_source_namespace, &spec.catalog_source),
        catalog_digest: &digest,
        generation: observed.next_generation,
    });
    let api: Api<InstallPlan> = Api::namespaced(context.client.clone(), &namespace);
    let created = apply::create_typed(&api, &plan).await.map_err(|source| {
        SubscriptionError::CreateInstallPlan {
            namespace: namespace.clone(),
            name: name.clone(),
            csv: bundle.name.clone(),
            source,
        }
    })?;
    ctx.created
        .record(&subscription.uid().unwrap_or_default(), created.clone());
    let plan_name = created.name_any();
    tracing::info!(
        %namespace,
        subscription = %name,
        install_plan = %plan_name,
        csv = %bundle.name,
        replaces = bundle.replaces.as_deref().unwrap_or_default(),
        approval = plan.spec.approval.as_str(),
        "created InstallPlan"
    );
    let upgrade = bundle
        .replaces
        .as_deref()
        .map(|old| format!(", replacing {old}"))
        .unwrap_or_default();
    context
        .event(
            &subscription.object_ref(&()),
            EventType::Normal,
            EVENT_INSTALL_PLAN_CREATED,
            "Resolve",
            Some(format!(
                "created InstallPlan {plan_name} ({} approval) to install {} from channel {} of \
                 catalog {}/{}{upgrade}",
                plan.spec.approval.as_str(),
                bundle.name,
                bundle.channel,
                spec.catalog_source_namespace,
                spec.catalog_source
            )),
        )
        .await;
    Ok(created)
}

async fn write_status(
    ctx: &SubscriptionContext,
    subscription: &Subscription,
    observed: &Observed,
    decision: &Decision,
    plans: &[InstallPlan],
) -> Result<(), SubscriptionError> {
    let context = &ctx.context;
    let namespace = subscription.namespace().unwrap_or_default();
    let name = subscription.name_any();
    let spec = &subscription.spec;
    let current = subscription.status.as_ref();
    let now = status_time(context.clock.now());

    let health = catalog_health(
        (&spec.catalog_source_namespace, &spec.catalog_source),
        observed.visible_catalogs.iter().map(Arc::as_ref),
        current
            .and_then(|status| status.catalog_health.as_deref())
            .unwrap_or_default(),
        &now,
    );
    let current_csv = current_csv(decision, plans, current);
    let report = read_report(report_source(
        current_csv.as_deref(),
        decision,
        &observed.csvs,
    ));
    if let Report::Malformed(error) = &report {
        tracing::debug!(%namespace, %name, %error, "ignoring unreadable pull-secret report");
    }
    let desired = desired_status(&StatusInputs {
        current,
        plans,
        csvs: &observed.csvs,
        decision,
        health: &health,
        report: &report,
        now: &now,
    });
    let api: Api<Subscription> = Api::namespaced(context.client.clone(), &namespace);
    let written = apply::apply_status_typed(&api, &name, current, &desired)
        .await
        .map_err(|source| SubscriptionError::Status {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    let Some(written) = written else {
        return Ok(());
    };
    ctx.own_writes.wrote(
        &subscription.uid().unwrap_or_default(),
        subscription.meta().resource_version.as_deref(),
        written.meta().resource_version.as_deref(),
    );
    tracing::info!(
        %namespace,
        %name,
        state = desired.state.as_deref().unwrap_or_default(),
        current_csv = desired.current_csv.as_deref().unwrap_or_default(),
        installed_csv = desired.installed_csv.as_deref().unwrap_or_default(),
        "subscription status updated"
    );
    if let Step::ResolutionFailed { message, .. } = &decision.step {
        let before = current
            .and_then(|status| status.conditions.as_deref())
            .and_then(|conditions| find_condition(conditions, RESOLUTION_FAILED))
            .and_then(|condition| condition.message.as_deref());
        if before != Some(message.as_str()) {
            tracing::warn!(%namespace, %name, %message, "resolution failed");
            context
                .event(
                    &subscription.object_ref(&()),
                    EventType::Warning,
                    EVENT_RESOLUTION_FAILED,
                    "Resolve",
                    Some(message.clone()),
                )
                .await;
        }
    }
    Ok(())
}
