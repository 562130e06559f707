//! FBC blobs ("metas"), olm-api.md §5.1: one JSON object per document, told apart by `schema`.
//!
//! [`parse_blob`] turns one document's JSON text into a typed [`Blob`] the way `opm` does:
//! `schema`, `package` and `name` are found case-insensitively (two keys that fold to the same
//! name are an error), known schemas are read into typed structs (unknown fields ignored, JSON
//! `null` read as empty), and any other schema is kept whole as a [`Meta`]. A blob without
//! `schema` is an error.
//!
//! Difference from Go: apart from `schema`/`package`/`name`, field names are matched exactly
//! (Go's `encoding/json` also accepts other capitalisations). Duplicate fields inside a known
//! schema are an error here; Go keeps the last one.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use super::base64;
use super::property::{self, Property, RawProperty, null_as_default};
use super::yaml::TopKey;

/// Schema names of the blobs `opm` knows.
pub mod schemas {
    /// `olm.package`.
    pub const PACKAGE: &str = "olm.package";
    /// `olm.channel`.
    pub const CHANNEL: &str = "olm.channel";
    /// `olm.bundle`.
    pub const BUNDLE: &str = "olm.bundle";
    /// `olm.deprecations`.
    pub const DEPRECATIONS: &str = "olm.deprecations";
}

/// An `olm.package` blob.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PackageBlob {
    /// Package name (a DNS-1123 label).
    pub name: String,
    /// Name of the default channel (required by validation).
    pub default_channel: String,
    /// Optional icon.
    pub icon: Option<Icon>,
    /// Optional description.
    pub description: String,
    /// Package properties.
    pub properties: Vec<Property>,
}

/// A package icon.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Icon {
    /// Base64 image data (checked at load).
    #[serde(default)]
    pub base64data: String,
    /// Media type, e.g. `image/svg+xml`.
    #[serde(default)]
    pub mediatype: String,
}

/// An `olm.channel` blob.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChannelBlob {
    /// Package the channel belongs to.
    pub package: String,
    /// Channel name.
    pub name: String,
    /// Channel entries, in the order written.
    pub entries: Vec<ChannelEntry>,
    /// Channel properties (internal to `opm`; kept).
    pub properties: Vec<Property>,
}

/// One entry of a channel: a bundle name and its upgrade edges.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// Bundle name.
    pub name: String,
    /// The bundle this one replaces (an upgrade edge; the target need not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Bundles this one skips (upgrade edges).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Versions this one can upgrade from (blang/semver range; not a graph edge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<String>,
}

/// An `olm.bundle` blob.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BundleBlob {
    /// Package the bundle belongs to.
    pub package: String,
    /// Bundle name (the CSV name).
    pub name: String,
    /// Bundle image pull spec (may be empty when objects are embedded).
    pub image: String,
    /// Bundle properties.
    pub properties: Vec<Property>,
    /// Images the bundle uses.
    pub related_images: Vec<RelatedImage>,
}

/// An image a bundle uses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RelatedImage {
    /// Name (may be empty).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Image pull spec.
    #[serde(default, deserialize_with = "null_as_default")]
    pub image: String,
}

/// An `olm.deprecations` blob (at most one per package).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeprecationsBlob {
    /// Package the deprecations apply to.
    pub package: String,
    /// Deprecated package, channels and bundles.
    pub entries: Vec<DeprecationEntry>,
}

/// One deprecation: what is deprecated and why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeprecationEntry {
    /// What is deprecated.
    #[serde(default)]
    pub reference: PackageScopedReference,
    /// Message shown to users.
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: String,
}

/// A reference to the package (`olm.package`, no name), a channel or a bundle of a package.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct PackageScopedReference {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub schema: String,
    /// Channel or bundle name; empty for the package.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
}

/// A blob of a schema `opm` does not interpret, kept whole.
#[derive(Debug, Clone)]
pub struct Meta {
    /// The blob's schema.
    pub schema: String,
    /// Its `package` key, if any.
    pub package: String,
    /// Its `name` key, if any.
    pub name: String,
    /// The whole blob as compact JSON.
    pub blob: Box<RawValue>,
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema
            && self.package == other.package
            && self.name == other.name
            && self.blob.get() == other.blob.get()
    }
}

/// One parsed blob.
#[derive(Debug, Clone, PartialEq)]
pub enum Blob {
    /// `olm.package`.
    Package(PackageBlob),
    /// `olm.channel`.
    Channel(ChannelBlob),
    /// `olm.bundle`.
    Bundle(BundleBlob),
    /// `olm.deprecations`.
    Deprecations(DeprecationsBlob),
    /// Any other schema.
    Other(Meta),
}

/// Why one document is not a usable blob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// The document is not a JSON object (or not valid JSON).
    #[error("{0}")]
    NotAnObject(String),
    /// No `schema` key.
    #[error("object '{excerpt}' is missing root schema field")]
    MissingSchema {
        /// The start of the blob.
        excerpt: String,
    },
    /// Two keys that differ only in case (Go folds `schema`, `package` and `name`).
    #[error("duplicate keys for key {folded:?}: [{}]", keys.join(" "))]
    DuplicateKeys {
        /// The folded key.
        folded: String,
        /// The keys as written, sorted.
        keys: Vec<String>,
    },
    /// `schema`, `package` or `name` is not a string.
    #[error("expected value for key {key:?} to be a string, got {value}")]
    NotAString {
        /// The key.
        key: String,
        /// The value as JSON.
        value: String,
    },
    /// A known schema's blob does not have the expected shape.
    #[error("parse {kind}: {message}")]
    Shape {
        /// `package`, `channel`, `bundle` or `deprecations`.
        kind: &'static str,
        /// The parser's message.
        message: String,
    },
    /// A property value is invalid.
    #[error("parse properties for {kind} {name:?}: {message}")]
    Property {
        /// `package`, `channel` or `bundle`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// Which property and why.
        message: String,
    },
    /// The icon data is not valid base64.
    #[error("parse package: icon: {0}")]
    Icon(base64::Base64Error),
}

/// The top-level `schema`, `package` and `name` of a blob, found case-insensitively.
#[derive(Debug, Default)]
struct MetaKeys {
    schema: Option<String>,
    package: Option<String>,
    name: Option<String>,
}

fn fold(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

/// Finds `schema`, `package` and `name` among a blob's root keys (folded), rejecting keys that
/// differ only in case. `entries` holds every root key and, for the three meta keys, the value.
fn meta_from_entries(
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
struct RootEntries<'de>(Vec<(Cow<'de, str>, Option<serde_json::Value>)>);

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
fn meta_from_top_keys(json: &str, keys: &[TopKey]) -> Result<MetaKeys, BlobError> {
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageIn<'a> {
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    default_channel: String,
    #[serde(default)]
    icon: Option<Icon>,
    #[serde(default, deserialize_with = "null_as_default")]
    description: String,
    #[serde(default, borrow)]
    properties: Option<Vec<RawProperty<'a>>>,
}

#[derive(Deserialize)]
struct ChannelIn<'a> {
    #[serde(default, deserialize_with = "null_as_default")]
    package: String,
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    entries: Vec<EntryIn>,
    #[serde(default, borrow)]
    properties: Option<Vec<RawProperty<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryIn {
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    replaces: String,
    #[serde(default, deserialize_with = "null_as_default")]
    skips: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    skip_range: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleIn<'a> {
    #[serde(default, deserialize_with = "null_as_default")]
    package: String,
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    image: String,
    #[serde(default, borrow)]
    properties: Option<Vec<RawProperty<'a>>>,
    #[serde(default, deserialize_with = "null_as_default")]
    related_images: Vec<RelatedImage>,
}

#[derive(Deserialize)]
struct DeprecationsIn {
    #[serde(default, deserialize_with = "null_as_default")]
    package: String,
    #[serde(default, deserialize_with = "null_as_default")]
    entries: Vec<DeprecationEntry>,
}

fn non_empty(s: String) -> Option<String> {
    if s.is_empty() { None } else { Some(s) }
}

fn shape(kind: &'static str) -> impl Fn(serde_json::Error) -> BlobError {
    move |e| BlobError::Shape {
        kind,
        message: e.to_string(),
    }
}

/// Parses one document's JSON text into a blob.
pub fn parse_blob(json: &str) -> Result<Blob, BlobError> {
    parse_blob_with_keys(json, &[])
}

/// [`parse_blob`] for JSON whose root keys are already located (`keys` non-empty), which
/// spares a scan of the whole text.
pub(crate) fn parse_blob_with_keys(json: &str, keys: &[TopKey]) -> Result<Blob, BlobError> {
    let meta = if keys.is_empty() {
        let RootEntries(entries) =
            serde_json::from_str(json).map_err(|e| BlobError::NotAnObject(e.to_string()))?;
        meta_from_entries(entries)?
    } else {
        meta_from_top_keys(json, keys)?
    };
    match typed(json, &meta) {
        // Go keeps the last of duplicate keys; serde's derived structs refuse them. Retry once
        // with the JSON rewritten through a map (last key wins at every level).
        Err(e) if e.to_string().contains("duplicate field `") => {
            let value: serde_json::Value =
                serde_json::from_str(json).map_err(|e| BlobError::NotAnObject(e.to_string()))?;
            typed(&value.to_string(), &meta)
        }
        result => result,
    }
}

fn typed(json: &str, meta: &MetaKeys) -> Result<Blob, BlobError> {
    let schema = meta.schema.clone().unwrap_or_default();
    let package = meta.package.clone();
    let name = meta.name.clone();
    let blob = match schema.as_str() {
        "" => {
            let mut excerpt: String = json.chars().take(200).collect();
            if excerpt.len() < json.len() {
                excerpt.push_str("...");
            }
            return Err(BlobError::MissingSchema { excerpt });
        }
        schemas::PACKAGE => {
            let p: PackageIn<'_> = serde_json::from_str(json).map_err(shape("package"))?;
            let name = name.unwrap_or(p.name);
            if let Some(icon) = &p.icon {
                base64::validate(&icon.base64data).map_err(BlobError::Icon)?;
            }
            let properties =
                property::parse_all(p.properties.unwrap_or_default()).map_err(|message| {
                    BlobError::Property {
                        kind: "package",
                        name: name.clone(),
                        message,
                    }
                })?;
            Blob::Package(PackageBlob {
                name,
                default_channel: p.default_channel,
                icon: p.icon,
                description: p.description,
                properties,
            })
        }
        schemas::CHANNEL => {
            let c: ChannelIn<'_> = serde_json::from_str(json).map_err(shape("channel"))?;
            let name = name.unwrap_or(c.name);
            let properties =
                property::parse_all(c.properties.unwrap_or_default()).map_err(|message| {
                    BlobError::Property {
                        kind: "channel",
                        name: name.clone(),
                        message,
                    }
                })?;
            Blob::Channel(ChannelBlob {
                package: package.unwrap_or(c.package),
                name,
                entries: c
                    .entries
                    .into_iter()
                    .map(|e| ChannelEntry {
                        name: e.name,
                        replaces: non_empty(e.replaces),
                        skips: e.skips,
                        skip_range: non_empty(e.skip_range),
                    })
                    .collect(),
                properties,
            })
        }
        schemas::BUNDLE => {
            let b: BundleIn<'_> = serde_json::from_str(json).map_err(shape("bundle"))?;
            let name = name.unwrap_or(b.name);
            let properties =
                property::parse_all(b.properties.unwrap_or_default()).map_err(|message| {
                    BlobError::Property {
                        kind: "bundle",
                        name: name.clone(),
                        message,
                    }
                })?;
            Blob::Bundle(BundleBlob {
                package: package.unwrap_or(b.package),
                name,
                image: b.image,
                properties,
                related_images: b.related_images,
            })
        }
        schemas::DEPRECATIONS => {
            let d: DeprecationsIn = serde_json::from_str(json).map_err(shape("deprecations"))?;
            Blob::Deprecations(DeprecationsBlob {
                package: package.unwrap_or(d.package),
                entries: d.entries,
            })
        }
        _ => {
            let raw: &RawValue =
                serde_json::from_str(json).map_err(|e| BlobError::NotAnObject(e.to_string()))?;
            Blob::Other(Meta {
                schema,
                package: package.unwrap_or_default(),
                name: name.unwrap_or_default(),
                blob: property::compact(raw),
            })
        }
    };
    Ok(blob)
}

// Serialisation, for `catalog render`: Go's field order and `omitempty` rules.

impl Serialize for PackageBlob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Package", 6)?;
        s.serialize_field("schema", schemas::PACKAGE)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("defaultChannel", &self.default_channel)?;
        if let Some(icon) = &self.icon {
            s.serialize_field("icon", icon)?;
        }
        if !self.description.is_empty() {
            s.serialize_field("description", &self.description)?;
        }
        if !self.properties.is_empty() {
            s.serialize_field("properties", &self.properties)?;
        }
        s.end()
    }
}

impl Serialize for ChannelBlob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Channel", 5)?;
        s.serialize_field("schema", schemas::CHANNEL)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("package", &self.package)?;
        s.serialize_field("entries", &self.entries)?;
        if !self.properties.is_empty() {
            s.serialize_field("properties", &self.properties)?;
        }
        s.end()
    }
}

impl Serialize for BundleBlob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Bundle", 6)?;
        s.serialize_field("schema", schemas::BUNDLE)?;
        if !self.name.is_empty() {
            s.serialize_field("name", &self.name)?;
        }
        if !self.package.is_empty() {
            s.serialize_field("package", &self.package)?;
        }
        s.serialize_field("image", &self.image)?;
        if !self.properties.is_empty() {
            s.serialize_field("properties", &self.properties)?;
        }
        if !self.related_images.is_empty() {
            s.serialize_field("relatedImages", &self.related_images)?;
        }
        s.end()
    }
}

impl Serialize for DeprecationsBlob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Deprecation", 3)?;
        s.serialize_field("schema", schemas::DEPRECATIONS)?;
        s.serialize_field("package", &self.package)?;
        s.serialize_field("entries", &self.entries)?;
        s.end()
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.blob.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_schemas_are_typed() {
        let Blob::Channel(c) = parse_blob(
            r#"{"schema":"olm.channel","package":"foo","name":"beta","entries":[{"name":"foo.v2","replaces":"foo.v1","skips":["foo.v1.1"],"skipRange":"<2.0.0"},{"name":"foo.v1","replaces":""}]}"#,
        )
        .unwrap() else {
            panic!("not a channel")
        };
        assert_eq!((c.package.as_str(), c.name.as_str()), ("foo", "beta"));
        assert_eq!(c.entries[0].replaces.as_deref(), Some("foo.v1"));
        assert_eq!(c.entries[0].skip_range.as_deref(), Some("<2.0.0"));
        assert_eq!(
            c.entries[1].replaces, None,
            "empty replaces means none, as in Go"
        );
    }

    #[test]
    fn meta_keys_are_case_insensitive_and_unknown_schemas_kept() {
        let Blob::Package(p) =
            parse_blob(r#"{"Schema":"olm.package","NAME":"foo","defaultChannel":"a"}"#).unwrap()
        else {
            panic!("not a package")
        };
        assert_eq!(p.name, "foo");
        let Blob::Other(m) =
            parse_blob("{\"schema\": \"example.com/x\", \"package\": \"foo\", \"data\": [1, 2]}")
                .unwrap()
        else {
            panic!("not kept")
        };
        assert_eq!(
            (m.schema.as_str(), m.package.as_str()),
            ("example.com/x", "foo")
        );
        assert_eq!(
            m.blob.get(),
            r#"{"schema":"example.com/x","package":"foo","data":[1,2]}"#
        );
    }

    #[test]
    fn bad_blobs_are_rejected_with_opm_wording() {
        assert_eq!(
            parse_blob(r#"{"name":"x"}"#).unwrap_err().to_string(),
            r#"object '{"name":"x"}' is missing root schema field"#
        );
        assert_eq!(
            parse_blob(r#"{"schema":"olm.package","name":"a","Name":"b"}"#)
                .unwrap_err()
                .to_string(),
            r#"duplicate keys for key "name": [Name name]"#
        );
        assert_eq!(
            parse_blob(r#"{"schema":1}"#).unwrap_err().to_string(),
            r#"expected value for key "schema" to be a string, got 1"#
        );
        assert!(
            parse_blob(r#"{"schema":"olm.channel","name":"a","entries":{}}"#)
                .unwrap_err()
                .to_string()
                .starts_with("parse channel: invalid type: map")
        );
        assert_eq!(
            parse_blob(r#"{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.foo"}]}"#)
                .unwrap_err()
                .to_string(),
            r#"parse properties for bundle "b": parse property[0] of type "olm.foo": unexpected end of JSON input"#
        );
        assert!(parse_blob("[1]").is_err());
    }

    #[test]
    fn duplicate_keys_keep_the_last_like_go() {
        let Blob::Bundle(b) = parse_blob(
            r#"{"schema":"olm.bundle","name":"b","name":"b2","properties":[{"type":"olm.package.required","value":{"packageName":"x","packageName":"bar","versionRange":"<1.0.0"}}]}"#,
        )
        .unwrap() else {
            panic!("not a bundle")
        };
        assert_eq!(b.name, "b2");
        let Property::PackageRequired(required) = &b.properties[0] else {
            panic!("{:?}", b.properties)
        };
        assert_eq!(required.package_name, "bar");
    }

    #[test]
    fn nulls_read_as_empty_like_go() {
        let Blob::Bundle(b) = parse_blob(
            r#"{"schema":"olm.bundle","name":"b","package":"p","image":null,"properties":null,"relatedImages":[{"image":"x"}]}"#,
        )
        .unwrap() else {
            panic!("not a bundle")
        };
        assert_eq!(b.image, "");
        assert_eq!(b.related_images[0].name, "");
    }
}
