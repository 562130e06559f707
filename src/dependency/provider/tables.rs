//! Interning: names, solvables, predicates, version sets and requirement kinds get dense ids.

use std::rc::Rc;

use resolvo::{NameId, Requirement, SolvableId, VersionSetId};

use super::{Provider, ReqKind, Solvable, VersionSet};
use crate::dependency::gvk_text;
use crate::dependency::pred::Pred;
use crate::fbc::property::Gvk;

impl<'p> Provider<'p> {
    pub(in crate::dependency) fn name(&self, text: &str) -> NameId {
        let mut t = self.tables.borrow_mut();
        if let Some(id) = t.name_ids.get(text) {
            return *id;
        }
        let id = NameId::from_raw(t.names.len() as u32);
        t.names.push(text.to_owned());
        t.name_ids.insert(text.to_owned(), id);
        id
    }

    pub(in crate::dependency) fn name_text(&self, name: NameId) -> String {
        self.tables.borrow().names[name.into_raw() as usize].clone()
    }

    pub(super) fn api_name(&self, gvk: &Gvk) -> NameId {
        let name = self.name(&format!("api:{}", gvk_text(gvk)));
        self.tables.borrow_mut().apis.insert(name, gvk.clone());
        name
    }

    /// The API whose marker name this is.
    pub(in crate::dependency) fn api_of(&self, name: NameId) -> Option<Gvk> {
        self.tables.borrow().apis.get(&name).cloned()
    }

    pub(super) fn add(&self, solvable: Solvable<'p>) -> SolvableId {
        let mut t = self.tables.borrow_mut();
        let id = SolvableId::from_raw(t.solvables.len() as u32);
        t.solvables.push(Rc::new(solvable));
        id
    }

    pub(in crate::dependency) fn solvable(&self, id: SolvableId) -> Rc<Solvable<'p>> {
        Rc::clone(&self.tables.borrow().solvables[id.into_raw() as usize])
    }

    pub(super) fn intern_pred(&self, pred: Pred) -> usize {
        let key = format!("{pred:?}");
        let mut t = self.tables.borrow_mut();
        if let Some(id) = t.pred_ids.get(&key) {
            return *id;
        }
        t.preds.push(Rc::new(pred));
        let id = t.preds.len() - 1;
        t.pred_ids.insert(key, id);
        id
    }

    pub(super) fn version_set(&self, set: VersionSet) -> VersionSetId {
        let mut t = self.tables.borrow_mut();
        if let Some(id) = t.version_set_ids.get(&set) {
            return *id;
        }
        let id = VersionSetId(t.version_sets.len() as u32);
        t.version_sets.push(set.clone());
        t.version_set_ids.insert(set, id);
        id
    }

    pub(super) fn kind(&self, kind: ReqKind) -> usize {
        let mut t = self.tables.borrow_mut();
        if let Some(id) = t.kind_ids.get(&kind) {
            return *id;
        }
        let id = t.kinds.len();
        t.kinds.push(kind.clone());
        t.kind_ids.insert(kind, id);
        id
    }

    /// What a requirement stands for (the kind of its first version set).
    pub(in crate::dependency) fn requirement_kind(&self, requirement: Requirement) -> ReqKind {
        let set = match requirement {
            Requirement::Single(set) => set,
            Requirement::Union(union) => self.tables.borrow().unions[union.0 as usize][0],
        };
        let t = self.tables.borrow();
        t.kinds[t.version_sets[set.0 as usize].kind].clone()
    }
}
