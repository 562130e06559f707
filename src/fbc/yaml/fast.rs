//! Fast path: the block-YAML subset that `opm` / go-yaml emit, transcoded line by line to JSON.
//!
//! Supported: block mappings (plain or quoted single-line keys), block sequences (including the
//! go-yaml style where a sequence sits at its parent key's indentation, and `- key: value`
//! compact mappings), plain scalars over one or more lines, single- and double-quoted scalars
//! over one or more lines (with all escapes), literal block scalars (`|`, chomping indicators,
//! an explicit indentation indicator on mapping values), comments, blank lines, and the empty
//! flow collections `{}` and `[]`.
//!
//! Anything else (anchors, aliases, tags, flow collections with content, folded `>` scalars,
//! complex `?` keys, directives, tabs used for indentation, nested compact sequences, odd
//! indentation, and any syntax error) makes the fast path give up with [`Bail`] so the full
//! parser can handle the document or report the error precisely. Being conservative is cheap:
//! a bail only costs speed.

use super::scalar;

/// The document uses YAML outside the fast subset (or is invalid); use the full parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bail;

type R<T> = Result<T, Bail>;

/// Nesting limit of the fast path (deeper documents go to the full parser, which limits them).
const MAX_FAST_DEPTH: usize = 200;

/// Transcodes `doc` to compact JSON appended to `out`. `Ok(false)`: the document has no node.
/// When the root is a mapping, `top_keys` receives the byte ranges (in `out`) of each root key
/// (a JSON string) and its value, so callers need not scan the JSON again to find them.
pub(crate) fn transcode(doc: &str, out: &mut String, top_keys: &mut Vec<TopKey>) -> R<bool> {
    let mut reader = Reader {
        src: doc,
        bytes: doc.as_bytes(),
        pos: 0,
        out,
        scratch: String::new(),
        depth: 0,
        top_keys,
    };
    let Some(line) = reader.next_content_line()? else {
        return Ok(false);
    };
    if line.indent == 0
        && (doc[line.start..].starts_with("...") || doc[line.start..].starts_with('%'))
    {
        return Err(Bail);
    }
    reader.block_node(line, -1)?;
    if reader.next_content_line()?.is_some() {
        return Err(Bail);
    }
    Ok(true)
}

#[derive(Debug, Clone, Copy)]
struct Line {
    /// Byte offset of the first byte of the line.
    start: usize,
    /// Byte offset just past the line's content (before `\r\n` / `\n`).
    end: usize,
    /// Byte offset of the next line.
    next: usize,
    /// Number of leading spaces.
    indent: usize,
}

impl Line {
    fn content(&self) -> usize {
        self.start + self.indent
    }
}

struct Reader<'a, 'o> {
    src: &'a str,
    bytes: &'a [u8],
    /// Start of the first line not consumed yet.
    pos: usize,
    out: &'o mut String,
    scratch: String,
    depth: usize,
    top_keys: &'o mut Vec<TopKey>,
}

/// A root mapping key and its value, as byte ranges of the JSON output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopKey {
    pub(crate) key: std::ops::Range<usize>,
    pub(crate) value: std::ops::Range<usize>,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Characters that cannot start a plain scalar (or that we leave to the full parser).
fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    )
}

impl Reader<'_, '_> {
    fn line_at(&self, pos: usize) -> Option<Line> {
        if pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[pos..];
        let (mut end, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (pos + i, pos + i + 1),
            None => (self.bytes.len(), self.bytes.len()),
        };
        if end > pos && self.bytes[end - 1] == b'\r' {
            end -= 1;
        }
        let indent = self.bytes[pos..end]
            .iter()
            .take_while(|&&b| b == b' ')
            .count();
        Some(Line {
            start: pos,
            end,
            next,
            indent,
        })
    }

    /// Whether the line holds only spaces and tabs.
    fn is_blank_line(&self, line: &Line) -> bool {
        self.bytes[line.content()..line.end]
            .iter()
            .all(|&b| is_blank(b))
    }

    /// Moves `pos` to the next line with content (skipping blank and comment lines) and returns
    /// it without consuming it.
    fn next_content_line(&mut self) -> R<Option<Line>> {
        while let Some(line) = self.line_at(self.pos) {
            let content = line.content();
            if content < line.end {
                match self.bytes[content] {
                    b'#' => {}
                    b'\t' => {
                        if !self.is_blank_line(&line) {
                            // A tab where indentation ends: leave it to the full parser.
                            return Err(Bail);
                        }
                    }
                    _ => return Ok(Some(line)),
                }
            }
            self.pos = line.next;
        }
        Ok(None)
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_FAST_DEPTH {
            return Err(Bail);
        }
        Ok(())
    }

    /// A node that starts at the content of `line` (the line is not consumed yet).
    fn block_node(&mut self, line: Line, parent_indent: isize) -> R<()> {
        let c = line.content();
        let b = self.bytes[c];
        if b == b'-' && (c + 1 == line.end || is_blank(self.bytes[c + 1])) {
            return self.sequence(line.indent);
        }
        if self.map_key(c, line.end)?.is_some() {
            return self.mapping(line.indent, None);
        }
        if b == b'|' || b == b'>' {
            // A block scalar header on its own line: rare, leave it to the full parser.
            return Err(Bail);
        }
        self.inline_value(parent_indent, line, c, false)
    }

    /// Recognises a mapping key starting at `from` on a line ending at `end`. Returns the key
    /// and the offset just past its `:`; `None` when the text there is not a mapping entry.
    fn map_key(&mut self, from: usize, end: usize) -> R<Option<(Key, usize)>> {
        let b = self.bytes[from];
        if b == b'"' || b == b'\'' {
            // A quoted key must close on this line and be followed by ':'.
            let Some(close) = self.quoted_close_on_line(from, end) else {
                return Ok(None);
            };
            let mut i = close + 1;
            while i < end && is_blank(self.bytes[i]) {
                i += 1;
            }
            if i < end && self.bytes[i] == b':' && (i + 1 == end || is_blank(self.bytes[i + 1])) {
                return Ok(Some((Key::Quoted(from, close), i + 1)));
            }
            return Ok(None);
        }
        if is_indicator(b) {
            let follows_space = from + 1 == end || is_blank(self.bytes[from + 1]);
            // `-x`, `?x`, `:x` can start a plain scalar; everything else cannot.
            if !matches!(b, b'-' | b'?' | b':') || follows_space {
                return Ok(None);
            }
        }
        let mut i = from;
        while i < end {
            match self.bytes[i] {
                b':' if i + 1 == end || is_blank(self.bytes[i + 1]) => {
                    let mut key_end = i;
                    while key_end > from && is_blank(self.bytes[key_end - 1]) {
                        key_end -= 1;
                    }
                    return Ok(Some((Key::Plain(from, key_end), i + 1)));
                }
                b'#' if i > from && is_blank(self.bytes[i - 1]) => return Ok(None),
                _ => {}
            }
            i += 1;
        }
        Ok(None)
    }

    /// For a quoted scalar opening at `open`, the offset of its closing quote if it is on the
    /// same line.
    fn quoted_close_on_line(&self, open: usize, end: usize) -> Option<usize> {
        let quote = self.bytes[open];
        let mut i = open + 1;
        while i < end {
            let b = self.bytes[i];
            if quote == b'"' && b == b'\\' {
                i += 2;
                continue;
            }
            if b == quote {
                if quote == b'\'' && i + 1 < end && self.bytes[i + 1] == b'\'' {
                    i += 2;
                    continue;
                }
                return Some(i);
            }
            i += 1;
        }
        None
    }

    fn write_key(&mut self, key: Key) -> R<()> {
        match key {
            Key::Plain(start, end) => {
                let raw = &self.src[start..end];
                let text = scalar::plain_key(raw).ok_or(Bail)?;
                scalar::write_json_string(self.out, &text);
            }
            Key::Quoted(open, close) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let result = self.unquote_line(open, close, &mut scratch);
                if result.is_ok() {
                    scalar::write_json_string(self.out, &scratch);
                }
                self.scratch = scratch;
                result?;
            }
        }
        Ok(())
    }

    /// Decodes a single-line quoted scalar `open..=close` into `buf`.
    fn unquote_line(&self, open: usize, close: usize, buf: &mut String) -> R<()> {
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

    /// A block mapping whose keys sit at column `indent`. `first` is a compact first entry
    /// (`- key: value`): the line and the offset of its key.
    fn mapping(&mut self, indent: usize, mut first: Option<(Line, usize)>) -> R<()> {
        self.enter()?;
        self.out.push('{');
        let mut count = 0;
        loop {
            let (line, key_at) = match first.take() {
                Some(entry) => entry,
                None => {
                    let Some(line) = self.next_content_line()? else {
                        break;
                    };
                    if line.indent < indent {
                        break;
                    }
                    if line.indent > indent {
                        return Err(Bail);
                    }
                    (line, line.content())
                }
            };
            let (key, after_colon) = self.map_key(key_at, line.end)?.ok_or(Bail)?;
            if count > 0 {
                self.out.push(',');
            }
            let key_start = self.out.len();
            self.write_key(key)?;
            let key_end = self.out.len();
            self.out.push(':');
            self.map_value(indent, line, after_colon)?;
            if self.depth == 1 {
                self.top_keys.push(TopKey {
                    key: key_start..key_end,
                    value: key_end + 1..self.out.len(),
                });
            }
            count += 1;
        }
        self.out.push('}');
        self.depth -= 1;
        Ok(())
    }

    /// The value of a mapping entry whose key is at column `indent`; `from` is just past ':'.
    fn map_value(&mut self, indent: usize, line: Line, from: usize) -> R<()> {
        let mut p = from;
        while p < line.end && is_blank(self.bytes[p]) {
            p += 1;
        }
        if p == line.end || self.bytes[p] == b'#' {
            self.pos = line.next;
            let Some(next) = self.next_content_line()? else {
                self.out.push_str("null");
                return Ok(());
            };
            let c = next.content();
            if next.indent > indent {
                return self.block_node(next, indent as isize);
            }
            if next.indent == indent
                && self.bytes[c] == b'-'
                && (c + 1 == next.end || is_blank(self.bytes[c + 1]))
            {
                return self.sequence(indent);
            }
            self.out.push_str("null");
            return Ok(());
        }
        self.inline_value(indent as isize, line, p, false)
    }

    /// A block sequence whose dashes sit at column `indent`.
    fn sequence(&mut self, indent: usize) -> R<()> {
        self.enter()?;
        self.out.push('[');
        let mut count = 0;
        while let Some(line) = self.next_content_line()? {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(Bail);
            }
            let c = line.content();
            if !(self.bytes[c] == b'-' && (c + 1 == line.end || is_blank(self.bytes[c + 1]))) {
                break;
            }
            if count > 0 {
                self.out.push(',');
            }
            count += 1;
            let mut q = c + 1;
            while q < line.end && self.bytes[q] == b' ' {
                q += 1;
            }
            if q == line.end || self.bytes[q] == b'#' {
                self.pos = line.next;
                match self.next_content_line()? {
                    Some(next) if next.indent > indent => {
                        self.block_node(next, indent as isize)?;
                    }
                    _ => self.out.push_str("null"),
                }
                continue;
            }
            let b = self.bytes[q];
            if b == b'\t' || (b == b'-' && (q + 1 == line.end || is_blank(self.bytes[q + 1]))) {
                return Err(Bail);
            }
            if self.map_key(q, line.end)?.is_some() {
                self.mapping(q - line.start, Some((line, q)))?;
            } else {
                self.inline_value(indent as isize, line, q, true)?;
            }
        }
        self.out.push(']');
        self.depth -= 1;
        Ok(())
    }

    /// A scalar (or empty flow collection) that starts at `p` on `line`. Continuation lines
    /// must be indented more than `parent_indent`.
    fn inline_value(&mut self, parent_indent: isize, line: Line, p: usize, in_seq: bool) -> R<()> {
        match self.bytes[p] {
            b'"' | b'\'' => self.quoted(parent_indent, line, p),
            b'|' => self.literal(parent_indent, line, p, in_seq),
            b'{' | b'[' => {
                let close = if self.bytes[p] == b'{' { b'}' } else { b']' };
                if p + 1 < line.end
                    && self.bytes[p + 1] == close
                    && self.rest_is_comment(p + 2, line.end)
                {
                    self.out.push_str(if close == b'}' { "{}" } else { "[]" });
                    self.pos = line.next;
                    Ok(())
                } else {
                    Err(Bail)
                }
            }
            b => {
                if is_indicator(b) {
                    let follows_space = p + 1 == line.end || is_blank(self.bytes[p + 1]);
                    if !matches!(b, b'-' | b'?' | b':') || follows_space {
                        return Err(Bail);
                    }
                }
                self.plain(parent_indent, line, p)
            }
        }
    }

    fn rest_is_comment(&self, from: usize, end: usize) -> bool {
        let mut i = from;
        while i < end && is_blank(self.bytes[i]) {
            i += 1;
        }
        i == end || (i > from && self.bytes[i] == b'#')
    }

    /// The end of a plain scalar's text on one line (before a comment, trailing blanks
    /// trimmed); bails on `: ` inside, which would be an invalid nested mapping.
    fn plain_segment_end(&self, from: usize, end: usize) -> R<usize> {
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

    fn plain(&mut self, parent_indent: isize, line: Line, p: usize) -> R<()> {
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

    fn rest_is_blank(&self, from: usize, end: usize) -> bool {
        self.bytes[from..end].iter().all(|&b| is_blank(b))
    }

    /// Single- or double-quoted scalar opening at `open`, possibly over several lines.
    fn quoted(&mut self, parent_indent: isize, line: Line, open: usize) -> R<()> {
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
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let result = self.unquote_line(open, close, &mut scratch);
                if result.is_ok() {
                    scalar::write_json_string(self.out, &scratch);
                }
                self.scratch = scratch;
                result?;
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

    fn quoted_multiline(&mut self, parent_indent: isize, open: usize, buf: &mut String) -> R<()> {
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

    fn line_start(&self, i: usize) -> usize {
        memchr::memrchr(b'\n', &self.bytes[..i]).map_or(0, |p| p + 1)
    }

    fn skip_line_break(&self, i: usize) -> usize {
        match self.bytes.get(i) {
            Some(b'\r') if self.bytes.get(i + 1) == Some(&b'\n') => i + 2,
            Some(b'\r' | b'\n') => i + 1,
            _ => i,
        }
    }

    /// Line folding inside a quoted scalar: `at` is the start of the line after a break.
    /// Empty lines become line feeds; a single break becomes a space unless `escaped`. Returns
    /// the offset of the first content byte of the next non-empty line.
    fn fold_lines(
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
    fn literal(&mut self, parent_indent: isize, line: Line, p: usize, in_seq: bool) -> R<()> {
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

#[derive(Debug, Clone, Copy)]
enum Key {
    /// Plain key text `start..end`.
    Plain(usize, usize),
    /// Quoted key: offsets of the opening and closing quote.
    Quoted(usize, usize),
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

#[cfg(test)]
mod tests {
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
}
