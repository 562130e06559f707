//! Property-style differential test: random JSON values written as block YAML in every style
//! the fast path supports (plain, single- and double-quoted over one or more lines, literal
//! blocks with each chomping, comments, blank lines, go-yaml's sequence indentation) must come
//! back unchanged through the fast path, and the full parser must agree.

use serde_json::{Map, Value};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "olm",
    "bundle",
    "v1.2.3",
    "a:b",
    "x#y",
    "quote'd",
    "dq\"",
    "back\\slash",
    "tab\there",
    "ünï",
    "😀",
    "yes",
    "null",
    "0x1F",
    "1.5",
    "-",
    "--",
    "...",
    "[x]",
    "{y}",
    "@at",
    "%p",
    "*star",
    "&amp",
    "!bang",
    "|pipe",
    ">gt",
    "key: v",
    " # hash",
];

fn random_string(rng: &mut Rng) -> String {
    let words = 1 + rng.below(6);
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push_str(match rng.below(8) {
                0 => "\n",
                1 => "  ",
                2 => "\n\n",
                _ => " ",
            });
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    if rng.chance(10) {
        s.push('\n');
    }
    s
}

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth >= 4 { 4 } else { 7 }) {
        0 => Value::Bool(rng.chance(50)),
        1 => Value::from(rng.below(100_000) as i64 - 50_000),
        2 | 3 => Value::String(random_string(rng)),
        4 => Value::Null,
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for i in 0..rng.below(5) {
                let key = if rng.chance(20) {
                    random_string(rng).replace('\n', " ")
                } else {
                    format!("key{i}")
                };
                map.insert(key, random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// A string that is safe as a plain scalar: resolves to itself and has no special characters.
fn plain_ok(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b' ')
        && !s.starts_with([' ', '-', '.'])
        && !s.ends_with(' ')
        && !s.contains("  ")
        && super::scalar::resolve_plain(s) == super::scalar::Plain::Str
}

fn double_quoted(s: &str, indent: usize, rng: &mut Rng) -> String {
    let mut out = String::from("\"");
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            // A lone space between two visible characters may become a line break (folding).
            ' ' if i > 0
                && i + 1 < chars.len()
                && !chars[i - 1].is_whitespace()
                && !chars[i + 1].is_whitespace()
                && rng.chance(30) =>
            {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn single_quoted(s: &str) -> Option<String> {
    if s.contains(['\n', '\t']) || s.starts_with(' ') || s.ends_with(' ') {
        return None;
    }
    Some(format!("'{}'", s.replace('\'', "''")))
}

/// A literal block for a string whose lines are safe (no leading spaces, no trailing blanks).
fn literal(s: &str, indent: usize) -> Option<String> {
    if !s.contains('\n')
        || s.starts_with([' ', '\n'])
        || s.contains([' ', '\t']) && s.lines().any(|l| l.starts_with(' ') || l.ends_with(' '))
    {
        return None;
    }
    let trailing = s.len() - s.trim_end_matches('\n').len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent + 2);
    let body: Vec<String> = s
        .trim_end_matches('\n')
        .split('\n')
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect();
    let mut out = format!("|{chomp}\n{}", body.join("\n"));
    for _ in 0..trailing.max(1) {
        out.push('\n');
    }
    Some(out)
}

fn scalar(value: &Value, indent: usize, rng: &mut Rng) -> String {
    match value {
        Value::Null => if rng.chance(50) { "null" } else { "~" }.to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            if plain_ok(s) && rng.chance(60) {
                return s.clone();
            }
            match rng.below(3) {
                0 => literal(s, indent).unwrap_or_else(|| double_quoted(s, indent, rng)),
                1 => single_quoted(s).unwrap_or_else(|| double_quoted(s, indent, rng)),
                _ => double_quoted(s, indent, rng),
            }
        }
        _ => unreachable!("collections are not scalars"),
    }
}

fn key(k: &str) -> String {
    if plain_ok(k) && !k.contains(' ') {
        k.to_owned()
    } else {
        format!("\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// Appends `value` as the value of a key (or, `in_seq`, a sequence item) at column `indent`.
fn emit_value(out: &mut String, value: &Value, indent: usize, in_seq: bool, rng: &mut Rng) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            emit_map(out, map, indent + 2, rng);
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            // go-yaml puts a mapping's sequence at the key's column.
            let at = if !in_seq && rng.chance(50) {
                indent
            } else {
                indent + 2
            };
            emit_seq(out, items, at, rng);
        }
        Value::Array(_) => out.push_str(" []\n"),
        scalar_value => {
            let text = scalar(scalar_value, indent, rng);
            out.push(' ');
            out.push_str(&text);
            if !text.ends_with('\n') {
                if rng.chance(10) {
                    out.push_str(" # comment");
                }
                out.push('\n');
            }
        }
    }
}

fn emit_map(out: &mut String, map: &Map<String, Value>, indent: usize, rng: &mut Rng) {
    for (k, v) in map {
        if rng.chance(10) {
            out.push_str(&format!("{}# between keys\n\n", " ".repeat(indent)));
        }
        out.push_str(&" ".repeat(indent));
        out.push_str(&key(k));
        out.push(':');
        emit_value(out, v, indent, false, rng);
    }
}

fn emit_seq(out: &mut String, items: &[Value], indent: usize, rng: &mut Rng) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match item {
            Value::Object(map) if !map.is_empty() => {
                // Compact form: the first key on the dash line.
                let mut first = String::new();
                emit_map(&mut first, map, indent + 2, rng);
                out.push(' ');
                out.push_str(first.trim_start());
            }
            _ => emit_value(out, item, indent, true, rng),
        }
    }
}

#[test]
fn random_documents_round_trip_through_both_paths() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut checked = 0;
    for _ in 0..2000 {
        let mut map = Map::new();
        for i in 0..=rng.below(6) {
            map.insert(format!("root{i}"), random_value(&mut rng, 0));
        }
        let mut doc = String::new();
        emit_map(&mut doc, &map, 0, &mut rng);
        let fast =
            super::to_json_fast(&doc).unwrap_or_else(|| panic!("fast path bailed on:\n{doc}"));
        let fast: Value = serde_json::from_str(&fast).unwrap();
        assert_eq!(
            fast,
            Value::Object(map.clone()),
            "fast path changed the value of:\n{doc}"
        );
        let full: Value = serde_json::from_str(&super::to_json_full(&doc).unwrap()).unwrap();
        assert_eq!(full, fast, "full parser disagrees on:\n{doc}");
        checked += 1;
    }
    assert_eq!(checked, 2000);
}
