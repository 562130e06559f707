//! Fast-path tests: each construct must be handled and agree with the full parser.

use super::*;

fn fast(doc: &str) -> Option<serde_json::Value> {
    let mut out = String::new();
    match transcode(doc, &mut out, &mut Vec::new()) {
        Ok(true) => Some(serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))),
        Ok(false) => Some(serde_json::Value::Null),
        Err(Bail) => None,
    }
}

fn full(doc: &str) -> serde_json::Value {
    let text = super::super::to_json_full(doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
    serde_json::from_str(&text).unwrap()
}

/// The fast path handles `doc` and agrees with the full parser.
#[track_caller]
fn same(doc: &str) -> serde_json::Value {
    let value = fast(doc).unwrap_or_else(|| panic!("fast path bailed on:\n{doc}"));
    assert_eq!(value, full(doc), "fast and full paths differ on:\n{doc}");
    value
}

#[track_caller]
fn bails(doc: &str) {
    assert_eq!(
        fast(doc),
        None,
        "fast path should leave this to the full parser:\n{doc}"
    );
}

#[test]
fn opm_style_blobs() {
    let v = same(
        "schema: olm.channel\npackage: foo\nname: beta\nentries:\n  - name: foo.v0.1.0\n    skipRange: <0.1.0\n  - name: foo.v0.2.0\n    replaces: foo.v0.1.0\n    skips:\n      - foo.v0.1.1\n      - foo.v0.1.2\n",
    );
    assert_eq!(v["entries"][1]["skips"][1], "foo.v0.1.2");
    let v = same(
        "entries:\n- name: a.v1\n- name: a.v2\n  replaces: a.v1\nname: alpha\npackage: a\nschema: olm.channel\n",
    );
    assert_eq!(v["entries"][1]["replaces"], "a.v1");
    assert_eq!(v["schema"], "olm.channel");
}

#[test]
fn scalars_resolve_like_go_yaml_v2() {
    let v = same("a: yes\nb: 0x10\nc: ~\nd:\ne: 1.50\nf: '1.5'\ng: \"true\"\nh: 1.2.3\n");
    assert_eq!(v["a"], true);
    assert_eq!(v["b"], 16);
    assert!(v["c"].is_null() && v["d"].is_null());
    assert_eq!(v["e"], 1.5);
    assert_eq!(v["f"], "1.5");
    assert_eq!(v["g"], "true");
    assert_eq!(v["h"], "1.2.3");
}

#[test]
fn multi_line_plain_and_quoted_scalars_fold() {
    let v = same("d: first line\n  second line\n\n  after blank\nn: 1\n");
    assert_eq!(v["d"], "first line second line\nafter blank");
    let v = same("d: \"one \\\n  two\n  three  \n\n  four\\t\n  five\"\n");
    assert_eq!(v["d"], "one two three\nfour\t five");
    let v = same("d: 'it''s\n    folded'\n");
    assert_eq!(v["d"], "it's folded");
    let v = same("- \"a\\x41\\u00e9\\U0001F600\\n\"\n- 'x'\n");
    assert_eq!(v[0], "aAé😀\n");
}

#[test]
fn literal_block_scalars() {
    let v = same(
        "a: |\n  line 1\n\n    indented\n  line 3\n\n\nb: |-\n  stripped\n\nc: |+\n  kept\n\n\nd: x\n",
    );
    assert_eq!(v["a"], "line 1\n\n  indented\nline 3\n");
    assert_eq!(v["b"], "stripped");
    assert_eq!(v["c"], "kept\n\n\n");
    let v = same("spec:\n    description: |2\n\n      text\n    other: 1\n");
    assert_eq!(v["spec"]["description"], "\ntext\n");
    let v = same("- |\n  in seq\n- b\n");
    assert_eq!(v[0], "in seq\n");
    let v = same("a: |\nb: 1\n");
    assert_eq!(v["a"], "");
    let v = same("a: |\n  # not a comment\n  x: y\n# a comment\nb: 1\n");
    assert_eq!(v["a"], "# not a comment\nx: y\n");
}

#[test]
fn comments_blank_lines_and_empty_collections() {
    let v = same(
        "# head\na: 1 # trailing\n\n# between\nb: {}\nc: [] # empty\nd: 'q' # c\ne: \"a # b\"\n",
    );
    assert_eq!(v["a"], 1);
    assert_eq!(v["b"], serde_json::json!({}));
    assert_eq!(v["c"], serde_json::json!([]));
    assert_eq!(v["e"], "a # b");
}

#[test]
fn quoted_keys_and_nested_structures() {
    let v = same("\"quoted key\": 1\n'it''s': 2\n\"esc\\tkey\": 3\n");
    assert_eq!(v["quoted key"], 1);
    assert_eq!(v["it's"], 2);
    assert_eq!(v["esc\tkey"], 3);
}

#[test]
fn nested_sequences_and_null_items() {
    let v = same("a:\n  -\n  - b: 1\n    c:\n      - x\n  - # comment\n    d: 2\n");
    assert_eq!(v["a"][0], serde_json::Value::Null);
    assert_eq!(v["a"][1]["c"][0], "x");
    assert_eq!(v["a"][2]["d"], 2);
}

#[test]
fn windows_line_endings() {
    let v = same("a: 1\r\nb:\r\n  - x\r\n  - 'y'\r\nc: |\r\n  z\r\n");
    assert_eq!(v["b"][1], "y");
    assert_eq!(v["c"], "z\n");
}

#[test]
fn root_keys_are_reported_with_their_values() {
    let mut out = String::new();
    let mut keys = Vec::new();
    transcode(
        "Schema: olm.package\nname: 'x'\nnested:\n  schema: no\n",
        &mut out,
        &mut keys,
    )
    .unwrap();
    let pairs: Vec<(&str, &str)> = keys
        .iter()
        .map(|k| (&out[k.key.clone()], &out[k.value.clone()]))
        .collect();
    assert_eq!(
        pairs,
        [
            ("\"Schema\"", "\"olm.package\""),
            ("\"name\"", "\"x\""),
            ("\"nested\"", "{\"schema\":false}")
        ]
    );
}

#[test]
fn unsupported_constructs_bail() {
    bails("a: &x 1\nb: *x\n");
    bails("a: !!str 1\n");
    bails("a: [1, 2]\n");
    bails("a: {b: 1}\n");
    bails("a: >\n  folded\n");
    bails("? complex\n: key\n");
    bails("%YAML 1.1\na: 1\n");
    bails("a:\n\t- x\n");
    bails("a: b: c\n");
    bails("a: .nan\n");
    bails("a:\n  b: 1\n c: 2\n");
    bails("- - nested\n");
    bails("a: \"unterminated\n");
}
