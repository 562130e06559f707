//! The controller manager: one reconciler per kind, each split into dereference → validate →
//! build → apply → status. This module and its children are the only code that talks to the
//! Kubernetes API.

/// Makes `$stored`, a type a shared watch stores instead of the whole `$kind` object, the same
/// API resource as `$kind` (group, version, kind, plural: `Api` and the watcher request it as
/// usual, serde skips what it does not name), its metadata in the field `metadata`.
macro_rules! stored_form_of {
    ($stored:ty, $kind:ty) => {
        impl k8s_openapi::Resource for $stored {
            const API_VERSION: &'static str = <$kind as k8s_openapi::Resource>::API_VERSION;
            const GROUP: &'static str = <$kind as k8s_openapi::Resource>::GROUP;
            const KIND: &'static str = <$kind as k8s_openapi::Resource>::KIND;
            const VERSION: &'static str = <$kind as k8s_openapi::Resource>::VERSION;
            const URL_PATH_SEGMENT: &'static str =
                <$kind as k8s_openapi::Resource>::URL_PATH_SEGMENT;
            type Scope = <$kind as k8s_openapi::Resource>::Scope;
        }

        impl k8s_openapi::Metadata for $stored {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}

pub mod apply;
pub mod attached_service_account;
pub mod backoff;
pub mod catalog_source;
pub mod catalogs;
pub mod clock;
pub mod cluster_roles;
pub mod compact_meta;
pub mod context;
pub mod copied_csvs;
pub mod csv;
pub mod deployment_rollout;
pub mod drift;
pub mod embedded_bundle;
pub mod events;
pub mod field_owners;
pub mod install_plan;
pub mod installed_operators;
pub mod keys;
pub mod leader;
pub mod manager;
pub mod namespace_index;
pub mod olm_coexistence;
pub mod operator_api;
pub mod operator_condition;
pub mod own_writes;
pub mod owned_objects;
pub mod package_api;
pub mod plan_record;
pub mod resources;
pub mod source_secrets;
pub mod status_diff;
mod store_trim;
pub mod stored_copy;
pub mod stored_namespace;
pub mod stored_object;
pub mod stored_subscription_status;
pub mod stores;
pub mod subscription;
pub mod upgrade_gate;
pub mod wiring;
pub mod work_queue;
