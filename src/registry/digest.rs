//! Content digests (`sha256:<hex>`, `sha512:<hex>`) and incremental hashing.
//!
//! Every byte opcat takes from a registry is hashed with [`Hasher`] and compared with the digest
//! that named it; the comparison lives here so there is one definition of "verified".

use std::fmt;
use std::str::FromStr;

use sha2::Digest as _;

/// A content digest as used by OCI registries, e.g. `sha256:0123…`.
///
/// Only `sha256` and `sha512` are accepted; the hex part is validated (lowercase, right length),
/// so a `Digest` can safely be used as a file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    algorithm: Algorithm,
    hex: String,
}

/// A hash algorithm opcat can verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// SHA-256, the algorithm of nearly every registry.
    Sha256,
    /// SHA-512.
    Sha512,
}

impl Algorithm {
    /// The name used in digest strings.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }
}

/// Why a string is not a digest opcat accepts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    /// No `algorithm:` prefix.
    #[error("digest {digest:?} has no algorithm prefix (expected sha256:<hex>)")]
    NoAlgorithm {
        /// The offending text (digests are public data).
        digest: String,
    },
    /// An algorithm other than sha256/sha512.
    #[error("digest {digest:?} uses an unsupported algorithm (sha256 and sha512 are supported)")]
    UnsupportedAlgorithm {
        /// The offending text.
        digest: String,
    },
    /// The hex part has the wrong length or non-hex characters.
    #[error("digest {digest:?} is malformed: expected {expected} lowercase hex characters")]
    Malformed {
        /// The offending text.
        digest: String,
        /// How many hex characters the algorithm needs.
        expected: usize,
    },
}

impl DigestError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        "invalid_digest"
    }
}

impl Digest {
    /// The algorithm part.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The lowercase hex part (safe as a file name).
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// SHA-256 of `bytes`.
    pub fn sha256_of(bytes: &[u8]) -> Digest {
        let mut hasher = Hasher::new(Algorithm::Sha256);
        hasher.update(bytes);
        hasher.finish()
    }

    /// Hashes `bytes` with this digest's algorithm and tells whether they match.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        let mut hasher = Hasher::new(self.algorithm);
        hasher.update(bytes);
        hasher.finish() == *self
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((algorithm, hex)) = text.split_once(':') else {
            return Err(DigestError::NoAlgorithm {
                digest: text.to_owned(),
            });
        };
        let algorithm = match algorithm {
            "sha256" => Algorithm::Sha256,
            "sha512" => Algorithm::Sha512,
            _ => {
                return Err(DigestError::UnsupportedAlgorithm {
                    digest: text.to_owned(),
                });
            }
        };
        let well_formed = hex.len() == algorithm.hex_len()
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !well_formed {
            return Err(DigestError::Malformed {
                digest: text.to_owned(),
                expected: algorithm.hex_len(),
            });
        }
        Ok(Digest {
            algorithm,
            hex: hex.to_owned(),
        })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algorithm.name(), self.hex)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Incremental hasher producing a [`Digest`].
#[derive(Clone)]
pub enum Hasher {
    /// SHA-256 state.
    Sha256(sha2::Sha256),
    /// SHA-512 state.
    Sha512(sha2::Sha512),
}

impl Hasher {
    /// A fresh hasher for `algorithm`.
    pub fn new(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(state) => state.update(bytes),
            Hasher::Sha512(state) => state.update(bytes),
        }
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Digest {
        let (algorithm, hex) = match self {
            Hasher::Sha256(state) => (Algorithm::Sha256, hex::encode(state.finalize())),
            Hasher::Sha512(state) => (Algorithm::Sha512, hex::encode(state.finalize())),
        };
        Digest { algorithm, hex }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_sha256() {
        let text = format!("sha256:{}", "a".repeat(64));
        let digest: Digest = text.parse().unwrap();
        assert_eq!(digest.to_string(), text);
        assert_eq!(digest.hex(), "a".repeat(64));
    }

    #[test]
    fn rejects_path_like_or_short_digests() {
        for bad in [
            "sha256:../../etc",
            "sha256:ABCDEF",
            "md5:abcd",
            "nocolon",
            &format!("sha256:{}", "A".repeat(64)),
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn hashes_known_value() {
        // sha256("") is well known.
        assert_eq!(
            Digest::sha256_of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(Digest::sha256_of(b"x").matches(b"x"));
        assert!(!Digest::sha256_of(b"x").matches(b"y"));
    }
}
