//! Which credentials apply to an image, exactly as the kubelet decides it
//! (kubernetes `pkg/credentialprovider/keyring.go`, `BasicDockerKeyring`):
//!
//! - keys are normalised: an `http://`/`https://` scheme is dropped and a leading `/v1/` or
//!   `/v2/` path segment is stripped (`https://index.docker.io/v1/` becomes `index.docker.io`);
//! - a key matches an image when the ports are equal, the hosts have the same number of DNS
//!   labels and each label matches as a glob (`*.example.com` matches `a.example.com`, not
//!   `a.b.example.com`), and the key's path is a (string) prefix of the image's path;
//! - all matches are returned, longest key first (keys reverse-sorted), credentials of equal
//!   keys in the order their secrets were added — the kubelet tries each in turn;
//! - the Docker Hub aliases `docker.io`, `index.docker.io`, `registry-1.docker.io` (with or
//!   without scheme and `/v1/`) all stand for the host of images that name no registry.

use std::fmt;

use super::credentials::{Credential, ParsedConfig};
use super::reference::{DOCKER_HUB, ImageRef};
use super::secret::{PullSecret, SecretError};

const DOCKER_HUB_ALIASES: [&str; 3] = ["docker.io", "index.docker.io", "registry-1.docker.io"];

/// A set of registry credentials, each tagged with the secret it came from.
#[derive(Clone, Default)]
pub struct Keyring {
    // Kept sorted: key descending, then insertion order (stable sort).
    entries: Vec<KeyEntry>,
}

#[derive(Clone)]
struct KeyEntry {
    key: RegistryKey,
    secret: String,
    credential: Credential,
}

/// A credential that applies to an image, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct MatchedCredential<'a> {
    /// Name of the secret (or file) that holds it.
    pub secret: &'a str,
    /// The normalised registry key that matched (e.g. `quay.io/org`).
    pub key: &'a str,
    /// The credential itself (redacted in `Debug`).
    pub credential: &'a Credential,
}

/// A normalised registry key: `host[:port]` plus an optional path starting with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RegistryKey {
    text: String,
    host: String,
    port: String,
    path: String,
}

impl RegistryKey {
    fn parse(raw: &str) -> RegistryKey {
        let rest = raw
            .strip_prefix("https://")
            .or_else(|| raw.strip_prefix("http://"))
            .unwrap_or(raw);
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        // Query strings and fragments are not part of a registry key.
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = if path.starts_with("/v1/") || path.starts_with("/v2/") {
            &path[3..]
        } else {
            path
        };
        let path = if path == "/" { "" } else { path };
        let (host, port) = split_host_port(authority);
        let host = canonical_host(&host.to_ascii_lowercase());
        let authority = if port.is_empty() {
            host.clone()
        } else if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        RegistryKey {
            text: format!("{authority}{path}"),
            host,
            port,
            path: path.to_owned(),
        }
    }

    fn matches(&self, host: &str, port: &str, path: &str) -> bool {
        if self.port != port || !path.starts_with(&self.path) {
            return false;
        }
        let globs: Vec<&str> = self.host.split('.').collect();
        let labels: Vec<&str> = host.split('.').collect();
        globs.len() == labels.len()
            && globs
                .iter()
                .zip(&labels)
                .all(|(glob, label)| glob_match(glob.as_bytes(), label.as_bytes()))
    }
}

/// An image as the matcher sees it: canonical host, port, `/`-prefixed repository path.
struct Target {
    host: String,
    port: String,
    path: String,
}

impl Target {
    fn of(image: &ImageRef) -> Target {
        let (host, port) = split_host_port(image.registry());
        Target {
            host: canonical_host(&host.to_ascii_lowercase()),
            port,
            path: format!("/{}", image.repository()),
        }
    }

    fn matched_by(&self, key: &RegistryKey) -> bool {
        key.matches(&self.host, &self.port, &self.path)
    }
}

/// Whether the dockerconfig registry key `raw_key` (as written in a pull secret) applies to
/// `image`, by the same rules [`Keyring::lookup`] follows: the kubelet's. Used to keep only the
/// entries of a pull secret that some image needs.
pub fn key_matches(raw_key: &str, image: &ImageRef) -> bool {
    Target::of(image).matched_by(&RegistryKey::parse(raw_key))
}

/// Whether `raw_key` applies to at least one of `images`.
pub fn key_matches_any(raw_key: &str, images: &[ImageRef]) -> bool {
    let key = RegistryKey::parse(raw_key);
    images
        .iter()
        .any(|image| Target::of(image).matched_by(&key))
}

/// Splits `host:port`, `[v6]:port`, `[v6]` or `host` (Go's `net.SplitHostPort`, lenient).
fn split_host_port(authority: &str) -> (String, String) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').unwrap_or_default();
        return (host.to_owned(), port.to_owned());
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host.to_owned(), port.to_owned()),
        _ => (authority.to_owned(), String::new()),
    }
}

fn canonical_host(host: &str) -> String {
    if DOCKER_HUB_ALIASES.contains(&host) {
        DOCKER_HUB.to_owned()
    } else {
        host.to_owned()
    }
}

/// Go's `filepath.Match` for one DNS label: `*`, `?`, `[class]` (with ranges and `^`), `\`
/// escapes. A malformed pattern matches nothing, as in the kubelet. Linear in practice: the
/// classic single-backtrack-point algorithm, since every token but `*` consumes one byte.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let Some(tokens) = tokenize(pattern) else {
        return false;
    };
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match tokens.get(p) {
            Some(Token::Star) => {
                star = Some((p, t));
                p += 1;
            }
            Some(token) if token.matches(text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    star = Some((star_p, star_t + 1));
                    p = star_p + 1;
                    t = star_t + 1;
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|token| matches!(token, Token::Star))
}

enum Token {
    Star,
    Any,
    Byte(u8),
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
}

impl Token {
    fn matches(&self, c: u8) -> bool {
        match self {
            Token::Star => true,
            Token::Any => true,
            Token::Byte(b) => *b == c,
            Token::Class { negated, ranges } => {
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&c)) != *negated
            }
        }
    }
}

fn tokenize(mut pattern: &[u8]) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    while let Some((&c, rest)) = pattern.split_first() {
        pattern = rest;
        tokens.push(match c {
            b'*' => Token::Star,
            b'?' => Token::Any,
            b'\\' => {
                let (&escaped, rest) = pattern.split_first()?;
                pattern = rest;
                Token::Byte(escaped)
            }
            b'[' => {
                let (token, rest) = class(pattern)?;
                pattern = rest;
                token
            }
            _ => Token::Byte(c),
        });
    }
    Some(tokens)
}

/// Parses a class body (after `[`) up to and including `]`.
fn class(mut pattern: &[u8]) -> Option<(Token, &[u8])> {
    let negated = pattern.first() == Some(&b'^');
    if negated {
        pattern = &pattern[1..];
    }
    let mut ranges = Vec::new();
    loop {
        if let Some((b']', rest)) = pattern.split_first()
            && !ranges.is_empty()
        {
            return Some((Token::Class { negated, ranges }, rest));
        }
        let (low, rest) = class_char(pattern)?;
        pattern = rest;
        let high = if pattern.first() == Some(&b'-') {
            let (high, rest) = class_char(&pattern[1..])?;
            pattern = rest;
            high
        } else {
            low
        };
        ranges.push((low, high));
    }
}

fn class_char(pattern: &[u8]) -> Option<(u8, &[u8])> {
    match pattern.split_first()? {
        (b'\\', rest) => rest.split_first().map(|(c, rest)| (*c, rest)),
        (b'-' | b']', _) => None,
        (c, rest) => Some((*c, rest)),
    }
}

impl Keyring {
    /// A keyring with no credentials (every pull is anonymous).
    pub fn empty() -> Keyring {
        Keyring::default()
    }

    /// Builds a keyring from pull secrets, in order. A secret that cannot be used is reported in
    /// the returned list and skipped; the others still count. Entries that parse but hold no
    /// credential (token-only) are also reported, while the rest of their secret is kept.
    pub fn from_secrets<'a>(
        secrets: impl IntoIterator<Item = &'a PullSecret>,
    ) -> (Keyring, Vec<SecretError>) {
        let mut keyring = Keyring::empty();
        let mut errors = Vec::new();
        for secret in secrets {
            match secret.parse() {
                Ok(parsed) => {
                    errors.extend(
                        parsed
                            .unusable
                            .iter()
                            .map(|entry| SecretError::UnusableEntry {
                                secret: secret.name.clone(),
                                entry: entry.clone(),
                            }),
                    );
                    keyring.add_config(&secret.name, &parsed);
                }
                Err(error) => errors.push(error),
            }
        }
        (keyring, errors)
    }

    /// Adds every usable entry of a parsed dockerconfig under `secret`'s name.
    pub fn add_config(&mut self, secret: &str, config: &ParsedConfig) {
        for entry in &config.entries {
            self.add(secret, &entry.key, entry.credential.clone());
        }
    }

    /// Adds one credential for a registry key (as written in a dockerconfig).
    pub fn add(&mut self, secret: &str, key: &str, credential: Credential) {
        self.entries.push(KeyEntry {
            key: RegistryKey::parse(key),
            secret: secret.to_owned(),
            credential,
        });
        // Stable: equal keys keep the order their secrets were added in.
        self.entries.sort_by(|a, b| b.key.text.cmp(&a.key.text));
    }

    /// The credentials that apply to `image`, in the order the kubelet tries them.
    pub fn lookup(&self, image: &ImageRef) -> Vec<MatchedCredential<'_>> {
        let target = Target::of(image);
        self.entries
            .iter()
            .filter(|entry| target.matched_by(&entry.key))
            .map(|entry| MatchedCredential {
                secret: &entry.secret,
                key: &entry.key.text,
                credential: &entry.credential,
            })
            .collect()
    }

    /// `true` when the keyring holds no credential.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The distinct secret names, in the order first added.
    pub fn secret_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for entry in &self.entries {
            if !names.contains(&entry.secret.as_str()) {
                names.push(&entry.secret);
            }
        }
        names
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|e| format!("{} from {:?}", e.key.text, e.secret)),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyring(keys: &[(&str, &str)]) -> Keyring {
        let mut keyring = Keyring::empty();
        for (secret, key) in keys {
            keyring.add(secret, key, Credential::new("u", "p"));
        }
        keyring
    }

    fn matches(keyring: &Keyring, image: &str) -> Vec<String> {
        keyring
            .lookup(&image.parse().unwrap())
            .iter()
            .map(|m| format!("{}={}", m.secret, m.key))
            .collect()
    }

    #[test]
    fn keys_are_normalised() {
        for (raw, text) in [
            ("https://index.docker.io/v1/", "docker.io"),
            ("http://quay.io/v2/org", "quay.io/org"),
            ("Quay.IO:443/", "quay.io:443"),
            ("registry-1.docker.io", "docker.io"),
            ("[::1]:5000/v2/", "[::1]:5000"),
        ] {
            assert_eq!(RegistryKey::parse(raw).text, text, "{raw}");
        }
    }

    #[test]
    fn host_globs_match_one_label() {
        let k = keyring(&[("s", "*.example.com")]);
        assert_eq!(matches(&k, "a.example.com/x/y"), ["s=*.example.com"]);
        assert!(matches(&k, "a.b.example.com/x").is_empty());
        assert!(matches(&k, "example.com/x").is_empty());
        let k = keyring(&[("s", "reg-[0-9].example.com"), ("t", "r?.example.com")]);
        assert_eq!(
            matches(&k, "reg-7.example.com/x"),
            ["s=reg-[0-9].example.com"]
        );
        assert_eq!(matches(&k, "r1.example.com/x"), ["t=r?.example.com"]);
        assert!(matches(&k, "reg-x.example.com/x").is_empty());
    }

    #[test]
    fn ports_must_be_equal() {
        let k = keyring(&[("s", "registry.example.com:5000")]);
        assert_eq!(matches(&k, "registry.example.com:5000/a").len(), 1);
        assert!(matches(&k, "registry.example.com/a").is_empty());
        assert!(matches(&k, "registry.example.com:5001/a").is_empty());
        let k = keyring(&[("s", "registry.example.com")]);
        assert!(matches(&k, "registry.example.com:5000/a").is_empty());
    }

    #[test]
    fn paths_are_prefixes_and_longest_key_comes_first() {
        let k = keyring(&[
            ("host", "quay.io"),
            ("org", "quay.io/org"),
            ("team", "https://quay.io/v1/org/team"),
            ("other", "quay.io/other"),
        ]);
        assert_eq!(
            matches(&k, "quay.io/org/team/app:1"),
            ["team=quay.io/org/team", "org=quay.io/org", "host=quay.io"]
        );
        assert_eq!(matches(&k, "quay.io/somebody/app"), ["host=quay.io"]);
        // A string prefix, as in the kubelet: "org" also covers "organisation".
        assert_eq!(
            matches(&k, "quay.io/organisation/app"),
            ["org=quay.io/org", "host=quay.io"]
        );
    }

    #[test]
    fn equal_keys_keep_secret_order() {
        let k = keyring(&[
            ("first", "r.io"),
            ("second", "https://r.io"),
            ("third", "r.io/v2/"),
        ]);
        assert_eq!(
            matches(&k, "r.io/a"),
            ["first=r.io", "second=r.io", "third=r.io"]
        );
        assert_eq!(k.secret_names(), ["first", "second", "third"]);
    }

    #[test]
    fn docker_hub_aliases_match_images_without_a_registry() {
        for alias in [
            "docker.io",
            "index.docker.io",
            "https://index.docker.io/v1/",
            "registry-1.docker.io",
        ] {
            let k = keyring(&[("hub", alias)]);
            for image in [
                "busybox",
                "library/busybox:1",
                "docker.io/org/app",
                "index.docker.io/org/app",
            ] {
                assert_eq!(matches(&k, image).len(), 1, "{alias} vs {image}");
            }
            assert!(matches(&k, "quay.io/org/app").is_empty(), "{alias}");
        }
    }

    #[test]
    fn credentials_for_another_host_do_not_match() {
        let k = keyring(&[("s", "registry.example.com")]);
        assert!(matches(&k, "evil.example.net/registry.example.com/x").is_empty());
        assert!(matches(&k, "registry.example.com.evil.net/x").is_empty());
    }

    #[test]
    fn malformed_globs_match_nothing() {
        assert!(!glob_match(b"[a", b"a"));
        assert!(!glob_match(b"[]", b"a"));
        assert!(glob_match(b"[^b]x", b"ax"));
        assert!(glob_match(b"\\*", b"*"));
        assert!(!glob_match(b"\\*", b"a"));
    }

    #[test]
    fn from_secrets_reports_bad_secrets_and_keeps_good_ones() {
        use super::super::credentials::DOCKER_CONFIG_JSON_TYPE;
        use super::super::secret::PullSecret;
        use std::collections::BTreeMap;
        let secret = |name: &str, json: &str| PullSecret {
            name: name.into(),
            type_: DOCKER_CONFIG_JSON_TYPE.into(),
            data: BTreeMap::from([(".dockerconfigjson".into(), json.as_bytes().to_vec())]),
        };
        let secrets = [
            secret("broken", "{"),
            secret(
                "good",
                r#"{"auths":{"r.io":{"auth":"dTpw"},"t.io":{"identitytoken":"x"}}}"#,
            ),
        ];
        let (keyring, errors) = Keyring::from_secrets(&secrets);
        assert_eq!(keyring.secret_names(), ["good"]);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(
            messages[0].starts_with("pull secret \"broken\": .dockerconfigjson is not valid JSON")
        );
        assert!(messages[1].contains("\"t.io\" has only an identitytoken"));
    }
}
