//! What the shared watches keep of the kinds that are stored once per install (Subscriptions,
//! ClusterServiceVersions, InstallPlans): the object with its labels, annotations and owner
//! references held as [`MetaMaps`] (strings and whole label sets shared between objects), its
//! spec shared between every object of the kind with an equal spec, and its status as is or in
//! a compact form of the kind's own ([`super::stored_subscription_status`]). Readers read `spec`
//! and `status` as fields, the maps through [`Stored::label`] and [`Stored::annotation`] (or
//! [`Labelled`], which whole objects implement too), and get the whole object back with
//! [`Stored::object`].
//!
//! Why: these were the stores' largest objects. At 10,000 namespaces (scripts/bench-scale.sh)
//! a CSV held about 6.6 kB (3 kB of it metadata maps, 1.6 kB a spec equal in every namespace
//! that installed the bundle), an InstallPlan 4.5 kB (2.8 kB metadata maps: its bundle record
//! annotation alone is half a kilobyte, the same in every namespace) and a Subscription 4.4 kB
//! (3.2 kB status); stored, 2.7, 1.7 and 2.3 kB.
//!
//! A stored form is the same API resource as its kind (group, version, kind, plural), so `Api`
//! and the watcher request it as usual; it is deserialised as the kind, trimmed
//! ([`super::store_trim::Trim`]) and converted.
//!
//! The key `ObjectMeta` keeps everything but the three maps: name, namespace, uid,
//! resourceVersion, generation, creation and deletion timestamps, finalizers. So kube's
//! reflector, the echo filters and `ResourceExt` read those as usual; `ResourceExt::labels`,
//! `annotations` and `owner_references` of a stored object are empty, which is why readers go
//! through the methods here.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use super::compact_meta::MetaMaps;
use super::store_trim::Trim;
use crate::interner::{Interner, Strings};

/// The shared tables of one kind's stored objects.
pub struct Tables<Spec> {
    /// Label, annotation and owner-reference strings.
    pub strings: Strings,
    /// Specs: one copy per distinct spec.
    pub specs: Interner<Spec>,
}

impl<Spec> Default for Tables<Spec> {
    fn default() -> Self {
        Self {
            strings: Strings::new(),
            specs: Interner::default(),
        }
    }
}

/// A kind stored as [`Stored`]: how it comes apart and back together.
pub trait Compacted: kube::Resource<DynamicType = ()> + DeserializeOwned + Sized {
    type Spec: Serialize + PartialEq + Clone + Debug + Send + Sync + 'static;
    type Status;
    /// The status as stored: the status itself, or a compact form of it.
    type StoredStatus: Clone + Debug + Send + Sync + 'static;

    /// The kind's shared tables.
    fn tables() -> &'static Tables<Self::Spec>;

    /// The object's parts.
    fn into_parts(self) -> (ObjectMeta, Self::Spec, Option<Self::Status>);

    /// The object from its parts.
    fn from_parts(metadata: ObjectMeta, spec: Self::Spec, status: Option<Self::Status>) -> Self;

    /// Drops what no reader of the store needs ([`Trim`]).
    fn trim_stored(&mut self);

    /// The status as stored.
    fn store_status(status: Self::Status) -> Self::StoredStatus;

    /// The status back from its stored form.
    fn load_status(stored: &Self::StoredStatus) -> Self::Status;
}

/// An object of kind `K` as the shared watch stores it (see the module docs).
pub struct Stored<K: Compacted> {
    /// Everything but labels, annotations and owner references (and managed fields, dropped).
    metadata: ObjectMeta,
    maps: MetaMaps,
    /// Shared between stored objects with equal specs ([`Tables::specs`]).
    pub spec: Arc<K::Spec>,
    pub status: Option<K::StoredStatus>,
}

impl<K: Compacted> From<K> for Stored<K> {
    fn from(mut object: K) -> Self {
        object.trim_stored();
        let (mut metadata, spec, status) = object.into_parts();
        let tables = K::tables();
        let maps = MetaMaps::take(&mut metadata, &tables.strings);
        Self {
            metadata,
            maps,
            spec: tables.specs.intern(Arc::new(spec)),
            status: status.map(K::store_status),
        }
    }
}

impl<K: Compacted> Stored<K> {
    /// The object as read (without its managed fields, and what [`Trim`] drops).
    pub fn object(&self) -> K {
        let mut metadata = self.metadata.clone();
        self.maps.restore(&mut metadata);
        let status = self.status.as_ref().map(K::load_status);
        K::from_parts(metadata, K::Spec::clone(&self.spec), status)
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.maps.label(key).map(|value| &**value)
    }

    /// The value of annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.maps.annotation(key).map(|value| &**value)
    }

    /// The owner references (empty when there are none).
    pub fn owner_references(&self) -> &[OwnerReference] {
        self.maps.owner_references()
    }
}

/// Reads the labels and annotations of an object, whole or stored: the readers that take either
/// read through this (`ResourceExt::labels` of a stored object is empty).
pub trait Labelled {
    /// The value of label `key`.
    fn label(&self, key: &str) -> Option<&str>;
    /// The value of annotation `key`.
    fn annotation(&self, key: &str) -> Option<&str>;
}

impl<K: Compacted> Labelled for Stored<K> {
    fn label(&self, key: &str) -> Option<&str> {
        Stored::label(self, key)
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        Stored::annotation(self, key)
    }
}

impl<T: Labelled + ?Sized> Labelled for Arc<T> {
    fn label(&self, key: &str) -> Option<&str> {
        (**self).label(key)
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        (**self).annotation(key)
    }
}

impl<T: Labelled + ?Sized> Labelled for &T {
    fn label(&self, key: &str) -> Option<&str> {
        (**self).label(key)
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        (**self).annotation(key)
    }
}

/// Whole CSVs read their maps (the readers that take either kind read CSVs).
impl Labelled for crate::api::ClusterServiceVersion {
    fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(String::as_str)
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
}

impl<K: Compacted> Clone for Stored<K> {
    fn clone(&self) -> Self {
        Self {
            metadata: self.metadata.clone(),
            maps: self.maps.clone(),
            spec: Arc::clone(&self.spec),
            status: self.status.clone(),
        }
    }
}

impl<K: Compacted> Debug for Stored<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("metadata", &self.metadata)
            .field("maps", &self.maps)
            .field("spec", &self.spec)
            .field("status", &self.status)
            .finish()
    }
}

impl<'de, K: Compacted> Deserialize<'de> for Stored<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(deserializer).map(Self::from)
    }
}

/// Stored objects were trimmed when they were converted.
impl<K: Compacted> Trim for Stored<K> {}

impl<K: Compacted> kube::Resource for Stored<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Implements [`Compacted`] for a kube `CustomResource` kind with `spec` and `status`; the
/// status is stored as `$stored` (the status itself when not given).
macro_rules! compacted {
    ($kind:ty, $spec:ty, $status:ty) => {
        compacted!(
            $kind,
            $spec,
            $status,
            $status,
            Clone::clone,
            std::convert::identity
        );
    };
    ($kind:ty, $spec:ty, $status:ty, $stored:ty, $load:expr, $store:expr) => {
        impl Compacted for $kind {
            type Spec = $spec;
            type Status = $status;
            type StoredStatus = $stored;

            fn tables() -> &'static Tables<$spec> {
                static TABLES: std::sync::LazyLock<Tables<$spec>> =
                    std::sync::LazyLock::new(Tables::default);
                &TABLES
            }

            fn into_parts(self) -> (ObjectMeta, $spec, Option<$status>) {
                (self.metadata, self.spec, self.status)
            }

            fn from_parts(metadata: ObjectMeta, spec: $spec, status: Option<$status>) -> Self {
                Self {
                    metadata,
                    spec,
                    status,
                }
            }

            fn trim_stored(&mut self) {
                Trim::trim(self);
            }

            fn store_status(status: $status) -> $stored {
                $store(status)
            }

            fn load_status(stored: &$stored) -> $status {
                $load(stored)
            }
        }
    };
}

compacted!(
    crate::api::InstallPlan,
    crate::api::InstallPlanSpec,
    crate::api::InstallPlanStatus
);
compacted!(
    crate::api::Subscription,
    crate::api::SubscriptionSpec,
    crate::api::SubscriptionStatus,
    super::stored_subscription_status::StoredSubscriptionStatus,
    super::stored_subscription_status::StoredSubscriptionStatus::load,
    super::stored_subscription_status::StoredSubscriptionStatus::store
);
compacted!(
    crate::api::ClusterServiceVersion,
    crate::api::ClusterServiceVersionSpec,
    crate::api::ClusterServiceVersionStatus
);

/// A stored InstallPlan.
pub type StoredPlan = Stored<crate::api::InstallPlan>;
/// A stored Subscription.
pub type StoredSubscription = Stored<crate::api::Subscription>;
/// A stored ClusterServiceVersion.
pub type StoredCsv = Stored<crate::api::ClusterServiceVersion>;

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::{Resource, ResourceExt};

    use super::*;
    use crate::api::install_plan::InstallPlanStatus;
    use crate::api::install_plan_status::PHASE_COMPLETE;
    use crate::api::{InstallPlan, InstallPlanSpec};
    use crate::controller::compact_meta::string_map;

    /// An InstallPlan in `namespace` as the watch lists it.
    fn plan(namespace: &str) -> InstallPlan {
        InstallPlan {
            metadata: ObjectMeta {
                name: Some("install-abcde".into()),
                namespace: Some(namespace.into()),
                uid: Some(format!("{namespace}-plan")),
                resource_version: Some("7".into()),
                generation: Some(1),
                creation_timestamp: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
                finalizers: Some(vec!["example.com/keep".into()]),
                labels: string_map(&[("app.kubernetes.io/managed-by", "opcat")]),
                annotations: string_map(&[
                    ("opcat.dev/bundles", "[{\"name\":\"widget.v1\"}]"),
                    ("opcat.dev/subscription", "widget"),
                ]),
                owner_references: Some(vec![OwnerReference {
                    api_version: "operators.coreos.com/v1alpha1".into(),
                    kind: "Subscription".into(),
                    name: "widget".into(),
                    uid: format!("{namespace}-subscription"),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: InstallPlanSpec {
                cluster_service_version_names: vec!["widget.v1".into()],
                source: Some("examples".into()),
                source_namespace: Some("olm".into()),
                ..InstallPlanSpec::default()
            },
            status: Some(InstallPlanStatus {
                phase: PHASE_COMPLETE.into(),
                ..InstallPlanStatus::default()
            }),
        }
    }

    #[test]
    fn readers_get_the_object_back_as_listed() {
        let stored = StoredPlan::from(plan("team-a"));
        assert_eq!(stored.object(), plan("team-a"));
        assert_eq!(stored.annotation("opcat.dev/subscription"), Some("widget"));
        assert_eq!(stored.label("app.kubernetes.io/managed-by"), Some("opcat"));
        assert_eq!(stored.owner_references()[0].name, "widget");
        // The key and what kube's reflector, the echo filters and the finalizer checks read.
        assert_eq!(stored.name_any(), "install-abcde");
        assert_eq!(stored.namespace().as_deref(), Some("team-a"));
        assert_eq!(stored.uid().as_deref(), Some("team-a-plan"));
        assert_eq!(stored.resource_version().as_deref(), Some("7"));
        assert_eq!(stored.finalizers(), ["example.com/keep"]);
        assert_eq!(StoredPlan::plural(&()), "installplans");
        // The maps are not in the key: readers go through `label` and `annotation`.
        assert!(stored.meta().annotations.is_none());
    }

    #[test]
    fn objects_with_equal_specs_share_one() {
        let one = StoredPlan::from(plan("team-a"));
        let two = StoredPlan::from(plan("team-b"));
        assert!(Arc::ptr_eq(&one.spec, &two.spec));
        let mut other = plan("team-c");
        other.spec.source = Some("mirror".into());
        let other = StoredPlan::from(other);
        assert!(!Arc::ptr_eq(&one.spec, &other.spec));
        assert_eq!(other.object().spec.source.as_deref(), Some("mirror"));
    }

    #[test]
    fn what_the_kind_trims_is_dropped_before_storing() {
        let mut listed = plan("team-a");
        let status = listed.status.as_mut().unwrap();
        status.plan = Some(vec![Default::default()]);
        // A finished plan's steps are dropped (see `Trim for InstallPlan`).
        assert_eq!(StoredPlan::from(listed).object(), plan("team-a"));
    }
}
