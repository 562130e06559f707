//! Events about pull-secret propagation, after the writes they describe succeeded: none for the
//! routine steps of an install (the conditions say it), a summary of rotated copies on the
//! Subscription of the CSV, what needs an admin's attention on the copy or ServiceAccount itself
//! and on the Subscription. Notes hold names and reasons only, never secret data.
//! Touches the client.
//!
//! Metrics seam: [`observe_plan`] is where the counters of a later issue go (copies, rotations,
//! propagation lag; names in `pull_secrets::vocabulary`); today it logs the same facts as
//! structured fields.

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::Resource;
use kube::runtime::events::EventType;

use crate::api::{ClusterServiceVersion, Subscription};
use crate::controller::context::Context;
use crate::pull_secrets::vocabulary::{
    EVENT_PULL_SECRET_ATTACHED, EVENT_PULL_SECRET_COPIED, EVENT_PULL_SECRET_ROTATED,
};
use crate::pull_secrets::{CopyAction, EventObject, NamespacePlan, PlanEvent};
use crate::timing::elapsed;

/// A reference to a namespaced core object.
fn core_reference(kind: &str, namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some(kind.to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// A reference to any typed object.
pub fn reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    object.object_ref(&())
}

/// Where propagation events are shown besides the objects they are about.
pub struct Audience<'a> {
    /// The Subscription of the CSV; the CSV itself stands in when there is none.
    pub subscription: Option<&'a Subscription>,
    pub csv: &'a ClusterServiceVersion,
}

/// Routine steps of a first install: copies created and attached. The `PullCredentialsReady`
/// and `PullSecret*` conditions (on the CSV's report and the Subscription) already say that the
/// pull secrets are in place, and `observe_plan` logs each write: no Event (a first install
/// published eight Events for them, the largest share of its API requests).
const SILENT: [&str; 2] = [EVENT_PULL_SECRET_COPIED, EVENT_PULL_SECRET_ATTACHED];

/// Publishes the events of `events` (from a plan whose writes succeeded). Routine steps
/// ([`SILENT`]) publish nothing; copies rotated by this reconcile (those the fast path left)
/// make one event on the Subscription whose note lists them; anything an admin may have to act
/// on or would not expect (a restore, a conflict, a detach or delete) is an event on the copy or
/// ServiceAccount concerned and once per reason on the Subscription. Nothing goes to the
/// CatalogSource: a catalog used by 10,000 namespaces would collect an Event per namespace (a
/// rotation's summary there comes from the fast path, `fast_path.rs`).
pub async fn publish(
    context: &Context,
    namespace: &str,
    events: &[PlanEvent],
    audience: &Audience<'_>,
) {
    let action = "PropagatePullSecrets";
    let on = match audience.subscription {
        Some(subscription) => reference(subscription),
        None => reference(audience.csv),
    };
    let rotated = |event: &&PlanEvent| !event.warning && event.reason == EVENT_PULL_SECRET_ROTATED;
    let rotations: Vec<&str> = events
        .iter()
        .filter(rotated)
        .map(|event| event.message.as_str())
        .collect();
    if !rotations.is_empty() {
        context
            .event(
                &on,
                EventType::Normal,
                EVENT_PULL_SECRET_ROTATED,
                action,
                Some(rotations.join("; ")),
            )
            .await;
    }
    let mut by_reason: Vec<(&'static str, bool, Vec<&str>)> = Vec::new();
    for event in events
        .iter()
        .filter(|event| !rotated(event) && (event.warning || !SILENT.contains(&event.reason)))
    {
        let kind = match event.kind {
            EventObject::Secret => "Secret",
            EventObject::ServiceAccount => "ServiceAccount",
        };
        let regarding = core_reference(kind, namespace, &event.name);
        context
            .event(
                &regarding,
                event_type(event.warning),
                event.reason,
                action,
                Some(event.message.clone()),
            )
            .await;
        match by_reason
            .iter_mut()
            .find(|(reason, warning, _)| *reason == event.reason && *warning == event.warning)
        {
            Some((_, _, notes)) => notes.push(&event.message),
            None => by_reason.push((event.reason, event.warning, vec![&event.message])),
        }
    }
    for (reason, warning, notes) in by_reason {
        context
            .event(
                &on,
                event_type(warning),
                reason,
                action,
                Some(notes.join("; ")),
            )
            .await;
    }
}

fn event_type(warning: bool) -> EventType {
    if warning {
        EventType::Warning
    } else {
        EventType::Normal
    }
}

/// Logs what a plan did, with the facts the propagation metrics will count.
pub fn observe_plan(
    context: &Context,
    csv: &ClusterServiceVersion,
    plan: &NamespacePlan,
    sources: &std::collections::BTreeMap<String, Secret>,
) {
    if plan.is_converged() {
        return;
    }
    let now = context.clock.now();
    for write in &plan.copy_writes {
        let rotated = match &write.action {
            CopyAction::Update { changes, .. } => changes.data,
            CopyAction::Recreate { .. } => true,
            _ => false,
        };
        // Propagation lag: from the source's last write (its newest managed-fields entry) to now.
        let lag_ms = sources.get(&write.source_name).and_then(|source| {
            let written = source
                .metadata
                .managed_fields
                .iter()
                .flatten()
                .filter_map(|entry| entry.time.as_ref())
                .map(|time| time.0)
                .max()?;
            u64::try_from(elapsed(written, now).as_millis()).ok()
        });
        tracing::info!(
            namespace = %plan.namespace,
            csv = csv.metadata.name.as_deref().unwrap_or_default(),
            catalog = %plan.catalog,
            source = %write.source_name,
            rotated,
            lag_ms,
            "pull-secret copy written"
        );
    }
    for edit in &plan.service_account_edits {
        tracing::info!(
            namespace = %plan.namespace,
            service_account = %edit.name,
            added = ?edit.added,
            restored = ?edit.restored,
            removed = ?edit.removed,
            "service account imagePullSecrets edited"
        );
    }
    for deletion in &plan.deletions {
        tracing::info!(
            namespace = %plan.namespace,
            copy = %deletion.name,
            reason = ?deletion.reason,
            "pull-secret copy deleted"
        );
    }
}
