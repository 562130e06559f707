//! Events about pull-secret propagation, after the writes they describe succeeded: on the copy
//! or ServiceAccount itself, on the Subscription of the CSV, and (copy, rotate, delete) on the
//! CatalogSource. Notes hold names and reasons only, never secret data. Touches the client.
//!
//! Metrics seam: [`observe_plan`] is where the counters of a later issue go (copies, rotations,
//! propagation lag; names in `pull_secrets::vocabulary`); today it logs the same facts as
//! structured fields.

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::Resource;
use kube::runtime::events::EventType;

use crate::api::{CatalogSource, ClusterServiceVersion, Subscription};
use crate::controller::context::Context;
use crate::pull_secrets::vocabulary::{
    EVENT_PULL_SECRET_COPIED, EVENT_PULL_SECRET_DELETED, EVENT_PULL_SECRET_ROTATED,
};
use crate::pull_secrets::{CopyAction, EventObject, NamespacePlan, PlanEvent};
use crate::timing::elapsed;

/// A reference to a namespaced core object.
pub(super) fn core_reference(kind: &str, namespace: &str, name: &str) -> ObjectReference {
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

/// Where propagation events are also shown.
pub struct Audience<'a> {
    pub subscription: Option<&'a Subscription>,
    pub catalog_source: Option<&'a CatalogSource>,
}

/// Publishes the events of `events` (from a plan whose writes succeeded): each on the copy or
/// ServiceAccount it is about, and once per reason on the Subscription and (copy, rotate,
/// delete) on the CatalogSource, with the notes of that reason joined. One event per audience
/// and reason instead of one per object: a first install wrote 14 Events per Subscription, the
/// largest share of its requests (scripts/bench-scale.sh), and a CatalogSource used by 10,000
/// namespaces collected two Events per namespace.
pub async fn publish(
    context: &Context,
    namespace: &str,
    events: &[PlanEvent],
    audience: &Audience<'_>,
) {
    let action = "PropagatePullSecrets";
    let mut by_reason: Vec<(&'static str, bool, Vec<&str>)> = Vec::new();
    for event in events {
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
        let note = notes.join("; ");
        if let Some(subscription) = audience.subscription {
            context
                .event(
                    &reference(subscription),
                    event_type(warning),
                    reason,
                    action,
                    Some(note.clone()),
                )
                .await;
        }
        let catalog_wide = [
            EVENT_PULL_SECRET_COPIED,
            EVENT_PULL_SECRET_ROTATED,
            EVENT_PULL_SECRET_DELETED,
        ]
        .contains(&reason);
        if catalog_wide && let Some(catalog) = audience.catalog_source {
            context
                .event(
                    &reference(catalog),
                    event_type(warning),
                    reason,
                    action,
                    Some(note),
                )
                .await;
        }
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
