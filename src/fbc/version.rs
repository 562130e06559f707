//! Bundle versions: the `olm.package` property's semver `version` and optional `release`.
//!
//! Versions are parsed with the `semver` crate (same grammar as blang/semver's `Parse`: no
//! leading `v`, no leading zeros); its error messages differ from Go's. A release is a
//! dot-separated list of pre-release-style identifiers (`operator-registry`'s `NewRelease`).

use std::fmt;

/// At most this many characters in a release (the CSV CRD's limit, enforced by `opm`).
pub const RELEASE_MAX_LEN: usize = 20;

/// A bundle release: dot-separated identifiers of `[0-9A-Za-z-]`, numeric ones without leading
/// zeros. Empty when the bundle has none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Release(Vec<String>);

impl Release {
    /// Parses a release; `""` is the empty release.
    pub fn parse(text: &str) -> Result<Self, ReleaseError> {
        if text.is_empty() {
            return Ok(Self::default());
        }
        if text.len() > RELEASE_MAX_LEN {
            return Err(ReleaseError {
                release: text.to_owned(),
                reason: format!("exceeds maximum length of {RELEASE_MAX_LEN} characters"),
            });
        }
        let mut segments = Vec::new();
        let mut problems = Vec::new();
        for (i, segment) in text.split('.').enumerate() {
            match check_segment(segment) {
                Ok(()) => segments.push(segment.to_owned()),
                Err(reason) => problems.push(format!("segment {i}: {reason}")),
            }
        }
        if problems.is_empty() {
            Ok(Self(segments))
        } else {
            Err(ReleaseError {
                release: text.to_owned(),
                reason: problems.join("\n"),
            })
        }
    }

    /// Whether there is no release.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// blang/semver `NewPRVersion` checks, with its messages.
fn check_segment(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("Prerelease is empty".to_owned());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {s:?}"
            ));
        }
        if s.parse::<u64>().is_err() {
            return Err(format!("Numeric PreRelease version is too large {s:?}"));
        }
        return Ok(());
    }
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Ok(());
    }
    Err(format!("Invalid character(s) found in prerelease {s:?}"))
}

/// An invalid release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid release {release:?}: {reason}")]
pub struct ReleaseError {
    /// The release as written.
    pub release: String,
    /// Why it is invalid.
    pub reason: String,
}

/// `version` or `version-release`: the string two bundles of a package must not share.
pub fn version_string(version: &semver::Version, release: &Release) -> String {
    if release.is_empty() {
        version.to_string()
    } else {
        format!("{version}-{release}")
    }
}

/// The name a bundle with a release must have: `<package>-v<version>-<release>`; `None` when
/// there is no release (then any name is fine).
pub fn normalized_name(
    package: &str,
    version: &semver::Version,
    release: &Release,
) -> Option<String> {
    (!release.is_empty()).then(|| format!("{package}-v{version}-{release}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_follow_operator_registry() {
        assert_eq!(Release::parse("").unwrap(), Release::default());
        assert_eq!(
            Release::parse("alpha.1.0-x").unwrap().to_string(),
            "alpha.1.0-x"
        );
        assert_eq!(
            Release::parse("!!!").unwrap_err().to_string(),
            r#"invalid release "!!!": segment 0: Invalid character(s) found in prerelease "!!!""#
        );
        assert_eq!(
            Release::parse("1.01").unwrap_err().to_string(),
            r#"invalid release "1.01": segment 1: Numeric PreRelease version must not contain leading zeroes "01""#
        );
        assert!(Release::parse("a..b").is_err());
        assert!(Release::parse("123456789012345678901").is_err());
    }

    #[test]
    fn normalized_names_and_version_strings() {
        let v = semver::Version::parse("0.1.0").unwrap();
        let r = Release::parse("alpha.1").unwrap();
        assert_eq!(
            normalized_name("foo", &v, &r).as_deref(),
            Some("foo-v0.1.0-alpha.1")
        );
        assert_eq!(version_string(&v, &r), "0.1.0-alpha.1");
        assert_eq!(normalized_name("foo", &v, &Release::default()), None);
    }
}
