//! What a [`NamespacePlan`] tells users: the conditions for the Subscription (and, for missing
//! sources, the CatalogSource) and the events to emit once its writes succeeded. No text here
//! ever holds Secret data: only names, namespaces and reasons.

use super::copy::{CopyAction, CopyChanges};
use super::names::{PULL_SECRET_SCOPE_ANNOTATION, PULL_SECRET_SCOPE_WHOLE};
use super::plan::{DeletionReason, NamespacePlan};
use super::vocabulary::{
    CONDITION_PULL_SECRET_CONFLICT, CONDITION_PULL_SECRET_SOURCE_MISSING,
    CONDITION_PULL_SECRETS_NOT_PROPAGATED, CONDITION_PULL_SECRETS_SCOPED, ConditionStatus,
    EVENT_PULL_SECRET_ATTACHED, EVENT_PULL_SECRET_CONFLICT, EVENT_PULL_SECRET_COPIED,
    EVENT_PULL_SECRET_DELETED, EVENT_PULL_SECRET_DETACHED, EVENT_PULL_SECRET_RESTORE_WITHHELD,
    EVENT_PULL_SECRET_RESTORED, EVENT_PULL_SECRET_ROTATED, MAX_MESSAGE_LEN, PullSecretCondition,
    REASON_NO_CONFLICT, REASON_PROPAGATED, REASON_SCOPED_TO_IMAGES, REASON_SECRET_NAME_IN_USE,
    REASON_SOURCE_INVALID, REASON_SOURCE_NOT_FOUND, REASON_SOURCES_PRESENT,
    REASON_WHOLE_SECRETS_COPIED, bounded_list,
};

/// Kind of the object an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventObject {
    /// A Secret copy in the plan's namespace.
    Secret,
    /// A ServiceAccount in the plan's namespace.
    ServiceAccount,
}

/// An event to record after the plan's writes succeeded. The controller may also record it on
/// the CatalogSource and the Subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanEvent {
    /// Event reason (one of the `EVENT_*` constants).
    pub reason: &'static str,
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// Kind of the object the event is about.
    pub kind: EventObject,
    /// Its name, in the plan's namespace.
    pub name: String,
    /// Human-readable message.
    pub message: String,
}

impl NamespacePlan {
    /// The `PullSecretConflict`, `PullSecretsNotPropagated`, `PullSecretSourceMissing` and
    /// `PullSecretsScoped` conditions for the Subscriptions in this namespace.
    pub fn conditions(&self) -> Vec<PullSecretCondition> {
        let conflict = if self.conflicts.is_empty() {
            PullSecretCondition {
                type_: CONDITION_PULL_SECRET_CONFLICT,
                status: ConditionStatus::False,
                reason: REASON_NO_CONFLICT,
                message: "no foreign secret holds the name of a pull-secret copy".to_owned(),
            }
        } else {
            let items: Vec<String> = self.conflicts.iter().map(ToString::to_string).collect();
            PullSecretCondition {
                type_: CONDITION_PULL_SECRET_CONFLICT,
                status: ConditionStatus::True,
                reason: REASON_SECRET_NAME_IN_USE,
                message: bounded_list("", &items, MAX_MESSAGE_LEN),
            }
        };
        let not_propagated = match &self.not_propagated {
            Some(not) => PullSecretCondition {
                type_: CONDITION_PULL_SECRETS_NOT_PROPAGATED,
                status: ConditionStatus::True,
                reason: not.reason(),
                message: not.to_string(),
            },
            None => PullSecretCondition {
                type_: CONDITION_PULL_SECRETS_NOT_PROPAGATED,
                status: ConditionStatus::False,
                reason: REASON_PROPAGATED,
                message: format!(
                    "pull secrets of catalog source {} may be copied into namespace {}",
                    self.catalog, self.namespace
                ),
            },
        };
        vec![
            conflict,
            not_propagated,
            self.source_condition(),
            self.scoped_condition(),
        ]
    }

    /// The `PullSecretsScoped` condition: which registries each copy holds and which sources
    /// were left out, and why. Registry keys and names only.
    pub fn scoped_condition(&self) -> PullSecretCondition {
        let (namespace, catalog) = (&self.namespace, &self.catalog);
        let mut items: Vec<String> = self
            .held
            .iter()
            .map(|(source, registries)| {
                format!(
                    "secret {}/{source} as {namespace}/{} holds [{}]",
                    catalog.namespace,
                    catalog.copy_name(source),
                    registries.join(", ")
                )
            })
            .collect();
        items.extend(self.left_out.iter().map(|left| {
            format!(
                "secret {}/{} left out: none of its registries [{}] serves an image of the \
                 operators from catalog source {catalog} in namespace {namespace}",
                catalog.namespace,
                left.source_name,
                left.registries.join(", ")
            )
        }));
        if items.is_empty() {
            items.push("no copies".to_owned());
        }
        let (status, reason, lead) = if self.copy_whole {
            (
                ConditionStatus::False,
                REASON_WHOLE_SECRETS_COPIED,
                format!(
                    "catalog source {catalog} has {PULL_SECRET_SCOPE_ANNOTATION}: \
                     {PULL_SECRET_SCOPE_WHOLE}, copies hold whole secrets: "
                ),
            )
        } else {
            (
                ConditionStatus::True,
                REASON_SCOPED_TO_IMAGES,
                "copies hold only the registries the operators' images need: ".to_owned(),
            )
        };
        PullSecretCondition {
            type_: CONDITION_PULL_SECRETS_SCOPED,
            status,
            reason,
            message: bounded_list(&lead, &items, MAX_MESSAGE_LEN),
        }
    }

    /// The `PullSecretSourceMissing` condition (also for the CatalogSource).
    pub fn source_condition(&self) -> PullSecretCondition {
        let catalog = &self.catalog;
        let mut items: Vec<String> = self
            .missing_sources
            .iter()
            .map(|name| format!("secret {}/{name} not found", catalog.namespace))
            .collect();
        items.extend(self.invalid_sources.iter().map(ToString::to_string));
        if items.is_empty() {
            return PullSecretCondition {
                type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
                status: ConditionStatus::False,
                reason: REASON_SOURCES_PRESENT,
                message: format!(
                    "every secret in spec.secrets of catalog source {catalog} is a pull secret"
                ),
            };
        }
        let reason = if self.missing_sources.is_empty() {
            REASON_SOURCE_INVALID
        } else {
            REASON_SOURCE_NOT_FOUND
        };
        let lead = format!(
            "catalog source {catalog}: existing copies are kept until this is fixed or the name \
             is removed from spec.secrets: "
        );
        PullSecretCondition {
            type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
            status: ConditionStatus::True,
            reason,
            message: bounded_list(&lead, &items, MAX_MESSAGE_LEN),
        }
    }

    /// The events describing the plan's writes, to record once they succeeded.
    pub fn events(&self) -> Vec<PlanEvent> {
        let namespace = &self.namespace;
        let catalog = &self.catalog;
        let mut events = Vec::new();
        let mut push = |reason, warning, kind, name: &str, message: String| {
            events.push(PlanEvent {
                reason,
                warning,
                kind,
                name: name.to_owned(),
                message,
            });
        };
        for write in &self.copy_writes {
            let source = format!("{}/{}", catalog.namespace, write.source_name);
            let (reason, warning, name, what) = match &write.action {
                CopyAction::Create(secret) => (EVENT_PULL_SECRET_COPIED, false, secret, "copied"),
                CopyAction::Update {
                    secret,
                    changes: CopyChanges { data: true, .. },
                } => (
                    EVENT_PULL_SECRET_ROTATED,
                    false,
                    secret,
                    "updated the data of",
                ),
                CopyAction::Update {
                    secret,
                    changes: CopyChanges { metadata: true, .. },
                } => (
                    EVENT_PULL_SECRET_RESTORED,
                    true,
                    secret,
                    "restored opcat's labels on",
                ),
                CopyAction::Recreate { secret, .. } => (
                    EVENT_PULL_SECRET_ROTATED,
                    false,
                    secret,
                    "recreated (type or immutability changed)",
                ),
                _ => continue,
            };
            let name = name.metadata.name.as_deref().unwrap_or_default();
            let message = format!(
                "{what} pull-secret copy {namespace}/{name} of secret {source} from catalog source {catalog}"
            );
            push(reason, warning, EventObject::Secret, name, message);
        }
        for edit in &self.service_account_edits {
            let sa = format!("{namespace}/{}", edit.name);
            for (reason, warning, names, message) in [
                (
                    EVENT_PULL_SECRET_ATTACHED,
                    false,
                    &edit.added,
                    "appended to imagePullSecrets",
                ),
                (
                    EVENT_PULL_SECRET_RESTORED,
                    true,
                    &edit.restored,
                    "appended again after another writer removed them",
                ),
                (
                    EVENT_PULL_SECRET_RESTORE_WITHHELD,
                    true,
                    &edit.withheld,
                    "not restored: another writer keeps removing them",
                ),
                (
                    EVENT_PULL_SECRET_DETACHED,
                    false,
                    &edit.removed,
                    "removed from imagePullSecrets",
                ),
            ] {
                if !names.is_empty() {
                    let message = format!(
                        "service account {sa}: pull secrets [{}] {message}",
                        names.join(", ")
                    );
                    push(
                        reason,
                        warning,
                        EventObject::ServiceAccount,
                        &edit.name,
                        message,
                    );
                }
            }
        }
        for deletion in &self.deletions {
            let why = match deletion.reason {
                DeletionReason::RemovedFromCatalog => "its source was removed from spec.secrets",
                DeletionReason::Unused => "no operator from the catalog uses it any more",
                DeletionReason::NotPropagated => "the namespace may no longer receive it",
                DeletionReason::NoMatchingEntry => {
                    "no image of the operators using it needs any of its registries"
                }
            };
            let message = format!(
                "deleted pull-secret copy {namespace}/{} of catalog source {catalog}: {why}",
                deletion.name
            );
            push(
                EVENT_PULL_SECRET_DELETED,
                false,
                EventObject::Secret,
                &deletion.name,
                message,
            );
        }
        for conflict in &self.conflicts {
            push(
                EVENT_PULL_SECRET_CONFLICT,
                true,
                EventObject::Secret,
                &conflict.name,
                conflict.to_string(),
            );
        }
        events
    }
}
