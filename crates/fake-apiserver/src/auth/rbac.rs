//! The RBAC authorizer, copied from `plugin/pkg/auth/authorizer/rbac/rbac.go` and its rule
//! resolver `pkg/registry/rbac/validation/rule.go` (`DefaultRuleResolver.VisitRulesFor`):
//!
//! * ClusterRoleBindings first, then — for a namespaced request — the RoleBindings of that
//!   namespace; a binding applies when one of its subjects is the user (`User`), one of its
//!   groups (`Group`) or it (`ServiceAccount`, whose namespace defaults to the binding's);
//! * its `roleRef` resolves to a ClusterRole, or a Role of the binding's namespace; a missing
//!   role is an error that is reported with a denial (`RBAC: role.rbac.authorization.k8s.io
//!   "x" not found`) but does not stop the search;
//! * a rule allows a resource request when verb, API group, `resource[/subresource]` (or
//!   `*/subresource`) and name (`resourceNames`, empty = any) match, `*` matching everything
//!   (`pkg/apis/rbac/v1/evaluation_helpers.go`); a non-resource request when verb and
//!   `nonResourceURLs` (exact, `*`, or a `prefix*`) match;
//! * the first allowing rule wins with the reason `RBAC: allowed by ClusterRoleBinding "b" of
//!   ClusterRole "r" to User "u"`; RBAC never denies, it has "no opinion", and the request is
//!   then forbidden (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/
//!   errors.go`, `forbiddenMessage`).
//!
//! Bindings are found through a subject index ([`super::index`]) and read in place from the
//! store under the server's lock: only those naming the user, its groups or its ServiceAccount
//! are visited, and nothing is copied per request.

use std::collections::BTreeSet;

use serde_json::Value;

use super::UserInfo;
use super::request_info::RequestInfo;
use crate::cluster::{Cluster, field, str_at};
use crate::resources::ResourceKey;
use crate::status::{ApiError, GroupResource};
use crate::store::Store;

pub(crate) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// An authorizer's answer (`authorizer.Decision` with its reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow(String),
    /// RBAC has no deny rules: the reason carries resolution errors, if any.
    NoOpinion(String),
}

fn key(plural: &str) -> ResourceKey {
    ResourceKey {
        group: RBAC_GROUP.to_string(),
        plural: plural.to_string(),
    }
}

/// The strings of a rule's list field.
fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `RuleAllows`.
pub(crate) fn rule_allows(info: &RequestInfo, rule: &Value) -> bool {
    let verb_matches = strings(rule, "verbs").any(|v| v == "*" || v == info.verb);
    if !verb_matches {
        return false;
    }
    if !info.resource_request {
        return strings(rule, "nonResourceURLs").any(|url| {
            url == "*"
                || url == info.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| info.path.starts_with(prefix))
        });
    }
    let sub = info.subresource.as_str();
    // `resource[/subresource]`, compared without building it: this runs for every rule.
    let is_combined = |r: &str| match r.strip_prefix(info.resource.as_str()) {
        Some("") => sub.is_empty(),
        Some(rest) => !sub.is_empty() && rest.strip_prefix('/') == Some(sub),
        None => false,
    };
    let group_matches = strings(rule, "apiGroups").any(|g| g == "*" || g == info.api_group);
    let resource_matches = strings(rule, "resources").any(|r| {
        r == "*" || is_combined(r) || (!sub.is_empty() && r.strip_prefix("*/") == Some(sub))
    });
    let mut names = strings(rule, "resourceNames").peekable();
    let name_matches = names.peek().is_none() || names.any(|n| n == info.name);
    group_matches && resource_matches && name_matches
}

/// Where a rule came from (`clusterRoleBindingDescriber`, `roleBindingDescriber`).
pub(crate) struct Source<'a> {
    binding: &'a Value,
    subject: &'a Value,
    namespaced: bool,
}

impl Source<'_> {
    fn describe(&self) -> String {
        let ns = str_at(self.binding, "/metadata/namespace");
        let name = str_at(self.binding, "/metadata/name");
        let kind = if self.namespaced {
            "RoleBinding"
        } else {
            "ClusterRoleBinding"
        };
        let binding = if self.namespaced {
            format!("{name}/{ns}")
        } else {
            name.to_string()
        };
        let subject_kind = str_at(self.subject, "/kind");
        let subject_name = str_at(self.subject, "/name");
        let subject = if subject_kind == "ServiceAccount" {
            let sa_ns = match str_at(self.subject, "/namespace") {
                "" => ns,
                given => given,
            };
            format!("{subject_name}/{sa_ns}")
        } else {
            subject_name.to_string()
        };
        format!(
            "{kind} {binding:?} of {} {:?} to {subject_kind} {subject:?}",
            str_at(self.binding, "/roleRef/kind"),
            str_at(self.binding, "/roleRef/name"),
        )
    }
}

/// `appliesToUser`.
fn applies_to(user: &UserInfo, subject: &Value, binding_ns: &str) -> bool {
    let name = field(subject, "name");
    match field(subject, "kind") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = match field(subject, "namespace") {
                "" => binding_ns,
                given => given,
            };
            !ns.is_empty()
                && user
                    .name
                    .strip_prefix("system:serviceaccount:")
                    .and_then(|rest| rest.split_once(':'))
                    == Some((ns, name))
        }
        _ => false,
    }
}

/// `GetRoleReferenceRules`: the rules of a binding's role, or why they could not be read.
pub(crate) fn role_rules<'a>(
    store: &'a Store,
    binding: &Value,
    binding_ns: &str,
) -> Result<&'a Value, String> {
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let name = field(role_ref, "name");
    let (plural, singular, ns) = match field(role_ref, "kind") {
        "Role" => ("roles", "role", binding_ns),
        "ClusterRole" => ("clusterroles", "clusterrole", ""),
        other => return Err(format!("unsupported role reference kind: {other:?}")),
    };
    store
        .get(&key(plural), ns, name)
        .map(|role| role.get("rules").unwrap_or(&Value::Null))
        .ok_or_else(|| format!("{singular}.{RBAC_GROUP} {name:?} not found"))
}

/// `VisitRulesFor`: calls `visit` with each rule that applies to `user` in `namespace` until it
/// returns false; returns the resolution errors met on the way. The bindings come from the
/// subject index: ClusterRoleBindings, then the namespace's RoleBindings, in name order.
pub(crate) fn visit_rules(
    cluster: &Cluster,
    user: &UserInfo,
    namespace: &str,
    visit: &mut dyn FnMut(&Source<'_>, &Value) -> bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    for (ns, name) in cluster.bindings.candidates(user, namespace) {
        let plural = if ns.is_empty() {
            "clusterrolebindings"
        } else {
            "rolebindings"
        };
        let Some(binding) = cluster.store.get(&key(plural), &ns, &name) else {
            continue;
        };
        let subjects = binding.get("subjects").and_then(Value::as_array);
        let Some(subject) = subjects
            .into_iter()
            .flatten()
            .find(|s| applies_to(user, s, &ns))
        else {
            continue;
        };
        let rules = match role_rules(&cluster.store, binding, &ns) {
            Ok(rules) => rules,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let source = Source {
            binding,
            subject,
            namespaced: !ns.is_empty(),
        };
        for rule in rules.as_array().into_iter().flatten() {
            if !visit(&source, rule) {
                return errors;
            }
        }
    }
    errors
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated in `[...]`.
fn aggregate(errors: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&str> = errors
        .iter()
        .filter(|e| seen.insert(e.as_str()))
        .map(String::as_str)
        .collect();
    match unique.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The union of the privileged-group authorizer and RBAC, as kube-apiserver runs them.
pub(crate) fn authorize(cluster: &Cluster, user: &UserInfo, info: &RequestInfo) -> Decision {
    if user.is_privileged() {
        return Decision::Allow(String::new());
    }
    let mut allowed_by = None;
    let errors = visit_rules(cluster, user, &info.namespace, &mut |source, rule| {
        if rule_allows(info, rule) {
            allowed_by = Some(source.describe());
            return false;
        }
        true
    });
    match allowed_by {
        Some(source) => Decision::Allow(format!("RBAC: allowed by {source}")),
        None if errors.is_empty() => Decision::NoOpinion(String::new()),
        None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
    }
}

/// `RulesFor`: every rule that applies to `user` in `namespace`, and the resolution errors.
pub(crate) fn rules_for(
    cluster: &Cluster,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<Value>, String) {
    let mut rules = Vec::new();
    let errors = visit_rules(cluster, user, namespace, &mut |_, rule| {
        rules.push(rule.clone());
        true
    });
    (rules, aggregate(&errors))
}

/// `responsewriters.Forbidden`: 403 with `forbiddenMessage` and the authorizer's reason.
pub(crate) fn forbidden(user: &UserInfo, info: &RequestInfo, reason: &str) -> ApiError {
    let user = &user.name;
    let verb = &info.verb;
    let message = if !info.resource_request {
        format!("User {user:?} cannot {verb} path {:?}", info.path)
    } else {
        let mut resource = info.resource.clone();
        if !info.subresource.is_empty() {
            resource = format!("{resource}/{}", info.subresource);
        }
        let group = &info.api_group;
        if info.namespace.is_empty() {
            format!(
                "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
            )
        } else {
            format!(
                "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
                info.namespace
            )
        }
    };
    // `sanitizer`: no HTML in the message.
    let message = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let why = if reason.is_empty() {
        message
    } else {
        format!("{message}: {reason}")
    };
    let gr = GroupResource {
        group: &info.api_group,
        resource: &info.resource,
    };
    ApiError::forbidden(gr, &info.name, &why)
}
