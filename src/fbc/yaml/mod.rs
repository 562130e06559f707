//! YAML streams → JSON text, with the semantics `opm` gets from
//! `k8s.io/apimachinery/pkg/util/yaml` (document splitting) and `sigs.k8s.io/yaml` over go-yaml
//! v2 (YAML → JSON conversion).
//!
//! Each document is converted twice-capable:
//! - the **fast path** ([`fast`]) handles the block-YAML subset that `opm` and go-yaml emit
//!   (block mappings and sequences, plain / single-quoted / double-quoted scalars over one or
//!   more lines, literal `|` block scalars, comments, empty `{}` / `[]`) with line scanning and
//!   no per-character allocation. It gives up ([`fast::Bail`]) on anything else;
//! - the **full path** ([`full`]) parses any YAML 1.2 document with `granit-parser` (anchors,
//!   aliases, tags, flow collections, folded scalars, merge keys, ...).
//!
//! Both write JSON through one scalar-resolution module ([`scalar`]), so they resolve `yes`,
//! `0x10`, `~` ... identically. The third-party differential test checks that the fast path
//! and the full path produce the same JSON value for every document of the real catalogs.

mod fast;
mod full;
#[cfg(test)]
mod random_tests;
pub(crate) mod scalar;

pub(crate) use fast::TopKey;

/// Why a YAML document could not be converted to JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The text is not valid YAML (message from the YAML parser, with its position).
    #[error("invalid YAML: {0}")]
    Syntax(String),
    /// A value that JSON cannot represent (`.nan`, `.inf`), as Go's `json.Marshal` reports it.
    #[error("json: unsupported value: {0}")]
    UnsupportedValue(&'static str),
    /// A mapping key that cannot become a JSON object key (null, float, or a collection).
    #[error("unsupported map key {0}")]
    UnsupportedKey(String),
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("document nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Deepest nesting of collections accepted in one document.
pub const MAX_DEPTH: usize = 512;

/// One YAML document of a stream: its text and the 1-based line where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Document<'a> {
    /// The document's text, without the `---` separator lines.
    pub text: &'a str,
    /// 1-based line number of the document's first line in the stream.
    pub first_line: usize,
}

/// Splits a YAML stream into documents exactly where apimachinery's `YAMLReader` does: at lines
/// that start with `---` followed only by white space. Empty chunks are skipped.
pub fn documents(text: &str) -> impl Iterator<Item = Document<'_>> {
    let mut pos = 0;
    let mut line_no = 1;
    std::iter::from_fn(move || {
        let bytes = text.as_bytes();
        let mut start = pos;
        let mut first_line = line_no;
        while pos < bytes.len() {
            let line_end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
            let next = (line_end + 1).min(bytes.len());
            let line = &text[pos..line_end];
            let is_separator = line
                .strip_prefix("---")
                .is_some_and(|rest| rest.chars().all(char::is_whitespace));
            if is_separator {
                let chunk = &text[start..pos];
                pos = next;
                line_no += 1;
                if !chunk.is_empty() {
                    return Some(Document {
                        text: chunk,
                        first_line,
                    });
                }
                start = pos;
                first_line = line_no;
                continue;
            }
            pos = next;
            line_no += 1;
        }
        if start < bytes.len() {
            let chunk = &text[start..];
            start = bytes.len();
            pos = start;
            return Some(Document {
                text: chunk,
                first_line,
            });
        }
        None
    })
}

/// Converts one YAML document to compact JSON text, appended to `out`. Returns `Ok(false)` and
/// leaves `out` unchanged when the document holds no node (only blank lines and comments).
///
/// `opm` (through go-yaml) would turn such a document into `null` and then fail with "missing
/// root schema field"; we skip it instead, like a document that is truly empty.
pub fn to_json(doc: &str, out: &mut String) -> Result<bool, YamlError> {
    to_json_with_keys(doc, out, &mut Vec::new())
}

/// [`to_json`] that also reports the root mapping's keys and values (byte ranges of `out`)
/// when the fast path converted the document; `keys` stays empty otherwise.
pub(crate) fn to_json_with_keys(
    doc: &str,
    out: &mut String,
    keys: &mut Vec<TopKey>,
) -> Result<bool, YamlError> {
    let mark = out.len();
    keys.clear();
    match fast::transcode(doc, out, keys) {
        Ok(written) => Ok(written),
        Err(fast::Bail) => {
            out.truncate(mark);
            keys.clear();
            full::transcode(doc, out)
        }
    }
}

/// The fast path alone: `None` when the document uses YAML outside the fast subset (or is
/// invalid). Exposed for differential tests.
pub fn to_json_fast(doc: &str) -> Option<String> {
    let mut out = String::new();
    match fast::transcode(doc, &mut out, &mut Vec::new()) {
        Ok(true) => Some(out),
        Ok(false) => Some("null".to_owned()),
        Err(fast::Bail) => None,
    }
}

/// The full-grammar path alone (`"null"` for a document without a node). Exposed for
/// differential tests.
pub fn to_json_full(doc: &str) -> Result<String, YamlError> {
    let mut out = String::new();
    if full::transcode(doc, &mut out)? {
        Ok(out)
    } else {
        Ok("null".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<(String, usize)> {
        documents(text)
            .map(|d| (d.text.to_owned(), d.first_line))
            .collect()
    }

    #[test]
    fn splits_on_separator_lines_only() {
        assert_eq!(
            split("---\na: 1\n---\nb: 2\n"),
            vec![("a: 1\n".to_owned(), 2), ("b: 2\n".to_owned(), 4)]
        );
        assert_eq!(
            split("a: 1\n---  \r\nb: '---'\n--- x\n"),
            vec![
                ("a: 1\n".to_owned(), 1),
                ("b: '---'\n--- x\n".to_owned(), 3)
            ]
        );
        assert_eq!(split("---\n---\n"), Vec::<(String, usize)>::new());
        assert_eq!(split("a: 1"), vec![("a: 1".to_owned(), 1)]);
        assert_eq!(split(""), Vec::<(String, usize)>::new());
    }

    #[test]
    fn comment_only_documents_are_empty() {
        let mut out = String::new();
        assert_eq!(to_json("# nothing\n\n", &mut out), Ok(false));
        assert_eq!(out, "");
    }
}
