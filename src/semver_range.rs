//! Version ranges with the semantics of Go's `github.com/blang/semver/v4` `ParseRange`, which is
//! what OLM and `opm` use for `skipRange` (olm-api.md §6.3).
//!
//! These are *not* Cargo's or npm's semantics:
//! - comparators are `<`, `<=`, `>`, `>=`, `=`/`==`/none, `!`/`!=`;
//! - whitespace means AND, `||` means OR, AND binds tighter, there are no parentheses;
//! - wildcards (`1.2.x`, `1.x`, `1.x.x`) are expanded into plain comparators first;
//! - comparison is plain semver precedence: pre-releases are **not** excluded from a range
//!   (`<1.0.0` contains `1.0.0-rc.1`), and build metadata is ignored.
//!
//! The tokenizer and the wildcard expansion follow blang's string manipulation step by step,
//! quirks included, so that a range `opm validate` accepts is accepted here and means the same.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use semver::Version;

/// A parsed version range, e.g. `>=1.0.0 <1.2.0 || 2.x`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    text: String,
    /// OR of ANDs.
    alternatives: Vec<Vec<Comparator>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// Why a range could not be parsed. Messages follow blang's wording where a user would compare
/// them with `opm validate` output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("first element in range is '||'")]
    LeadingOr,
    #[error("last element in range is '||'")]
    TrailingOr,
    #[error("empty alternative between two '||'")]
    EmptyAlternative,
    #[error("could not get version from string: {0:?}")]
    NoVersion(String),
    #[error("could not parse comparator {comparator:?} in {part:?}")]
    BadComparator { comparator: String, part: String },
    #[error("could not parse version {version:?} in {part:?}: {reason}")]
    BadVersion {
        version: String,
        part: String,
        reason: String,
    },
}

impl Range {
    /// Parses a range with blang/semver v4 `ParseRange` rules.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let parts = split_and_trim(text);
        let or_parts = split_or_parts(parts)?;
        let expanded = or_parts
            .into_iter()
            .map(expand_wildcards)
            .collect::<Result<Vec<_>, _>>()?;
        let alternatives = expanded
            .into_iter()
            .map(|and_parts| {
                and_parts
                    .iter()
                    .map(|part| parse_comparator(part))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            text: text.to_owned(),
            alternatives,
        })
    }

    /// Returns true iff `version` satisfies the range (semver precedence; build metadata ignored;
    /// pre-releases compared like any other version).
    pub fn contains(&self, version: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|comparator| comparator.matches(version)))
    }

    /// The range as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl FromStr for Range {
    type Err = RangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Comparator {
    fn matches(&self, version: &Version) -> bool {
        let ordering = version.cmp_precedence(&self.version);
        match self.op {
            Op::Eq => ordering == Ordering::Equal,
            Op::Ne => ordering != Ordering::Equal,
            Op::Gt => ordering == Ordering::Greater,
            Op::Ge => ordering != Ordering::Less,
            Op::Lt => ordering == Ordering::Less,
            Op::Le => ordering != Ordering::Greater,
        }
    }
}

/// blang `splitAndTrim`: split on spaces, except a space right after `>`, `<` or `=` (so
/// `>= 1.0.0` stays one part), then drop the spaces inside each part. Like blang, a part must be
/// at least two bytes long to be kept.
fn split_and_trim(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut last = 0usize;
    let mut last_char = 0u8;
    for (i, &byte) in bytes.iter().enumerate() {
        if byte == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i {
                parts.push(&text[last..i]);
            }
            last = i + 1;
        } else if byte != b' ' {
            last_char = byte;
        }
    }
    if last + 1 < bytes.len() {
        parts.push(&text[last..]);
    }
    parts
        .into_iter()
        .map(|part| part.replace(' ', ""))
        .collect()
}

/// blang `splitORParts`.
fn split_or_parts(parts: Vec<String>) -> Result<Vec<Vec<String>>, RangeError> {
    if parts.first().is_some_and(|part| part == "||") {
        return Err(RangeError::LeadingOr);
    }
    // blang reports an empty range like a trailing '||' (its `last == len(parts)` check).
    if parts.last().is_none_or(|part| part == "||") {
        return Err(RangeError::TrailingOr);
    }
    let mut alternatives = vec![Vec::new()];
    for part in parts {
        if part == "||" {
            alternatives.push(Vec::new());
        } else if let Some(current) = alternatives.last_mut() {
            current.push(part);
        }
    }
    // blang builds a nil function for `a || || b` and panics when it is evaluated; refuse it.
    if alternatives.iter().any(Vec::is_empty) {
        return Err(RangeError::EmptyAlternative);
    }
    Ok(alternatives)
}

/// blang `splitComparatorVersion`: everything before the first digit is the comparator.
fn split_comparator_version(part: &str) -> Result<(&str, &str), RangeError> {
    let index = part
        .find(|c: char| c.is_ascii_digit())
        .ok_or_else(|| RangeError::NoVersion(part.to_owned()))?;
    Ok((part[..index].trim(), &part[index..]))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wildcard {
    None,
    Minor,
    Patch,
}

/// blang `getWildcardType`: the number of dot-separated parts decides, if the last one is `x`.
fn wildcard_type(version: &str) -> Wildcard {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.last() != Some(&"x") {
        return Wildcard::None;
    }
    match parts.len() {
        2 => Wildcard::Minor,
        3 => Wildcard::Patch,
        _ => Wildcard::None,
    }
}

/// blang `createVersionFromWildcard`.
fn flatten_wildcard(version: &str) -> String {
    let flat = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if flat.split('.').count() == 2 {
        format!("{flat}.0")
    } else {
        flat
    }
}

/// blang `incrementMajorVersion` / `incrementMinorVersion`; a non-numeric component yields an
/// empty string, exactly as blang's ignored error does.
fn increment_component(version: &str, index: usize) -> String {
    let mut parts: Vec<String> = version.split('.').map(str::to_owned).collect();
    let Some(component) = parts.get_mut(index) else {
        return String::new();
    };
    // Go's strconv.Atoi accepts an optional sign; versions never have one, so digits only.
    match component.parse::<u64>() {
        Ok(number) => {
            *component = (number + 1).to_string();
            parts.join(".")
        }
        Err(_) => String::new(),
    }
}

/// blang `expandWildcardVersion` for one AND group.
fn expand_wildcards(parts: Vec<String>) -> Result<Vec<String>, RangeError> {
    let mut expanded = Vec::with_capacity(parts.len());
    for part in parts {
        let (op, version) = split_comparator_version(&part)?;
        if !part.contains(".x") {
            expanded.push(part);
            continue;
        }
        let wildcard = wildcard_type(version);
        let flat = flatten_wildcard(version);
        let (result_op, increment) = match op {
            ">" => (">=", true),
            ">=" => (">=", false),
            "<" => ("<", false),
            "<=" => ("<", true),
            "" | "=" | "==" => {
                expanded.push(format!(">={flat}"));
                ("<", true)
            }
            "!=" | "!" => {
                expanded.push(format!("<{flat}"));
                (">=", true)
            }
            // blang leaves the operator empty here; parsing the comparator fails later.
            _ => ("", false),
        };
        let result_version = if increment {
            match wildcard {
                Wildcard::Patch => increment_component(&flat, 1),
                Wildcard::Minor => increment_component(&flat, 0),
                Wildcard::None => String::new(),
            }
        } else {
            flat
        };
        expanded.push(format!("{result_op}{result_version}"));
    }
    Ok(expanded)
}

/// blang `splitComparatorVersion` + `buildVersionRange`.
fn parse_comparator(part: &str) -> Result<Comparator, RangeError> {
    let (op_text, version_text) = split_comparator_version(part)?;
    let op = match op_text {
        "" | "=" | "==" => Op::Eq,
        "!" | "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        other => {
            return Err(RangeError::BadComparator {
                comparator: other.to_owned(),
                part: part.to_owned(),
            });
        }
    };
    let version = Version::parse(version_text).map_err(|error| RangeError::BadVersion {
        version: version_text.to_owned(),
        part: part.to_owned(),
        reason: error.to_string(),
    })?;
    Ok(Comparator { op, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn check(range: &str, cases: &[(&str, bool)]) {
        let parsed = Range::parse(range).unwrap_or_else(|e| panic!("{range:?}: {e}"));
        for (version, expected) in cases {
            assert_eq!(
                parsed.contains(&v(version)),
                *expected,
                "range {range:?} on {version}"
            );
        }
    }

    #[test]
    fn simple_comparators() {
        check(
            ">1.2.3",
            &[("1.2.2", false), ("1.2.3", false), ("1.2.4", true)],
        );
        check(
            ">=1.2.3",
            &[("1.2.2", false), ("1.2.3", true), ("1.2.4", true)],
        );
        check(
            "<1.2.3",
            &[("1.2.2", true), ("1.2.3", false), ("1.2.4", false)],
        );
        check(
            "<=1.2.3",
            &[("1.2.2", true), ("1.2.3", true), ("1.2.4", false)],
        );
        for eq in ["1.2.3", "=1.2.3", "==1.2.3"] {
            check(eq, &[("1.2.2", false), ("1.2.3", true), ("1.2.4", false)]);
        }
        for ne in ["!=1.2.3", "!1.2.3"] {
            check(ne, &[("1.2.2", true), ("1.2.3", false), ("1.2.4", true)]);
        }
    }

    #[test]
    fn whitespace_is_and_and_operators_may_be_followed_by_spaces() {
        check(
            "  >=   1.2.3   <  1.2.5 ",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", true),
                ("1.2.5", false),
            ],
        );
        check(
            ">1.2.2 <1.2.5 !=1.2.4",
            &[("1.2.3", true), ("1.2.4", false), ("1.2.5", false)],
        );
    }

    #[test]
    fn or_binds_weaker_than_and() {
        check(
            ">1.2.2 <1.2.4 || >=2.0.0 <3.0.0",
            &[
                ("1.2.2", false),
                ("1.2.3", true),
                ("1.2.4", false),
                ("2.0.0", true),
                ("2.9.9", true),
                ("3.0.0", false),
            ],
        );
        check(
            "<1.2.2 || >1.2.4",
            &[("1.2.1", true), ("1.2.3", false), ("1.2.5", true)],
        );
    }

    #[test]
    fn prereleases_are_not_excluded() {
        // npm/Cargo would exclude 1.0.0-rc.1 from "<1.0.0"-style ranges with no pre-release
        // comparator; blang (and therefore OLM) does not.
        check(
            ">=0.9.0 <1.0.0",
            &[
                ("1.0.0-rc.1", true),
                ("0.9.1-alpha", true),
                ("1.0.0", false),
            ],
        );
        // A pre-release is lower than its release.
        check("<1.0.1", &[("1.0.1-1", true)]);
    }

    #[test]
    fn build_metadata_is_ignored() {
        check("=1.2.3", &[("1.2.3+build.7", true)]);
        check(">1.2.3", &[("1.2.3+zzz", false)]);
    }

    #[test]
    fn wildcards_expand_like_blang() {
        check(">1.x", &[("1.9.0", false), ("2.0.0", true)]);
        check(">1.2.x", &[("1.2.6", false), ("1.3.0", true)]);
        check("<=1.2.x", &[("1.2.99", true), ("1.3.0", false)]);
        check("<1.2.x", &[("1.1.9", true), ("1.2.0", false)]);
        check(">=1.x", &[("0.9.9", false), ("1.0.0", true)]);
        check(
            "1.2.x",
            &[
                ("1.1.9", false),
                ("1.2.0", true),
                ("1.2.9", true),
                ("1.3.0", false),
            ],
        );
        check(
            "1.x || >=2.0.x <2.2.x",
            &[
                ("0.9.2", false),
                ("1.2.2", true),
                ("2.0.0", true),
                ("2.1.8", true),
                ("2.2.0", false),
            ],
        );
    }

    #[test]
    fn blang_quirk_three_part_wildcard_counts_as_patch() {
        // blang treats "1.x.x" as a patch wildcard of 1.0.0, so "<=1.x.x" becomes "<1.1.0".
        check("<=1.x.x", &[("1.0.9", true), ("1.1.0", false)]);
    }

    #[test]
    fn blang_quirk_negated_wildcard_matches_nothing() {
        // blang expands "!=1.2.x" into "<1.2.0 >=1.3.0" inside the same AND group, so the range
        // is empty. OLM inherits this; we keep it so that resolution agrees with OLM.
        check(
            "!=1.2.x",
            &[("1.1.0", false), ("1.2.5", false), ("1.3.0", false)],
        );
    }

    #[test]
    fn invalid_ranges_are_rejected() {
        for bad in [
            ">>1.2.3",
            "1.0",
            "string",
            "",
            "   ",
            "fo.ob.ar.x",
            "|| >1.0.0",
            ">1.0.0 ||",
            ">1.0.0 || || <0.5.0",
        ] {
            assert!(Range::parse(bad).is_err(), "{bad:?} should not parse");
        }
        let error = Range::parse(">=1.0 <2.0.0").unwrap_err();
        assert!(error.to_string().contains("\"1.0\""), "{error}");
        let error = Range::parse("~1.2.3").unwrap_err();
        assert_eq!(
            error,
            RangeError::BadComparator {
                comparator: "~".into(),
                part: "~1.2.3".into()
            }
        );
    }

    #[test]
    fn displays_as_written() {
        let range: Range = ">=4.1.0 <4.2.0".parse().unwrap();
        assert_eq!(range.to_string(), ">=4.1.0 <4.2.0");
        assert_eq!(range.as_str(), ">=4.1.0 <4.2.0");
    }
}
