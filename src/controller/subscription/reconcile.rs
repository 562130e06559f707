//! One Subscription reconcile: dereference (stores) → decide (pure) → create the Subscriptions
//! of new dependencies and the InstallPlan if one is missing (the only writes besides status)
//! → status (pure, written only when changed). The first three hold the namespace's lock.

use std::sync::Arc;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};

use super::SubscriptionContext;
use super::catalog_health::catalog_health;
use super::decide::{Decision, Inputs, Step, decide};
use super::error::SubscriptionError;
use super::install::Install;
use super::observe::{Observed, observe};
use super::plan_builder::{PlanInputs, build_install_plan};
use super::report::{Report, read_report};
use super::settle::{records_installed_first, settling};
use super::status::{StatusInputs, current_csv, desired_status, plan_listing, report_source};
use crate::api::conditions::find_condition;
use crate::api::subscription_status::RESOLUTION_FAILED;
use crate::api::{InstallPlan, Subscription};
use crate::controller::apply;
use crate::controller::clock::status_time;
use crate::controller::context::Context;
use crate::controller::stored_object::StoredSubscription;
use crate::controller::wiring::backoff_key_of;

/// Event reason: an InstallPlan was created.
pub const EVENT_INSTALL_PLAN_CREATED: &str = "InstallPlanCreated";
/// Event reason: a Subscription was created for a dependency.
pub const EVENT_DEPENDENCY_SUBSCRIBED: &str = "DependencySubscriptionCreated";
/// Event reason: resolution failed (or failed differently).
pub const EVENT_RESOLUTION_FAILED: &str = "ResolutionFailed";

/// Reconciles one Subscription.
pub async fn reconcile(
    stored: Arc<StoredSubscription>,
    ctx: Arc<SubscriptionContext>,
) -> Result<Action, SubscriptionError> {
    let context = &ctx.context;
    // Deleting a Subscription stops upgrades and nothing else (OLM): no finalizer, no cleanup;
    // the garbage collector removes its InstallPlans, the CSV keeps running.
    if stored.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // Decisions read the InstallPlan and CSV stores: deciding before they listed once (right
    // after a restart) would create a second InstallPlan for a CSV.
    if !stores_ready(context).await {
        return Ok(Action::await_change());
    }
    if ctx.own_writes.is_stale(
        stored.meta().uid.as_deref(),
        stored.meta().resource_version.as_deref(),
    ) {
        // The store still shows the version before our last status write; its watch event
        // brings the next reconcile.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    // Decisions and writes use the whole object; the store keeps a compact form (the key
    // metadata read above is the same in both).
    let subscription = Arc::new(stored.object());
    let namespace = subscription.namespace().unwrap_or_default();
    let name = subscription.name_any();

    // The namespace's Subscriptions resolve one at a time: see `created::NamespaceLocks`.
    let lock = ctx.locks.of(&namespace);
    let guard = lock.lock().await;
    let observed = observe(context, &ctx.created, &subscription);
    let seen = observed.seen();
    let decision = decide(&Inputs {
        subscription: &subscription,
        plans: &observed.plans,
        namespace_plans: &observed.namespace_plans,
        csvs: &observed.csvs,
        catalogs: &seen,
        subscriptions: &observed.subscriptions,
    });
    tracing::debug!(%namespace, %name, step = ?decision.step, "subscription decision");
    if decision.step == (Step::CatalogNotLoaded { quiet: true }) {
        // The catalogs are READY but not in memory yet (a restart): the CatalogSource
        // reconciler is loading them. Writing status now would only churn a converged
        // Subscription.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }

    if records_installed_first(&subscription, &decision) {
        // The installed CSV succeeded and an upgrade is due before the status showed that CSV
        // (its install's steps were awaited, see `settle`): the status records it first, at
        // latest known, and the upgrade is planned by the reconcile its write brings.
        drop(guard);
        let recorded = Decision {
            installed: decision.installed.clone(),
            step: Step::AtLatest,
        };
        write_status(&ctx, &subscription, &observed, &recorded, &observed.plans).await?;
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    let mut plans = observed.plans.clone();
    let mut created = false;
    if let Step::Install(install) = &decision.step
        && plan_listing(&plans, install.csvs()).is_none()
    {
        let plan = create_plan(&ctx, &subscription, &observed, install).await?;
        plans.push(plan);
        created = true;
    }
    drop(guard);

    if created {
        // The new plan changes within moments (its reconcile runs now) and its watch event
        // brings the next reconcile: the status is written then, once, instead of now and
        // again (issue 12).
        context
            .backoffs
            .succeeded(&backoff_key_of(super::CONTROLLER, subscription.as_ref()));
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    let moving_to = current_csv(&decision, &plans, subscription.status.as_ref(), &name);
    let now = k8s_openapi::jiff::Timestamp::now();
    if let Some(wait) = settling(moving_to.as_deref(), &plans, &observed.csvs, now) {
        return Ok(Action::requeue(wait));
    }
    write_status(&ctx, &subscription, &observed, &decision, &plans).await?;
    context
        .backoffs
        .succeeded(&backoff_key_of(super::CONTROLLER, subscription.as_ref()));
    Ok(match decision.step {
        Step::AtLatest | Step::ResolutionFailed { .. } => Action::requeue(context.settings.resync),
        // Planned before: only a dependency whose CSV was deleted (it is not reinstalled while
        // that plan exists); nothing to wait for.
        Step::Install(_) if !created => Action::requeue(context.settings.resync),
        _ => Action::requeue(context.settings.wait_requeue),
    })
}

/// Waits until the stores listed once (`false`: the manager is stopping first).
async fn stores_ready(context: &Context) -> bool {
    context.stores.wait_until_ready().await.is_ok()
}

/// Creates the Subscriptions of new dependencies, then the InstallPlan for `install` owned by
/// every Subscription it serves, and records the plan until the store lists it.
async fn create_plan(
    ctx: &SubscriptionContext,
    subscription: &Subscription,
    observed: &Observed,
    install: &Install,
) -> Result<InstallPlan, SubscriptionError> {
    let context = &ctx.context;
    let namespace = subscription.namespace().unwrap_or_default();
    let name = subscription.name_any();
    let mut owners: Vec<Subscription> = observed
        .subscriptions
        .iter()
        .filter(|sub| install.existing_subscriptions.contains(&sub.name_any()))
        .map(|sub| sub.as_ref().clone())
        .collect();
    let api: Api<Subscription> = Api::namespaced(context.client.clone(), &namespace);
    for new in &install.new_subscriptions {
        let new_name = new.name_any();
        let created = apply::create_typed(&api, new).await.map_err(|source| {
            SubscriptionError::CreateSubscription {
                namespace: namespace.clone(),
                name: name.clone(),
                dependency: new_name.clone(),
                source,
            }
        })?;
        let csv = new.spec.starting_csv.as_deref().unwrap_or_default();
        let why = new
            .annotations()
            .get(super::dependency_subscriptions::REQUIRED_BY_ANNOTATION)
            .map(|why| format!(" ({why})"))
            .unwrap_or_default();
        tracing::info!(
            %namespace,
            subscription = %name,
            dependency = %new_name,
            %csv,
            catalog = %format!("{}/{}", new.spec.catalog_source_namespace, new.spec.catalog_source),
            "created Subscription for a dependency"
        );
        context
            .event(
                &subscription.object_ref(&()),
                EventType::Normal,
                EVENT_DEPENDENCY_SUBSCRIBED,
                "Resolve",
                Some(format!(
                    "created Subscription {new_name} to install dependency {csv} from catalog \
                     {}/{}{why}",
                    new.spec.catalog_source_namespace, new.spec.catalog_source
                )),
            )
            .await;
        owners.push(created);
    }
    let mut all_owners: Vec<&Subscription> = owners.iter().collect();
    all_owners.push(subscription);
    let plan = build_install_plan(&PlanInputs {
        subscription,
        entries: &install.entries,
        owners: &all_owners,
        generation: observed.next_generation,
    });
    let plans: Api<InstallPlan> = Api::namespaced(context.client.clone(), &namespace);
    let csvs: Vec<&str> = install.csvs().collect();
    let created = apply::create_typed(&plans, &plan).await.map_err(|source| {
        SubscriptionError::CreateInstallPlan {
            namespace: namespace.clone(),
            name: name.clone(),
            csv: csvs.join(", "),
            source,
        }
    })?;
    ctx.created.record(created.clone());
    let plan_name = created.name_any();
    tracing::info!(
        %namespace,
        subscription = %name,
        install_plan = %plan_name,
        csvs = ?csvs,
        approval = plan.spec.approval.as_str(),
        "created InstallPlan"
    );
    context
        .event(
            &subscription.object_ref(&()),
            EventType::Normal,
            EVENT_INSTALL_PLAN_CREATED,
            "Resolve",
            Some(format!(
                "created InstallPlan {plan_name} ({} approval) to install {}",
                plan.spec.approval.as_str(),
                describe(install)
            )),
        )
        .await;
    Ok(created)
}

/// The bundles of `install` in words: `a from channel c of catalog ns/n, replacing b; with
/// dependency d from channel ... of catalog ...`.
fn describe(install: &Install) -> String {
    let bundle = |entry: &crate::controller::plan_record::PlanEntry| {
        let upgrade = entry
            .replaces
            .as_deref()
            .map(|old| format!(", replacing {old}"))
            .unwrap_or_default();
        format!(
            "{} from channel {} of catalog {}{upgrade}",
            entry.name,
            entry.channel,
            entry.catalog()
        )
    };
    let own: Vec<String> = install
        .entries
        .iter()
        .filter(|entry| Some(entry.name.as_str()) == install.own_csv())
        .map(bundle)
        .collect();
    let dependencies: Vec<String> = install
        .entries
        .iter()
        .filter(|entry| Some(entry.name.as_str()) != install.own_csv())
        .map(bundle)
        .collect();
    match (own.is_empty(), dependencies.is_empty()) {
        (false, true) => own.join("; "),
        (false, false) => format!(
            "{}; with dependencies {}",
            own.join("; "),
            dependencies.join("; ")
        ),
        (true, _) => format!("dependencies {}", dependencies.join("; ")),
    }
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
        observed.catalog_sources(),
        current
            .and_then(|status| status.catalog_health.as_deref())
            .unwrap_or_default(),
        &now,
    );
    let current_csv = current_csv(decision, plans, current, &name);
    let report = read_report(report_source(
        current_csv.as_deref(),
        decision,
        &observed.csvs,
    ));
    if let Report::Malformed(error) = &report {
        tracing::debug!(%namespace, %name, %error, "ignoring unreadable pull-secret report");
    }
    let desired = desired_status(&StatusInputs {
        subscription: &name,
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
