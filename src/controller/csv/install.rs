//! The install reconcile of one CSV: the phase machine around [`converge`](super::converge).
//!
//! Finalizer first; a CSV that a newer one replaces goes `Replacing`, then `Deleting` once the
//! newer one succeeded, and is deleted. Otherwise: no phase → `Pending`; dereference and check
//! the requirements (annotations, exactly one OperatorGroup with resolved targets, the bundle,
//! install modes) → `Failed` with OLM's reason, or `Pending` while the targets are not resolved;
//! a CSV that replaces one whose OperatorCondition holds upgrades stays `Pending` with reason
//! `OperatorConditionNotUpgradeable` (`controller::upgrade_gate`; an OperatorCondition change
//! looks again); met → `InstallReady`; from there on every reconcile converges the install.
//! `Pending` and `InstallReady` reached in the same reconcile are written with the phase it ends
//! in.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::controller::Action;

use super::bundle::BundleProblem;
use super::error::CsvError;
use super::observe::{self, Sources};
use super::requirements::{self, Targets, Unmet};
use super::status::{self, PhaseUpdate};
use super::{Csvs, converge, csv_writes};
use crate::api::{
    CatalogSource, ClusterServiceVersion, ClusterServiceVersionPhase as Phase, csv_reasons,
};
use crate::bundle::Bundle;
use crate::controller::backoff::TERMINAL_DELAY;
use crate::controller::keys::csv as csv_keys;
use crate::controller::upgrade_gate;
use crate::failure::ReconcileFailure;
use crate::pull_secrets::CatalogRef;

/// Everything the install needs, read once.
pub(super) struct Read {
    pub catalog: CatalogRef,
    pub bundle_image: String,
    pub targets: Targets,
    pub bundle: Arc<Bundle>,
    pub catalog_source: Option<Arc<CatalogSource>>,
    pub sources: BTreeMap<String, Secret>,
}

/// How a reconcile ended before the status step.
enum Early {
    Done(Action),
    Unmet(Unmet),
}

pub async fn reconcile(state: &Csvs, csv: &ClusterServiceVersion) -> Result<Action, CsvError> {
    let context = &state.context;
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let now = Time(context.clock.now());
    csv_writes::ensure_finalizer(&context.client, csv).await?;

    if let Some(replacer) = observe::replacer(context, &namespace, &name) {
        return replacement(state, csv, &replacer, &now).await;
    }
    // `Pending` and `InstallReady` are steps of this same reconcile when nothing holds the
    // install: they are staged in memory (their history entries kept) and written with the
    // phase the reconcile ends in, one status write instead of three (issue 12). A reconcile
    // that ends before any phase write writes what it staged (`flush`).
    let stored = csv;
    let mut working = csv.clone();
    let mut phase = status::phase(csv.status.as_ref());
    if phase.is_none() {
        working.status = status::set_phase(None, &PhaseUpdate::pending(), &now);
        phase = Some(Phase::Pending);
    }
    let csv = &working;
    let read = match dereference(state, csv, &namespace).await? {
        Ok(read) => read,
        Err(Early::Done(action)) => {
            flush(state, stored, csv).await?;
            return Ok(action);
        }
        Err(Early::Unmet(unmet)) => return unmet_status(state, csv, &unmet, &now).await,
    };
    if let Err(unmet) = requirements::installable(&read.bundle, &namespace, &read.targets) {
        return unmet_status(state, csv, &unmet, &now).await;
    }
    let reason = status::reason(csv.status.as_ref());
    let installing = matches!(
        phase,
        Some(Phase::InstallReady | Phase::Installing | Phase::Succeeded)
    ) || (phase == Some(Phase::Failed)
        && matches!(
            reason,
            Some(csv_reasons::COMPONENT_UNHEALTHY | csv_reasons::INSTALL_COMPONENT_FAILED)
        ));
    if !installing {
        if let Some(held) =
            upgrade_gate::held(&context.stores, &namespace, csv.spec.replaces.as_deref())
        {
            let update = PhaseUpdate::new(
                Phase::Pending,
                csv_reasons::OPERATOR_CONDITION_NOT_UPGRADEABLE,
                held.message,
            );
            csv_writes::set_status(&context.client, csv, &update, &now).await?;
            // The OperatorCondition's watch events bring the next look; the resync is the
            // same safety net every converged CSV has, not a poll of the gate.
            return Ok(Action::requeue(context.settings.resync));
        }
        let ready = status::set_phase(csv.status.as_ref(), &PhaseUpdate::install_ready(), &now);
        working.status = ready.or(working.status);
    }
    let csv = &working;
    match converge::install(state, csv, &namespace, &read, &now).await {
        Ok(action) => Ok(action),
        Err(error) if error.is_transient() => {
            flush(state, stored, csv).await?;
            Err(error)
        }
        Err(error) => {
            // Terminal for this content (an object the API refuses, a foreign object in the
            // way): status and a long requeue, no hot retry (DESIGN invariant 7).
            let message = crate::failure::error_chain(&error);
            let update = PhaseUpdate::new(
                Phase::Failed,
                csv_reasons::INSTALL_COMPONENT_FAILED,
                message,
            );
            csv_writes::set_status(&context.client, csv, &update, &now).await?;
            Ok(Action::requeue(TERMINAL_DELAY))
        }
    }
}

/// Writes the status staged in `working` when the reconcile ended without writing a phase
/// (the stored status differs from it): a CSV never stays without the phase it reached.
async fn flush(
    state: &Csvs,
    stored: &ClusterServiceVersion,
    working: &ClusterServiceVersion,
) -> Result<(), CsvError> {
    if let Some(status) = &working.status
        && stored.status.as_ref() != Some(status)
    {
        csv_writes::write_status(&state.context.client, stored, status).await?;
    }
    Ok(())
}

/// Reads the annotations, the OperatorGroup, the catalog, its sources and the bundle.
async fn dereference(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    namespace: &str,
) -> Result<Result<Read, Early>, CsvError> {
    let context = &state.context;
    let missing = |key: &str| {
        Early::Unmet(Unmet::Failed {
            reason: csv_reasons::REQUIREMENTS_NOT_MET,
            message: format!(
                "annotation {key} is missing or invalid; opcat cannot tell where this ClusterServiceVersion comes from"
            ),
        })
    };
    let Some(catalog) = observe::catalog_of(csv) else {
        return Ok(Err(missing(csv_keys::CATALOG)));
    };
    let Some(bundle_image) = csv.annotations().get(csv_keys::BUNDLE_IMAGE).cloned() else {
        return Ok(Err(missing(csv_keys::BUNDLE_IMAGE)));
    };
    let groups = observe::operator_groups(context, namespace);
    let groups: Vec<&crate::api::OperatorGroup> = groups.iter().map(Arc::as_ref).collect();
    let targets = match requirements::targets(namespace, &groups) {
        Ok(targets) => targets,
        Err(unmet) => return Ok(Err(Early::Unmet(unmet))),
    };
    let catalog_source = observe::catalog_source(context, &catalog);
    let sources = match catalog_source
        .as_deref()
        .map(|cs| observe::sources(context, cs))
    {
        Some(Sources::Known(sources)) => sources,
        None => BTreeMap::new(),
        Some(Sources::Unknown(secret)) => {
            tracing::debug!(namespace, csv = %csv.name_any(), secret, "source secret not listed yet");
            return Ok(Err(Early::Done(Action::requeue(
                context.settings.wait_requeue,
            ))));
        }
    };
    // The bundle is opcat's own pull: the catalog's credentials, whatever the consent.
    let keyring = observe::keyring(sources.iter(), str::to_owned);
    let fetched = if bundle_image.is_empty() {
        // No image: the manifests are in the catalog (a registry server's `Bundle.object`).
        let package = csv
            .annotations()
            .get(csv_keys::PACKAGE)
            .cloned()
            .unwrap_or_default();
        match state.bundles.get_embedded(
            &context.catalogs,
            (&catalog.namespace, &catalog.name),
            &package,
            &csv.name_any(),
        ) {
            Ok(Some(bundle)) => Ok(bundle),
            Ok(None) => {
                return Ok(Err(Early::Unmet(Unmet::Waiting {
                    message: format!(
                        "waiting for catalog source {}/{} to be read: the bundle's manifests are in the catalog",
                        catalog.namespace, catalog.name
                    ),
                })));
            }
            Err(problem) => Err(*problem),
        }
    } else {
        state
            .bundles
            .get(&context.registry, &bundle_image, &keyring)
            .await
    };
    let bundle = match fetched {
        Ok(bundle) => bundle,
        Err(BundleProblem::Registry(source)) if source.is_transient() => {
            return Err(CsvError::Bundle {
                csv: format!("{namespace}/{}", csv.name_any()),
                image: bundle_image,
                source,
            });
        }
        Err(BundleProblem::Task(message)) => {
            return Err(CsvError::BundleTask {
                csv: format!("{namespace}/{}", csv.name_any()),
                image: bundle_image,
                message,
            });
        }
        Err(problem) => {
            let message = match problem {
                BundleProblem::Registry(error) => crate::failure::error_chain(&error),
                BundleProblem::Invalid(error) => crate::failure::error_chain(&error),
                BundleProblem::InvalidReference(message) | BundleProblem::BadLayout(message) => {
                    message
                }
                BundleProblem::Task(message) => message,
            };
            return Ok(Err(Early::Unmet(Unmet::Failed {
                reason: csv_reasons::INSTALL_COMPONENT_FAILED_NO_RETRY,
                message: if bundle_image.is_empty() {
                    message
                } else {
                    format!("bundle image {bundle_image}: {message}")
                },
            })));
        }
    };
    Ok(Ok(Read {
        catalog,
        bundle_image,
        targets,
        bundle,
        catalog_source,
        sources,
    }))
}

/// Writes the status for an unmet requirement: `Failed` (long requeue; a change of the
/// OperatorGroup, CSV or Subscription triggers a new look) or `Pending` (fixed requeue).
pub(super) async fn unmet_status(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    unmet: &Unmet,
    now: &Time,
) -> Result<Action, CsvError> {
    let context = &state.context;
    let (update, requeue) = match unmet {
        Unmet::Failed { reason, message } => (
            PhaseUpdate::new(Phase::Failed, reason, message.clone()),
            TERMINAL_DELAY,
        ),
        Unmet::Waiting { message } => (
            PhaseUpdate::new(
                Phase::Pending,
                csv_reasons::REQUIREMENTS_NOT_MET,
                message.clone(),
            ),
            context.settings.wait_requeue,
        ),
    };
    csv_writes::set_status(&context.client, csv, &update, now).await?;
    Ok(Action::requeue(requeue))
}

/// A newer CSV replaces this one: `Replacing` until it succeeded, then `Deleting` and delete.
async fn replacement(
    state: &Csvs,
    csv: &ClusterServiceVersion,
    replacer: &ClusterServiceVersion,
    now: &Time,
) -> Result<Action, CsvError> {
    let client = &state.context.client;
    let namespace = csv.namespace().unwrap_or_default();
    if status::phase(replacer.status.as_ref()) == Some(Phase::Succeeded) {
        csv_writes::set_status(client, csv, &PhaseUpdate::replaced(), now).await?;
        csv_writes::delete(client, csv).await?;
        tracing::info!(namespace = %namespace, csv = %csv.name_any(), replacer = %replacer.name_any(), "replaced; deleting");
        return Ok(Action::await_change());
    }
    let update = PhaseUpdate::replacing(&namespace, &replacer.name_any());
    csv_writes::set_status(client, csv, &update, now).await?;
    Ok(Action::requeue(state.context.settings.wait_requeue))
}
