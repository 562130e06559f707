//! Constraints compiled into predicates over one candidate, as OLM evaluates them
//! (`resolver/cache/predicates.go`): a dependency is met by choosing **one** bundle for which
//! the predicate holds. So `all` is one bundle matching every part (a package range *and* an
//! API, say), `any` one bundle matching some part, and `not` one bundle matching none: OLM's
//! `notPredicate` is `!(p1 || p2 ...)` tested on each candidate, not a ban on the whole
//! solution. The solver gets a requirement whose candidates are exactly the bundles the
//! predicate accepts (see `provider`); a `not` therefore selects among every visible bundle,
//! and a bundle that itself matches its own requirement satisfies it, as in OLM.

use std::collections::BTreeSet;

use super::Constraint;
use super::parse::DependencyProblem;
use crate::fbc::property::Gvk;
use crate::semver_range::Range;

/// A predicate over one solvable.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Pred {
    /// Every candidate of the name.
    Everything,
    /// One solvable (an installed operator that must stay).
    Exact(u32),
    /// The API marker of this package (see `provider`).
    MarkerOf(String),
    /// A bundle of the package with a version in the range.
    Package {
        package: String,
        range: Range,
    },
    /// A bundle providing the API.
    Gvk(Gvk),
    All(Vec<Pred>),
    Any(Vec<Pred>),
    Not(Box<Pred>),
}

/// What a predicate is tested on.
pub(super) struct Subject<'a> {
    pub(super) id: u32,
    pub(super) marker: bool,
    pub(super) package: &'a str,
    pub(super) version: Option<&'a semver::Version>,
    pub(super) provides: &'a [Gvk],
}

/// Compiles a constraint; ranges were checked when parsed, but installed operators' dependencies
/// come from the caller, so they are checked again.
pub(super) fn compile(constraint: &Constraint) -> Result<Pred, DependencyProblem> {
    let list = |items: &[Constraint]| items.iter().map(compile).collect::<Result<Vec<_>, _>>();
    Ok(match constraint {
        Constraint::Package { package, range } => Pred::Package {
            package: package.clone(),
            range: Range::parse(range).map_err(|error| DependencyProblem::Range {
                package: package.clone(),
                range: range.clone(),
                error,
            })?,
        },
        Constraint::Gvk(gvk) => Pred::Gvk(gvk.clone()),
        Constraint::All(items) => Pred::All(list(items)?),
        Constraint::Any(items) => Pred::Any(list(items)?),
        Constraint::Not(inner) => Pred::Not(Box::new(compile(inner)?)),
    })
}

impl Pred {
    pub(super) fn test(&self, s: &Subject<'_>) -> bool {
        match self {
            Pred::Everything => !s.marker,
            Pred::Exact(id) => *id == s.id,
            Pred::MarkerOf(package) => s.marker && s.package == package,
            Pred::Package { package, range } => {
                !s.marker && s.package == package && s.version.is_some_and(|v| range.contains(v))
            }
            Pred::Gvk(gvk) => !s.marker && s.provides.contains(gvk),
            Pred::All(items) => !s.marker && items.iter().all(|p| p.test(s)),
            Pred::Any(items) => items.iter().any(|p| p.test(s)),
            Pred::Not(inner) => !s.marker && !inner.test(s),
        }
    }

    /// The packages whose bundles may match, or `None` for any package (a `not`, or an `all`
    /// without a positive part). `providers` lists the packages providing an API.
    pub(super) fn packages(
        &self,
        providers: &dyn Fn(&Gvk) -> BTreeSet<String>,
    ) -> Option<BTreeSet<String>> {
        match self {
            Pred::Package { package, .. } | Pred::MarkerOf(package) => {
                Some(BTreeSet::from([package.clone()]))
            }
            Pred::Gvk(gvk) => Some(providers(gvk)),
            Pred::All(items) => items
                .iter()
                .filter_map(|p| p.packages(providers))
                .reduce(|a, b| a.intersection(&b).cloned().collect()),
            Pred::Any(items) => items.iter().try_fold(BTreeSet::new(), |mut all, p| {
                all.extend(p.packages(providers)?);
                Some(all)
            }),
            Pred::Everything | Pred::Exact(_) | Pred::Not(_) => None,
        }
    }
}
