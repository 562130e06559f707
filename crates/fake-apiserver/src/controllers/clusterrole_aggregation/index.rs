//! The aggregation controller's view of the ClusterRoles, kept in step with every ClusterRole
//! event so that a write costs about the roles it affects instead of every role of the cluster
//! (OperatorGroups make three aggregating roles per namespace):
//!
//! * per aggregating role, its parsed `clusterRoleSelectors` (parsed again only when they
//!   change) and the roles its rules came from at its last sync;
//! * `wanted`: label key → aggregating roles with a selector that requires it (a selector is
//!   filed under one of its required keys: a role without that key cannot match it), and
//!   `always`: those with a selector requiring no key (only `NotIn`/`DoesNotExist`, or `{}`);
//! * `labelled`: label key → the ClusterRoles carrying it, in name order;
//! * `taken_by`: source role → the aggregating roles whose rules came from it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::selectors::LabelSelector;

/// Roles of a set that is empty (a required key no role carries).
static NONE: BTreeSet<String> = BTreeSet::new();

/// One aggregating ClusterRole.
#[derive(Debug)]
struct Aggregator {
    /// `aggregationRule.clusterRoleSelectors` as last seen.
    raw: Value,
    /// Each selector parsed, or why it is invalid.
    selectors: Vec<Result<LabelSelector, String>>,
    /// Roles whose rules it took at its last sync.
    sources: BTreeSet<String>,
}

/// Aggregating ClusterRoles and the indexes that find what a ClusterRole event affects.
#[derive(Debug, Default)]
pub(crate) struct Aggregation {
    aggregators: BTreeMap<String, Aggregator>,
    wanted: HashMap<String, BTreeSet<String>>,
    always: BTreeSet<String>,
    labels: HashMap<String, Vec<String>>,
    labelled: HashMap<String, BTreeSet<String>>,
    taken_by: HashMap<String, BTreeSet<String>>,
}

fn raw_selectors(role: &Value) -> Option<&Value> {
    role.get("aggregationRule")
        .filter(|r| !r.is_null())
        .map(|r| r.get("clusterRoleSelectors").unwrap_or(&Value::Null))
}

fn label_keys(role: &Value) -> Vec<String> {
    role.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.is_string())
        .map(|(k, _)| k.clone())
        .collect()
}

/// Where a selector is filed: under its first required key, or nowhere (`None`: always).
fn filed_under(selector: &LabelSelector) -> Option<&str> {
    selector.required_keys().next()
}

fn link(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    index
        .entry(key.to_string())
        .or_default()
        .insert(name.to_string());
}

fn unlink(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    if let Some(set) = index.get_mut(key) {
        set.remove(name);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

impl Aggregation {
    /// Records ClusterRole `name` as it is now (`None`: removed): its labels, and its
    /// selectors when it aggregates. Idempotent; selectors are parsed only when they changed.
    pub(crate) fn track(&mut self, name: &str, now: Option<&Value>) {
        let keys = now.map(label_keys).unwrap_or_default();
        if self.labels.get(name) != Some(&keys) {
            for key in self.labels.remove(name).unwrap_or_default() {
                unlink(&mut self.labelled, &key, name);
            }
            for key in &keys {
                link(&mut self.labelled, key, name);
            }
            if !keys.is_empty() {
                self.labels.insert(name.to_string(), keys);
            }
        }
        match now.and_then(raw_selectors) {
            None => self.forget(name),
            Some(raw) if self.aggregators.get(name).is_some_and(|a| a.raw == *raw) => {}
            Some(raw) => {
                let sources = self.unfile(name).unwrap_or_default();
                let selectors: Vec<_> = raw
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(LabelSelector::from_json)
                    .collect();
                for s in selectors.iter().flatten() {
                    match filed_under(s) {
                        Some(key) => link(&mut self.wanted, key, name),
                        None => {
                            self.always.insert(name.to_string());
                        }
                    }
                }
                let raw = raw.clone();
                let entry = Aggregator {
                    raw,
                    selectors,
                    sources: BTreeSet::new(),
                };
                self.aggregators.insert(name.to_string(), entry);
                self.set_sources(name, sources);
            }
        }
    }

    /// Removes aggregator `name` from the selector indexes; its sources, if it was one.
    fn unfile(&mut self, name: &str) -> Option<BTreeSet<String>> {
        let old = self.aggregators.remove(name)?;
        for s in old.selectors.iter().flatten() {
            match filed_under(s) {
                Some(key) => unlink(&mut self.wanted, key, name),
                None => {
                    self.always.remove(name);
                }
            }
        }
        Some(old.sources)
    }

    /// `name` no longer aggregates (or is gone).
    pub(crate) fn forget(&mut self, name: &str) {
        for source in self.unfile(name).unwrap_or_default() {
            unlink(&mut self.taken_by, &source, name);
        }
    }

    /// The parsed selectors of aggregating role `name`.
    pub(crate) fn selectors(&self, name: &str) -> Option<&[Result<LabelSelector, String>]> {
        self.aggregators.get(name).map(|a| a.selectors.as_slice())
    }

    /// Whether the selectors recorded for `name` are `role`'s current ones.
    pub(crate) fn is_current(&self, name: &str, role: &Value) -> bool {
        let raw = raw_selectors(role);
        self.aggregators
            .get(name)
            .is_some_and(|a| Some(&a.raw) == raw)
    }

    /// Records the roles aggregator `name` took rules from at this sync.
    pub(crate) fn set_sources(&mut self, name: &str, sources: BTreeSet<String>) {
        let Some(aggregator) = self.aggregators.get_mut(name) else {
            return;
        };
        for gone in aggregator.sources.difference(&sources) {
            unlink(&mut self.taken_by, gone, name);
        }
        for new in sources.difference(&aggregator.sources) {
            link(&mut self.taken_by, new, name);
        }
        aggregator.sources = sources;
    }

    /// The names of the ClusterRoles that can match `selector`, in name order: those carrying
    /// the key it is filed under; `None` when it requires no key (every role may match).
    pub(crate) fn candidates(&self, selector: &LabelSelector) -> Option<&BTreeSet<String>> {
        filed_under(selector).map(|key| self.labelled.get(key).unwrap_or(&NONE))
    }

    /// The aggregating roles to sync after ClusterRole `name` changed to `now` (`None`:
    /// removed), in name order: `name` itself when it aggregates, those whose rules came from
    /// it, and those with a selector matching it now.
    pub(crate) fn affected(&self, name: &str, now: Option<&Value>) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.taken_by.get(name).cloned().unwrap_or_default();
        if self.aggregators.contains_key(name) {
            out.insert(name.to_string());
        }
        let Some(role) = now else {
            return out;
        };
        let keys = self.labels.get(name).into_iter().flatten();
        let maybe = keys
            .filter_map(|k| self.wanted.get(k))
            .flatten()
            .chain(&self.always);
        for aggregator in maybe {
            let matches = self
                .aggregators
                .get(aggregator)
                .is_some_and(|a| a.selectors.iter().flatten().any(|s| s.matches(role)));
            if matches {
                out.insert(aggregator.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    fn aggregator(selectors: Value) -> Value {
        json!({"metadata": {}, "aggregationRule": {"clusterRoleSelectors": selectors}})
    }

    fn names(set: &BTreeSet<String>) -> Vec<&str> {
        set.iter().map(String::as_str).collect()
    }

    /// Every index follows relabelling, selector changes and removal.
    #[test]
    fn indexes_follow_every_change() {
        let mut a = Aggregation::default();
        let by_team = aggregator(json!([{"matchLabels": {"team": "a"}}]));
        let not_low = aggregator(json!([{"matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["low"]}]}]));
        a.track("agg", Some(&by_team));
        a.track("neg", Some(&not_low));
        let src = role(json!({"team": "a", "tier": "low"}));
        a.track("src", Some(&src));
        assert_eq!(names(&a.affected("src", Some(&src))), ["agg"]);
        let selector = LabelSelector::from_json(&json!({"matchLabels": {"team": "a"}})).unwrap();
        assert_eq!(a.candidates(&selector).map(names), Some(vec!["src"]));
        a.set_sources("agg", BTreeSet::from(["src".to_string()]));

        let moved = role(json!({"owner": "b"}));
        a.track("src", Some(&moved));
        assert_eq!(a.candidates(&selector).map(names), Some(vec![]));
        assert_eq!(names(&a.affected("src", Some(&moved))), ["agg", "neg"]);

        let by_other = aggregator(json!([{"matchExpressions": [
            {"key": "other", "operator": "Exists"}]}]));
        a.track("agg", Some(&by_other));
        assert!(
            a.affected("src", Some(&src)).contains("agg"),
            "sources kept"
        );
        a.set_sources("agg", BTreeSet::new());
        assert_eq!(names(&a.affected("src", Some(&src))), Vec::<&str>::new());
        let other = role(json!({"other": "x", "tier": "low"}));
        a.track("src", Some(&other));
        assert_eq!(names(&a.affected("src", Some(&other))), ["agg"]);

        a.set_sources("neg", BTreeSet::from(["src".to_string()]));
        a.track("src", None);
        assert_eq!(names(&a.affected("src", None)), ["neg"]);
        a.track("neg", None);
        assert!(a.taken_by.is_empty() && a.always.is_empty());
        assert!(a.labelled.is_empty() && a.labels.is_empty());
    }
}
