//! RBAC's escalation prevention on writes of Roles, ClusterRoles and their bindings
//! (`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go`,
//! `pkg/registry/rbac/escalation_check.go`, `pkg/registry/rbac/validation/rule.go`
//! `ConfirmNoEscalation`, `component-helpers/auth/rbac/validation/policy_comparator.go` `Covers`):
//!
//! * a Role or ClusterRole may be written by a user allowed to `escalate` it, or whose own
//!   rules in its namespace cover every rule it grants; an `aggregationRule` needs full
//!   authority (`must have cluster-admin privileges to use the aggregationRule`);
//! * a binding may be written by a user allowed to `bind` the role it references, or whose
//!   rules cover that role's;
//! * `system:masters` is never checked (`EscalationAllowed`), nor is an update that leaves the
//!   granting fields (`rules`, `aggregationRule`; `roleRef`, `subjects`) as they were.
//!
//! What differs: upstream exempts only updates of garbage-collection fields; here any update
//! that does not touch the granting fields. The list of missing rules is compacted by merging
//! the verbs of single-group, single-resource rules (a simplified `CompactRules`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::request_info::RequestInfo;
use super::{UserInfo, rbac};
use crate::cluster::{Cluster, Target, str_at, string_list};
use crate::status::ApiError;

/// True for the four RBAC kinds whose writes are checked.
pub(crate) fn guards(t: &Target) -> bool {
    t.info.group == rbac::RBAC_GROUP
        && matches!(
            t.info.plural.as_str(),
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    string_list(rule.get(field))
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

/// `BreakdownRule`: one rule per group, resource, verb (and name); one per URL and verb.
fn breakdown(rule: &Value) -> Vec<Value> {
    let verbs = strings(rule, "verbs");
    let names = strings(rule, "resourceNames");
    let mut out = Vec::new();
    for group in strings(rule, "apiGroups") {
        for resource in strings(rule, "resources") {
            for verb in &verbs {
                let base = json!({"apiGroups": [group], "resources": [resource], "verbs": [verb]});
                for name in &names {
                    let mut one = base.clone();
                    one["resourceNames"] = json!([name]);
                    out.push(one);
                }
                if names.is_empty() {
                    out.push(base);
                }
            }
        }
    }
    for url in strings(rule, "nonResourceURLs") {
        for verb in &verbs {
            out.push(json!({"nonResourceURLs": [url], "verbs": [verb]}));
        }
    }
    out
}

/// `resourceCoversAll`.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") || wanted.iter().all(|w| has(owner, w)) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// `ruleCovers`: an owner rule covers a broken-down rule.
fn rule_covers(owner: &Value, sub: &Value) -> bool {
    let (o, s) = (|f| strings(owner, f), |f| strings(sub, f));
    let all = |set: &[String], want: &[String]| want.iter().all(|w| has(set, w));
    let verbs = has(&o("verbs"), "*") || all(&o("verbs"), &s("verbs"));
    let groups = has(&o("apiGroups"), "*") || all(&o("apiGroups"), &s("apiGroups"));
    let resources = resources_cover(&o("resources"), &s("resources"));
    let urls = s("nonResourceURLs").iter().all(|path| {
        o("nonResourceURLs").iter().any(|owned| {
            owned == path
                || owned
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    });
    let (owned_names, names) = (o("resourceNames"), s("resourceNames"));
    let names = owned_names.is_empty() || (!names.is_empty() && all(&owned_names, &names));
    verbs && groups && resources && urls && names
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// `CompactString`.
fn compact_string(rule: &Value) -> String {
    let mut parts = Vec::new();
    for (field, label) in [
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    ] {
        let values = strings(rule, field);
        if !values.is_empty() {
            parts.push(format!("{label}:{}", go_quoted(&values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// The verbs of rules on the same single group and resource (no names) merged.
fn compacted(missing: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for rule in missing {
        let simple = rule.get("resourceNames").is_none() && rule.get("resources").is_some();
        let same = out.iter_mut().find(|r| {
            simple
                && r.get("resourceNames").is_none()
                && r["apiGroups"] == rule["apiGroups"]
                && r["resources"] == rule["resources"]
        });
        match (same, rule["verbs"].as_array()) {
            (Some(existing), Some(verbs)) => {
                if let Some(list) = existing["verbs"].as_array_mut() {
                    list.extend(verbs.iter().cloned());
                }
            }
            _ => out.push(rule),
        }
    }
    out
}

/// `ConfirmNoEscalation`: the user's rules in `namespace` cover `rules`.
fn confirm_no_escalation(
    cluster: &Cluster,
    user: &UserInfo,
    namespace: &str,
    rules: &[Value],
) -> Result<(), String> {
    let (owned, errors) = rbac::rules_for(cluster, user, namespace);
    let missing: Vec<Value> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owned.iter().any(|o| rule_covers(o, sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let described: BTreeSet<String> = compacted(missing).iter().map(compact_string).collect();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted(&user.groups),
        described.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{errors}]"));
    }
    Err(message)
}

/// Whether `user` may `verb` the RBAC resource `resource/name` in `namespace`
/// (`RoleEscalationAuthorized`, `BindingAuthorized`).
fn allowed(
    cluster: &Cluster,
    user: &UserInfo,
    verb: &str,
    resource: &str,
    ns: &str,
    name: &str,
) -> bool {
    let info = RequestInfo {
        resource_request: true,
        verb: verb.to_string(),
        api_group: rbac::RBAC_GROUP.to_string(),
        api_version: "*".to_string(),
        namespace: ns.to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        ..RequestInfo::default()
    };
    matches!(
        rbac::authorize(cluster, user, &info),
        rbac::Decision::Allow(_)
    )
}

fn unchanged(new: &Value, old: Option<&Value>, fields: &[&str]) -> bool {
    old.is_some_and(|old| fields.iter().all(|f| new.get(*f) == old.get(*f)))
}

/// Refuses (403) a write of `new` (the object the request would store; `old` the stored one)
/// by `user` that would grant permissions it does not hold.
pub(crate) fn check(
    cluster: &Cluster,
    user: &UserInfo,
    t: &Target,
    request_name: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let name = str_at(new, "/metadata/name");
    let ns = t.namespace.as_str();
    let forbidden = |why: &str| ApiError::forbidden(t.info.group_resource(), name, why);
    let role = matches!(t.info.plural.as_str(), "roles" | "clusterroles");
    if role {
        if unchanged(new, old, &["rules", "aggregationRule"])
            || allowed(cluster, user, "escalate", &t.info.plural, ns, request_name)
        {
            return Ok(());
        }
        let rules = new
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        confirm_no_escalation(cluster, user, ns, &rules).map_err(|e| forbidden(&e))?;
        if new.get("aggregationRule").is_some_and(|r| !r.is_null()) {
            let full = [
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
            ];
            confirm_no_escalation(cluster, user, ns, &full).map_err(|_| {
                forbidden("must have cluster-admin privileges to use the aggregationRule")
            })?;
        }
        return Ok(());
    }
    if unchanged(new, old, &["roleRef", "subjects"]) {
        return Ok(());
    }
    let (kind, role_name) = (str_at(new, "/roleRef/kind"), str_at(new, "/roleRef/name"));
    let plural = if kind == "Role" {
        "roles"
    } else {
        "clusterroles"
    };
    if allowed(cluster, user, "bind", plural, ns, role_name) {
        return Ok(());
    }
    let rules = rbac::role_rules(&cluster.store, new, ns).map_err(|e| forbidden(&e))?;
    let rules = rules.as_array().cloned().unwrap_or_default();
    confirm_no_escalation(cluster, user, ns, &rules).map_err(|e| forbidden(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_follows_the_policy_comparator() {
        let owner =
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]});
        let sub = |r: &str, v: &str| json!({"verbs": [v], "apiGroups": [""], "resources": [r]});
        assert!(rule_covers(&owner, &sub("pods", "get")));
        assert!(rule_covers(&owner, &sub("deployments/status", "list")));
        assert!(!rule_covers(&owner, &sub("pods", "delete")));
        assert!(!rule_covers(&owner, &sub("secrets", "get")));
        let named = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]});
        assert!(
            !rule_covers(&named, &sub("pods", "get")),
            "a named rule covers no unnamed one"
        );
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]});
        assert!(rule_covers(
            &urls,
            &json!({"verbs": ["get"], "nonResourceURLs": ["/healthz/etcd"]})
        ));
    }

    #[test]
    fn missing_rules_are_described_like_compact_string() {
        let missing = compacted(vec![
            json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
            json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}),
        ]);
        assert_eq!(
            compact_string(&missing[0]),
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#
        );
    }
}
