//! Finding a blob's `schema`, `package` and `name` the way `opm`'s `Meta` does: keys matched
//! case-insensitively (Unicode case folding), two keys that fold to the same name rejected,
//! the three values required to be strings.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use super::blob::BlobError;
use super::yaml::TopKey;

/// The top-level `schema`, `package` and `name` of a blob, found case-insensitively.
#[derive(Debug, Default)]
pub(crate) struct MetaKeys {
    pub(crate) schema: Option<String>,
    pub(crate) package: Option<String>,
    pub(crate) name: Option<String>,
}

fn fold(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

/// Finds `schema`, `package` and `name` among a blob's root keys (folded), rejecting keys that
/// differ only in case. `entries` holds every root key and, for the three meta keys, the value.
pub(crate) fn meta_from_entries(
    entries: Vec<(Cow<'_, str>, Option<serde_json::Value>)>,
) -> Result<MetaKeys, BlobError> {
    let mut found = MetaKeys::default();
    let mut folded: Vec<(String, String)> = Vec::with_capacity(entries.len());
    let mut error = None;
    for (key, value) in entries {
        let fold_key = if key.is_ascii() {
            key.to_ascii_lowercase()
        } else {
            fold(&key)
        };
        if let Some(value) = value {
            let slot = match fold_key.as_str() {
                "schema" => &mut found.schema,
                "package" => &mut found.package,
                _ => &mut found.name,
            };
            match value {
                serde_json::Value::String(s) => *slot = Some(s),
                other => {
                    error.get_or_insert(BlobError::NotAString {
                        key: key.to_string(),
                        value: other.to_string(),
                    });
                }
            }
        }
        folded.push((fold_key, key.into_owned()));
    }
    folded.sort();
    folded.dedup();
    for pair in folded.windows(2) {
        if pair[0].0 == pair[1].0 {
            let key = pair[0].0.clone();
            let keys = folded
                .iter()
                .filter(|(f, _)| *f == key)
                .map(|(_, k)| k.clone())
                .collect();
            return Err(BlobError::DuplicateKeys { folded: key, keys });
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(found),
    }
}

fn is_meta_key(key: &str) -> bool {
    key.len() <= 7
        && matches!(
            key.to_ascii_lowercase().as_str(),
            "schema" | "package" | "name"
        )
        || (!key.is_ascii() && matches!(fold(key).as_str(), "schema" | "package" | "name"))
}

/// The root keys of a blob (values only for the meta keys), read with serde.
pub(crate) struct RootEntries<'de>(pub(crate) Vec<(Cow<'de, str>, Option<serde_json::Value>)>);

impl<'de> Deserialize<'de> for RootEntries<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RootVisitor)
    }
}

struct RootVisitor;

impl<'de> Visitor<'de> for RootVisitor {
    type Value = RootEntries<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RootEntries<'de>, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let value = if is_meta_key(&key.0) {
                Some(map.next_value::<serde_json::Value>()?)
            } else {
                map.next_value::<IgnoredAny>()?;
                None
            };
            entries.push((key.0, value));
        }
        Ok(RootEntries(entries))
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The meta keys from root keys the YAML fast path already located in `json`.
pub(crate) fn meta_from_top_keys(json: &str, keys: &[TopKey]) -> Result<MetaKeys, BlobError> {
    let mut entries = Vec::with_capacity(keys.len());
    for top in keys {
        let Key(key) = serde_json::from_str(&json[top.key.clone()])
            .map_err(|e| BlobError::NotAnObject(e.to_string()))?;
        let value = if is_meta_key(&key) {
            Some(
                serde_json::from_str(&json[top.value.clone()])
                    .map_err(|e| BlobError::NotAnObject(e.to_string()))?,
            )
        } else {
            None
        };
        entries.push((key, value));
    }
    meta_from_entries(entries)
}
