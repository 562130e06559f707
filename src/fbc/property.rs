//! Typed FBC properties (`{"type": ..., "value": ...}`), olm-api.md §5.2.
//!
//! Known types are parsed into typed values when the catalog is loaded (so a malformed value is
//! reported with its file, bundle and index); unknown types keep their value as raw JSON.
//! `olm.bundle.object` keeps its base64 text (checked at load, decoded on request) and
//! `olm.csv.metadata` keeps its raw JSON (checked at load, parsed on request), which keeps a
//! loaded catalog small.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::base64::{self, Base64Error};
use super::csv_metadata::CsvMetadataCheck;
pub use super::csv_metadata::{AppLink, CsvMetadata, InstallMode, Maintainer};

/// Property type names.
pub mod types {
    /// `olm.package`: the bundle's package and version.
    pub const PACKAGE: &str = "olm.package";
    /// `olm.package.required`: a dependency on a package version range.
    pub const PACKAGE_REQUIRED: &str = "olm.package.required";
    /// `olm.gvk`: an API the bundle provides.
    pub const GVK: &str = "olm.gvk";
    /// `olm.gvk.required`: an API the bundle needs.
    pub const GVK_REQUIRED: &str = "olm.gvk.required";
    /// `olm.bundle.object`: one manifest of the bundle, base64-encoded.
    pub const BUNDLE_OBJECT: &str = "olm.bundle.object";
    /// `olm.csv.metadata`: the CSV's descriptive metadata.
    pub const CSV_METADATA: &str = "olm.csv.metadata";
}

/// One property of a package, channel or bundle.
#[derive(Debug, Clone)]
pub enum Property {
    /// `olm.package`.
    Package(PackageProperty),
    /// `olm.package.required`.
    PackageRequired(PackageRequired),
    /// `olm.gvk`.
    Gvk(Gvk),
    /// `olm.gvk.required`.
    GvkRequired(Gvk),
    /// `olm.bundle.object`.
    BundleObject(BundleObject),
    /// `olm.csv.metadata`.
    CsvMetadata(CsvMetadataProperty),
    /// Any other type, kept as it was written.
    Other {
        /// The property type.
        type_: String,
        /// The value, as compact JSON.
        value: Box<RawValue>,
    },
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        use Property::*;
        match (self, other) {
            (Package(a), Package(b)) => a == b,
            (PackageRequired(a), PackageRequired(b)) => a == b,
            (Gvk(a), Gvk(b)) | (GvkRequired(a), GvkRequired(b)) => a == b,
            (BundleObject(a), BundleObject(b)) => a == b,
            (CsvMetadata(a), CsvMetadata(b)) => a.raw.get() == b.raw.get(),
            (
                Other { type_, value },
                Other {
                    type_: t2,
                    value: v2,
                },
            ) => type_ == t2 && value.get() == v2.get(),
            _ => false,
        }
    }
}

/// `olm.package` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageProperty {
    /// The package the bundle belongs to.
    #[serde(default, deserialize_with = "null_as_default")]
    pub package_name: String,
    /// The bundle's semantic version (validated when the catalog is validated).
    #[serde(default, deserialize_with = "null_as_default")]
    pub version: String,
    /// Optional release, a dot-separated list of pre-release-style identifiers.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub release: String,
}

/// `olm.package.required` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequired {
    /// The required package.
    #[serde(default, deserialize_with = "null_as_default")]
    pub package_name: String,
    /// The acceptable versions (a blang/semver range).
    #[serde(default, deserialize_with = "null_as_default")]
    pub version_range: String,
}

/// `olm.gvk` / `olm.gvk.required` value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Gvk {
    /// API group.
    #[serde(default, deserialize_with = "null_as_default")]
    pub group: String,
    /// Kind.
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: String,
    /// API version.
    #[serde(default, deserialize_with = "null_as_default")]
    pub version: String,
}

/// `olm.bundle.object` value: one manifest, as the base64 text of its YAML or JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleObject {
    /// Base64 (standard alphabet) of the manifest; checked when the catalog is loaded.
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: String,
}

impl BundleObject {
    /// The manifest's bytes.
    pub fn decode(&self) -> Result<Vec<u8>, Base64Error> {
        base64::decode(&self.data)
    }

    /// The manifest as a JSON value (manifests may be YAML or JSON, as `opm` accepts).
    pub fn manifest(&self) -> Result<serde_json::Value, ObjectError> {
        serde_json::from_str(&self.manifest_json()?)
            .map_err(|e| ObjectError::Yaml(super::yaml::YamlError::Syntax(e.to_string())))
    }

    /// The manifest as compact JSON text (`null` for an empty document), without building a
    /// JSON value: what a registry server sends as `Bundle.object`.
    pub fn manifest_json(&self) -> Result<String, ObjectError> {
        let bytes = self.decode()?;
        let text = String::from_utf8(bytes).map_err(|_| ObjectError::NotUtf8)?;
        let mut json = String::new();
        if !super::yaml::to_json(&text, &mut json)? {
            json.push_str("null");
        }
        Ok(json)
    }
}

/// Why a bundle object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The base64 text is invalid.
    #[error(transparent)]
    Base64(#[from] Base64Error),
    /// The decoded manifest is not UTF-8 text.
    #[error("manifest is not UTF-8 text")]
    NotUtf8,
    /// The decoded manifest is not valid YAML or JSON.
    #[error(transparent)]
    Yaml(#[from] super::yaml::YamlError),
}

/// `olm.csv.metadata` value, kept as raw JSON; [`CsvMetadataProperty::parse`] reads it.
#[derive(Debug, Clone)]
pub struct CsvMetadataProperty {
    /// The value as compact JSON.
    pub raw: Box<RawValue>,
}

impl CsvMetadataProperty {
    /// The typed metadata.
    pub fn parse(&self) -> Result<CsvMetadata, serde_json::Error> {
        serde_json::from_str(self.raw.get())
    }
}

impl Property {
    /// The property type name.
    pub fn type_name(&self) -> &str {
        match self {
            Property::Package(_) => types::PACKAGE,
            Property::PackageRequired(_) => types::PACKAGE_REQUIRED,
            Property::Gvk(_) => types::GVK,
            Property::GvkRequired(_) => types::GVK_REQUIRED,
            Property::BundleObject(_) => types::BUNDLE_OBJECT,
            Property::CsvMetadata(_) => types::CSV_METADATA,
            Property::Other { type_, .. } => type_,
        }
    }

    /// Parses a property value of the given type (`value` is `None` when the key is missing).
    pub fn parse(type_: &str, value: Option<&RawValue>) -> Result<Self, PropertyError> {
        // Go unmarshals an absent value (nil RawMessage) and fails like this.
        let raw =
            value.ok_or_else(|| PropertyError::Value("unexpected end of JSON input".to_owned()))?;
        let typed = |e: serde_json::Error| PropertyError::Value(e.to_string());
        Ok(match type_ {
            types::PACKAGE => Property::Package(serde_json::from_str(raw.get()).map_err(typed)?),
            types::PACKAGE_REQUIRED => {
                Property::PackageRequired(serde_json::from_str(raw.get()).map_err(typed)?)
            }
            types::GVK => Property::Gvk(serde_json::from_str(raw.get()).map_err(typed)?),
            types::GVK_REQUIRED => {
                Property::GvkRequired(serde_json::from_str(raw.get()).map_err(typed)?)
            }
            types::BUNDLE_OBJECT => {
                let object: BundleObject = match plain_data(raw.get()) {
                    Some(data) => BundleObject {
                        data: data.to_owned(),
                    },
                    None => serde_json::from_str(raw.get()).map_err(typed)?,
                };
                base64::validate(&object.data).map_err(PropertyError::Base64)?;
                Property::BundleObject(object)
            }
            types::CSV_METADATA => {
                // Check the shape cheaply (borrowing), keep the raw JSON.
                serde_json::from_str::<CsvMetadataCheck<'_>>(raw.get()).map_err(typed)?;
                Property::CsvMetadata(CsvMetadataProperty { raw: compact(raw) })
            }
            other => Property::Other {
                type_: other.to_owned(),
                value: compact(raw),
            },
        })
    }
}

/// Reads JSON `null` as the default value, as Go's `encoding/json` does.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The data of a `{"data":"..."}` value without escapes, read without a JSON parser (bundle
/// objects are most of a large catalog's bytes).
fn plain_data(text: &str) -> Option<&str> {
    let ws: &[char] = &[' ', '\n', '\r', '\t'];
    let rest = text.strip_prefix('{')?.trim_start_matches(ws);
    let rest = rest.strip_prefix("\"data\"")?.trim_start_matches(ws);
    let rest = rest.strip_prefix(':')?.trim_start_matches(ws);
    let inner = rest.strip_prefix('"')?;
    let inner = inner
        .trim_end_matches(ws)
        .strip_suffix('}')?
        .trim_end_matches(ws)
        .strip_suffix('"')?;
    memchr::memchr2(b'"', b'\\', inner.as_bytes())
        .is_none()
        .then_some(inner)
}

/// Why a property value is invalid (the caller adds index and type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyError {
    /// The value does not have the shape of its type.
    #[error("{0}")]
    Value(String),
    /// `olm.bundle.object` data is not valid base64.
    #[error(transparent)]
    Base64(Base64Error),
}

/// Copies a raw JSON value, removing white space outside strings (pretty-printed JSON input).
/// Strings are skipped with `memchr`, so already-compact values cost one fast scan.
pub(crate) fn compact(raw: &RawValue) -> Box<RawValue> {
    let text = raw.get();
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = end_of_string(bytes, i),
            b' ' | b'\n' | b'\r' | b'\t' => {
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                out.push_str(&text[copied..i]);
                i += 1;
                copied = i;
            }
            _ => i += 1,
        }
    }
    match out {
        None => raw.to_owned(),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            // Removing white space outside strings keeps valid JSON valid.
            RawValue::from_string(out).unwrap_or_else(|_| raw.to_owned())
        }
    }
}

/// Offset just past the string literal that opens at `start`.
fn end_of_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(found) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
        i += found;
        if bytes[i] == b'\\' {
            i += 2;
        } else {
            return i + 1;
        }
    }
    bytes.len()
}

/// Serialises as `{"type": ..., "value": ...}` (key order as `opm` writes it).
impl Serialize for Property {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Property", 2)?;
        s.serialize_field("type", self.type_name())?;
        match self {
            Property::Package(v) => s.serialize_field("value", v)?,
            Property::PackageRequired(v) => s.serialize_field("value", v)?,
            Property::Gvk(v) | Property::GvkRequired(v) => s.serialize_field("value", v)?,
            Property::BundleObject(v) => s.serialize_field("value", v)?,
            Property::CsvMetadata(v) => s.serialize_field("value", &v.raw)?,
            Property::Other { value, .. } => s.serialize_field("value", value)?,
        }
        s.end()
    }
}

/// A property as it appears in a blob, before its value is typed.
#[derive(Debug, Deserialize)]
pub(crate) struct RawProperty<'a> {
    #[serde(rename = "type", default, borrow)]
    pub(crate) type_: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) value: Option<&'a RawValue>,
}

/// Types a list of raw properties; errors name the index and type like `opm`:
/// `parse property[2] of type "olm.foo": ...`.
pub(crate) fn parse_all(raw: Vec<RawProperty<'_>>) -> Result<Vec<Property>, String> {
    raw.into_iter()
        .enumerate()
        .map(|(index, p)| {
            Property::parse(&p.type_, p.value)
                .map_err(|e| format!("parse property[{index}] of type {:?}: {e}", p.type_))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn known_types_are_typed_and_others_kept() {
        let p = Property::parse(
            "olm.package",
            Some(&raw(r#"{"packageName":"foo","version":"1.0.0"}"#)),
        )
        .unwrap();
        assert_eq!(
            p,
            Property::Package(PackageProperty {
                package_name: "foo".into(),
                version: "1.0.0".into(),
                release: String::new()
            })
        );
        let p = Property::parse(
            "olm.maxOpenShiftVersion",
            Some(&raw("{ \"v\" : \"4.16\" }")),
        )
        .unwrap();
        let Property::Other { type_, value } = &p else {
            panic!("{p:?}")
        };
        assert_eq!(
            (type_.as_str(), value.get()),
            ("olm.maxOpenShiftVersion", r#"{"v":"4.16"}"#)
        );
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"type":"olm.maxOpenShiftVersion","value":{"v":"4.16"}}"#
        );
    }

    #[test]
    fn bad_values_are_rejected_like_opm() {
        assert_eq!(
            Property::parse("broken", None).unwrap_err().to_string(),
            "unexpected end of JSON input"
        );
        let err = Property::parse("olm.bundle.object", Some(&raw(r#"{"data":"not base64!"}"#)))
            .unwrap_err();
        assert_eq!(err.to_string(), "illegal base64 data at input byte 3");
        assert!(Property::parse("olm.gvk", Some(&raw(r#"{"group":5}"#))).is_err());
        assert!(Property::parse("olm.csv.metadata", Some(&raw(r#"{"keywords":"x"}"#))).is_err());
    }

    #[test]
    fn bundle_objects_decode_lazily_from_yaml_or_json() {
        let object = BundleObject {
            data: "a2luZDogQ2x1c3RlclNlcnZpY2VWZXJzaW9uCm1ldGFkYXRhOgogIG5hbWU6IGZvbwo=".into(),
        };
        let manifest = object.manifest().unwrap();
        assert_eq!(manifest["kind"], "ClusterServiceVersion");
        assert_eq!(manifest["metadata"]["name"], "foo");
    }

    #[test]
    fn bundle_object_data_is_read_directly_when_plain() {
        assert_eq!(plain_data(r#"{"data":"Zm9v"}"#), Some("Zm9v"));
        assert_eq!(plain_data("{\n    \"data\": \"Zm9v\"\n}"), Some("Zm9v"));
        assert_eq!(
            plain_data(r#"{"data":"Zm\u0039v"}"#),
            None,
            "escapes go through serde"
        );
        assert_eq!(
            plain_data(r#"{"data":"Zm9v","x":"y"}"#),
            None,
            "other keys go through serde"
        );
        let p =
            Property::parse("olm.bundle.object", Some(&raw(r#"{"data":"Zm\u0039v"}"#))).unwrap();
        assert_eq!(
            p,
            Property::BundleObject(BundleObject {
                data: "Zm9v".into()
            })
        );
    }

    #[test]
    fn compact_keeps_strings_intact() {
        let pretty = raw("{\n  \"a\" : [ 1, 2 ],\n  \"b\": \"x y\\\" z\"\n}");
        assert_eq!(compact(&pretty).get(), r#"{"a":[1,2],"b":"x y\" z"}"#);
    }
}
