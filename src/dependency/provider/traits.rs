//! The resolvo traits of [`Provider`], and the candidate filtering and ordering behind them.

use std::rc::Rc;

use resolvo::{
    Candidates, Condition, ConditionId, Dependencies, DependencyProvider, Interner,
    KnownDependencies, NameId, SolvableId, SolverCache, StringId, VersionSetId, VersionSetUnionId,
};

use super::{Kind, Provider, Source, VersionSet};

impl Provider<'_> {
    /// Preference order of a candidate for a requirement preferring catalog `preferred`.
    fn order_key(&self, id: SolvableId, preferred: Option<usize>) -> (u8, bool, usize, u32) {
        let solvable = self.solvable(id);
        let own = self.package_of(&solvable) == self.world.subscription.package;
        match &solvable.kind {
            Kind::Bundle(offer) if own => (1, false, 0, offer.position),
            Kind::Installed(_) if own => (2, false, 0, 0),
            Kind::Bundle(offer) => (1, Some(offer.rank) != preferred, offer.rank, offer.position),
            Kind::Installed(_) | Kind::Marker(_) => (0, false, 0, 0),
        }
    }

    /// Candidates of a version set that match it, best first.
    pub(in crate::dependency) fn matching(&self, set: VersionSetId) -> Vec<SolvableId> {
        let set = self.tables.borrow().version_sets[set.0 as usize].clone();
        let candidates = self.candidates_of(set.name);
        self.filter(&candidates, &set, false)
    }

    fn filter(
        &self,
        candidates: &[SolvableId],
        set: &VersionSet,
        inverse: bool,
    ) -> Vec<SolvableId> {
        let pred = Rc::clone(&self.tables.borrow().preds[set.pred]);
        let mut matching: Vec<SolvableId> = candidates
            .iter()
            .copied()
            .filter(|&id| {
                let solvable = self.solvable(id);
                let from = match (&solvable.kind, set.source) {
                    (_, Source::Anywhere) => true,
                    (Kind::Installed(_), Source::Installed) => true,
                    (Kind::Bundle(offer), Source::Catalog(rank)) => offer.rank == rank,
                    _ => false,
                };
                (from && self.test(&pred, id)) != inverse
            })
            .collect();
        if !inverse {
            matching.sort_by_cached_key(|&id| (self.order_key(id, set.preferred), id));
        }
        matching
    }
}

impl Interner for Provider<'_> {
    type NameId = NameId;
    type SolvableId = SolvableId;

    fn display_solvable(&self, solvable: SolvableId) -> impl std::fmt::Display + '_ {
        self.csv_of(&self.solvable(solvable))
    }

    fn display_name(&self, name: NameId) -> impl std::fmt::Display + '_ {
        self.name_text(name)
    }

    fn display_version_set(&self, version_set: VersionSetId) -> impl std::fmt::Display + '_ {
        let t = self.tables.borrow();
        let set = &t.version_sets[version_set.0 as usize];
        format!("{:?}", t.preds[set.pred])
    }

    fn display_string(&self, string_id: StringId) -> impl std::fmt::Display + '_ {
        self.tables.borrow().strings[string_id.0 as usize].clone()
    }

    fn version_set_name(&self, version_set: VersionSetId) -> NameId {
        self.tables.borrow().version_sets[version_set.0 as usize].name
    }

    fn solvable_name(&self, solvable: SolvableId) -> NameId {
        self.solvable(solvable).name
    }

    fn version_sets_in_union(
        &self,
        version_set_union: VersionSetUnionId,
    ) -> impl Iterator<Item = VersionSetId> {
        self.tables.borrow().unions[version_set_union.0 as usize]
            .clone()
            .into_iter()
    }

    fn resolve_condition(&self, _condition: ConditionId) -> Condition {
        // No requirement of ours is conditional, so the solver never asks; this answer is inert.
        Condition::Requirement(VersionSetId(0))
    }
}

impl DependencyProvider for Provider<'_> {
    async fn filter_candidates(
        &self,
        candidates: &[SolvableId],
        version_set: VersionSetId,
        inverse: bool,
    ) -> Vec<SolvableId> {
        let set = self.tables.borrow().version_sets[version_set.0 as usize].clone();
        self.filter(candidates, &set, inverse)
    }

    async fn get_candidates(&self, name: NameId) -> Option<Candidates<SolvableId>> {
        Some(Candidates {
            candidates: self.candidates_of(name).to_vec(),
            ..Candidates::default()
        })
    }

    /// The order `filter_candidates` returned is the preference order of the version set.
    async fn sort_candidates(&self, _solver: &SolverCache<Self>, _solvables: &mut [SolvableId]) {}

    async fn get_dependencies(&self, solvable: SolvableId) -> Dependencies {
        match self.dependencies(solvable) {
            Ok(requirements) => Dependencies::Known(KnownDependencies {
                requirements,
                constrains: Vec::new(),
            }),
            Err(error) => {
                let reason = self.intern_string(error.to_string());
                self.invalid.borrow_mut().insert(solvable, error);
                Dependencies::Unknown(reason)
            }
        }
    }
}
