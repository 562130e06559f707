//! The OperatorGroup controller: writes `status.namespaces` (the resolved target namespaces the
//! CSV reconciler reads) and `lastUpdated`, and flags namespaces with several OperatorGroups
//! (`MultipleOperatorGroup`, as OLM does); keeps the group's aggregated ClusterRoles and
//! `olm.providedAPIs` annotation in line with the APIs its CSVs provide (`roles`), and deletes
//! the roles of groups that are gone (`cleanup`, as OLM). It only computes targets; install-mode
//! checks and the `NoOperatorGroup`/`TooManyOperatorGroups` CSV failures belong to the CSV
//! reconciler.
//!
//! Triggers: OperatorGroups (an OperatorGroup's siblings in its namespace too, for the
//! several-groups condition), Namespaces (label changes change selector matches) and the CSVs
//! of its namespace, applied and deleted (their provided APIs). Shared watch
//! streams carry no deletions, so while a namespace has several groups the survivors are looked
//! at again after `wait_requeue`; a terminating namespace is dropped from selector matches as
//! soon as it starts terminating.

mod cleanup;
mod roles;
mod targets;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::super::apply::{self, ApplyError};
use super::super::clock::status_time;
use super::super::context::Context;
use super::super::manager::Shutdown;
use super::super::own_writes::OwnWrites;
use super::super::stores::{Indexed, Reflectors};
use super::super::wiring::{self, backoff_key_of};
use crate::api::OperatorGroup;
use crate::controller::stored_namespace::StoredNamespace;
use crate::controller::stored_object::StoredCsv;
use crate::failure::ReconcileFailure;

pub use targets::{InvalidSelector, desired_status, target_namespaces};

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::OPERATOR_GROUP;

/// Why an OperatorGroup reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum OperatorGroupError {
    /// The status write failed.
    #[error("cannot write the status of OperatorGroup {namespace}/{name}")]
    Status {
        namespace: String,
        name: String,
        #[source]
        source: ApplyError,
    },
    /// A write of the group's provided-API roles or annotation failed.
    #[error("cannot write the provided-API roles of OperatorGroup {namespace}/{name}")]
    Roles {
        namespace: String,
        name: String,
        #[source]
        source: ApplyError,
    },
}

impl ReconcileFailure for OperatorGroupError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Status { source, .. } | Self::Roles { source, .. } => source.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Status { source, .. } | Self::Roles { source, .. } => source.is_transient(),
        }
    }
}

/// The controller's context: the shared one and the status writes the store may not show yet.
struct GroupContext {
    context: Arc<Context>,
    own_writes: OwnWrites,
}

/// Builds the OperatorGroup controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let groups = context.stores.namespaced.operator_groups.clone();
    let for_namespace = {
        let groups = groups.clone();
        move |_: Arc<StoredNamespace>| groups_with_selector(&groups)
    };
    let siblings = {
        let groups = groups.clone();
        move |group: Arc<OperatorGroup>| groups_in_namespace(&groups, &group)
    };
    let of_csv = {
        let groups = groups.clone();
        move |csv: Arc<StoredCsv>| groups_of(&groups, &csv.namespace().unwrap_or_default())
    };
    let of_deleted_csv = of_csv.clone();
    let controller =
        Controller::for_shared_stream(reflectors.operator_groups.subscribe(), groups.store())
            .watches_shared_stream(reflectors.operator_groups.subscribe(), siblings)
            .watches_shared_stream(reflectors.namespaces.subscribe(), for_namespace)
            .watches_shared_stream(reflectors.csvs.subscribe(), of_csv)
            .watches_shared_stream(reflectors.csvs.subscribe_deleted(), of_deleted_csv);
    let state = Arc::new(GroupContext {
        context: context.clone(),
        own_writes: OwnWrites::default(),
    });
    let deleted = reflectors.operator_groups.subscribe_deleted();
    let run = wiring::run(CONTROLLER, controller, &context, shutdown, reconcile, state)
        .for_each(|_| std::future::ready(()));
    // The controller stops when `run` does; a cleanup that has nothing left to wait for (the
    // watches stopped) waits with it.
    let cleanup = cleanup::run(context, deleted).then(|()| std::future::pending::<()>());
    async move {
        tokio::select! {
            () = run => {}
            () = cleanup => {}
        }
    }
    .boxed()
}

fn groups_with_selector(groups: &Indexed<OperatorGroup>) -> Vec<ObjectRef<OperatorGroup>> {
    let by_selector = |group: &OperatorGroup| {
        group.spec.target_namespaces().is_empty() && group.spec.selector.is_some()
    };
    // Every Namespace event comes here: most clusters have no selector group, and finding that
    // out copies nothing.
    if groups.find(by_selector).is_none() {
        return Vec::new();
    }
    groups
        .state()
        .iter()
        .filter(|group| by_selector(group))
        .map(|group| ObjectRef::from_obj(group.as_ref()))
        .collect()
}

fn groups_of(groups: &Indexed<OperatorGroup>, namespace: &str) -> Vec<ObjectRef<OperatorGroup>> {
    groups
        .in_namespace(namespace)
        .iter()
        .map(|group| ObjectRef::from_obj(group.as_ref()))
        .collect()
}

fn groups_in_namespace(
    groups: &Indexed<OperatorGroup>,
    group: &OperatorGroup,
) -> Vec<ObjectRef<OperatorGroup>> {
    groups
        .in_namespace(&group.namespace().unwrap_or_default())
        .iter()
        .filter(|other| other.uid() != group.uid())
        .map(|other| ObjectRef::from_obj(other.as_ref()))
        .collect()
}

// Reconciles one OperatorGroup: reads the OperatorGroup, Namespace and CSV stores; writes the
// OperatorGroup's status, its provided-API roles and annotation.
async fn reconcile(
    group: Arc<OperatorGroup>,
    ctx: Arc<GroupContext>,
) -> Result<Action, OperatorGroupError> {
    let context = &ctx.context;
    let namespace = group.namespace().unwrap_or_default();
    let name = group.name_any();
    if group.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if ctx.own_writes.is_stale(
        group.meta().uid.as_deref(),
        group.meta().resource_version.as_deref(),
    ) {
        // The store still shows the version before our last status write.
        return Ok(Action::requeue(context.settings.wait_requeue));
    }
    if context.stores.wait_until_ready().await.is_err() {
        // The watch is gone: the manager is shutting down.
        return Ok(Action::await_change());
    }
    // Named targets are looked up by name; only a selector needs every namespace.
    let named = group.spec.target_namespaces();
    let namespaces = if named.is_empty() {
        context.stores.namespaces.state()
    } else {
        named
            .iter()
            .filter_map(|name| context.stores.namespaces.get(&ObjectRef::new(name)))
            .collect()
    };
    // Lazy: the labels are rebuilt only when a selector reads them.
    let existing = namespaces
        .iter()
        .filter(|ns| !ns.is_terminating())
        .map(|ns| (ns.name(), ns.labels().unwrap_or_default()));
    let targets = match target_namespaces(Some(&group.spec), existing) {
        Ok(targets) => targets,
        Err(error) => {
            tracing::warn!(%namespace, %name, %error, "OperatorGroup selects no namespace");
            Vec::new()
        }
    };
    let siblings = context
        .stores
        .namespaced
        .operator_groups
        .in_namespace(&namespace)
        .iter()
        .filter(|other| other.meta().deletion_timestamp.is_none())
        .count()
        .max(1);
    let now = status_time(context.clock.now());
    let desired = desired_status(group.status.as_ref(), targets, siblings, &namespace, &now);
    let api: Api<OperatorGroup> = Api::namespaced(context.client.clone(), &namespace);
    let written = apply::apply_status_typed(&api, &name, group.status.as_ref(), &desired)
        .await
        .map_err(|source| OperatorGroupError::Status {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    if let Some(written) = written {
        ctx.own_writes.wrote(
            &group.uid().unwrap_or_default(),
            group.meta().resource_version.as_deref(),
            written.meta().resource_version.as_deref(),
        );
        tracing::info!(
            %namespace,
            %name,
            namespaces = ?desired.namespaces,
            "OperatorGroup target namespaces updated"
        );
    }
    let provided =
        roles::ensure(context, &group)
            .await
            .map_err(|source| OperatorGroupError::Roles {
                namespace: namespace.clone(),
                name: name.clone(),
                source,
            })?;
    if let Some(annotated) = &provided.group {
        ctx.own_writes.wrote(
            &group.uid().unwrap_or_default(),
            group.meta().resource_version.as_deref(),
            annotated.meta().resource_version.as_deref(),
        );
    }
    context
        .backoffs
        .succeeded(&backoff_key_of(CONTROLLER, group.as_ref()));
    Ok(if siblings > 1 {
        Action::requeue(context.settings.wait_requeue)
    } else {
        Action::requeue(context.settings.resync)
    })
}
