//! Label selectors (`k8s.io/apimachinery/pkg/labels` syntax: `=`, `==`, `!=`, `in`, `notin`,
//! exists, `!` not-exists, `>`, `<`) and field selectors (`=`, `==`, `!=` on a fixed set of
//! fields per resource, as `fields.ParseSelector` plus each registry's field label conversion).

use serde_json::Value;

/// One label requirement.
#[derive(Clone, Debug, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0_i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, String> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            format!("unable to parse requirement: {whole:?}: expected '(' value set ')'")
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

fn parse_requirement(raw: &str) -> Result<Requirement, String> {
    let req = raw.trim();
    if let Some(key) = req.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().to_string()));
    }
    for (op, ctor) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((k, v)) = req.split_once(op) {
            return Ok(ctor(k.trim().to_string(), v.trim().to_string()));
        }
    }
    for (op, greater) in [(">", true), ("<", false)] {
        if let Some((k, v)) = req.split_once(op) {
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("unable to parse requirement: {req:?}: for 'gt', 'lt' operators, the value must be an integer"))?;
            let k = k.trim().to_string();
            return Ok(if greater {
                Requirement::GreaterThan(k, n)
            } else {
                Requirement::LessThan(k, n)
            });
        }
    }
    let mut words = req.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().to_string();
    let rest = words.next().unwrap_or_default().trim_start();
    if rest.is_empty() {
        if key.is_empty() {
            return Err(format!("unable to parse requirement: {raw:?}"));
        }
        return Ok(Requirement::Exists(key));
    }
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(Requirement::NotIn(key, parse_set(set, req)?));
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(Requirement::In(key, parse_set(set, req)?));
    }
    Err(format!(
        "unable to parse requirement: {req:?}: expected one of '=', '==', '!=', 'in', 'notin'"
    ))
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        let requirements = split_top_level(s)
            .into_iter()
            .map(parse_requirement)
            .collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions` with `In`, `NotIn`,
    /// `Exists`, `DoesNotExist`), as `metav1.LabelSelectorAsSelector` converts it; `{}`
    /// matches everything.
    pub(crate) fn from_json(selector: &Value) -> Result<Self, String> {
        let mut requirements = Vec::new();
        let labels = selector.get("matchLabels").and_then(Value::as_object);
        for (k, v) in labels.into_iter().flatten() {
            requirements.push(Requirement::Equals(
                k.clone(),
                v.as_str().unwrap_or_default().to_string(),
            ));
        }
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        for e in expressions.into_iter().flatten() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<String> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            requirements.push(match op {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(format!(
                        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                    ));
                }
                "In" => Requirement::In(key.to_string(), values),
                "NotIn" => Requirement::NotIn(key.to_string(), values),
                "Exists" => Requirement::Exists(key.to_string()),
                "DoesNotExist" => Requirement::NotExists(key.to_string()),
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            });
        }
        Ok(Self { requirements })
    }

    /// Label keys an object must carry to match (`=`, `in`, exists, `>`, `<`); an object
    /// without any of them can match only a selector that has none.
    pub(crate) fn required_keys(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().filter_map(|r| match r {
            Requirement::Equals(k, _)
            | Requirement::In(k, _)
            | Requirement::Exists(k)
            | Requirement::GreaterThan(k, _)
            | Requirement::LessThan(k, _) => Some(k.as_str()),
            Requirement::NotEquals(..) | Requirement::NotIn(..) | Requirement::NotExists(_) => None,
        })
    }

    /// True when `obj`'s labels satisfy every requirement.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::GreaterThan(k, n) => get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l > *n),
            Requirement::LessThan(k, n) => get(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l < *n),
        })
    }
}

/// A parsed field selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses `fieldSelector`; `allowed` are the field labels this resource supports.
    pub(crate) fn parse(s: &str, allowed: &[&str]) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut terms = Vec::new();
        for raw in s.split(',') {
            let term = raw.trim();
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            let field = field.trim();
            if !allowed.contains(&field) {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(Self { terms })
    }

    /// True when the object's fields satisfy every term (absent fields read as "").
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let actual = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }

    /// The name a `metadata.name=x` term pins, if any (lets list and watch skip a scan).
    pub(crate) fn pinned_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, eq, _)| f == "metadata.name" && *eq)
            .map(|(_, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "n", "namespace": "ns", "labels": labels}, "type": "Opaque"})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "1"}));
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("app notin (web)", false),
            ("app", true),
            ("!app", false),
            ("missing", false),
            ("!missing", true),
            ("tier>0,app=web", true),
            ("tier<1", false),
            ("app in (db),tier", false),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn bad_label_selector_is_an_error() {
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors_on_allowed_fields_only() {
        let allowed = ["metadata.name", "metadata.namespace", "type"];
        let o = obj(json!({}));
        assert!(
            FieldSelector::parse("metadata.name=n", &allowed)
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns", &allowed)
                .unwrap()
                .matches(&o)
        );
        assert!(
            FieldSelector::parse("type==Opaque", &allowed)
                .unwrap()
                .matches(&o)
        );
        let err = FieldSelector::parse("spec.x=1", &allowed).unwrap_err();
        assert_eq!(err, "field label not supported: spec.x");
    }
}
