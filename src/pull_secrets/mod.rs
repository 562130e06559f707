//! Pull-secret propagation planning: pure functions, no client, no network, no clock (the time is
//! passed in).
//!
//! The controller reads the CatalogSource, its `spec.secrets` (by name), the copies (by label),
//! the install namespace, the CSVs and their ServiceAccounts; these functions say what to write:
//!
//! - [`names`]: copy names ([`copy_name`]), label and annotation keys.
//! - [`owners`]: the catalog a copy comes from, the CSVs that own it.
//! - [`copy`]: one copy: [`desired_copy`], and [`plan_copy`] → [`CopyAction`]
//!   (create / update in place / recreate / conflict / in sync).
//! - [`service_account`]: [`attach`] / [`detach`] on `imagePullSecrets`, keeping every foreign
//!   entry, recording what opcat added; [`ServiceAccountEdit::json_patch`].
//! - [`pod_template`]: [`inject`] / [`remove`] on a pod spec.
//! - [`scoping`]: least privilege: a copy holds only the registry entries its operators'
//!   images need ([`scope_source`]), unless the CatalogSource opts out.
//! - [`scope`]: consent ([`propagation_allowed`]), with the label selector parser in
//!   [`selector`].
//! - [`plan`]: everything for one catalog in one namespace ([`plan_namespace`]); [`report`]
//!   turns a plan into conditions and events.
//! - [`rotation`]: the rotation fast path ([`plan_rotation`]): which existing copies of a
//!   changed source take its new data in place at once.
//! - [`preflight`]: per-image registry results → the `PullCredentialsReady` condition.
//! - [`vocabulary`]: condition types and reasons, event reasons, metric names.

pub mod copy;
pub mod names;
pub mod owners;
pub mod plan;
pub mod pod_template;
pub mod preflight;
pub mod report;
pub mod rotation;
pub mod scope;
pub mod scoping;
pub mod selector;
pub mod service_account;
pub mod vocabulary;

#[cfg(test)]
mod tests;

pub use copy::{
    CopyAction, CopyChanges, CopyConflict, CopyError, desired_copy, kept_copy, plan_copy,
    scoped_copy, validate_source,
};
pub use names::copy_name;
pub use owners::{CatalogRef, CsvOwner};
pub use plan::{
    CopyDeletion, CopyWrite, DeletionReason, InstalledCsv, LeftOut, NamespaceInput, NamespacePlan,
    plan_namespace,
};
pub use pod_template::{inject, pod_service_account, remove};
pub use preflight::{ImageCheck, ImageOutcome, credentials_condition};
pub use report::{EventObject, PlanEvent};
pub use rotation::{
    RotatingCatalog, RotationPlan, RotationWrite, Skip, Skipped, plan_rotation, rotation_write,
};
pub use scope::{NotPropagated, propagation_allowed};
pub use scoping::{CopyScope, Scoped, copies_whole, scope_source};
pub use selector::{SelectorError, parse_selector};
pub use service_account::{RestorePolicy, ServiceAccountEdit, attach, detach};
pub use vocabulary::{ConditionStatus, PullSecretCondition};
