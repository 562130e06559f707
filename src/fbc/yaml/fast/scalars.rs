//! Scalars of the fast path: plain (multi-line), single- and double-quoted (multi-line, with
//! escapes) and literal block scalars, and quoted keys.

use super::{Bail, Key, Line, R, Reader, is_blank};
use crate::fbc::yaml::scalar;

impl Reader<'_, '_> {
    pub(super) fn write_key(&mut self, key: Key) -> R<()> {
        match key {
            Key::Plain(start, end) => {
                let raw = &self.src[start..end];
                let text = scalar::plain_key(raw).ok_or(Bail)?;
                scalar::write_json_string(self.out, &text);
            }
            Key::Quoted(open, close) => self.write_unquoted(open, close)?,
        }
        Ok(())
    }

    /// Writes the single-line quoted scalar `open..=close` as a JSON string.
    pub(super) fn write_unquoted(&mut self, open: usize, close: usize) -> R<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let result = self.unquote_line(open, close, &mut scratch);
        if result.is_ok() {
            scalar::write_json_string(self.out, &scratch);
        }
        self.scratch = scratch;
        result
    }

    /// Decodes a single-line quoted scalar `open..=close` into `buf`.
    pub(super) fn unquote_line(&self, open: usize, close: usize, buf: &mut String) -> R<()> {
        let body = &self.src[open + 1..close];
        if self.bytes[open] == b'\'' {
            buf.push_str(&body.replace("''", "'"));
            return Ok(());
        }
        let mut i = 0;
        let b = body.as_bytes();
        let mut run = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                buf.push_str(&body[run..i]);
                i = decode_escape(body, i, buf)?;
                run = i;
            } else {
                i += 1;
            }
        }
        buf.push_str(&body[run..]);
        Ok(())
    }

    /// The end of a plain scalar's text on one line (before a comment, trailing blanks
    /// trimmed); bails on `: ` inside, which would be an invalid nested mapping.
    pub(super) fn plain_segment_end(&self, from: usize, end: usize) -> R<usize> {
        let mut stop = end;
        let mut search = from;
        // Long scalars (base64 data) are scanned with memchr, not byte by byte.
        while let Some(found) = memchr::memchr2(b'#', b':', &self.bytes[search..end]) {
            let i = search + found;
            match self.bytes[i] {
                b'#' if i > from && is_blank(self.bytes[i - 1]) => {
                    stop = i;
                    break;
                }
                b':' if i + 1 == end || is_blank(self.bytes[i + 1]) => return Err(Bail),
                _ => {}
            }
            search = i + 1;
        }
        while stop > from && is_blank(self.bytes[stop - 1]) {
            stop -= 1;
        }
        Ok(stop)
    }

    pub(super) fn plain(&mut self, parent_indent: isize, line: Line, p: usize) -> R<()> {
        let first_end = self.plain_segment_end(p, line.end)?;
        let ended_by_comment = first_end < line.end && !self.rest_is_blank(first_end, line.end);
        self.pos = line.next;
        let mut folded: Option<String> = None;
        if !ended_by_comment {
            let mut empty_lines = 0;
            let mut cursor = line.next;
            while let Some(next) = self.line_at(cursor) {
                if self.is_blank_line(&next) {
                    if self.bytes[next.start..next.end].contains(&b'\t') {
                        return Err(Bail);
                    }
                    empty_lines += 1;
                    cursor = next.next;
                    continue;
                }
                if (next.indent as isize) <= parent_indent {
                    break;
                }
                let c = next.content();
                let b = self.bytes[c];
                if b == b'#' {
                    break;
                }
                // Any character may continue a plain scalar (`- x` is text here, not an entry);
                // a tab after the indentation is left to the full parser.
                if b == b'\t' {
                    return Err(Bail);
                }
                if next.indent == 0
                    && (self.src[c..].starts_with("---") || self.src[c..].starts_with("..."))
                {
                    return Err(Bail);
                }
                let seg_end = self.plain_segment_end(c, next.end)?;
                if seg_end < next.end && !self.rest_is_blank(seg_end, next.end) {
                    // A comment inside a multi-line plain scalar: rare, full parser.
                    return Err(Bail);
                }
                let buf = folded.get_or_insert_with(|| self.src[p..first_end].to_owned());
                if empty_lines == 0 {
                    buf.push(' ');
                } else {
                    buf.extend(std::iter::repeat_n('\n', empty_lines));
                }
                buf.push_str(&self.src[c..seg_end]);
                empty_lines = 0;
                cursor = next.next;
                self.pos = next.next;
            }
        }
        let text = match &folded {
            Some(s) => s.as_str(),
            None => &self.src[p..first_end],
        };
        let value = scalar::resolve_plain(text);
        scalar::write_plain(self.out, text, value).map_err(|_| Bail)
    }

    pub(super) fn rest_is_blank(&self, from: usize, end: usize) -> bool {
        self.bytes[from..end].iter().all(|&b| is_blank(b))
    }

    /// Single- or double-quoted scalar opening at `open`, possibly over several lines.
    pub(super) fn quoted(&mut self, parent_indent: isize, line: Line, open: usize) -> R<()> {
        let quote = self.bytes[open];
        // Fast case: closes on this line without escapes.
        if let Some(close) = self.quoted_close_on_line(open, line.end) {
            if !self.rest_is_comment(close + 1, line.end) {
                return Err(Bail);
            }
            let body = &self.src[open + 1..close];
            let plain_body = if quote == b'"' {
                !body.contains('\\')
            } else {
                !body.contains("''")
            };
            if plain_body {
                scalar::write_json_string(self.out, body);
            } else {
                self.write_unquoted(open, close)?;
            }
            self.pos = line.next;
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let result = self.quoted_multiline(parent_indent, open, &mut buf);
        if result.is_ok() {
            scalar::write_json_string(self.out, &buf);
        }
        self.scratch = buf;
        result
    }

    pub(super) fn quoted_multiline(
        &mut self,
        parent_indent: isize,
        open: usize,
        buf: &mut String,
    ) -> R<()> {
        let quote = self.bytes[open];
        let mut i = open + 1;
        let mut run = i;
        // Length of `buf` that line folding must not trim (text produced by escapes).
        let mut protected = 0;
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return Err(Bail);
            };
            match b {
                b'\\' if quote == b'"' => {
                    buf.push_str(&self.src[run..i]);
                    if matches!(self.bytes.get(i + 1), Some(b'\n' | b'\r')) {
                        // Escaped line break: no space, keep empty lines as line feeds.
                        let after = self.skip_line_break(i + 1);
                        i = self.fold_lines(parent_indent, after, buf, true)?;
                    } else {
                        i = decode_escape(self.src, i, buf)?;
                    }
                    protected = buf.len();
                    run = i;
                }
                b'\'' if quote == b'\'' && self.bytes.get(i + 1) == Some(&b'\'') => {
                    buf.push_str(&self.src[run..i]);
                    buf.push('\'');
                    protected = buf.len();
                    i += 2;
                    run = i;
                }
                b if b == quote => {
                    buf.push_str(&self.src[run..i]);
                    let line = self.line_at(self.line_start(i)).ok_or(Bail)?;
                    if !self.rest_is_comment(i + 1, line.end) {
                        return Err(Bail);
                    }
                    self.pos = line.next;
                    return Ok(());
                }
                b'\n' | b'\r' => {
                    buf.push_str(&self.src[run..i]);
                    let keep = buf.trim_end_matches([' ', '\t']).len().max(protected);
                    buf.truncate(keep);
                    let after = self.skip_line_break(i);
                    i = self.fold_lines(parent_indent, after, buf, false)?;
                    run = i;
                }
                _ => i += 1,
            }
        }
    }

    pub(super) fn line_start(&self, i: usize) -> usize {
        memchr::memrchr(b'\n', &self.bytes[..i]).map_or(0, |p| p + 1)
    }

    pub(super) fn skip_line_break(&self, i: usize) -> usize {
        match self.bytes.get(i) {
            Some(b'\r') if self.bytes.get(i + 1) == Some(&b'\n') => i + 2,
            Some(b'\r' | b'\n') => i + 1,
            _ => i,
        }
    }

    /// Line folding inside a quoted scalar: `at` is the start of the line after a break.
    /// Empty lines become line feeds; a single break becomes a space unless `escaped`. Returns
    /// the offset of the first content byte of the next non-empty line.
    pub(super) fn fold_lines(
        &self,
        parent_indent: isize,
        mut at: usize,
        buf: &mut String,
        escaped: bool,
    ) -> R<usize> {
        let mut empty = 0;
        loop {
            let line = self.line_at(at).ok_or(Bail)?;
            if self.is_blank_line(&line) {
                empty += 1;
                at = line.next;
                continue;
            }
            if (line.indent as isize) <= parent_indent {
                return Err(Bail);
            }
            if line.indent == 0
                && (self.src[line.start..].starts_with("---")
                    || self.src[line.start..].starts_with("..."))
            {
                return Err(Bail);
            }
            let mut c = line.content();
            while c < line.end && is_blank(self.bytes[c]) {
                c += 1;
            }
            if empty == 0 {
                if !escaped {
                    buf.push(' ');
                }
            } else {
                buf.extend(std::iter::repeat_n('\n', empty));
            }
            return Ok(c);
        }
    }

    /// Literal block scalar with its header at `p` (`|`, chomping, indentation indicator).
    pub(super) fn literal(
        &mut self,
        parent_indent: isize,
        line: Line,
        p: usize,
        in_seq: bool,
    ) -> R<()> {
        let mut chomp = Chomp::Clip;
        let mut explicit: Option<usize> = None;
        let mut i = p + 1;
        while i < line.end {
            match self.bytes[i] {
                b'-' if chomp == Chomp::Clip => chomp = Chomp::Strip,
                b'+' if chomp == Chomp::Clip => chomp = Chomp::Keep,
                d @ b'1'..=b'9' if explicit.is_none() => explicit = Some(usize::from(d - b'0')),
                _ => break,
            }
            i += 1;
        }
        if !self.rest_is_comment(i, line.end) || (i < line.end && !is_blank(self.bytes[i])) {
            return Err(Bail);
        }
        let base = usize::try_from(parent_indent).ok();
        let content_indent = match explicit {
            Some(d) => {
                if in_seq {
                    return Err(Bail);
                }
                base.ok_or(Bail)? + d
            }
            None => {
                // The first non-blank line decides; leading blank lines may not be longer.
                let mut cursor = line.next;
                let mut longest_blank = 0;
                let mut detected = None;
                while let Some(l) = self.line_at(cursor) {
                    if self.bytes[l.start..l.end].iter().all(|&b| b == b' ') {
                        longest_blank = longest_blank.max(l.end - l.start);
                        cursor = l.next;
                        continue;
                    }
                    detected = Some(l.indent);
                    break;
                }
                match detected {
                    Some(n) if (n as isize) > parent_indent => {
                        if longest_blank > n {
                            return Err(Bail);
                        }
                        n
                    }
                    // No content: an empty scalar (its trailing lines still follow chomping).
                    _ if longest_blank == 0 => {
                        usize::try_from(parent_indent + 1).map_err(|_| Bail)?
                    }
                    _ => return Err(Bail),
                }
            }
        };
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let mut pending = 0usize;
        let mut any_content = false;
        let mut cursor = line.next;
        while let Some(l) = self.line_at(cursor) {
            let text = &self.bytes[l.start..l.end];
            let spaces_only = text.iter().all(|&b| b == b' ');
            if spaces_only && text.len() <= content_indent {
                pending += 1;
                cursor = l.next;
                continue;
            }
            if l.indent < content_indent {
                if text[l.indent..].iter().all(|&b| is_blank(b)) {
                    // Tabs in an otherwise empty line: leave it to the full parser.
                    self.scratch = buf;
                    return Err(Bail);
                }
                break;
            }
            buf.extend(std::iter::repeat_n('\n', pending));
            any_content = true;
            buf.push_str(&self.src[l.start + content_indent..l.end]);
            pending = 1;
            cursor = l.next;
        }
        self.pos = cursor;
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => {
                if any_content {
                    buf.push('\n');
                }
            }
            Chomp::Keep => buf.extend(std::iter::repeat_n('\n', pending)),
        }
        scalar::write_json_string(self.out, &buf);
        self.scratch = buf;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// Decodes the double-quoted escape at `s[i]` (a backslash) into `buf`; returns the offset
/// after it. Escapes as go-yaml's scanner accepts them.
fn decode_escape(s: &str, i: usize, buf: &mut String) -> R<usize> {
    let b = s.as_bytes();
    let Some(&e) = b.get(i + 1) else {
        return Err(Bail);
    };
    let simple = match e {
        b'0' => Some('\0'),
        b'a' => Some('\u{7}'),
        b'b' => Some('\u{8}'),
        b't' | b'\t' => Some('\t'),
        b'n' => Some('\n'),
        b'v' => Some('\u{b}'),
        b'f' => Some('\u{c}'),
        b'r' => Some('\r'),
        b'e' => Some('\u{1b}'),
        b' ' => Some(' '),
        b'"' => Some('"'),
        b'\'' => Some('\''),
        b'/' => Some('/'),
        b'\\' => Some('\\'),
        b'N' => Some('\u{85}'),
        b'_' => Some('\u{a0}'),
        b'L' => Some('\u{2028}'),
        b'P' => Some('\u{2029}'),
        _ => None,
    };
    if let Some(c) = simple {
        buf.push(c);
        return Ok(i + 2);
    }
    let width = match e {
        b'x' => 2,
        b'u' => 4,
        b'U' => 8,
        _ => return Err(Bail),
    };
    let hex = s.get(i + 2..i + 2 + width).ok_or(Bail)?;
    if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
        return Err(Bail);
    }
    let code = u32::from_str_radix(hex, 16).map_err(|_| Bail)?;
    buf.push(char::from_u32(code).ok_or(Bail)?);
    Ok(i + 2 + width)
}
