//! The problem as resolvo sees it.
//!
//! - A resolvo *name* per operator package; its *solvables* are the installed operator of that
//!   package and every (catalog, bundle) offer (see `order`). resolvo picks at most one solvable
//!   per name: one bundle per package in the namespace.
//! - Each API gets a name of its own, `api:group/version/Kind`, with one marker solvable per
//!   package providing it. Every bundle or installed operator requires the markers of the
//!   APIs it provides, so two packages providing one API cannot both be chosen: "each API
//!   provided by exactly one installed or chosen operator" (OLM's `addInvariants`).
//! - A dependency is a requirement on the bundles its predicate accepts (`pred`): one version
//!   set when one package can match, else a union of version sets, one per (package, source),
//!   in the requiring bundle's preference order. Candidates are returned by
//!   `filter_candidates` in that order and `sort_candidates` keeps it, so each requirement
//!   tries the installed operator first, then its requirer's own catalog, then the others.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use resolvo::{
    ConditionalRequirement, NameId, Requirement, SolvableId, StringId, VersionSetId,
    VersionSetUnionId,
};

mod tables;
mod traits;

use super::Dependency;
use super::order::{Offer, World};
use super::parse::{DependencyError, DependencyProblem, bundle_dependencies};
use super::pred::{Pred, Subject, compile};
use crate::fbc::property::Gvk;

/// What a solvable is.
pub(super) enum Kind<'p> {
    Bundle(Offer<'p>),
    /// Index in `World::installed`.
    Installed(usize),
    /// The marker of `package` providing an API.
    Marker(String),
}

pub(super) struct Solvable<'p> {
    pub(super) name: NameId,
    pub(super) kind: Kind<'p>,
    pub(super) provides: Vec<Gvk>,
}

/// Where a version set's candidates may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Source {
    Anywhere,
    Installed,
    Catalog(usize),
}

/// What a requirement is, for explanations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum ReqKind {
    Subscription,
    Keep,
    Dependency {
        text: String,
        failure: Option<String>,
        /// The package, for a plain package constraint.
        package: Option<String>,
    },
    Api(Gvk),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct VersionSet {
    name: NameId,
    pred: usize,
    source: Source,
    preferred: Option<usize>,
    kind: usize,
}

#[derive(Default)]
struct Tables<'p> {
    names: Vec<String>,
    name_ids: HashMap<String, NameId>,
    apis: HashMap<NameId, Gvk>,
    solvables: Vec<Rc<Solvable<'p>>>,
    candidates: HashMap<NameId, Rc<Vec<SolvableId>>>,
    preds: Vec<Rc<Pred>>,
    pred_ids: HashMap<String, usize>,
    version_sets: Vec<VersionSet>,
    version_set_ids: HashMap<VersionSet, VersionSetId>,
    unions: Vec<Vec<VersionSetId>>,
    kinds: Vec<ReqKind>,
    kind_ids: HashMap<ReqKind, usize>,
    strings: Vec<String>,
}

/// The dependency provider of one resolution.
pub(super) struct Provider<'p> {
    pub(super) world: World<'p>,
    tables: RefCell<Tables<'p>>,
    /// Bundles excluded because their dependencies are malformed.
    pub(super) invalid: RefCell<BTreeMap<SolvableId, DependencyError>>,
    /// Solvables of the installed operators, by index in `World::installed`.
    pub(super) installed: Vec<SolvableId>,
}

/// The name of requirements nothing can satisfy.
const NOTHING: &str = "(nothing)";

impl<'p> Provider<'p> {
    pub(super) fn new(world: World<'p>) -> Self {
        let mut provider = Self {
            world,
            tables: RefCell::default(),
            invalid: RefCell::default(),
            installed: Vec::new(),
        };
        for (index, op) in provider.world.installed.iter().enumerate() {
            let name = provider.name(&op.package);
            let id = provider.add(Solvable {
                name,
                kind: Kind::Installed(index),
                provides: op.provides.clone(),
            });
            provider.installed.push(id);
        }
        provider
    }

    /// The package a solvable belongs to (for a marker: the providing package).
    pub(super) fn package_of(&self, solvable: &Solvable<'_>) -> String {
        match &solvable.kind {
            Kind::Bundle(offer) => offer.bundle.package.clone(),
            Kind::Installed(i) => self.world.installed[*i].package.clone(),
            Kind::Marker(package) => package.clone(),
        }
    }

    /// The CSV name of a bundle or installed operator.
    pub(super) fn csv_of(&self, solvable: &Solvable<'_>) -> String {
        match &solvable.kind {
            Kind::Bundle(offer) => offer.bundle.name.clone(),
            Kind::Installed(i) => self.world.installed[*i].csv.clone(),
            Kind::Marker(package) => package.clone(),
        }
    }

    pub(super) fn version_of(&self, solvable: &Solvable<'_>) -> Option<semver::Version> {
        match &solvable.kind {
            Kind::Bundle(offer) => Some(offer.bundle.version.clone()),
            Kind::Installed(i) => self.world.installed[*i].version.clone(),
            Kind::Marker(_) => None,
        }
    }

    fn test(&self, pred: &Pred, id: SolvableId) -> bool {
        let solvable = self.solvable(id);
        let package = self.package_of(&solvable);
        let version = self.version_of(&solvable);
        pred.test(&Subject {
            id: id.into_raw(),
            marker: matches!(solvable.kind, Kind::Marker(_)),
            package: &package,
            version: version.as_ref(),
            provides: &solvable.provides,
        })
    }

    /// The candidates of a name, computed once.
    pub(super) fn candidates_of(&self, name: NameId) -> Rc<Vec<SolvableId>> {
        if let Some(found) = self.tables.borrow().candidates.get(&name) {
            return Rc::clone(found);
        }
        let text = self.name_text(name);
        let mut ids: Vec<SolvableId> = Vec::new();
        if let Some(gvk) = self.api_of(name) {
            for package in self.world.providers(&gvk) {
                ids.push(self.add(Solvable {
                    name,
                    kind: Kind::Marker(package),
                    provides: Vec::new(),
                }));
            }
        } else if text != NOTHING {
            for (index, op) in self.world.installed.iter().enumerate() {
                if op.package == text {
                    ids.push(self.installed[index]);
                }
            }
            for offer in self.world.offers(&text) {
                ids.push(self.add(Solvable {
                    name,
                    kind: Kind::Bundle(offer),
                    provides: super::provided_apis(offer.bundle),
                }));
            }
        }
        let ids = Rc::new(ids);
        self.tables
            .borrow_mut()
            .candidates
            .insert(name, Rc::clone(&ids));
        ids
    }

    /// The root requirements: the Subscription's package, and every other installed operator
    /// exactly as it is.
    pub(super) fn root_requirements(&self) -> Vec<ConditionalRequirement> {
        let sub = &self.world.subscription;
        let everything = self.intern_pred(Pred::Everything);
        let mut requirements = vec![
            Requirement::Single(self.version_set(VersionSet {
                name: self.name(&sub.package),
                pred: everything,
                source: Source::Anywhere,
                preferred: None,
                kind: self.kind(ReqKind::Subscription),
            }))
            .into(),
        ];
        for (index, op) in self.world.installed.iter().enumerate() {
            if Some(index) == sub.installed {
                continue;
            }
            let id = self.installed[index];
            requirements.push(
                Requirement::Single(self.version_set(VersionSet {
                    name: self.name(&op.package),
                    pred: self.intern_pred(Pred::Exact(id.into_raw())),
                    source: Source::Anywhere,
                    preferred: None,
                    kind: self.kind(ReqKind::Keep),
                }))
                .into(),
            );
        }
        requirements
    }

    /// The declared dependencies of a bundle or installed operator, and its requiring catalog.
    pub(super) fn declared(
        &self,
        solvable: &Solvable<'_>,
    ) -> Result<(Vec<Dependency>, Option<usize>), DependencyError> {
        match &solvable.kind {
            Kind::Bundle(offer) => bundle_dependencies(offer.bundle)
                .map(|deps| (deps, Some(offer.rank)))
                .map_err(|e| e.in_catalog(&self.world.catalogs[offer.rank].id)),
            Kind::Installed(i) => {
                let op = &self.world.installed[*i];
                let rank = op.catalog.as_ref().and_then(|c| self.world.rank(c));
                Ok((op.dependencies.clone(), rank))
            }
            Kind::Marker(_) => Ok((Vec::new(), None)),
        }
    }

    /// The requirement for one dependency of `requirer`; `None` when the requirer meets it
    /// itself (OLM counts the requirer among the candidates).
    pub(super) fn requirement(
        &self,
        requirer: SolvableId,
        dependency: &Dependency,
        preferred: Option<usize>,
    ) -> Result<Option<Requirement>, DependencyProblem> {
        let pred = compile(&dependency.constraint)?;
        if self.test(&pred, requirer) {
            return Ok(None);
        }
        let providers = |gvk: &Gvk| self.world.providers(gvk);
        let packages = pred
            .packages(&providers)
            .unwrap_or_else(|| self.world.all_packages());
        let kind = self.kind(ReqKind::Dependency {
            text: dependency.constraint.to_string(),
            failure: dependency.failure_message.clone(),
            package: match &dependency.constraint {
                super::Constraint::Package { package, .. } => Some(package.clone()),
                _ => None,
            },
        });
        let pred = self.intern_pred(pred);
        let set = |name: &str, source| {
            self.version_set(VersionSet {
                name: self.name(name),
                pred,
                source,
                preferred,
                kind,
            })
        };
        if packages.len() <= 1 {
            let name = packages.first().map_or(NOTHING, String::as_str);
            return Ok(Some(Requirement::Single(set(name, Source::Anywhere))));
        }
        let mut sets = Vec::new();
        for package in &packages {
            if self.world.installed.iter().any(|o| &o.package == package) {
                sets.push(((0, false, 0), package, Source::Installed));
            }
            for rank in 0..self.world.catalogs.len() {
                if self.world.offered_by(package, rank) {
                    let key = (1, Some(rank) != preferred, rank);
                    sets.push((key, package, Source::Catalog(rank)));
                }
            }
        }
        sets.sort();
        let sets: Vec<VersionSetId> = sets.into_iter().map(|(_, p, s)| set(p, s)).collect();
        let mut t = self.tables.borrow_mut();
        t.unions.push(sets);
        Ok(Some(Requirement::Union(VersionSetUnionId(
            (t.unions.len() - 1) as u32,
        ))))
    }

    fn dependencies(&self, id: SolvableId) -> Result<Vec<ConditionalRequirement>, DependencyError> {
        let solvable = self.solvable(id);
        let (declared, preferred) = self.declared(&solvable)?;
        let mut requirements = Vec::new();
        for dependency in &declared {
            let requirement = self
                .requirement(id, dependency, preferred)
                .map_err(|problem| DependencyError {
                    bundle: self.csv_of(&solvable),
                    catalog: preferred.map(|r| self.world.catalogs[r].id.clone()),
                    problem: Box::new(problem),
                })?;
            requirements.extend(requirement.map(ConditionalRequirement::from));
        }
        let package = self.package_of(&solvable);
        let marker = self.intern_pred(Pred::MarkerOf(package));
        for gvk in &solvable.provides {
            let set = self.version_set(VersionSet {
                name: self.api_name(gvk),
                pred: marker,
                source: Source::Anywhere,
                preferred: None,
                kind: self.kind(ReqKind::Api(gvk.clone())),
            });
            requirements.push(Requirement::Single(set).into());
        }
        Ok(requirements)
    }

    fn intern_string(&self, text: String) -> StringId {
        let mut t = self.tables.borrow_mut();
        t.strings.push(text);
        StringId((t.strings.len() - 1) as u32)
    }
}
