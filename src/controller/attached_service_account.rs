//! What the shared ServiceAccount watch keeps of a ServiceAccount opcat attached pull secrets to:
//! the ServiceAccount's fields with its metadata maps held as [`CompactMeta`] (label and
//! annotation strings shared between objects). The one reader, the pull-secret planner, gets a
//! whole [`ServiceAccount`] back ([`AttachedServiceAccount::to_service_account`]).
//!
//! Why: a ServiceAccount opcat attached to carries four labels and two annotations; as an
//! [`ObjectMeta`] those cost about 1.5 kB (two `BTreeMap` leaves of eleven slots and a `String`
//! per key and value), three times the rest of the object. An install uses about three
//! ServiceAccounts (scripts/bench-scale.sh: `default` and the two its bundle ships).
//!
//! It is the same API resource as a ServiceAccount (group, version, kind, plural), so `Api` and
//! the watcher request `serviceaccounts` as usual; it is deserialised as a [`ServiceAccount`] and
//! converted.

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{LocalObjectReference, ObjectReference, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::compact_meta::CompactMeta;
use crate::interner::Strings;

/// Label and annotation strings of stored ServiceAccounts, shared.
static STRINGS: LazyLock<Strings> = LazyLock::new(Strings::new);

/// A ServiceAccount as the shared watch stores it.
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "ServiceAccount")]
pub struct AttachedServiceAccount {
    /// Name, namespace, `uid` and `resourceVersion` only (the store's key and what kube's
    /// reflector reads); the rest of the metadata is in `meta`.
    metadata: ObjectMeta,
    meta: CompactMeta,
    // The other fields of a ServiceAccount, held as fields rather than as a `ServiceAccount`
    // with empty metadata: that empty `ObjectMeta` alone took 360 bytes inline per stored
    // object.
    automount_service_account_token: Option<bool>,
    image_pull_secrets: Option<Vec<LocalObjectReference>>,
    secrets: Option<Vec<ObjectReference>>,
}

impl From<ServiceAccount> for AttachedServiceAccount {
    fn from(service_account: ServiceAccount) -> Self {
        // Destructured without `..`: a field added to `ServiceAccount` must be kept here too.
        let ServiceAccount {
            metadata: full,
            automount_service_account_token,
            image_pull_secrets,
            secrets,
        } = service_account;
        let (metadata, meta) = CompactMeta::split(full, &STRINGS);
        Self {
            metadata,
            meta,
            automount_service_account_token,
            image_pull_secrets,
            secrets,
        }
    }
}

impl AttachedServiceAccount {
    /// The ServiceAccount as read (without its managed fields and creation details, which no
    /// reader uses: see [`CompactMeta`]).
    pub fn to_service_account(&self) -> ServiceAccount {
        ServiceAccount {
            metadata: self.meta.joined(&self.metadata),
            automount_service_account_token: self.automount_service_account_token,
            image_pull_secrets: self.image_pull_secrets.clone(),
            secrets: self.secrets.clone(),
        }
    }
}

stored_form_of!(AttachedServiceAccount, ServiceAccount);

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};
    use kube::ResourceExt;

    use super::*;
    use crate::controller::compact_meta::string_map;

    fn attached() -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some("widget-controller".into()),
                namespace: Some("tenant-1".into()),
                uid: Some("sa-uid".into()),
                resource_version: Some("17".into()),
                labels: string_map(&[("opcat.dev/pull-secrets", "attached")]),
                annotations: string_map(&[("opcat.dev/added-pull-secrets", "[\"copy\"]")]),
                ..ObjectMeta::default()
            },
            image_pull_secrets: Some(vec![
                LocalObjectReference {
                    name: "theirs".into(),
                },
                LocalObjectReference {
                    name: "copy".into(),
                },
            ]),
            secrets: Some(vec![ObjectReference {
                name: Some("widget-controller-token".into()),
                ..ObjectReference::default()
            }]),
            automount_service_account_token: Some(false),
        }
    }

    #[test]
    fn the_planner_reads_back_the_service_account_as_listed() {
        let json = serde_json::to_value(attached()).unwrap();
        let stored: AttachedServiceAccount = serde_json::from_value(json).unwrap();
        assert_eq!(stored.to_service_account(), attached());
        // kube's reflector keys the store by these.
        assert_eq!(stored.name_any(), "widget-controller");
        assert_eq!(stored.namespace().as_deref(), Some("tenant-1"));
        assert_eq!(stored.resource_version().as_deref(), Some("17"));
        assert_eq!(stored.uid().as_deref(), Some("sa-uid"));
    }

    #[test]
    fn managed_fields_and_creation_details_are_not_stored() {
        let mut listed = attached();
        listed.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        listed.metadata.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let stored = AttachedServiceAccount::from(listed);
        assert_eq!(stored.to_service_account(), attached());
        assert_eq!(stored.metadata.labels, None);
    }
}
