//! One original CSV's copies: dereference (the CSV, its OperatorGroup, the namespaces, the
//! OLMConfig and the existing copies, all from the watch stores) → plan ([`crate::copied_csv`])
//! → apply (only what the plan names; a converged CSV makes no request).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;

use super::error::CopyError;
use super::store::{Origin, StoredCopy};
use crate::api::olm_config::CLUSTER;
use crate::api::{ClusterServiceVersion, OLMConfig};
use crate::controller::apply::{self, ApplyError};
use crate::controller::context::Context;
use crate::controller::stored_object::StoredCsv;
use crate::copied_csv::{self, Hashes, Plan, Reach, STATUS_HASH, Written};

/// Writes to copies of one CSV in flight at once.
const PARALLEL_WRITES: usize = 8;

/// Whether the cluster's OLMConfig disables copies of AllNamespaces installs.
pub fn copies_disabled(context: &Context) -> bool {
    context
        .stores
        .olm_configs
        .get(&ObjectRef::<OLMConfig>::new(CLUSTER))
        .is_some_and(|config| !config.copied_csvs_enabled())
}

/// The resolved targets of the single OperatorGroup of `namespace` (`None`: none, several, or
/// not resolved yet: copies are left as they are).
pub fn group_targets(context: &Context, namespace: &str) -> Option<Vec<String>> {
    let groups = context
        .stores
        .namespaced
        .operator_groups
        .in_namespace(namespace);
    let [group] = groups.as_slice() else {
        return None;
    };
    group
        .status
        .as_ref()
        .and_then(|status| status.namespaces.clone())
        .filter(|namespaces| !namespaces.is_empty())
}

/// What the stores say about one original.
struct Observed {
    /// The original as stored (`None`: gone or being deleted).
    csv: Option<Arc<StoredCsv>>,
    copies: HashMap<Arc<str>, StoredCopy>,
}

fn observe(context: &Context, origin: &Origin) -> Observed {
    let (namespace, name) = (&*origin.0, &*origin.1);
    let csv = context
        .stores
        .csvs
        .get(&ObjectRef::new(name).within(namespace))
        .filter(|csv| csv.meta().deletion_timestamp.is_none());
    Observed {
        csv,
        copies: context.stores.copied_csvs.copies_of(namespace, name),
    }
}

/// The plan for one original, and the prototype and hashes it was made with.
struct Decided {
    plan: Plan,
    hashes: Option<Hashes>,
    prototype: Option<ClusterServiceVersion>,
}

fn decide(context: &Context, origin: &Origin, observed: &Observed) -> Decided {
    let namespace = &*origin.0;
    let namespaces = context.stores.namespaces.state();
    let live: Vec<&str> = namespaces
        .iter()
        .filter(|stored| !stored.is_terminating())
        .map(|stored| stored.name())
        .collect();
    let keep: BTreeSet<&str> = namespaces
        .iter()
        .filter(|stored| stored.is_terminating())
        .map(|stored| stored.name())
        .collect();
    let existing: BTreeMap<&str, Written<'_>> = observed
        .copies
        .iter()
        .map(|(namespace, copy)| (&**namespace, copy.written()))
        .collect();
    let Some(csv) = &observed.csv else {
        // Gone or being deleted: its copies go with it.
        let plan = copied_csv::plan(
            &BTreeSet::new(),
            &existing,
            &keep,
            &Hashes::of(&ClusterServiceVersion::new("", Default::default())),
            false,
        );
        return Decided {
            plan,
            hashes: None,
            prototype: None,
        };
    };
    let Some(targets) = group_targets(context, namespace) else {
        return Decided {
            plan: Plan::default(),
            hashes: None,
            prototype: None,
        };
    };
    let original = csv.object();
    let prototype = copied_csv::prototype(&original);
    let hashes = Hashes::of(&prototype);
    let wanted = copied_csv::wanted_namespaces(
        namespace,
        Reach::of(&targets),
        live.iter().copied(),
        copies_disabled(context),
    );
    let copiable = !copied_csv::is_uncopiable(original.status.as_ref());
    let plan = copied_csv::plan(&wanted, &existing, &keep, &hashes, copiable);
    Decided {
        plan,
        hashes: Some(hashes),
        prototype: Some(prototype),
    }
}

/// A write made: the target namespace and the hashes its copy carries now (`None`: deleted).
pub type Made = (String, Option<Hashes>);

/// Brings the copies of `origin` in line; returns the writes made, for the store to show
/// before the next plan ([`super::expectations`]). `held` names namespaces where a CSV that is
/// not a copy holds the name (skipped; see [`super::Held`]).
pub fn reconcile<'a>(
    context: &'a Context,
    origin: &'a Origin,
    held: &'a super::Held,
) -> BoxFuture<'a, Result<Vec<Made>, CopyError>> {
    async move { reconcile_now(context, origin, held).await }.boxed()
}

async fn reconcile_now(
    context: &Context,
    origin: &Origin,
    held: &super::Held,
) -> Result<Vec<Made>, CopyError> {
    let observed = observe(context, origin);
    let Decided {
        mut plan,
        hashes,
        prototype,
    } = decide(context, origin, &observed);
    plan.create
        .retain(|namespace| !held.holds(origin, namespace));
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    let (namespace, name) = (&*origin.0, &*origin.1);
    tracing::info!(
        csv = name,
        namespace,
        create = plan.create.len(),
        update = plan.update.len(),
        status = plan.status.len(),
        delete = plan.delete.len(),
        "bringing copied CSVs in line"
    );
    let mut errors: Vec<ApplyError> = Vec::new();
    let mut made: Vec<Made> = Vec::new();
    if !plan.delete.is_empty() {
        errors.extend(delete(context, name, &plan.delete, &observed.copies).await);
        made.extend(plan.delete.iter().map(|target| (target.clone(), None)));
    }
    let (Some(hashes), Some(prototype)) = (hashes, prototype) else {
        return first(errors, made);
    };
    // The copies' content comes from the CSV as the server has it: the store drops what only
    // user interfaces read (description, icon, `alm-examples`), which tenants see in a copy.
    let full = if plan.create.is_empty() && plan.update.is_empty() {
        None
    } else {
        let api: Api<ClusterServiceVersion> = Api::namespaced(context.client.clone(), namespace);
        match api.get_opt(name).await {
            Ok(Some(full)) => Some(copied_csv::prototype(&full)),
            Ok(None) => return first(errors, made),
            Err(source) => {
                errors.push(ApplyError::new(
                    "read",
                    "ClusterServiceVersion",
                    format!("{namespace}/{name}"),
                    source,
                ));
                return first(errors, made);
            }
        }
    };
    let writes = Writes {
        context,
        name,
        prototype: &prototype,
        full: full.as_ref(),
        hashes: &hashes,
        copies: &observed.copies,
        held,
        origin,
    };
    errors.extend(writes.run(&plan).await);
    let written = plan
        .create
        .iter()
        .filter(|target| !held.holds(origin, target));
    made.extend(
        written
            .chain(&plan.update)
            .chain(&plan.status)
            .map(|target| (target.clone(), Some(hashes.clone()))),
    );
    first(errors, made)
}

/// The first error, or the writes made.
fn first(errors: Vec<ApplyError>, made: Vec<Made>) -> Result<Vec<Made>, CopyError> {
    match errors.into_iter().next() {
        None => Ok(made),
        Some(error) => Err(CopyError::Write(Box::new(error))),
    }
}

async fn delete(
    context: &Context,
    name: &str,
    namespaces: &[String],
    copies: &HashMap<Arc<str>, StoredCopy>,
) -> Vec<ApplyError> {
    let deletes: Vec<BoxFuture<'_, Option<ApplyError>>> = namespaces
        .iter()
        .map(|namespace| {
            let uid = copies
                .get(namespace.as_str())
                .map(|copy| copy.uid.to_string());
            let api: Api<ClusterServiceVersion> =
                Api::namespaced(context.client.clone(), namespace);
            async move { apply::delete_typed(&api, name, uid).await.err() }.boxed()
        })
        .collect();
    in_parallel(deletes).await
}

/// Runs `writes`, [`PARALLEL_WRITES`] at a time; returns their errors.
async fn in_parallel(writes: Vec<BoxFuture<'_, Option<ApplyError>>>) -> Vec<ApplyError> {
    futures::stream::iter(writes)
        .buffer_unordered(PARALLEL_WRITES)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// The writes of one reconcile.
struct Writes<'a> {
    context: &'a Context,
    name: &'a str,
    /// From the stored CSV: the status written and the hashes' source.
    prototype: &'a ClusterServiceVersion,
    /// From the CSV as read: the non-status content written (when anything is created or
    /// updated).
    full: Option<&'a ClusterServiceVersion>,
    hashes: &'a Hashes,
    copies: &'a HashMap<Arc<str>, StoredCopy>,
    held: &'a super::Held,
    origin: &'a Origin,
}

impl Writes<'_> {
    async fn run(&self, plan: &Plan) -> Vec<ApplyError> {
        let status: BTreeSet<&str> = plan.status.iter().map(String::as_str).collect();
        let mut namespaces: Vec<(&str, Step)> = Vec::new();
        namespaces.extend(plan.create.iter().map(|ns| (ns.as_str(), Step::Create)));
        namespaces.extend(plan.update.iter().map(|ns| (ns.as_str(), Step::Update)));
        namespaces.extend(
            plan.status
                .iter()
                .filter(|ns| !plan.update.contains(ns))
                .map(|ns| (ns.as_str(), Step::Status)),
        );
        let writes: Vec<BoxFuture<'_, Option<ApplyError>>> = namespaces
            .into_iter()
            .map(|(namespace, step)| {
                let write_status = step == Step::Create || status.contains(namespace);
                async move { self.one(namespace, step, write_status).await.err() }.boxed()
            })
            .collect();
        in_parallel(writes).await
    }

    async fn one(&self, namespace: &str, step: Step, write_status: bool) -> Result<(), ApplyError> {
        let api: Api<ClusterServiceVersion> =
            Api::namespaced(self.context.client.clone(), namespace);
        let content = || {
            let mut copy = copied_csv::for_namespace(
                self.full.unwrap_or(self.prototype),
                namespace,
                self.hashes,
            );
            copy.status = None;
            copy
        };
        match step {
            Step::Create => {
                if let Err(error) = apply::create_typed(&api, &content()).await {
                    if is_already_exists(&error.source) {
                        // A CSV that is not a copy (an install of the same version there)
                        // holds the name: never overwritten.
                        tracing::warn!(
                            csv = self.name,
                            namespace,
                            "a ClusterServiceVersion that is not a copy holds the name; no copy there"
                        );
                        self.held.hold(self.origin, namespace);
                        return Ok(());
                    }
                    return Err(error);
                }
            }
            Step::Update => {
                let Some(existing) = self.copies.get(namespace) else {
                    return Ok(());
                };
                let mut copy = content();
                copy.metadata.resource_version = Some(existing.resource_version.to_string());
                if let Some(status_hash) = &existing.status {
                    copy.metadata
                        .annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(STATUS_HASH.to_owned(), status_hash.to_string());
                }
                apply::replace_typed(&api, &copy).await?;
            }
            Step::Status => {}
        }
        if write_status {
            apply::apply_status_typed(&api, self.name, None, &self.prototype.status).await?;
            apply::patch_annotation(&api, self.name, STATUS_HASH, Some(&self.hashes.status))
                .await?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Create,
    Update,
    Status,
}

fn is_already_exists(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists")
}
