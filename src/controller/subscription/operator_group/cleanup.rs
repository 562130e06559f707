//! Deletes the `olm.og.<group>.{admin,edit,view}-<hash>` ClusterRoles of OperatorGroups that are
//! gone, as OLM's `operatorGroupDeleted` does (`pkg/controller/operators/olm/operatorgroup.go`:
//! on the OperatorGroup informer's delete event, list the ClusterRoles labelled with the group's
//! owner labels and delete each). The roles of the provided APIs stay: their CRD or APIService
//! owns them, as with OLM.
//!
//! OLM puts no finalizer on OperatorGroups and neither does opcat (a ClusterRole cannot be owned
//! by a namespaced object, so the garbage collector cannot do it either). A sweep finds the
//! roles in the metadata cache of opcat's objects whose group ([`role_group`]: owner labels,
//! opcat's label and the name of that group's roles) is not in the OperatorGroup store, and
//! deletes each, by uid. It runs once the stores have listed (deletions missed while opcat was
//! stopped), at each deletion the OperatorGroup watch sees, and at every resync (a deletion
//! event missed by a lagging subscriber). It reads only caches: with nothing to delete it makes
//! no request (DESIGN invariant 5).

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::runtime::reflector::ObjectRef;

use super::super::super::apply;
use super::super::super::cluster_roles::{API_VERSION, KIND};
use super::super::super::context::Context;
use super::super::super::owned_objects::OwnedObject;
use super::super::super::stores::{Scope, Stores};
use crate::api::OperatorGroup;
use crate::operator_group_roles::role_group;

/// The roles of OperatorGroups that are gone, in the namespaces opcat manages.
fn orphaned_roles(stores: &Stores, scope: &Scope) -> Vec<OwnedObject> {
    stores.owned.of_kind(API_VERSION, KIND, |name, meta| {
        let label = |key: &str| meta.label(key).map(|value| &**value);
        let Some((namespace, group)) = role_group(name, label) else {
            return false;
        };
        let managed = match scope {
            Scope::Cluster => true,
            Scope::Namespace(managed) => managed == namespace,
        };
        let gone = stores
            .operator_groups
            .get(&ObjectRef::<OperatorGroup>::new(group).within(namespace))
            .is_none();
        managed && gone
    })
}

/// Deletes the roles of OperatorGroups that are gone; returns whether every delete succeeded.
async fn sweep(context: &Context) -> bool {
    let mut done = true;
    for role in orphaned_roles(&context.stores, &context.settings.scope) {
        let name = role.meta.name.as_deref().unwrap_or_default();
        let labels = role.meta.labels.as_ref();
        let (namespace, group) = role_group(name, |key| {
            labels
                .and_then(|labels| labels.get(key))
                .map(String::as_str)
        })
        .unwrap_or_default();
        let result = apply::delete_dynamic(
            &context.client,
            &role.resource,
            None,
            name,
            role.meta.uid.clone(),
        )
        .await;
        match result {
            Ok(()) => tracing::info!(
                cluster_role = %name,
                %namespace,
                operator_group = %group,
                "ClusterRole of a deleted OperatorGroup deleted"
            ),
            Err(error) => {
                done = false;
                tracing::warn!(
                    cluster_role = %name,
                    %namespace,
                    operator_group = %group,
                    error = %crate::failure::error_chain(&error),
                    "cannot delete the ClusterRole of a deleted OperatorGroup; retrying"
                );
            }
        }
    }
    done
}

/// Sweeps once the stores have listed, then at each OperatorGroup in `deleted` and every resync;
/// runs until `deleted` ends or the future is dropped (the controller stopped).
pub async fn run(context: Arc<Context>, deleted: impl Stream<Item = Arc<OperatorGroup>>) {
    if context.stores.wait_until_ready().await.is_err() {
        return;
    }
    let mut deleted = std::pin::pin!(deleted);
    let mut wait = std::time::Duration::ZERO;
    loop {
        let woken_by_deletion = tokio::select! {
            group = deleted.next() => {
                if group.is_none() {
                    return;
                }
                true
            }
            () = tokio::time::sleep(wait) => false,
        };
        let done = sweep(&context).await;
        // After a failure, or a deletion (a reconcile of the group in flight may still write a
        // role after this sweep), look again soon: from the caches, without a request.
        wait = if done && !woken_by_deletion {
            context.settings.resync
        } else {
            context.settings.wait_requeue
        };
    }
}
