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
}

#[derive(Debug, Clone, Copy)]
enum Key {
    /// Plain key text `start..end`.
    Plain(usize, usize),
    /// Quoted key: offsets of the opening and closing quote.
    Quoted(usize, usize),
}

mod scalars;
#[cfg(test)]
mod tests;
