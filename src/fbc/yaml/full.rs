//! Full path: any YAML document, parsed with `granit-parser` and converted to JSON with the
//! same scalar resolution as the fast path.
//!
//! Handles what the fast path leaves out: anchors and aliases, merge keys (`<<`), tags, flow
//! collections, folded scalars, complex keys, directives. Like go-yaml v2's `Unmarshal`, only
//! the first document of the text is read, later duplicate keys replace earlier ones, and
//! explicit keys win over merged ones.
//!
//! Tags: the core tags `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!binary`,
//! `!!timestamp`, `!!map`, `!!seq` are honoured; other tags are ignored on collections and make
//! scalars strings (as go-yaml does for tags it cannot resolve).

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

use super::scalar::{self, Plain};
use super::{MAX_DEPTH, YamlError};

enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
    },
    Map {
        map: Map<String, Value>,
        key: Option<PendingKey>,
        anchor: usize,
    },
}

struct PendingKey {
    text: String,
    merge: bool,
}

/// Parses `doc` and appends its first document as compact JSON. `Ok(false)`: no node.
pub(crate) fn transcode(doc: &str, out: &mut String) -> Result<bool, YamlError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut root: Option<Value> = None;
    let mut in_document = false;
    for event in Parser::new_from_str(doc) {
        let (event, _span) = event.map_err(|e| YamlError::Syntax(e.to_string()))?;
        let (value, anchor, is_merge_key) = match event {
            Event::DocumentStart(..) => {
                in_document = true;
                continue;
            }
            Event::DocumentEnd => {
                if in_document {
                    break;
                }
                continue;
            }
            Event::StreamEnd => break,
            Event::SequenceStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError::TooDeep);
                }
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError::TooDeep);
                }
                stack.push(Frame::Map {
                    map: Map::new(),
                    key: None,
                    anchor,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor }) => (Value::Array(items), anchor, false),
                Some(Frame::Map { map, anchor, .. }) => (Value::Object(map), anchor, false),
                None => return Err(YamlError::Syntax("unbalanced collection end".to_owned())),
            },
            Event::Scalar(text, style, anchor, tag) => {
                let core = tag.as_ref().map(|t| t.core_suffix().map(str::to_owned));
                let is_merge_key = style == ScalarStyle::Plain && tag.is_none() && text == "<<";
                (scalar_value(&text, style, core)?, anchor, is_merge_key)
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(v) => (v.clone(), 0, false),
                None => return Err(YamlError::Syntax(format!("unknown anchor {id}"))),
            },
            _ => continue,
        };
        if anchor != 0 {
            anchors.insert(anchor, value.clone());
        }
        match stack.last_mut() {
            None => {
                root = Some(value);
            }
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map { map, key, .. }) => match key.take() {
                None => {
                    *key = Some(PendingKey {
                        text: key_text(&value)?,
                        merge: is_merge_key,
                    });
                }
                Some(PendingKey { merge: true, .. }) => merge_into(map, value)?,
                Some(PendingKey { text, merge: false }) => {
                    map.insert(text, value);
                }
            },
        }
    }
    match root {
        Some(value) => {
            out.push_str(&value.to_string());
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Merge (`<<`): adds the keys of the merged mapping(s) that are not set yet; explicit keys
/// that come later replace merged ones, so explicit keys always win.
fn merge_into(map: &mut Map<String, Value>, value: Value) -> Result<(), YamlError> {
    let sources = match value {
        Value::Object(m) => vec![m],
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(m) => Ok(m),
                _ => Err(YamlError::Syntax(
                    "map merge requires map or sequence of maps as the value".to_owned(),
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(YamlError::Syntax(
                "map merge requires map or sequence of maps as the value".to_owned(),
            ));
        }
    };
    for source in sources {
        for (k, v) in source {
            map.entry(k).or_insert(v);
        }
    }
    Ok(())
}

/// The JSON key for a mapping key node, converted like `sigs.k8s.io/yaml`.
fn key_text(value: &Value) -> Result<String, YamlError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => Err(YamlError::UnsupportedKey(other.to_string())),
    }
}

fn scalar_value(
    text: &str,
    style: ScalarStyle,
    tag: Option<Option<String>>,
) -> Result<Value, YamlError> {
    let plain = match tag {
        // No tag: plain scalars are resolved, others are strings.
        None => {
            if style == ScalarStyle::Plain {
                scalar::resolve_plain(text)
            } else {
                Plain::Str
            }
        }
        // A tag outside the core schema: go-yaml cannot resolve it and keeps the text.
        Some(None) => Plain::Str,
        Some(Some(core)) => match core.as_str() {
            "str" => Plain::Str,
            "null" => Plain::Null,
            "int" => match scalar::resolve_plain(text) {
                v @ (Plain::Int(_) | Plain::Uint(_)) => v,
                _ => {
                    return Err(YamlError::Syntax(format!(
                        "cannot decode !!str `{text}` as a !!int"
                    )));
                }
            },
            "float" => match scalar::resolve_plain(text) {
                Plain::Int(i) => Plain::Float(i as f64),
                Plain::Uint(u) => Plain::Float(u as f64),
                v @ Plain::Float(_) => v,
                _ => {
                    return Err(YamlError::Syntax(format!(
                        "cannot decode !!str `{text}` as a !!float"
                    )));
                }
            },
            "bool" => match scalar::resolve_plain(text) {
                v @ Plain::Bool(_) => v,
                _ => {
                    return Err(YamlError::Syntax(format!(
                        "cannot decode !!str `{text}` as a !!bool"
                    )));
                }
            },
            _ => Plain::Str,
        },
    };
    Ok(match plain {
        Plain::Null => Value::Null,
        Plain::Bool(b) => Value::Bool(b),
        Plain::Int(i) => Value::Number(i.into()),
        Plain::Uint(u) => Value::Number(u.into()),
        Plain::Float(f) => Value::Number(Number::from_f64(f).ok_or(
            YamlError::UnsupportedValue(if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            }),
        )?),
        Plain::Str => Value::String(text.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(doc: &str) -> Value {
        let mut out = String::new();
        assert!(transcode(doc, &mut out).unwrap());
        serde_json::from_str(&out).unwrap()
    }

    #[test]
    fn anchors_aliases_and_merges() {
        let v = full("base: &b {x: 1, z: 2}\nderived:\n  <<: *b\n  z: 3\nlist: [*b]\n");
        assert_eq!(v["derived"], serde_json::json!({"x": 1, "z": 3}));
        assert_eq!(v["list"][0]["x"], 1);
    }

    #[test]
    fn tags_and_flow_collections() {
        let v = full(
            "a: !!str 10\nb: !!int \"10\"\nc: !custom yes\nd: {e: [1, 'two', yes]}\nf: >\n  folded\n  text\n",
        );
        assert_eq!(v["a"], "10");
        assert_eq!(v["b"], 10);
        assert_eq!(v["c"], "yes");
        assert_eq!(v["d"]["e"], serde_json::json!([1, "two", true]));
        assert_eq!(v["f"], "folded text\n");
    }

    #[test]
    fn errors_name_the_problem() {
        let mut out = String::new();
        assert!(matches!(
            transcode("a: [1, 2\n", &mut out),
            Err(YamlError::Syntax(_))
        ));
        assert_eq!(
            transcode("a: .nan\n", &mut out),
            Err(YamlError::UnsupportedValue("NaN"))
        );
        assert!(matches!(
            transcode("~: 1\n", &mut out),
            Err(YamlError::UnsupportedKey(_))
        ));
        assert_eq!(transcode("# only a comment\n", &mut out), Ok(false));
    }
}
