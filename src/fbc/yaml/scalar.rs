//! Scalar resolution and JSON writing shared by the fast and the full YAML paths.
//!
//! Plain (unquoted) scalars are resolved the way go-yaml v2 resolves them when decoding into
//! `interface{}` (YAML 1.1 flavour, `resolve.go`), and the result is written as JSON the way
//! `sigs.k8s.io/yaml` then `encoding/json` would:
//!
//! - `~`, `null`, `Null`, `NULL` and the empty scalar are `null`;
//! - `y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON` are `true`, the `n/no/false/off` family `false`;
//! - integers as Go's `strconv.ParseInt(s, 0, 64)` reads them after removing `_` (so `0x1F`,
//!   `0o17`, `017` (octal), `0b101`, signs), then unsigned 64-bit, then YAML-style floats;
//! - `.inf`, `-.inf`, `.nan` are floats that JSON cannot carry, so they are an error (Go's
//!   `json.Marshal` fails the same way);
//! - timestamps stay strings (go-yaml v2 keeps them as strings in `interface{}`);
//! - everything else is a string. Quoted and block scalars are always strings.
//!
//! One difference from Go: float values are written in Rust's shortest round-trip form with
//! Go's exponent thresholds (`1e+21`, `1e-7`), which is the same number but not always the same
//! spelling as Go's `strconv.FormatFloat`.

use std::fmt::Write as _;

/// The value of a resolved plain scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Plain {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
}

/// A plain scalar whose value JSON cannot represent (`.nan`, `.inf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotJson(pub(crate) &'static str);

/// Resolves a plain scalar with go-yaml v2 rules.
pub(crate) fn resolve_plain(s: &str) -> Plain {
    let Some(&first) = s.as_bytes().first() else {
        return Plain::Null;
    };
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            lookup_map(s).unwrap_or(Plain::Str)
        }
        b'.' => match lookup_map(s) {
            Some(value) => value,
            None => match parse_go_float(s) {
                Some(f) => Plain::Float(f),
                None => Plain::Str,
            },
        },
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(value) = lookup_map(s) {
                return value;
            }
            resolve_number(s)
        }
        _ => Plain::Str,
    }
}

fn lookup_map(s: &str) -> Option<Plain> {
    // Only short strings can be in go-yaml's resolve map; the longest is "false".
    if s.len() > 6 {
        return None;
    }
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Plain::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Plain::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Plain::Null,
        ".nan" | ".NaN" | ".NAN" => Plain::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Plain::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Plain::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

fn resolve_number(s: &str) -> Plain {
    // Fail fast on long strings (base64 data often starts with a digit). A longer digit string
    // would overflow Go's ParseFloat, which go-yaml then keeps as a string anyway.
    let bytes = s.as_bytes();
    if bytes.len() > 1024
        || !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'.'))
    {
        return Plain::Str;
    }
    let owned;
    let plain = if s.contains('_') {
        owned = s.replace('_', "");
        owned.as_str()
    } else {
        s
    };
    if let Some(i) = parse_go_int(plain) {
        return Plain::Int(i);
    }
    if let Some(u) = parse_go_uint(plain) {
        return Plain::Uint(u);
    }
    if is_yaml_style_float(plain)
        && let Some(f) = parse_go_float(plain)
    {
        return Plain::Float(f);
    }
    if let Some(rest) = plain.strip_prefix("0b") {
        if let Ok(i) = i64::from_str_radix(rest, 2) {
            return Plain::Int(i);
        }
        if let Ok(u) = u64::from_str_radix(rest, 2) {
            return Plain::Uint(u);
        }
    } else if let Some(rest) = plain.strip_prefix("-0b")
        && let Ok(i) = i64::from_str_radix(&format!("-{rest}"), 2)
    {
        return Plain::Int(i);
    }
    Plain::Str
}

/// Go's `strconv.ParseInt(s, 0, 64)` (no underscores: the caller removed them).
fn parse_go_int(s: &str) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = split_radix(body)?;
    if !digits.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        if magnitude == 1u64 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(magnitude).ok().map(|m| -m)
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
fn parse_go_uint(s: &str) -> Option<u64> {
    let (radix, digits) = split_radix(s)?;
    if !digits.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Splits Go's base prefix (`0x`, `0o`, `0b`, leading `0` for octal) from the digits.
fn split_radix(body: &str) -> Option<(u32, &str)> {
    let b = body.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (radix, digits) = if b[0] == b'0' && b.len() > 1 {
        match b[1] {
            b'x' | b'X' => (16, &body[2..]),
            b'o' | b'O' => (8, &body[2..]),
            b'b' | b'B' => (2, &body[2..]),
            _ => (8, &body[1..]),
        }
    } else {
        (10, body)
    };
    if digits.is_empty() {
        return None;
    }
    Some((radix, digits))
}

/// go-yaml v2 `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms YAML produces.
fn parse_go_float(s: &str) -> Option<f64> {
    // Rust's parser accepts "inf"/"nan"/"infinity" spellings that go-yaml never reaches here
    // (they do not start with '.', a digit or a sign followed by a digit), so restrict to digits.
    if !s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Writes a resolved plain scalar as JSON.
pub(crate) fn write_plain(out: &mut String, raw: &str, value: Plain) -> Result<(), NotJson> {
    match value {
        Plain::Null => out.push_str("null"),
        Plain::Bool(true) => out.push_str("true"),
        Plain::Bool(false) => out.push_str("false"),
        Plain::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Plain::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Plain::Float(f) => write_float(out, f)?,
        Plain::Str => write_json_string(out, raw),
    }
    Ok(())
}

/// Writes a float like Go's `encoding/json` (exponent form below 1e-6 and from 1e21 up).
pub(crate) fn write_float(out: &mut String, f: f64) -> Result<(), NotJson> {
    if f.is_nan() {
        return Err(NotJson("NaN"));
    }
    if f.is_infinite() {
        return Err(NotJson(if f > 0.0 { "+Inf" } else { "-Inf" }));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exp}");
            }
            _ => out.push_str(&text),
        }
    } else {
        let _ = write!(out, "{f}");
    }
    Ok(())
}

/// The JSON object key for a plain scalar key, as `sigs.k8s.io/yaml` converts keys: strings as
/// they are, booleans and integers in their canonical text. `None` for keys Go cannot convert
/// either (null) or that we do not convert (floats).
pub(crate) fn plain_key(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    match resolve_plain(raw) {
        Plain::Str => Some(Cow::Borrowed(raw)),
        Plain::Bool(b) => Some(Cow::Borrowed(if b { "true" } else { "false" })),
        Plain::Int(i) => Some(Cow::Owned(i.to_string())),
        Plain::Uint(u) => Some(Cow::Owned(u.to_string())),
        Plain::Null | Plain::Float(_) => None,
    }
}

/// Position of the first byte that JSON requires to be escaped (`"`, `\`, control characters).
pub(crate) fn first_json_escape(bytes: &[u8]) -> Option<usize> {
    // Eight bytes at a time: a word has such a byte iff it has a byte < 0x20, == '"' or == '\\'.
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let below_space = x.wrapping_sub(LO * 0x20) & !x & HI;
        let quote = has_zero(x ^ (LO * u64::from(b'"')));
        let backslash = has_zero(x ^ (LO * u64::from(b'\\')));
        if below_space | quote | backslash != 0 {
            return chunk
                .iter()
                .position(|&b| needs_escape(b))
                .map(|p| offset + p);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| needs_escape(b))
        .map(|p| offset + p)
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Writes `s` as a JSON string literal.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut rest = s;
    while let Some(pos) = first_json_escape(rest.as_bytes()) {
        out.push_str(&rest[..pos]);
        let b = rest.as_bytes()[pos];
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        rest = &rest[pos + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(raw: &str) -> String {
        let mut out = String::new();
        write_plain(&mut out, raw, resolve_plain(raw)).unwrap();
        out
    }

    #[test]
    fn go_yaml_v2_booleans_and_nulls() {
        for t in [
            "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        ] {
            assert_eq!(json(t), "true", "{t}");
        }
        for f in [
            "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        ] {
            assert_eq!(json(f), "false", "{f}");
        }
        for n in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(json(n), "null", "{n:?}");
        }
        assert_eq!(json("yES"), "\"yES\"");
        assert_eq!(json("nil"), "\"nil\"");
    }

    #[test]
    fn go_yaml_v2_numbers() {
        assert_eq!(json("0"), "0");
        assert_eq!(json("-17"), "-17");
        assert_eq!(json("+17"), "17");
        assert_eq!(json("1_000"), "1000");
        assert_eq!(json("0x1F"), "31");
        assert_eq!(json("0o17"), "15");
        assert_eq!(json("017"), "15");
        assert_eq!(json("0b101"), "5");
        assert_eq!(json("-9223372036854775808"), "-9223372036854775808");
        assert_eq!(json("18446744073709551615"), "18446744073709551615");
        assert_eq!(json("08"), "8", "not octal, but a YAML-style float");
        assert_eq!(json("1.5"), "1.5");
        assert_eq!(json("1.0"), "1");
        assert_eq!(json(".5"), "0.5");
        assert_eq!(json("1e3"), "1000");
        assert_eq!(json("1e21"), "1e+21");
        assert_eq!(json("1.5e-7"), "1.5e-7");
        assert_eq!(json("1.2.3"), "\"1.2.3\"");
        assert_eq!(json("0.1.0"), "\"0.1.0\"");
        assert_eq!(json("v1"), "\"v1\"");
        assert_eq!(json("2001-12-14"), "\"2001-12-14\"");
        assert_eq!(json("1e"), "\"1e\"");
        assert_eq!(json("-"), "\"-\"");
        assert_eq!(json("0x"), "\"0x\"");
    }

    #[test]
    fn non_json_floats_are_errors() {
        for s in [".nan", ".inf", "-.inf", "+.Inf"] {
            let mut out = String::new();
            assert!(write_plain(&mut out, s, resolve_plain(s)).is_err(), "{s}");
        }
    }

    #[test]
    fn keys_convert_like_sigs_yaml() {
        assert_eq!(plain_key("name").as_deref(), Some("name"));
        assert_eq!(plain_key("yes").as_deref(), Some("true"));
        assert_eq!(plain_key("0x10").as_deref(), Some("16"));
        assert_eq!(plain_key("~"), None);
        assert_eq!(plain_key("1.5"), None);
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut out = String::new();
        write_json_string(&mut out, "a\"b\\c\nd\u{1}eÄ0123456789abcdef\t");
        assert_eq!(out, r#""a\"b\\c\nd\u0001eÄ0123456789abcdef\t""#);
        let parsed: String = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed, "a\"b\\c\nd\u{1}eÄ0123456789abcdef\t");
        assert_eq!(first_json_escape(b"0123456789abcdef"), None);
        assert_eq!(first_json_escape(b"0123456789abcde\""), Some(15));
        assert_eq!(first_json_escape(b"01234567\x1f"), Some(8));
    }
}
