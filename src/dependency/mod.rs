//! Dependencies between operators (issue 13), resolved as OLM v0 resolves them: a
//! Subscription's bundle together with every operator it needs, from every catalog visible to
//! the namespace, by a SAT solver ([`resolvo`]). Pure: reads validated catalogs and what the
//! caller says is installed, no I/O.
//!
//! - [`parse`](mod@parse): the declarations — `olm.package.required`, `olm.gvk.required`,
//!   `olm.constraint` (`package`, `gvk`, `all`, `any`, `not`; `cel` refused) and the legacy
//!   `metadata/dependencies.yaml` of registry+v1 bundles.
//! - [`provided`]: the APIs a bundle provides (`olm.gvk`, else its CRDs and owned API services).
//! - `order`: the catalogs and candidates in OLM's preference order.
//! - `provider`: the problem as resolvo sees it (packages, bundles, version sets).
//! - `plan`: the solution as a [`Plan`]; `explain`: a failure in sentences a user can act on.
//!
//! Resolution order (olm-api.md §6.2): the Subscription's own package only from its own catalog,
//! in [`crate::resolve::candidates`] order. Every other package from every visible catalog:
//! the installed operator first, then the requiring bundle's own catalog (for the
//! Subscription's bundle, the Subscription's catalog), then higher `spec.priority`, then
//! catalogs in the Subscription's namespace before the others, then catalog name; within a
//! catalog the default channel first, then the other channels by name, each from its head
//! along the upgrade graph. One bundle per package in the namespace, one provider per API,
//! installed operators kept unless this plan upgrades them (only the Subscription's own
//! package is upgraded here) and their own dependencies kept satisfied.

mod explain;
mod order;
pub mod parse;
mod plan;
mod pred;
pub mod provided;
mod provider;
mod solve;

#[cfg(test)]
mod explain_tests;
#[cfg(test)]
mod parse_tests;
#[cfg(test)]
mod solve_tests;
#[cfg(test)]
mod test_support;

use std::fmt;

use crate::fbc::property::Gvk;

pub use parse::{DependencyError, DependencyProblem, bundle_dependencies, metadata_dependencies};
pub use provided::provided_apis;
pub use solve::solve;

/// `(namespace, name)` of a CatalogSource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CatalogId {
    /// Namespace of the CatalogSource.
    pub namespace: String,
    /// Name of the CatalogSource.
    pub name: String,
}

impl CatalogId {
    /// A catalog id.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for CatalogId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// One catalog visible to the namespace being resolved.
#[derive(Debug, Clone)]
pub struct VisibleCatalog<'a> {
    /// The CatalogSource.
    pub id: CatalogId,
    /// CatalogSource `spec.priority` (higher is preferred; default 0).
    pub priority: i32,
    /// Its content.
    pub catalog: &'a crate::fbc::Catalog,
}

/// What a dependency declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    /// A bundle of `package` whose version is in `range` (blang/semver range text, checked when
    /// parsed).
    Package {
        /// The package.
        package: String,
        /// The version range.
        range: String,
    },
    /// A bundle providing this API.
    Gvk(Gvk),
    /// One bundle matching every constraint.
    All(Vec<Constraint>),
    /// One bundle matching at least one constraint.
    Any(Vec<Constraint>),
    /// One bundle matching none of the constraints (OLM's `not` takes a list: it is read as
    /// `Not(Any(list))`).
    Not(Box<Constraint>),
}

/// Renders as the user reads it: `package etcd >=0.9.0`,
/// `API etcd.database.coreos.com/v1beta2 EtcdCluster`, `all of (…, …)`.
impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, word: &str, items: &[Constraint]| {
            write!(f, "{word} (")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(")")
        };
        match self {
            Constraint::Package { package, range } if range.trim().is_empty() => {
                write!(f, "package {package}")
            }
            Constraint::Package { package, range } => write!(f, "package {package} {range}"),
            Constraint::Gvk(gvk) => write!(f, "API {}", gvk_text(gvk)),
            Constraint::All(items) => list(f, "all of", items),
            Constraint::Any(items) => list(f, "any of", items),
            Constraint::Not(inner) => write!(f, "not ({inner})"),
        }
    }
}

/// `group/version Kind`, as messages name an API.
pub fn gvk_text(gvk: &Gvk) -> String {
    if gvk.group.is_empty() {
        format!("{} {}", gvk.version, gvk.kind)
    } else {
        format!("{}/{} {}", gvk.group, gvk.version, gvk.kind)
    }
}

/// One dependency of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// What is required.
    pub constraint: Constraint,
    /// `olm.constraint` `failureMessage`, shown when the dependency cannot be met.
    pub failure_message: Option<String>,
}

/// An operator already installed in the namespace (from its CSV).
#[derive(Debug, Clone, Default)]
pub struct InstalledOperator {
    /// The CSV name.
    pub csv: String,
    /// Its package.
    pub package: String,
    /// Its version, when known.
    pub version: Option<semver::Version>,
    /// Where it came from (the CSV's catalog annotation), when known.
    pub catalog: Option<CatalogId>,
    /// APIs it provides: owned CRDs' and owned API services' group/version/kind.
    pub provides: Vec<Gvk>,
    /// Its own dependencies, kept satisfied by any plan.
    pub dependencies: Vec<Dependency>,
}

/// What the Subscription being resolved asks for.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionRequest {
    /// Subscription name (for messages).
    pub name: String,
    /// `spec.name`.
    pub package: String,
    /// `spec.channel`; `None` or empty: the default channel.
    pub channel: Option<String>,
    /// `spec.startingCSV` (first install only).
    pub starting_csv: Option<String>,
    /// `spec.sourceNamespace` / `spec.source`.
    pub catalog: CatalogId,
    /// `status.installedCSV`, if any.
    pub installed: Option<String>,
    /// The installed CSV's version, if known.
    pub installed_version: Option<semver::Version>,
}

/// Everything one resolution reads.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The namespace being resolved (the Subscription's).
    pub namespace: &'a str,
    /// The Subscription.
    pub subscription: SubscriptionRequest,
    /// Every catalog visible to the namespace (its own and the global catalog namespace's), in
    /// any order.
    pub catalogs: Vec<VisibleCatalog<'a>>,
    /// Operators installed in the namespace (including the Subscription's own CSV).
    pub installed: Vec<InstalledOperator>,
}

/// The result of a resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The Subscription's installed CSV is the latest its channel offers and every
    /// dependency is satisfied.
    AtLatest {
        /// The installed CSV.
        installed: String,
        /// The channel searched.
        channel: String,
    },
    /// Install these bundles.
    Install(Plan),
}

/// Bundles to install, dependencies before their dependents, the Subscription's own bundle last
/// (absent when the Subscription stays on its installed CSV and only a missing dependency of an
/// installed operator is installed). Dependencies already met by an installed operator are not
/// listed: they are reused.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The bundles, in install order.
    pub bundles: Vec<PlannedBundle>,
}

/// One bundle of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedBundle {
    /// Package, channel, CSV name, version, image, and the installed CSV it replaces.
    pub bundle: crate::resolve::BundleRef,
    /// The catalog it comes from.
    pub catalog: CatalogId,
    /// `None` for the Subscription's own bundle; for a dependency, the CSV whose requirement
    /// brought it in and that requirement in words ("requires package etcd >=0.9.0").
    pub required_by: Option<(String, String)>,
}

/// Why no plan exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// No set of bundles satisfies every requirement; the message names the chain.
    #[error("{message}")]
    Unsatisfiable {
        /// One sentence per cause, one per line, sorted.
        message: String,
    },
    /// The Subscription itself cannot be resolved (package, channel or starting CSV missing).
    #[error(transparent)]
    Resolve(#[from] crate::resolve::ResolveError),
    /// A bundle that the resolution needed declares a malformed dependency.
    #[error(transparent)]
    InvalidDependency(#[from] DependencyError),
}

impl SolveError {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            SolveError::Unsatisfiable { .. } => "constraints_not_satisfiable",
            SolveError::Resolve(error) => error.kind(),
            SolveError::InvalidDependency(_) => "invalid_dependency",
        }
    }
}
