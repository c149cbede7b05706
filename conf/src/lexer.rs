//! Line syntax shared by slurm.conf, gres.conf and cgroup.conf.
//!
//! * `#` starts a comment, except inside double quotes or when escaped (`\#`).
//! * A line whose last non-blank character is an (unescaped) `\` continues on
//!   the next line; the backslash is removed and the next line is appended
//!   as-is (whitespace included), like Slurm.
//! * A logical line is either `Include <path>` or a list of `Key=Value` pairs
//!   separated by whitespace. Whitespace is allowed around `=`. Values may be
//!   (partly) double-quoted to include whitespace or `#`; `\"`, `\\` and `\#`
//!   are escapes.

use crate::error::ConfError;

/// One `Key=Value` pair with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pair {
    pub key: String,
    pub value: String,
    pub file: String,
    pub line: usize,
}

/// One logical line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LexLine {
    Pairs(Vec<Pair>),
    Include { path: String, line: usize },
}

/// Cut a physical line at its comment.
fn strip_comment(raw: &str) -> &str {
    let mut in_quote = false;
    let mut escaped = false;
    for (i, c) in raw.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '"' => in_quote = !in_quote,
            '#' if !in_quote => return &raw[..i],
            _ => {}
        }
    }
    raw
}

/// Returns the line without its continuation backslash, and whether it had one.
fn continuation(content: &str) -> (&str, bool) {
    let t = content.trim_end();
    let trailing = t.bytes().rev().take_while(|&b| b == b'\\').count();
    if trailing % 2 == 1 {
        // '\\' is one byte, so this slice is on a char boundary
        (&t[..t.len() - 1], true)
    } else {
        (content, false)
    }
}

/// Split a file into logical lines.
pub(crate) fn lex(text: &str, file: &str) -> Result<Vec<LexLine>, ConfError> {
    let mut out = Vec::new();
    let mut buf = String::new();
    // (byte offset in buf, physical line number) of each joined piece
    let mut segs: Vec<(usize, usize)> = Vec::new();
    for (idx, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (content, more) = continuation(strip_comment(raw));
        segs.push((buf.len(), idx + 1));
        buf.push_str(content);
        if more {
            continue;
        }
        if let Some(l) = tokenize(&buf, &segs, file)? {
            out.push(l);
        }
        buf.clear();
        segs.clear();
    }
    if !segs.is_empty() {
        if let Some(l) = tokenize(&buf, &segs, file)? {
            out.push(l);
        }
    }
    Ok(out)
}

struct Cursor<'a> {
    s: &'a str,
    chars: Vec<(usize, char)>,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|x| x.1)
    }
    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).map(|x| x.1)
    }
    fn offset(&self) -> usize {
        self.chars.get(self.pos).map_or(self.s.len(), |x| x.0)
    }
    fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
        self.pos != start
    }
    /// Does a `Key=` start at the cursor (so a preceding `Key=` has no value)?
    fn at_new_pair(&self) -> bool {
        let mut n = 0;
        let mut key_len = 0;
        while let Some(c) = self.peek_at(n) {
            if c == '=' {
                return key_len > 0;
            }
            if !is_key_char(c) {
                return false;
            }
            key_len += 1;
            n += 1;
        }
        false
    }
}

pub(crate) fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn tokenize(s: &str, segs: &[(usize, usize)], file: &str) -> Result<Option<LexLine>, ConfError> {
    let first_line = segs.first().map_or(0, |x| x.1);
    let line_at = |off: usize| {
        segs.iter()
            .rev()
            .find(|(o, _)| *o <= off)
            .map_or(first_line, |x| x.1)
    };
    let trimmed = s.trim_start();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if let Some(path) = include_path(trimmed) {
        let path = unquote(path.trim());
        if path.is_empty() {
            return Err(ConfError::new(
                file,
                first_line,
                "Include",
                "missing file name",
            ));
        }
        return Ok(Some(LexLine::Include {
            path,
            line: first_line,
        }));
    }
    let mut cur = Cursor {
        s,
        chars: s.char_indices().collect(),
        pos: 0,
    };
    let mut pairs = Vec::new();
    loop {
        cur.skip_ws();
        let Some(c) = cur.peek() else { break };
        let key_off = cur.offset();
        let line = line_at(key_off);
        if c == '=' {
            return Err(ConfError::new(file, line, "", "'=' without a key"));
        }
        let mut key = String::new();
        while let Some(c) = cur.peek() {
            if c.is_whitespace() || c == '=' {
                break;
            }
            key.push(c);
            cur.pos += 1;
        }
        if !key.chars().all(is_key_char) {
            return Err(ConfError::new(
                file,
                line,
                "",
                format!("invalid key '{key}' (expected Key=Value)"),
            ));
        }
        cur.skip_ws();
        if cur.peek() != Some('=') {
            return Err(ConfError::new(
                file,
                line,
                key,
                "missing '=' (expected Key=Value)",
            ));
        }
        cur.pos += 1;
        if cur.skip_ws() && cur.at_new_pair() {
            pairs.push(Pair {
                key,
                value: String::new(),
                file: file.to_string(),
                line,
            });
            continue;
        }
        let mut value = String::new();
        let mut in_quote = false;
        while let Some(c) = cur.peek() {
            if c == '\\' && matches!(cur.peek_at(1), Some('"' | '\\' | '#')) {
                if let Some(n) = cur.peek_at(1) {
                    value.push(n);
                }
                cur.pos += 2;
                continue;
            }
            if c == '"' {
                in_quote = !in_quote;
            } else if c.is_whitespace() && !in_quote {
                break;
            } else {
                value.push(c);
            }
            cur.pos += 1;
        }
        if in_quote {
            return Err(ConfError::new(file, line, key, "unterminated quote"));
        }
        pairs.push(Pair {
            key,
            value,
            file: file.to_string(),
            line,
        });
    }
    Ok(Some(LexLine::Pairs(pairs)))
}

/// `Include <path>` (case-insensitive keyword followed by whitespace).
pub(crate) fn include_path(line: &str) -> Option<&str> {
    let kw = line.get(..7)?;
    if !kw.eq_ignore_ascii_case("include") {
        return None;
    }
    let rest = line.get(7..)?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let r = rest.trim();
    if r.starts_with('=') {
        return None;
    }
    Some(r)
}

pub(crate) fn unquote(s: &str) -> String {
    let inner = s
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(s);
    inner.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<Vec<(String, String, usize)>> {
        lex(text, "t.conf")
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|l| match l {
                LexLine::Pairs(p) => p.into_iter().map(|p| (p.key, p.value, p.line)).collect(),
                LexLine::Include { path, line } => vec![("<include>".into(), path, line)],
            })
            .collect()
    }

    fn kv(k: &str, v: &str, l: usize) -> (String, String, usize) {
        (k.to_string(), v.to_string(), l)
    }

    #[test]
    fn simple_pairs_and_blank_lines() {
        assert_eq!(
            pairs("A=1 B=2\n\n   \nC=3\n"),
            vec![
                vec![kv("A", "1", 1), kv("B", "2", 1)],
                vec![kv("C", "3", 4)]
            ]
        );
    }

    #[test]
    fn comments() {
        assert_eq!(
            pairs("# whole line\nA=1 # trailing\nB=x\\#y\n"),
            vec![vec![kv("A", "1", 2)], vec![kv("B", "x#y", 3)]]
        );
    }

    #[test]
    fn quotes_keep_spaces_and_hash() {
        assert_eq!(
            pairs("Reason=\"under repair # soon\" State=DOWN"),
            vec![vec![
                kv("Reason", "under repair # soon", 1),
                kv("State", "DOWN", 1)
            ]]
        );
        assert_eq!(pairs("A=\"\""), vec![vec![kv("A", "", 1)]]);
        assert_eq!(pairs("A=x\\\"y"), vec![vec![kv("A", "x\"y", 1)]]);
    }

    #[test]
    fn continuation_lines() {
        assert_eq!(
            pairs("NodeName=n1 \\\n  CPUs=4 \\\n RealMemory=10\nX=1"),
            vec![
                vec![
                    kv("NodeName", "n1", 1),
                    kv("CPUs", "4", 2),
                    kv("RealMemory", "10", 3)
                ],
                vec![kv("X", "1", 4)]
            ]
        );
        // continuation followed by a comment, and at end of file
        assert_eq!(
            pairs("A=1 \\ # c\nB=2 \\"),
            vec![vec![kv("A", "1", 1), kv("B", "2", 2)]]
        );
        // an escaped backslash does not continue
        assert_eq!(
            pairs("A=x\\\\\nB=1"),
            vec![vec![kv("A", "x\\", 1)], vec![kv("B", "1", 2)]]
        );
    }

    #[test]
    fn spaces_around_equals() {
        assert_eq!(
            pairs("ClusterName = lab  Other =x"),
            vec![vec![kv("ClusterName", "lab", 1), kv("Other", "x", 1)]]
        );
        assert_eq!(pairs("A= B=2"), vec![vec![kv("A", "", 1), kv("B", "2", 1)]]);
        assert_eq!(pairs("A="), vec![vec![kv("A", "", 1)]]);
    }

    #[test]
    fn crlf() {
        assert_eq!(
            pairs("A=1\r\nB=2\r\n"),
            vec![vec![kv("A", "1", 1)], vec![kv("B", "2", 2)]]
        );
    }

    #[test]
    fn include_lines() {
        assert_eq!(
            pairs("include /etc/a.conf\nInclude \"b c.conf\"\nINCLUDE\tx"),
            vec![
                vec![kv("<include>", "/etc/a.conf", 1)],
                vec![kv("<include>", "b c.conf", 2)],
                vec![kv("<include>", "x", 3)]
            ]
        );
        // "Include=..." is an ordinary (unknown) key
        assert_eq!(pairs("Include=x"), vec![vec![kv("Include", "x", 1)]]);
        assert!(lex("Include   ", "t.conf").is_err());
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = lex("A=1\nB=\"open", "f.conf").unwrap_err();
        assert_eq!(e.to_string(), "f.conf:2: B: unterminated quote");
        let e = lex("\nbare", "f.conf").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.key, "bare");
        assert!(e.to_string().contains("missing '='"));
        let e = lex("=x", "f.conf").unwrap_err();
        assert!(e.to_string().starts_with("f.conf:1: "));
        let e = lex("a\"b=1", "f.conf").unwrap_err();
        assert!(e.message.contains("invalid key"));
    }

    #[test]
    fn utf8_values() {
        assert_eq!(
            pairs("Reason=häßlich"),
            vec![vec![kv("Reason", "häßlich", 1)]]
        );
        assert!(lex("ä=1", "f").is_err());
    }
}
