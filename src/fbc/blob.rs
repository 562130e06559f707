//! FBC blobs ("metas"), olm-api.md §5.1: one JSON object per document, told apart by `schema`.
//!
//! [`parse_blob`] turns one document's JSON text into a typed [`Blob`] the way `opm` does:
//! `schema`, `package` and `name` are found case-insensitively (two keys that fold to the same
//! name are an error), known schemas are read into typed structs (unknown fields ignored, JSON
//! `null` read as empty), and any other schema is kept whole as a [`Meta`]. A blob without
//! `schema` is an error.
//!
//! Difference from Go: apart from `schema`/`package`/`name`, field names are matched exactly
//! (Go's `encoding/json` also accepts other capitalisations). Duplicate keys keep the last
//! value, as in Go. Blobs serialise (for `catalog render`) in `render.rs`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::base64;
use super::meta_keys::{MetaKeys, RootEntries, meta_from_entries, meta_from_top_keys};
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

/// Types a blob's properties; errors name the blob (`parse properties for bundle "x": ...`).
fn typed_properties(
    kind: &'static str,
    name: &str,
    raw: Option<Vec<RawProperty<'_>>>,
) -> Result<Vec<Property>, BlobError> {
    property::parse_all(raw.unwrap_or_default()).map_err(|message| BlobError::Property {
        kind,
        name: name.to_owned(),
        message,
    })
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
            let properties = typed_properties("package", &name, p.properties)?;
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
            let properties = typed_properties("channel", &name, c.properties)?;
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
            let properties = typed_properties("bundle", &name, b.properties)?;
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
