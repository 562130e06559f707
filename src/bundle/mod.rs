//! registry+v1 bundles: load a bundle directory, check that opcat can install it, and render it
//! into the Kubernetes objects to apply for one install (pure: only [`load`] reads files).
//!
//! - [`annotations`]: `metadata/annotations.yaml`, the labels of a bundle image.
//! - [`load`]: [`Bundle::load`] reads `manifests/` and `metadata/`.
//! - [`kinds`]: the kinds a bundle may contain.
//! - [`validate`]: [`validate_for_install`], what opcat refuses to install.
//! - [`check`]: [`check::check_bundle_dir`], every problem at once for `opcat bundle validate`.
//! - [`install_mode`]: OperatorGroup targets → [`InstallModeType`](crate::api::cluster_service_version::InstallModeType).
//! - [`service_accounts`](mod@service_accounts): which ServiceAccounts the bundle uses and which opcat creates.
//! - [`ownership`]: labels, owner references and generated names of rendered objects.
//! - [`serving`]: the Deployments that serve webhooks and API services, and OLM's names for
//!   their Services, certificate Secrets and webhook configurations.
//! - [`render`](mod@render): [`render()`](render::render) → [`RenderedBundle`], objects grouped in apply order.
//! - [`images`](mod@images): every image the bundle runs or names.

pub mod annotations;
pub mod check;
mod document;
pub mod images;
pub mod install_mode;
pub mod kinds;
pub mod load;
pub mod ownership;
pub mod render;
pub mod service_accounts;
pub mod serving;
mod serving_checks;
pub mod validate;

pub use images::{csv_images, images, spec_images};
pub use install_mode::{InstallModeError, TargetNamespaces, check_install_mode, install_mode_for};
pub use load::{Bundle, BundleObject, LoadError, LoadReport, LoadWarning, ManifestProblem};
pub use render::{RenderContext, RenderError, RenderedBundle, render};
pub use service_accounts::{ServiceAccounts, service_accounts};
pub use validate::{InstallProblem, ValidationError, validate_for_install};
