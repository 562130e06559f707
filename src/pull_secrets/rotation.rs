//! The rotation fast path, pure: when a source Secret's data changed, which of its existing
//! copies can take the new data right away, and why the others are left to the full CSV
//! reconcile. No client, no clock.
//!
//! Only a copy whose single difference from its desired state is `data` is written here, with
//! the same planner the CSV reconcile uses ([`desired_copy`] then [`plan_copy`]): its owners are
//! taken from the copy's own CSV ownerReferences, so the plan is a data-only
//! [`CopyAction::Update`] exactly when nothing but the data changed. Anything else (a new
//! source UID, edited labels, a `type` change or an immutable copy that needs a recreate, a
//! name clash, a copy without owners, a namespace that withdrew consent) is the CSV reconcile's,
//! which still runs for every CSV of the catalogs.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;

use super::copy::{CopyAction, CopyChanges, CopyError, desired_copy, plan_copy};
use super::owners::{CatalogRef, CsvOwner, copy_source_labels, is_csv_owner, source_label_values};
use super::scope::{NotPropagated, propagation_allowed};
use super::scoping::{CopyScope, copies_whole};

/// A CatalogSource that lists the rotated Secret in `spec.secrets`.
#[derive(Clone, Copy, Debug)]
pub struct RotatingCatalog<'a> {
    /// The CatalogSource (in the source Secret's namespace).
    pub catalog: &'a CatalogRef,
    /// Its annotations (the `opcat.dev/propagate-to` selector).
    pub annotations: Option<&'a BTreeMap<String, String>>,
}

/// One copy to update in place. It names the copy, not the object to write: the write is built
/// from the copy as stored when it is sent ([`rotation_write`]), so a plan for 10,000 copies
/// does not hold 10,000 Secrets while the writes go out one by one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotationWrite {
    /// Namespace of the copy.
    pub namespace: String,
    /// Name of the copy.
    pub name: String,
    /// The catalog the copy belongs to.
    pub catalog: CatalogRef,
}

/// Why a copy of the rotated source is not written by the fast path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// It already carries the source's data.
    InSync,
    /// The namespace may not receive the catalog's secrets (any more).
    NotPropagated(NotPropagated),
    /// No CSV owns it: the CSV reconcile decides whether it goes.
    NoOwner,
    /// Its name is not the one the catalog's copy of this source must have.
    UnexpectedName,
    /// It needs more than new data (labels, annotations, owners): an update by the CSV reconcile.
    NotDataOnly(CopyChanges),
    /// It must be deleted and created again (`type` changed, or it is immutable).
    NeedsRecreate,
    /// The planner refuses to write it (a Secret that is not ours, or another source's).
    Conflict,
    /// The images of its owners are not known (an owner is not among the catalog's CSVs in
    /// the namespace): what it may hold is the CSV reconcile's to decide.
    ImagesUnknown,
    /// No image of its owners needs the rotated source any more: the CSV reconcile deletes it.
    NoMatchingEntry,
}

/// The images of the CSVs `owners` of a copy of `catalog`'s secrets in `namespace`, from the
/// CSVs of that catalog in that namespace; `None` when one of them is not found.
pub trait OwnerImages {
    fn images(
        &self,
        namespace: &str,
        catalog: &CatalogRef,
        owners: &[CsvOwner],
    ) -> Option<Vec<String>>;
}

impl<F> OwnerImages for F
where
    F: Fn(&str, &CatalogRef, &[CsvOwner]) -> Option<Vec<String>>,
{
    fn images(
        &self,
        namespace: &str,
        catalog: &CatalogRef,
        owners: &[CsvOwner],
    ) -> Option<Vec<String>> {
        self(namespace, catalog, owners)
    }
}

/// A copy of the rotated source left to the CSV reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Namespace of the copy.
    pub namespace: String,
    /// Name of the copy.
    pub name: String,
    /// Why.
    pub why: Skip,
}

/// The fast path's decisions for one source change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RotationPlan {
    /// Copies to update in place, sorted by namespace and name.
    pub writes: Vec<RotationWrite>,
    /// Copies of the source not written here, sorted by namespace and name.
    pub skipped: Vec<Skipped>,
}

/// Decides which `copies` (opcat's copies, any source) of `source` take its new data now.
/// `catalogs` are the CatalogSources listing `source` by name; `namespace_labels` gives the
/// labels of a namespace (`None` when unknown); `owner_images` the images of a copy's owners,
/// which decide the entries it holds (DESIGN invariant 12), never the copy's own content. An unusable source (not a pull secret) yields
/// the error: its copies keep their data, as the CSV reconcile keeps them. Copies are read one
/// at a time and not kept: a caller may build each from a compact form as it goes.
pub fn plan_rotation<'l>(
    source: &Secret,
    catalogs: &[RotatingCatalog<'_>],
    copies: impl IntoIterator<Item = impl Borrow<Secret>>,
    namespace_labels: impl Fn(&str) -> Option<&'l BTreeMap<String, String>>,
    owner_images: &impl OwnerImages,
) -> Result<RotationPlan, CopyError> {
    let source_name = source.metadata.name.as_deref().unwrap_or_default();
    let source_labels = source_label_values(
        source.metadata.namespace.as_deref().unwrap_or_default(),
        source_name,
    );
    let mut plan = RotationPlan::default();
    for copy in copies {
        let copy = copy.borrow();
        if copy_source_labels(copy).as_ref() != Some(&source_labels) {
            continue;
        }
        for rotating in catalogs {
            if !rotating.catalog.is_catalog_copy(copy) {
                continue;
            }
            let namespace = copy.metadata.namespace.clone().unwrap_or_default();
            let name = copy.metadata.name.clone().unwrap_or_default();
            match rotation_write(source, rotating, copy, &namespace_labels, owner_images)? {
                Ok(_) => plan.writes.push(RotationWrite {
                    namespace,
                    name,
                    catalog: rotating.catalog.clone(),
                }),
                Err(why) => plan.skipped.push(Skipped {
                    namespace,
                    name,
                    why,
                }),
            }
        }
    }
    plan.writes
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    plan.skipped
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(plan)
}

/// The write that gives `copy` (a copy of `source` for `rotating`'s catalog) the new data in
/// place: the copy as read with the new data, same name, uid and `resourceVersion` (a replace
/// under optimistic concurrency, DESIGN invariant 4). Or why the fast path leaves it alone.
/// [`plan_rotation`] decides with it, and the fast path builds each write with it again from
/// the copy as stored when the write is sent.
pub fn rotation_write<'l>(
    source: &Secret,
    rotating: &RotatingCatalog<'_>,
    copy: &Secret,
    namespace_labels: &impl Fn(&str) -> Option<&'l BTreeMap<String, String>>,
    owner_images: &impl OwnerImages,
) -> Result<Result<Secret, Skip>, CopyError> {
    let catalog = rotating.catalog;
    let source_name = source.metadata.name.as_deref().unwrap_or_default();
    let namespace = copy.metadata.namespace.as_deref().unwrap_or_default();
    let name = copy.metadata.name.as_deref().unwrap_or_default();
    if name != catalog.copy_name(source_name) {
        return Ok(Err(Skip::UnexpectedName));
    }
    if let Err(not) = propagation_allowed(
        catalog,
        rotating.annotations,
        namespace,
        namespace_labels(namespace),
    ) {
        return Ok(Err(Skip::NotPropagated(not)));
    }
    let owners: Vec<CsvOwner> = copy
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|owner| is_csv_owner(owner))
        .map(|owner| CsvOwner {
            name: owner.name.clone(),
            uid: owner.uid.clone(),
        })
        .collect();
    if owners.is_empty() {
        return Ok(Err(Skip::NoOwner));
    }
    let scope = if copies_whole(rotating.annotations) {
        CopyScope::Whole
    } else {
        let Some(images) = owner_images.images(namespace, catalog, &owners) else {
            return Ok(Err(Skip::ImagesUnknown));
        };
        CopyScope::of(None, images.iter().map(String::as_str))
    };
    let Some(desired) = desired_copy(source, catalog, source_name, namespace, &owners, &scope)?
    else {
        return Ok(Err(Skip::NoMatchingEntry));
    };
    Ok(match plan_copy(Some(copy), &desired) {
        CopyAction::Update {
            secret,
            changes:
                CopyChanges {
                    data: true,
                    metadata: false,
                    owners: false,
                },
        } => Ok(secret),
        CopyAction::Update { changes, .. } => Err(Skip::NotDataOnly(changes)),
        CopyAction::InSync => Err(Skip::InSync),
        CopyAction::Recreate { .. } => Err(Skip::NeedsRecreate),
        CopyAction::Conflict(_) | CopyAction::Create(_) => Err(Skip::Conflict),
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::pull_secrets::copy::{DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE};
    use crate::pull_secrets::names::{
        MANAGED_LABEL, NAMESPACE_OPT_OUT_LABEL, PROPAGATE_TO_ANNOTATION,
        PULL_SECRET_SCOPE_ANNOTATION, PULL_SECRET_SCOPE_WHOLE, SOURCE_NAME_LABEL,
        SOURCE_UID_ANNOTATION,
    };

    const NS: &str = "olm";
    const SOURCE: &str = "registry-creds";

    fn catalog(name: &str) -> CatalogRef {
        CatalogRef {
            namespace: NS.to_owned(),
            name: name.to_owned(),
        }
    }

    fn data(config: &str) -> BTreeMap<String, ByteString> {
        BTreeMap::from([(
            DOCKER_CONFIG_JSON_KEY.to_owned(),
            ByteString(config.as_bytes().to_vec()),
        )])
    }

    fn source(config: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(SOURCE.to_owned()),
                namespace: Some(NS.to_owned()),
                uid: Some("source-uid".to_owned()),
                ..ObjectMeta::default()
            },
            type_: Some(DOCKER_CONFIG_JSON_TYPE.to_owned()),
            data: Some(data(config)),
            ..Secret::default()
        }
    }

    /// The converged copy of the `v1` source from `catalog` in `namespace`, owned by `op.v1`.
    fn copy_in(catalog_name: &str, namespace: &str) -> Secret {
        let owner = CsvOwner {
            name: "op.v1".to_owned(),
            uid: format!("csv-{namespace}"),
        };
        let mut copy = desired_copy(
            &source("v1"),
            &catalog(catalog_name),
            SOURCE,
            namespace,
            &[owner],
            &CopyScope::Whole,
        )
        .unwrap()
        .unwrap();
        copy.metadata.uid = Some(format!("copy-{namespace}"));
        copy.metadata.resource_version = Some("7".to_owned());
        copy
    }

    fn copy(namespace: &str) -> Secret {
        copy_in("examples", namespace)
    }

    fn unknown(_: &str, _: &CatalogRef, _: &[CsvOwner]) -> Option<Vec<String>> {
        None
    }

    /// The opt-out: copies hold the whole source (these tests' data is not even JSON).
    fn whole() -> BTreeMap<String, String> {
        BTreeMap::from([(
            PULL_SECRET_SCOPE_ANNOTATION.to_owned(),
            PULL_SECRET_SCOPE_WHOLE.to_owned(),
        )])
    }

    fn where_(plan: &RotationPlan) -> (Vec<&str>, Vec<(&str, &Skip)>) {
        (
            plan.writes.iter().map(|w| w.namespace.as_str()).collect(),
            plan.skipped
                .iter()
                .map(|s| (s.namespace.as_str(), &s.why))
                .collect(),
        )
    }

    /// Plans the rotation of `source` for the catalog `examples` with `annotations`.
    fn plan_with(
        source: &Secret,
        annotations: Option<&BTreeMap<String, String>>,
        copies: &[Secret],
        labels: &BTreeMap<String, BTreeMap<String, String>>,
    ) -> Result<RotationPlan, CopyError> {
        let examples = catalog("examples");
        let catalogs = [RotatingCatalog {
            catalog: &examples,
            annotations,
        }];
        plan_rotation(source, &catalogs, copies, |ns| labels.get(ns), &unknown)
    }

    /// [`plan_with`], whole copies, no namespace labels.
    fn plan(source: &Secret, copies: &[Secret]) -> RotationPlan {
        plan_with(source, Some(&whole()), copies, &BTreeMap::new()).unwrap()
    }

    #[test]
    fn every_copy_of_the_source_takes_the_new_data_in_place() {
        let copies = [copy("team-b"), copy("team-a")];
        let plan = plan(&source("v2"), &copies);
        assert_eq!(where_(&plan), (vec!["team-a", "team-b"], vec![]));
        let examples = catalog("examples");
        assert_eq!(plan.writes[0].name, examples.copy_name(SOURCE));
        assert_eq!(plan.writes[0].catalog, examples);

        let whole = whole();
        let rotating = RotatingCatalog {
            catalog: &examples,
            annotations: Some(&whole),
        };
        let no_labels = |_: &str| None;
        let secret = rotation_write(&source("v2"), &rotating, &copies[1], &no_labels, &unknown)
            .unwrap()
            .unwrap();
        assert_eq!(secret.data, Some(data("v2")));
        assert_eq!(secret.metadata.uid.as_deref(), Some("copy-team-a"));
        assert_eq!(
            secret.metadata.resource_version.as_deref(),
            Some("7"),
            "a replace under the version read"
        );
        assert_eq!(
            secret.metadata.owner_references,
            copies[1].metadata.owner_references
        );
        assert_eq!(
            rotation_write(&source("v1"), &rotating, &copies[1], &no_labels, &unknown).unwrap(),
            Err(Skip::InSync),
            "built again from a copy that already has the data, there is nothing to write"
        );
    }

    #[test]
    fn copies_of_other_sources_and_other_catalogs_are_not_touched() {
        let mut other_source = copy("team-b");
        other_source
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(SOURCE_NAME_LABEL.to_owned(), "mirror-creds".to_owned());
        let copies = [copy("team-a"), other_source, copy_in("unlisted", "team-c")];
        let plan = plan(&source("v2"), &copies);
        assert_eq!(where_(&plan), (vec!["team-a"], vec![]));
    }

    #[test]
    fn namespaces_without_consent_are_skipped() {
        let mut selector = whole();
        selector.insert(
            PROPAGATE_TO_ANNOTATION.to_owned(),
            "kubernetes.io/metadata.name in (team-a,team-b)".to_owned(),
        );
        let labels = BTreeMap::from([(
            "team-b".to_owned(),
            BTreeMap::from([(NAMESPACE_OPT_OUT_LABEL.to_owned(), "disabled".to_owned())]),
        )]);
        let copies = [copy("team-a"), copy("team-b"), copy("team-c")];
        let plan = plan_with(&source("v2"), Some(&selector), &copies, &labels).unwrap();
        let (written, skipped) = where_(&plan);
        assert_eq!(written, ["team-a"]);
        assert!(matches!(
            skipped.as_slice(),
            [
                (
                    "team-b",
                    Skip::NotPropagated(NotPropagated::OptedOut { .. })
                ),
                (
                    "team-c",
                    Skip::NotPropagated(NotPropagated::NotSelected { .. })
                ),
            ]
        ));
    }

    #[test]
    fn anything_beyond_new_data_is_left_to_the_csv_reconcile() {
        let mut relabelled = copy("labels");
        relabelled
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .remove(SOURCE_UID_ANNOTATION);
        let mut immutable = copy("immutable");
        immutable.immutable = Some(true);
        let mut retyped = copy("retyped");
        retyped.type_ = Some("kubernetes.io/dockercfg".to_owned());
        let mut orphan = copy("orphan");
        orphan.metadata.owner_references = Some(Vec::new());
        let mut renamed = copy("renamed");
        renamed.metadata.name = Some("examples-registry-creds-old".to_owned());
        let mut foreign = copy("foreign");
        foreign
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(MANAGED_LABEL);
        let current = {
            let mut current = copy("current");
            current.data = Some(data("v2"));
            current
        };
        let copies = [
            relabelled, immutable, retyped, orphan, renamed, foreign, current,
        ];
        let plan = plan(&source("v2"), &copies);
        let (written, skipped) = where_(&plan);
        assert!(written.is_empty());
        assert_eq!(
            skipped,
            [
                ("current", &Skip::InSync),
                ("immutable", &Skip::NeedsRecreate),
                (
                    "labels",
                    &Skip::NotDataOnly(CopyChanges {
                        data: true,
                        metadata: true,
                        owners: false
                    })
                ),
                ("orphan", &Skip::NoOwner),
                ("renamed", &Skip::UnexpectedName),
                ("retyped", &Skip::NeedsRecreate),
            ],
            "a Secret without opcat's label is not even considered"
        );
    }

    #[test]
    fn a_source_that_is_no_pull_secret_updates_nothing() {
        let mut opaque = source("v2");
        opaque.type_ = Some("Opaque".to_owned());
        let result = plan_with(&opaque, Some(&whole()), &[copy("team-a")], &BTreeMap::new());
        assert!(matches!(result, Err(CopyError::NotAPullSecret { .. })));
    }

    /// Two registries, `a.example.com` and `b.example.com`, with password `password`.
    fn two_registries(password: &str) -> String {
        format!(
            r#"{{"auths":{{"a.example.com":{{"username":"u","password":"{password}"}},"b.example.com":{{"username":"u","password":"{password}"}}}}}}"#
        )
    }

    #[test]
    fn scoped_copies_take_only_the_entries_their_owners_images_need() {
        let examples = catalog("examples");
        let owner = CsvOwner {
            name: "op.v1".to_owned(),
            uid: "csv-team-a".to_owned(),
        };
        let on_a = CopyScope::of(None, ["a.example.com/op/controller:v1"]);
        let mut copy = desired_copy(
            &source(&two_registries("old")),
            &examples,
            SOURCE,
            "team-a",
            std::slice::from_ref(&owner),
            &on_a,
        )
        .unwrap()
        .unwrap();
        copy.metadata.uid = Some("copy-team-a".to_owned());
        // Someone who can edit Secrets in the namespace adds the other registry's key: the
        // rotation does not take the hint, the owners' images decide.
        let mut widened = copy.clone();
        widened.data = Some(data(&two_registries("junk")));
        let rotating = RotatingCatalog {
            catalog: &examples,
            annotations: None,
        };
        let no_labels = |_: &str| None;
        let images = |ns: &str, catalog: &CatalogRef, owners: &[CsvOwner]| {
            assert_eq!(
                (ns, catalog, owners),
                ("team-a", &examples, &[owner.clone()][..])
            );
            Some(vec!["a.example.com/op/controller:v1".to_owned()])
        };
        let new = source(&two_registries("new"));
        for copy in [&copy, &widened] {
            let written = rotation_write(&new, &rotating, copy, &no_labels, &images)
                .unwrap()
                .unwrap();
            let data = written.data.unwrap();
            let text = std::str::from_utf8(&data[DOCKER_CONFIG_JSON_KEY].0).unwrap();
            assert_eq!(
                text,
                r#"{"auths":{"a.example.com":{"password":"new","username":"u"}}}"#
            );
        }

        let elsewhere =
            |_: &str, _: &CatalogRef, _: &[CsvOwner]| Some(vec!["quay.io/other/op:v1".to_owned()]);
        assert_eq!(
            rotation_write(&new, &rotating, &copy, &no_labels, &elsewhere).unwrap(),
            Err(Skip::NoMatchingEntry)
        );
        assert_eq!(
            rotation_write(&new, &rotating, &copy, &no_labels, &unknown).unwrap(),
            Err(Skip::ImagesUnknown)
        );
    }

    #[test]
    fn plans_never_show_secret_data() {
        let plan = plan(&source("s3cret-token"), &[copy("team-a")]);
        let shown = format!("{plan:?}");
        assert!(shown.contains("team-a"));
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
