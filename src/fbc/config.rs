//! [`DeclarativeConfig`]: all blobs of a catalog, and parsing of one file's text into blobs.

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use super::blob::{
    self, Blob, BlobError, BundleBlob, ChannelBlob, DeprecationsBlob, Meta, PackageBlob,
};
use super::yaml::{self, YamlError};

/// Every blob of a catalog, grouped by schema, in file order (files sorted by path).
///
/// This is the catalog as written, before validation; [`crate::fbc::Catalog`] is the validated,
/// indexed form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeclarativeConfig {
    /// `olm.package` blobs.
    pub packages: Vec<PackageBlob>,
    /// `olm.channel` blobs.
    pub channels: Vec<ChannelBlob>,
    /// `olm.bundle` blobs.
    pub bundles: Vec<BundleBlob>,
    /// `olm.deprecations` blobs.
    pub deprecations: Vec<DeprecationsBlob>,
    /// Blobs of other schemas, kept whole.
    pub others: Vec<Meta>,
}

impl DeclarativeConfig {
    /// Adds one blob.
    pub fn push(&mut self, blob: Blob) {
        match blob {
            Blob::Package(p) => self.packages.push(p),
            Blob::Channel(c) => self.channels.push(c),
            Blob::Bundle(b) => self.bundles.push(b),
            Blob::Deprecations(d) => self.deprecations.push(d),
            Blob::Other(m) => self.others.push(m),
        }
    }

    /// Appends all blobs of `other`.
    pub fn merge(&mut self, other: DeclarativeConfig) {
        self.packages.extend(other.packages);
        self.channels.extend(other.channels);
        self.bundles.extend(other.bundles);
        self.deprecations.extend(other.deprecations);
        self.others.extend(other.others);
    }

    /// Parses one catalog file's text (a YAML stream or a stream of JSON objects). `origin`
    /// names the file in error messages.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, Vec<DocumentError>> {
        let mut config = DeclarativeConfig::default();
        let mut errors = Vec::new();
        for item in parse_stream(text) {
            match item {
                Ok(blob) => config.push(blob),
                Err((line, error)) => errors.push(DocumentError {
                    path: origin.to_path_buf(),
                    line,
                    error,
                }),
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// Number of blobs.
    pub fn len(&self) -> usize {
        self.packages.len()
            + self.channels.len()
            + self.bundles.len()
            + self.deprecations.len()
            + self.others.len()
    }

    /// Whether there are no blobs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why one document of a file is not a usable blob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {error}", path.display())]
pub struct DocumentError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line where the document starts.
    pub line: usize,
    /// What is wrong.
    pub error: DocumentErrorKind,
}

/// What is wrong with a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentErrorKind {
    /// Not valid YAML (or not convertible to JSON).
    #[error(transparent)]
    Yaml(#[from] YamlError),
    /// Not valid JSON (in a JSON stream).
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Valid YAML/JSON, but not a valid blob.
    #[error(transparent)]
    Blob(#[from] BlobError),
}

impl DocumentErrorKind {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            DocumentErrorKind::Yaml(_) => "yaml",
            DocumentErrorKind::Json(_) => "json",
            DocumentErrorKind::Blob(_) => "blob",
        }
    }
}

type Item = Result<Blob, (usize, DocumentErrorKind)>;

/// Splits a file's text into documents and parses each into a blob. Like `opm`'s
/// YAML-or-JSON decoder, a stream whose first non-blank character is `{` is read as
/// concatenated JSON objects, anything else as YAML documents separated by `---` lines.
pub(crate) fn parse_stream(text: &str) -> Vec<Item> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        parse_json_stream(text)
    } else {
        parse_yaml_stream(text)
    }
}

fn parse_yaml_stream(text: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut json = String::new();
    let mut keys = Vec::new();
    for doc in yaml::documents(text) {
        json.clear();
        match yaml::to_json_with_keys(doc.text, &mut json, &mut keys) {
            Ok(false) => {}
            Ok(true) => items.push(
                blob::parse_blob_with_keys(&json, &keys).map_err(|e| (doc.first_line, e.into())),
            ),
            Err(e) => items.push(Err((doc.first_line, e.into()))),
        }
    }
    items
}

fn parse_json_stream(text: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    // Line numbers for messages, counted incrementally (documents can be many).
    let (mut counted_to, mut line) = (0, 1);
    loop {
        let start = stream.byte_offset();
        let start = (start + leading_ws(&text[start..])).min(text.len());
        line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted_to..start]).count();
        counted_to = start;
        match stream.next() {
            None => break,
            Some(Ok(raw)) => items.push(blob::parse_blob(raw.get()).map_err(|e| (line, e.into()))),
            Some(Err(e)) => {
                // The stream cannot resync after a syntax error.
                items.push(Err((line, DocumentErrorKind::Json(e.to_string()))));
                break;
            }
        }
    }
    items
}

fn leading_ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_streams_give_the_same_blobs() {
        let yaml = "---\nschema: olm.package\nname: foo\ndefaultChannel: a\n---\nschema: olm.channel\npackage: foo\nname: a\nentries:\n  - name: foo.v1\n";
        let json = r#"{"schema":"olm.package","name":"foo","defaultChannel":"a"}
            {
                "schema": "olm.channel", "package": "foo", "name": "a",
                "entries": [{"name": "foo.v1"}]
            }"#;
        let a = DeclarativeConfig::parse(yaml, Path::new("a.yaml")).unwrap();
        let b = DeclarativeConfig::parse(json, Path::new("b.json")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn every_bad_document_is_reported_with_its_line() {
        let text = "schema: olm.package\nname: a\n---\nname: no-schema\n---\na: [unclosed\n---\nschema: olm.package\nname: b\n";
        let errors = DeclarativeConfig::parse(text, Path::new("x.yaml")).unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![4, 6]);
        assert!(
            errors[0].to_string().starts_with("x.yaml:4: object '"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn json_syntax_errors_name_the_line() {
        let errors =
            DeclarativeConfig::parse("{\"schema\":\"a\"}\n\n{\"schema\": }", Path::new("c.json"))
                .unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, 3);
        assert_eq!(errors[0].error.kind(), "json");
    }
}
