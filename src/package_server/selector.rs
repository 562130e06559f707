//! Label and field selectors of list requests, parsed and matched as `k8s.io/apimachinery`
//! does (`pkg/labels/selector.go` `Parse`, `pkg/fields/selector.go` `ParseSelector`).
//!
//! Label selectors: comma-separated requirements `key`, `!key`, `key=value`, `key==value`,
//! `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>N`, `key<N`. A missing label satisfies
//! `!=` and `notin`, as in Kubernetes.
//!
//! Field selectors: comma-separated `field=value`, `field==value`, `field!=value`, with `\`
//! escaping `,`, `=` and `\` in values.

use std::collections::BTreeMap;

/// A selector the API server refuses (400 Bad Request), with Kubernetes' wording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// One label requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    DoesNotExist(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses `text` (`labelSelector` query parameter).
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(requirement(part)?);
        }
        Ok(Self { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Exists(key) => labels.contains_key(key),
                Requirement::DoesNotExist(key) => !labels.contains_key(key),
                Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
                Requirement::NotIn(key, values) => {
                    labels.get(key).is_none_or(|v| !values.contains(v))
                }
                Requirement::GreaterThan(key, bound) => labels
                    .get(key)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v > *bound),
                Requirement::LessThan(key, bound) => labels
                    .get(key)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v < *bound),
            })
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(part: &str) -> Result<Requirement, SelectorError> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Requirement::DoesNotExist(key.to_owned()));
    }
    for (operator, equals) in [("==", true), ("!=", false), ("=", true)] {
        if let Some((key, value)) = part.split_once(operator) {
            let (key, value) = (key.trim(), value.trim());
            check_key(key)?;
            check_value(value)?;
            let values = vec![value.to_owned()];
            return Ok(if equals {
                Requirement::In(key.to_owned(), values)
            } else {
                Requirement::NotIn(key.to_owned(), values)
            });
        }
    }
    for (operator, greater) in [(">", true), ("<", false)] {
        if let Some((key, value)) = part.split_once(operator) {
            let (key, value) = (key.trim(), value.trim());
            check_key(key)?;
            let bound = value.parse::<i64>().map_err(|_| {
                SelectorError(format!(
                    "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an \
                     integer: {value:?}"
                ))
            })?;
            return Ok(if greater {
                Requirement::GreaterThan(key.to_owned(), bound)
            } else {
                Requirement::LessThan(key.to_owned(), bound)
            });
        }
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    check_key(key)?;
    if rest.is_empty() {
        return Ok(Requirement::Exists(key.to_owned()));
    }
    let (operator, set) = rest
        .split_once(|c: char| c.is_whitespace() || c == '(')
        .map(|(operator, _)| (operator, &rest[operator.len()..]))
        .unwrap_or((rest, ""));
    let values = value_set(set.trim())?;
    match operator {
        "in" => Ok(Requirement::In(key.to_owned(), values)),
        "notin" => Ok(Requirement::NotIn(key.to_owned(), values)),
        other => Err(SelectorError(format!(
            "unable to parse requirement: found '{other}', expected: in, notin, =, ==, !=, gt, lt"
        ))),
    }
}

fn value_set(text: &str) -> Result<Vec<String>, SelectorError> {
    let inner = text
        .strip_prefix('(')
        .and_then(|text| text.strip_suffix(')'))
        .ok_or_else(|| {
            SelectorError(format!(
                "unable to parse requirement: found '{text}', expected: '('"
            ))
        })?;
    let mut values = Vec::new();
    for value in inner.split(',') {
        let value = value.trim();
        check_value(value)?;
        values.push(value.to_owned());
    }
    values.sort();
    values.dedup();
    Ok(values)
}

/// A label key: optional DNS-subdomain prefix and `/`, then a name of at most 63 characters of
/// alphanumerics, `-`, `_`, `.`, beginning and ending with an alphanumeric.
fn check_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    });
    if !name.is_empty() && name.len() <= 63 && is_qualified_name(name) && prefix_ok {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "unable to parse requirement: invalid label key {key:?}: name part must consist of \
             alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character"
        )))
    }
}

fn is_qualified_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// A label value: empty, or at most 63 characters as a qualified name.
fn check_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() || (value.len() <= 63 && is_qualified_name(value)) {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "unable to parse requirement: invalid label value: {value:?}: a valid label must be \
             an empty string or consist of alphanumeric characters, '-', '_' or '.', and must \
             start and end with an alphanumeric character"
        )))
    }
}

/// One field requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `=` / `==`, `false` for `!=`.
    pub equals: bool,
    /// The value, unescaped.
    pub value: String,
}

/// Parses a field selector (`fieldSelector` query parameter).
pub fn parse_field_selector(text: &str) -> Result<Vec<FieldRequirement>, SelectorError> {
    let mut requirements = Vec::new();
    for term in split_unescaped(text, ',') {
        if term.is_empty() {
            continue;
        }
        let (field, equals, value) = if let Some((field, value)) = split_operator(&term, "!=") {
            (field, false, value)
        } else if let Some((field, value)) = split_operator(&term, "==") {
            (field, true, value)
        } else if let Some((field, value)) = split_operator(&term, "=") {
            (field, true, value)
        } else {
            return Err(SelectorError(format!(
                "invalid selector: '{term}'; can't understand '{term}'"
            )));
        };
        requirements.push(FieldRequirement {
            field,
            equals,
            value: unescape(&value)?,
        });
    }
    Ok(requirements)
}

/// Splits `text` at `separator` where it is not escaped by `\` (escapes kept).
fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            current.push(c);
            escaped = true;
        } else if c == separator {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// The first unescaped `operator` in `term`: field before, value (still escaped) after.
fn split_operator(term: &str, operator: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (index, c) in term.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if term[index..].starts_with(operator) {
            return Some((
                term[..index].to_owned(),
                term[index + operator.len()..].to_owned(),
            ));
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(next @ ('\\' | ',' | '=')) => out.push(next),
            Some(next) => {
                return Err(SelectorError(format!(
                    "invalid field selector: invalid escape sequence: \\{next}"
                )));
            }
            None => {
                return Err(SelectorError(
                    "invalid field selector: unterminated escape sequence".to_owned(),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selectors_match_as_kubernetes_does() {
        let pm = labels(&[
            ("catalog", "private"),
            ("catalog-namespace", "olm"),
            ("operatorframework.io/arch.amd64", "supported"),
        ]);
        for (selector, expected) in [
            ("", true),
            ("catalog=private", true),
            ("catalog==private", true),
            ("catalog!=private", false),
            ("catalog=private,catalog-namespace=team-a", false),
            ("catalog in (other, private)", true),
            ("catalog notin (private)", false),
            ("provider notin (x)", true),
            ("provider!=x", true),
            ("operatorframework.io/arch.amd64", true),
            ("!operatorframework.io/arch.arm64", true),
            ("!catalog", false),
        ] {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(&pm), expected, "{selector}");
        }
        let numbers = labels(&[("tier", "3")]);
        assert!(LabelSelector::parse("tier>2").unwrap().matches(&numbers));
        assert!(!LabelSelector::parse("tier<2").unwrap().matches(&numbers));
    }

    #[test]
    fn malformed_label_selectors_are_refused_with_kubernetes_wording() {
        for selector in [
            "catalog in private",
            "-bad=x",
            "catalog=a b",
            "tier>x",
            "k between (a)",
        ] {
            let error = LabelSelector::parse(selector).unwrap_err();
            assert!(
                error.0.starts_with("unable to parse requirement"),
                "{selector}: {error}"
            );
        }
    }

    #[test]
    fn field_selectors_split_on_unescaped_commas() {
        let parsed = parse_field_selector("metadata.name=a\\,b,metadata.namespace!=x").unwrap();
        assert_eq!(
            parsed,
            vec![
                FieldRequirement {
                    field: "metadata.name".into(),
                    equals: true,
                    value: "a,b".into()
                },
                FieldRequirement {
                    field: "metadata.namespace".into(),
                    equals: false,
                    value: "x".into()
                },
            ]
        );
        assert!(parse_field_selector("metadata.name").is_err());
        assert!(parse_field_selector("metadata.name=a\\q").is_err());
    }
}
