//! RoleBindings and ClusterRoleBindings by subject, so authorizing a request visits only the
//! bindings that name its user, one of its groups or its ServiceAccount — not every binding
//! of the cluster (each a JSON object whose fields cost map lookups to read). Kept in step with
//! every write by the cluster's work queue, like a shared informer's indexer.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::UserInfo;
use crate::cluster::field;

/// What a binding subject names: a ServiceAccount subject of a RoleBinding without a namespace
/// is indexed under the binding's namespace (`appliesToUser`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

/// Bindings by subject; a binding is `(namespace, name)`, namespace "" for ClusterRoleBindings.
#[derive(Debug, Default)]
pub(crate) struct BindingIndex {
    by_subject: HashMap<Subject, BTreeSet<(String, String)>>,
    subjects_of: HashMap<(String, String), Vec<Subject>>,
}

fn subjects(binding: &Value, namespace: &str) -> Vec<Subject> {
    let list = binding.get("subjects").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|s| {
            let name = field(s, "name").to_string();
            match field(s, "kind") {
                "User" => Some(Subject::User(name)),
                "Group" => Some(Subject::Group(name)),
                "ServiceAccount" => {
                    let ns = match field(s, "namespace") {
                        "" => namespace,
                        given => given,
                    };
                    (!ns.is_empty()).then(|| Subject::ServiceAccount {
                        namespace: ns.to_string(),
                        name,
                    })
                }
                _ => None,
            }
        })
        .collect()
}

impl BindingIndex {
    /// Indexes a binding as it is now (`None`: removed).
    pub(crate) fn update(&mut self, namespace: &str, name: &str, binding: Option<&Value>) {
        let key = (namespace.to_string(), name.to_string());
        for old in self.subjects_of.remove(&key).unwrap_or_default() {
            if let Some(set) = self.by_subject.get_mut(&old) {
                set.remove(&key);
                if set.is_empty() {
                    self.by_subject.remove(&old);
                }
            }
        }
        let Some(binding) = binding else {
            return;
        };
        let now = subjects(binding, namespace);
        for subject in &now {
            self.by_subject
                .entry(subject.clone())
                .or_default()
                .insert(key.clone());
        }
        self.subjects_of.insert(key, now);
    }

    /// The bindings that may apply to `user`: ClusterRoleBindings, then RoleBindings of
    /// `namespace`, each in name order.
    pub(crate) fn candidates(&self, user: &UserInfo, namespace: &str) -> Vec<(String, String)> {
        let mut keys = vec![Subject::User(user.name.clone())];
        keys.extend(user.groups.iter().cloned().map(Subject::Group));
        if let Some((ns, name)) = user
            .name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
        {
            keys.push(Subject::ServiceAccount {
                namespace: ns.to_string(),
                name: name.to_string(),
            });
        }
        let found: BTreeSet<&(String, String)> = keys
            .iter()
            .filter_map(|k| self.by_subject.get(k))
            .flatten()
            .filter(|(ns, _)| ns.is_empty() || ns == namespace)
            .collect();
        // Cluster-scoped ("" sorts first), then the namespace's, by name.
        found.into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_string()).collect();
        UserInfo::authenticated(name, "", &groups)
    }

    #[test]
    fn bindings_are_found_by_user_group_and_service_account_and_follow_updates() {
        let mut index = BindingIndex::default();
        let by_group = json!({"subjects": [{"kind": "Group", "name": "team-a"}]});
        index.update("", "crb", Some(&by_group));
        let by_sa = json!({"subjects": [{"kind": "ServiceAccount", "name": "robot"}]});
        index.update("a", "rb", Some(&by_sa));
        let alice = user("alice", &["team-a"]);
        assert_eq!(
            index.candidates(&alice, "a"),
            [("".to_string(), "crb".to_string())]
        );
        let robot = user("system:serviceaccount:a:robot", &[]);
        assert_eq!(
            index.candidates(&robot, "a"),
            [("a".to_string(), "rb".to_string())]
        );
        assert!(
            index.candidates(&robot, "b").is_empty(),
            "another namespace's binding"
        );
        index.update(
            "",
            "crb",
            Some(&json!({"subjects": [{"kind": "User", "name": "bob"}]})),
        );
        assert!(index.candidates(&alice, "a").is_empty());
        index.update("a", "rb", None);
        assert!(index.candidates(&robot, "a").is_empty());
    }
}
