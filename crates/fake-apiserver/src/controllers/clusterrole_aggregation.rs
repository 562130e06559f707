//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation` controller
//! does it (`pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`,
//! `syncClusterRole`):
//!
//! * a ClusterRole with an `aggregationRule` gets, for each of its `clusterRoleSelectors` in
//!   order, the rules of every other ClusterRole the selector matches (in name order), each
//!   rule once (`ruleExists`, semantic equality: an empty list equals an absent one);
//! * when they differ from its `rules`, the controller applies them (server-side apply,
//!   manager `clusterrole-aggregation-controller`, `force`), so `managedFields` show it as the
//!   owner of `rules`; a role whose rules already match is not written.
//!
//! Upstream re-syncs every aggregated ClusterRole on any ClusterRole event. Here a change of
//! role `R` re-syncs `R` itself when it aggregates, and every aggregating role whose selectors
//! match `R` now or whose rules came from `R` at its last sync — the same fixed point without
//! rescanning every aggregated role per write (OperatorGroups make three per namespace). The
//! indexes that find those roles, and the roles a selector may match, are in [`index`].
//! Synchronous like the other emulated controllers: chains (`view` into `edit` into `admin`)
//! settle before the client's call returns.

mod index;

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::cluster::update::PatchType;
use crate::cluster::{Cluster, WriteParams};
use crate::resources::ResourceKey;
use crate::store::ObjRef;

pub(crate) use index::Aggregation;

const MANAGER: &str = "clusterrole-aggregation-controller";
const RULE_FIELDS: &[&str] = &[
    "verbs",
    "apiGroups",
    "resources",
    "resourceNames",
    "nonResourceURLs",
];

fn key() -> ResourceKey {
    ResourceKey {
        group: "rbac.authorization.k8s.io".into(),
        plural: "clusterroles".into(),
    }
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn aggregates(role: &Value) -> bool {
    role.get("aggregationRule").is_some_and(|r| !r.is_null())
}

/// A rule with its empty lists dropped: semantic equality compares these.
fn normalized(rule: &Value) -> Value {
    let mut out = Map::new();
    for field in RULE_FIELDS {
        if let Some(list) = rule
            .get(*field)
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
        {
            out.insert((*field).to_string(), Value::Array(list.clone()));
        }
    }
    if !out.contains_key("verbs") {
        out.insert("verbs".into(), json!([]));
    }
    Value::Object(out)
}

fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(normalized)
        .collect()
}

impl Cluster {
    /// A ClusterRole was written (`now`) or removed (`now == None`).
    pub(crate) fn clusterrole_changed(&mut self, name: &str, now: Option<&Value>) {
        self.aggregation.track(name, now);
        for aggregator in self.aggregation.affected(name, now) {
            self.aggregate(&aggregator);
        }
    }

    /// `syncClusterRole` for one aggregating ClusterRole.
    fn aggregate(&mut self, name: &str) {
        let kind = key();
        let Some(role) = self.store.get(&kind, "", name).cloned() else {
            self.aggregation.forget(name);
            return;
        };
        if !aggregates(&role) {
            self.aggregation.forget(name);
            return;
        }
        if !self.aggregation.is_current(name, &role) {
            // Written again since its event was queued: sync what it says now.
            self.aggregation.track(name, Some(&role));
        }
        let mut rules: Vec<Value> = Vec::new();
        let mut sources = BTreeSet::new();
        for selector in self.aggregation.selectors(name).unwrap_or_default() {
            let selector = match selector {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(clusterrole = name, error = %e, "invalid aggregation selector");
                    return;
                }
            };
            let others: Vec<&Value> = match self.aggregation.candidates(selector) {
                Some(names) => names
                    .iter()
                    .filter_map(|n| self.store.get(&kind, "", n))
                    .map(|o| o.as_ref())
                    .collect(),
                None => self
                    .store
                    .in_namespace(&kind, "")
                    .map(|o| o.as_ref())
                    .collect(),
            };
            for other in others {
                let other_name = name_of(other);
                if other_name == name || !selector.matches(other) {
                    continue;
                }
                sources.insert(other_name.to_string());
                for rule in rules_of(other) {
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
            }
        }
        self.aggregation.set_sources(name, sources);
        if rules_of(&role) == rules {
            return;
        }
        let Some(t) = self.target_of(
            &ObjRef {
                key: key(),
                namespace: String::new(),
                name: name.to_string(),
            },
            None,
        ) else {
            return;
        };
        let config = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": rules,
        });
        let p = WriteParams {
            field_manager: Some(MANAGER.to_string()),
            force: true,
            ..WriteParams::default()
        };
        let body = config.to_string();
        if let Err(e) = self.patch(&t, &p, PatchType::Apply, body.as_bytes()) {
            tracing::warn!(clusterrole = name, error = %e.message, "aggregating ClusterRole rules rejected");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_lists_equal_absent_ones() {
        let a = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []});
        let b = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        assert_eq!(normalized(&a), normalized(&b));
        assert_ne!(normalized(&a), normalized(&json!({"verbs": ["list"]})));
    }
}
