//! The rotation fast path (touches the client: one `PUT` per copy, one event per CatalogSource): when a source pull
//! secret changes, its existing copies take the new data in place at once, without the full
//! reconcile of every CSV of its catalogs (about 19 requests each, 13 of them LISTs). The
//! decisions are `pull_secrets::plan_rotation`'s (the same planner as the CSV reconcile, data-only
//! updates only); this module reads the stores, writes, and tells users.
//!
//! It sits between the source notifications and the CSV controller: each changed source is
//! handled here first, then passed on, so the CSV reconciles it triggers (which still run, and
//! own everything the fast path leaves: recreates, labels, owners, missing copies, withdrawals)
//! find the copies updated instead of racing the fast path into conflicts. While it rotates a
//! source, CSV reconciles that run anyway (a resync) leave that source's data-only copy updates
//! to it ([`Rotating`]). It runs beside the CSV controller, so only a leader's manager writes,
//! and it stops with it.
//!
//! A write is a replace under the `resourceVersion` read from the copy store: a copy that
//! changed meanwhile gets a 409 and is left to the CSV reconcile. The CSV reconciles are
//! triggered once the copy store shows the writes (or after [`OBSERVE_WITHIN`]): triggered
//! earlier, they planned from copies the watch had not updated yet and replaced them again
//! under the old `resourceVersion`, a 409 and a retry each (about 3% of the copies at 2,000
//! namespaces). Copies are read from the label-selected store, never listed (DESIGN
//! invariant 11); events name objects, never data (invariant 8).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::copies;
use super::events::reference;
use super::observe::{catalog_of, namespace_labels};
use super::rotating::Rotating;
use crate::api::CatalogSource;
use crate::controller::apply::api_error_kind;
use crate::controller::context::Context;
use crate::controller::own_writes::Echoes;
use crate::controller::source_secrets::{SecretKey, SourceState};
use crate::controller::stored_copy::StoredCopy;
use crate::pull_secrets::vocabulary::EVENT_PULL_SECRET_ROTATED;
use crate::pull_secrets::{
    CatalogRef, CsvOwner, RotatingCatalog, RotationWrite, plan_rotation, rotation_write,
};

const ACTION: &str = "PropagatePullSecrets";

/// How long the fast path waits for the copy store to show its writes before it lets the CSV
/// reconciles run anyway.
const OBSERVE_WITHIN: Duration = Duration::from_secs(5);

/// How often the copy store is looked at meanwhile.
const OBSERVE_EVERY: Duration = Duration::from_millis(25);

/// Handles every source change from `sources`, then sends its key to `handled` (the CSV
/// controller's trigger). Runs until `sources` ends, the watches stop, or nobody listens on
/// `handled`. Changes wait until every store has listed: an unlisted copy store looks empty,
/// and a namespace store without labels would ignore opt-outs.
pub async fn run(
    context: Arc<Context>,
    echoes: Arc<Echoes>,
    rotating: Arc<Rotating>,
    sources: impl Stream<Item = SecretKey> + Send,
    handled: UnboundedSender<SecretKey>,
) {
    if context.stores.wait_until_ready().await.is_err() {
        return;
    }
    let mut sources = std::pin::pin!(sources);
    while let Some(key) = sources.next().await {
        let rotation = rotating.start(&key);
        rotate(&context, &echoes, &key).await;
        drop(rotation);
        if handled.unbounded_send(key).is_err() {
            return;
        }
    }
}

/// Updates the copies of source `key` whose only difference is the data.
async fn rotate(context: &Context, echoes: &Echoes, key: &SecretKey) {
    let SourceState::Present(source) = context.source_secrets.get(&key.0, &key.1) else {
        return;
    };
    let catalog_sources = listing_catalogs(context, key);
    if catalog_sources.is_empty() {
        return;
    }
    let refs: Vec<CatalogRef> = catalog_sources
        .iter()
        .map(|catalog| CatalogRef {
            namespace: key.0.clone(),
            name: catalog.name_any(),
        })
        .collect();
    let catalogs: Vec<RotatingCatalog<'_>> = refs
        .iter()
        .zip(&catalog_sources)
        .map(|(catalog, source)| RotatingCatalog {
            catalog,
            annotations: source.metadata.annotations.as_ref(),
        })
        .collect();
    let copies = context.stores.copies.state();
    let namespaces: BTreeMap<String, Option<BTreeMap<String, String>>> = copies
        .iter()
        .filter_map(|copy| copy.namespace())
        .map(|namespace| (namespace.clone(), namespace_labels(context, &namespace)))
        .collect();
    let plan = match plan_rotation(
        &source,
        &catalogs,
        copies.iter().map(|copy| copy.to_secret()),
        |namespace| namespaces.get(namespace).and_then(Option::as_ref),
        &|namespace: &str, catalog: &CatalogRef, owners: &[CsvOwner]| {
            owner_images(context, namespace, catalog, owners)
        },
    ) {
        Ok(plan) => plan,
        // Not a pull secret (any more): the CSV reconcile reports it; copies keep their data.
        Err(error) => {
            tracing::debug!(namespace = %key.0, secret = %key.1, error = %error, "source unusable; no fast rotation");
            return;
        }
    };
    // The plan names the copies; each write is built when it is sent. Released now, the
    // snapshot does not keep every copy's old version alive beside the new one the watch
    // stores as the writes land (at 10,000 namespaces the rotation was the controller's peak
    // memory, scripts/bench-scale.sh).
    drop(copies);
    drop(namespaces);
    for skipped in &plan.skipped {
        tracing::debug!(
            namespace = %skipped.namespace,
            copy = %skipped.name,
            why = ?skipped.why,
            "copy left to the CSV reconcile"
        );
    }
    if plan.writes.is_empty() {
        return;
    }
    let planned = plan.writes.len();
    let concurrency = usize::from(context.settings.concurrency.max(1));
    let rotation = Rotation {
        source: &source,
        catalogs: &catalogs,
        key,
    };
    let replaced: Vec<Replaced> = futures::stream::iter(plan.writes)
        .map(|write| write_one(context, echoes, &rotation, write))
        .buffer_unordered(concurrency)
        .filter_map(std::future::ready)
        .collect()
        .await;
    let written: Vec<&CatalogRef> = replaced.iter().map(|one| &one.catalog).collect();
    tracing::info!(
        namespace = %key.0,
        secret = %key.1,
        written = written.len(),
        left = planned - written.len(),
        skipped = plan.skipped.len(),
        "pull secret rotated; copies updated in place"
    );
    for catalog_source in &catalog_sources {
        let count = written
            .iter()
            .filter(|catalog| catalog.name == catalog_source.name_any())
            .count();
        if count > 0 {
            let note = format!(
                "updated the data of {count} pull-secret copies of secret {}/{} in place",
                key.0, key.1
            );
            context
                .event(
                    &reference(catalog_source.as_ref()),
                    EventType::Normal,
                    EVENT_PULL_SECRET_ROTATED,
                    ACTION,
                    Some(note),
                )
                .await;
        }
    }
    observed(context, replaced).await;
}

/// A copy the fast path replaced: its catalog, and the `resourceVersion` it replaced.
struct Replaced {
    catalog: CatalogRef,
    copy: ObjectRef<StoredCopy>,
    before: Option<String>,
}

impl Replaced {
    /// Whether the copy as stored (`None`: gone) shows the write: any version but the replaced
    /// one (a later change shows it too).
    fn seen_in(&self, stored: Option<&StoredCopy>) -> bool {
        stored.is_none_or(|copy| copy.meta().resource_version != self.before)
    }
}

/// Waits until the copy store shows every replaced copy, at most [`OBSERVE_WITHIN`].
async fn observed(context: &Context, mut replaced: Vec<Replaced>) {
    let deadline = tokio::time::Instant::now() + OBSERVE_WITHIN;
    loop {
        let store = &context.stores.copies;
        replaced.retain(|one| !one.seen_in(store.get(&one.copy).as_deref()));
        if replaced.is_empty() {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::info!(
                left = replaced.len(),
                "the copy watch has not shown every rotated copy yet; reconciling the CSVs anyway"
            );
            return;
        }
        tokio::time::sleep(OBSERVE_EVERY).await;
    }
}

/// The images of a copy's `owners`: the CSVs of that name and uid in `namespace` that come
/// from `catalog` (read from the CSV store, never from the copy, which anyone who may edit
/// Secrets in the namespace can change). `None` when one of them is not such a CSV.
fn owner_images(
    context: &Context,
    namespace: &str,
    catalog: &CatalogRef,
    owners: &[CsvOwner],
) -> Option<Vec<String>> {
    let csvs = context.stores.namespaced.csvs.in_namespace(namespace);
    let mut images = Vec::new();
    for owner in owners {
        let csv = csvs.iter().find(|csv| {
            csv.name_any() == owner.name && csv.uid().as_deref() == Some(owner.uid.as_str())
        })?;
        if catalog_of(&**csv).as_ref() != Some(catalog) {
            return None;
        }
        images.extend(crate::bundle::spec_images(&csv.spec));
    }
    Some(images)
}

/// The CatalogSources in the source's namespace that list it and are not being deleted.
fn listing_catalogs(context: &Context, key: &SecretKey) -> Vec<Arc<CatalogSource>> {
    let mut catalogs: Vec<Arc<CatalogSource>> = context
        .stores
        .catalog_sources
        .state()
        .into_iter()
        .filter(|catalog| {
            catalog.namespace().as_deref() == Some(key.0.as_str())
                && catalog.metadata.deletion_timestamp.is_none()
                && catalog.spec.secret_names().any(|name| name == key.1)
        })
        .collect();
    catalogs.sort_by_key(|catalog| catalog.name_any());
    catalogs
}

/// What each write of one rotation is built from.
struct Rotation<'a> {
    source: &'a Secret,
    catalogs: &'a [RotatingCatalog<'a>],
    key: &'a SecretKey,
}

impl Rotation<'_> {
    /// The write for the copy `write` names, built from the copy as stored now
    /// ([`rotation_write`], the planner's own decision): `None` when the copy is gone or needs
    /// more than new data by now (the CSV reconcile's).
    fn secret(&self, context: &Context, write: &RotationWrite) -> Option<Secret> {
        let reference = ObjectRef::new(&write.name).within(&write.namespace);
        let copy = context.stores.copies.get(&reference)?.to_secret();
        let rotating = self
            .catalogs
            .iter()
            .find(|rotating| *rotating.catalog == write.catalog)?;
        let labels = namespace_labels(context, &write.namespace);
        let labels_of = |_: &str| labels.as_ref();
        let images = |namespace: &str, catalog: &CatalogRef, owners: &[CsvOwner]| {
            owner_images(context, namespace, catalog, owners)
        };
        match rotation_write(self.source, rotating, &copy, &labels_of, &images) {
            Ok(Ok(secret)) => Some(secret),
            Ok(Err(why)) => {
                tracing::debug!(namespace = %write.namespace, copy = %write.name, why = ?why, "copy changed since the plan; left to the CSV reconcile");
                None
            }
            Err(error) => {
                tracing::debug!(namespace = %self.key.0, secret = %self.key.1, error = %error, "source unusable; no fast rotation");
                None
            }
        }
    }
}

/// Replaces one copy, then records the echo and counts the write. Returns what it replaced
/// when written; a failure (a 409 above all) is left to the CSV reconcile.
async fn write_one(
    context: &Context,
    echoes: &Echoes,
    rotation: &Rotation<'_>,
    write: RotationWrite,
) -> Option<Replaced> {
    let secret = rotation.secret(context, &write)?;
    let key = rotation.key;
    let api: Api<Secret> = Api::namespaced(context.client.clone(), &write.namespace);
    match copies::replace(&api, &secret).await {
        Ok(written) => {
            echoes.wrote(
                written.uid().as_deref(),
                written.resource_version().as_deref(),
            );
            context.metrics.copies_written(1);
            // No Event per copy: a rotation at 10,000 namespaces would publish 10,000 of them.
            // The CatalogSource's summary says how many copies took the new data.
            tracing::debug!(
                namespace = %write.namespace,
                copy = %write.name,
                source = %format!("{}/{}", key.0, key.1),
                catalog = %write.catalog,
                "pull-secret copy rotated"
            );
            Some(Replaced {
                copy: ObjectRef::new(&write.name).within(&write.namespace),
                before: secret.metadata.resource_version,
                catalog: write.catalog,
            })
        }
        Err(error) => {
            let kind = api_error_kind(&error);
            if kind == "conflict" {
                tracing::debug!(namespace = %write.namespace, copy = %write.name, "copy changed meanwhile; left to the CSV reconcile");
            } else {
                tracing::warn!(
                    namespace = %write.namespace,
                    copy = %write.name,
                    error = %crate::failure::error_chain(&error),
                    "cannot update pull-secret copy; left to the CSV reconcile"
                );
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn replaced(before: &str) -> Replaced {
        Replaced {
            catalog: CatalogRef {
                namespace: "olm".into(),
                name: "private".into(),
            },
            copy: ObjectRef::new("copy").within("team-a"),
            before: Some(before.into()),
        }
    }

    fn stored(version: &str) -> StoredCopy {
        StoredCopy::from(Secret {
            metadata: ObjectMeta {
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        })
    }

    #[test]
    fn a_write_is_seen_once_the_store_holds_any_other_version_or_nothing() {
        let write = replaced("41");
        assert!(
            !write.seen_in(Some(&stored("41"))),
            "the store still has the replaced copy"
        );
        assert!(write.seen_in(Some(&stored("42"))), "the write");
        assert!(write.seen_in(Some(&stored("57"))), "a later change");
        assert!(write.seen_in(None), "deleted since");
    }
}
