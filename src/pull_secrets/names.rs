//! Names, labels and annotation keys of the objects opcat writes for pull-secret propagation.
//!
//! # Copy names
//!
//! A copy of the Secret `<secret>` named in `CatalogSource <catalog-ns>/<catalog>` is called
//!
//! ```text
//! <catalog>-<secret>-<hash>
//! ```
//!
//! where `<hash>` is the first [`HASH_LEN`] lowercase hex digits of SHA-256 over the
//! length-prefixed tuple `(catalog-ns, catalog, secret)` (see [`short_hash`]). The readable part
//! keeps both names when they fit and is only there for humans; uniqueness comes from the hash,
//! which covers the *unambiguous* tuple: `a-b`+`c` and `a`+`b-c` read the same but hash
//! differently, and two catalogs of the same name in different namespaces get different copies.
//! Characters a DNS-1123 name cannot hold (upper case, `_`, `.`) become `-` in the readable part;
//! when the readable part would push the name over 253 characters each of the two names is cut to
//! its share (at least half of the room), so both stay recognisable. The result is always a valid
//! DNS-1123 subdomain of at most 253 characters, for any input.
//!
//! The hash makes an accidental clash between two copies in one namespace vanishingly unlikely; a
//! deliberate one is still harmless, because a copy is only ever written when its labels name the
//! same source (see `copy::plan_copy`): a clash becomes a `PullSecretConflict`, never an overwrite.
//!
//! # Label values
//!
//! Label values are limited to 63 characters. Namespace names always fit; catalog and secret names
//! (DNS-1123 subdomains, up to 253) may not. [`label_value`] keeps a value that fits unchanged and
//! otherwise turns it into a readable prefix plus the same short hash, so the label stays an exact,
//! deterministic key for label-selected watches.

use sha2::{Digest, Sha256};

/// Label on every Secret copy opcat manages. Its absence means "not ours": such a Secret is never
/// created, updated, adopted or deleted (DESIGN invariant 3). Copies are watched by this label.
pub const MANAGED_LABEL: &str = "opcat.dev/managed";
/// Value of [`MANAGED_LABEL`].
pub const MANAGED_VALUE: &str = "true";
/// Label: namespace of the source Secret (the CatalogSource's namespace).
pub const SOURCE_NAMESPACE_LABEL: &str = "opcat.dev/source-namespace";
/// Label: name of the source Secret, through [`label_value`].
pub const SOURCE_NAME_LABEL: &str = "opcat.dev/source-name";
/// Label: name of the CatalogSource whose `spec.secrets` names the source, through
/// [`label_value`]. Two catalogs in one namespace may name the same Secret; their copies differ.
pub const CATALOG_NAME_LABEL: &str = "opcat.dev/catalog-name";
/// Annotation on a copy: UID of the source Secret it was copied from.
pub const SOURCE_UID_ANNOTATION: &str = "opcat.dev/source-uid";
/// Annotation on a copy: the registry keys its data holds, as written in the source, sorted and
/// joined with `,` (keys only, never credentials). See [`super::scoping`].
pub const REGISTRIES_ANNOTATION: &str = "opcat.dev/registries";
/// CatalogSource annotation choosing what a copy of its pull secrets holds: `images` (the
/// default: only the entries an image of the operators using the copy needs) or `whole` (every
/// entry of the source, for bundles whose operators pull images they do not declare). See
/// [`super::scoping`].
pub const PULL_SECRET_SCOPE_ANNOTATION: &str = "opcat.dev/pull-secret-scope";
/// Value of [`PULL_SECRET_SCOPE_ANNOTATION`] that copies whole secrets.
pub const PULL_SECRET_SCOPE_WHOLE: &str = "whole";
/// Value of [`PULL_SECRET_SCOPE_ANNOTATION`] that states the default explicitly.
pub const PULL_SECRET_SCOPE_IMAGES: &str = "images";
/// Annotation on a ServiceAccount: JSON list (sorted) of the `imagePullSecrets` names opcat
/// appended. It is the only record of what opcat may remove again.
pub const ADDED_PULL_SECRETS_ANNOTATION: &str = "opcat.dev/added-pull-secrets";
/// Annotation on a ServiceAccount: how often opcat restored entries another writer removed, in
/// the current window, and which names it stopped restoring (see `service_account`).
pub const PULL_SECRET_RESTORES_ANNOTATION: &str = "opcat.dev/pull-secret-restores";
/// Label on a ServiceAccount while it carries [`ADDED_PULL_SECRETS_ANNOTATION`] or
/// [`PULL_SECRET_RESTORES_ANNOTATION`]: how opcat's ServiceAccount watch selects the accounts it
/// edits (`default` and bundle-named ones it did not create included) without watching every
/// ServiceAccount of the cluster. Written in the same patch as the edit.
pub const PULL_SECRETS_LABEL: &str = "opcat.dev/pull-secrets";
/// Value of [`PULL_SECRETS_LABEL`].
pub const PULL_SECRETS_LABEL_VALUE: &str = "attached";
/// Namespace label to opt out of receiving pull-secret copies.
pub const NAMESPACE_OPT_OUT_LABEL: &str = "opcat.dev/pull-secret-propagation";
/// Value of [`NAMESPACE_OPT_OUT_LABEL`] that opts out. `enabled` (or no label) opts in; any other
/// value is treated as an opt-out, since the namespace owner clearly meant something.
pub const NAMESPACE_OPT_OUT_VALUE: &str = "disabled";
/// Value of [`NAMESPACE_OPT_OUT_LABEL`] that states the default explicitly.
pub const NAMESPACE_OPT_IN_VALUE: &str = "enabled";
/// CatalogSource annotation: a namespace label selector (`kubectl -l` syntax) restricting where
/// the catalog's pull secrets may be copied.
pub const PROPAGATE_TO_ANNOTATION: &str = "opcat.dev/propagate-to";

/// Longest Kubernetes object name (DNS-1123 subdomain).
pub const MAX_NAME_LEN: usize = 253;
/// Longest label value.
pub const MAX_LABEL_VALUE_LEN: usize = 63;
/// Hex digits of the hash in copy names and shortened label values (40 bits).
pub const HASH_LEN: usize = 10;

// Bumping this renames every copy; the label-selected sweep then deletes the old ones.
const HASH_SCHEME: &[u8] = b"opcat.dev/pull-secret-copy/v1";

/// Name of the copy, in any install namespace, of Secret `secret_name` listed in
/// `CatalogSource <catalog_namespace>/<catalog_name>`. See the module docs for the scheme.
pub fn copy_name(catalog_namespace: &str, catalog_name: &str, secret_name: &str) -> String {
    let hash = short_hash(&[catalog_namespace, catalog_name, secret_name]);
    let catalog = dns_part(catalog_name);
    let secret = dns_part(secret_name);
    // Room for "<catalog>-<secret>", leaving "-<hash>".
    let room = MAX_NAME_LEN - 1 - HASH_LEN;
    let (catalog, secret) = share_room(&catalog, &secret, room);
    let mut name = String::with_capacity(MAX_NAME_LEN);
    for part in [catalog, secret] {
        if !part.is_empty() {
            name.push_str(part);
            name.push('-');
        }
    }
    name.push_str(&hash);
    name
}

/// `value` if it is a valid label value, else a readable prefix plus `-<hash>`: deterministic,
/// valid, at most 63 characters.
pub fn label_value(value: &str) -> String {
    if is_label_value(value) {
        return value.to_owned();
    }
    let hash = short_hash(&[value]);
    let readable: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let prefix = trim_to_alphanumeric(cut(&readable, MAX_LABEL_VALUE_LEN - 1 - HASH_LEN));
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// First [`HASH_LEN`] hex digits of SHA-256 over the scheme tag and each part, length-prefixed, so
/// no two different tuples share an encoding.
pub fn short_hash(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(HASH_SCHEME);
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let mut digest = hex::encode(hasher.finalize());
    digest.truncate(HASH_LEN);
    digest
}

/// Whether `name` is a DNS-1123 subdomain (the rule for Secret and most object names).
pub fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    is_lower_alphanumeric(*first)
                        && is_lower_alphanumeric(*last)
                        && bytes
                            .iter()
                            .all(|b| is_lower_alphanumeric(*b) || *b == b'-')
                }
                _ => false,
            }
        })
}

/// Whether `value` is a valid label value: empty, or at most 63 characters of `[A-Za-z0-9-_.]`
/// starting and ending with an alphanumeric character.
pub fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            bytes.len() <= MAX_LABEL_VALUE_LEN
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// Whether `key` is a valid label key: an optional DNS-1123 subdomain prefix and `/`, then a name
/// of at most 63 characters of `[A-Za-z0-9-_.]` starting and ending alphanumeric.
pub fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns1123_subdomain) && !name.is_empty() && is_label_value(name)
}

fn is_lower_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

/// Lower-cases `name`, turns everything but `[a-z0-9]` into `-` (dots too, so the readable part
/// never creates an invalid DNS label such as `a.-b`), and trims dashes at both ends.
fn dns_part(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    trim_to_alphanumeric(&mapped).to_owned()
}

/// Splits `room` characters (including the joining `-`) between two ASCII parts: a part that is
/// shorter than its half keeps all of it and leaves the rest to the other.
fn share_room<'a>(first: &'a str, second: &'a str, room: usize) -> (&'a str, &'a str) {
    let joined_len =
        first.len() + second.len() + usize::from(!first.is_empty() && !second.is_empty());
    if joined_len <= room {
        return (first, second);
    }
    let half = (room - 1) / 2;
    let first_len = first
        .len()
        .min(half.max(room - 1 - second.len().min(room - 1)));
    let second_len = second.len().min(room - 1 - first_len);
    (
        trim_to_alphanumeric(cut(first, first_len)),
        trim_to_alphanumeric(cut(second, second_len)),
    )
}

/// The first `len` bytes of an ASCII string (callers only pass ASCII).
fn cut(text: &str, len: usize) -> &str {
    text.get(..len.min(text.len())).unwrap_or(text)
}

fn trim_to_alphanumeric(text: &str) -> &str {
    text.trim_matches(|c: char| !c.is_ascii_alphanumeric())
}
