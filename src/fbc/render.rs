//! `catalog render`: the catalog as a stream of JSON blobs, in `opm render`'s layout.
//!
//! Like `opm`'s `WriteJSON`: per package name (sorted), the package blob, its channels (by
//! name), its bundles (by name), its other-schema blobs (by schema) and its deprecations; then
//! other-schema blobs without a package. Blobs are indented with four spaces, one per line
//! group. Known property values are written from their typed form (unknown fields inside them
//! are not kept); unknown property types and schemas are written as they were.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::blob::{BundleBlob, ChannelBlob, DeprecationsBlob, Meta, PackageBlob, schemas};
use super::config::DeclarativeConfig;

fn write_blob<W: Write, T: Serialize>(out: &mut W, blob: &T) -> io::Result<()> {
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut *out, formatter);
    blob.serialize(&mut serializer).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// Writes every blob of `config` to `out`.
pub fn render<W: Write>(config: &DeclarativeConfig, out: &mut W) -> io::Result<()> {
    let names: BTreeSet<&str> = config
        .packages
        .iter()
        .map(|p| p.name.as_str())
        .chain(config.channels.iter().map(|c| c.package.as_str()))
        .chain(config.bundles.iter().map(|b| b.package.as_str()))
        .chain(config.others.iter().map(|o| o.package.as_str()))
        .chain(config.deprecations.iter().map(|d| d.package.as_str()))
        .filter(|name| !name.is_empty())
        .collect();
    for name in names {
        for package in config.packages.iter().filter(|p| p.name == name) {
            write_blob(out, package)?;
        }
        let mut channels: Vec<_> = config
            .channels
            .iter()
            .filter(|c| c.package == name)
            .collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        for channel in channels {
            write_blob(out, channel)?;
        }
        let mut bundles: Vec<_> = config
            .bundles
            .iter()
            .filter(|b| b.package == name)
            .collect();
        bundles.sort_by(|a, b| a.name.cmp(&b.name));
        for bundle in bundles {
            write_blob(out, bundle)?;
        }
        let mut others: Vec<_> = config.others.iter().filter(|o| o.package == name).collect();
        others.sort_by(|a, b| a.schema.cmp(&b.schema));
        for other in others {
            write_blob(out, other)?;
        }
        for deprecation in config.deprecations.iter().filter(|d| d.package == name) {
            write_blob(out, deprecation)?;
        }
    }
    for other in config.others.iter().filter(|o| o.package.is_empty()) {
        write_blob(out, other)?;
    }
    Ok(())
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
    use std::path::Path;

    #[test]
    fn renders_in_opm_order_and_round_trips() {
        let yaml = "schema: olm.channel\npackage: foo\nname: b\nentries:\n- name: foo.v1\n---\nschema: olm.package\nname: foo\ndefaultChannel: b\n---\nschema: example.com/note\ntext: hi\n---\nschema: olm.channel\npackage: foo\nname: a\nentries:\n- name: foo.v1\n";
        let config = DeclarativeConfig::parse(yaml, Path::new("x.yaml")).unwrap();
        let mut out = Vec::new();
        render(&config, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let schemas: Vec<String> = serde_json::Deserializer::from_str(&text)
            .into_iter::<serde_json::Value>()
            .map(|v| {
                let v = v.unwrap();
                format!(
                    "{} {}",
                    v["schema"].as_str().unwrap(),
                    v["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            schemas,
            [
                "olm.package foo",
                "olm.channel a",
                "olm.channel b",
                "example.com/note "
            ]
        );
        assert!(text.starts_with("{\n    \"schema\": \"olm.package\",\n    \"name\": \"foo\",\n"));
        let again = DeclarativeConfig::parse(&text, Path::new("rendered.json")).unwrap();
        assert_eq!(again.channels.len(), 2);
        assert_eq!(again.others, config.others);
    }
}
