//! A small borrowed JSON value and a writer producing exactly the layout of
//! `serde_json::to_string_pretty` (two-space indent), for the large outputs
//! (`squeue --json` over many jobs) where building `serde_json::Value` trees
//! costs too much. Pure.
//!
//! Kept rather than serde derive + serde_json's streaming `Serializer`
//! (issue 12 asked to switch if within ~5%): over the same 10,000 jobs, with
//! byte-identical output, serde_json's pretty writer costs 1.84× the
//! instructions of this one (compact: 1.47×), and its writing alone costs
//! more than this file's building and writing together, so a derive (which
//! saves only the building) cannot close the gap. `cli/benches/json_writer.rs`
//! measures it; docs/benchmarks.md has the figures.

use std::fmt::Write as _;

/// A JSON value borrowing its strings.
#[derive(Debug, Clone, PartialEq)]
pub enum J<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'a str),
    String(String),
    /// Slurm's `{"set": .., "infinite": .., "number": ..}` object.
    Num {
        set: bool,
        infinite: bool,
        number: i64,
    },
    Arr(Vec<J<'a>>),
    Obj(Vec<(&'a str, J<'a>)>),
}

impl<'a> J<'a> {
    pub fn num(n: i64) -> J<'a> {
        J::Num {
            set: true,
            infinite: false,
            number: n,
        }
    }

    pub fn unset() -> J<'a> {
        J::Num {
            set: false,
            infinite: false,
            number: 0,
        }
    }

    pub fn infinite() -> J<'a> {
        J::Num {
            set: true,
            infinite: true,
            number: 0,
        }
    }

    pub fn strs(v: &[&'a str]) -> J<'a> {
        J::Arr(v.iter().map(|s| J::Str(s)).collect())
    }
}

const SPACES: &str = "                                                                ";

fn indent(out: &mut String, n: usize) {
    let mut k = 2 * n;
    while k > 0 {
        let c = k.min(SPACES.len());
        out.push_str(&SPACES[..c]);
        k -= c;
    }
}

const NUM_PREFIX_LEVELS: usize = 8;

/// `{\n<pad>"set": true,\n<pad>"infinite": false,\n<pad>"number": ` for a level.
fn num_prefix(level: usize) -> &'static str {
    static CACHE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let v = CACHE.get_or_init(|| {
        (0..NUM_PREFIX_LEVELS)
            .map(|l| {
                let pad = "  ".repeat(l + 1);
                format!("{{\n{pad}\"set\": true,\n{pad}\"infinite\": false,\n{pad}\"number\": ")
            })
            .collect()
    });
    v.get(level).map(String::as_str).unwrap_or("{")
}

/// Append an integer without the formatting machinery.
pub fn push_int(out: &mut String, n: i64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Does `s` hold a byte a JSON string literal escapes (`"`, `\\`, a
/// control character)? Eight bytes at a time (a third of `squeue
/// --json`'s instructions went to asking this byte by byte).
fn needs_escape(s: &str) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Exact for "some byte is": a borrow can only mark a byte above one
    // that is itself marked.
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let below_space = |x: u64| x.wrapping_sub(ONES * 0x20) & !x & HIGH != 0;
    let bytes = s.as_bytes();
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = u64::from_ne_bytes(b);
        if below_space(x)
            || zero_byte(x ^ (ONES * u64::from(b'"')))
            || zero_byte(x ^ (ONES * u64::from(b'\\')))
        {
            return true;
        }
    }
    words.remainder().iter().any(|&b| escaped(b))
}

/// A byte a JSON string literal escapes.
fn escaped(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Append a JSON string literal.
pub fn push_str_lit(out: &mut String, s: &str) {
    out.push('"');
    if !needs_escape(s) {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

/// Append a member's name and the `": "` after it (the names are plain
/// words: one check and two appends for most).
fn push_key(out: &mut String, k: &str) {
    if needs_escape(k) {
        push_str_lit(out, k);
        out.push_str(": ");
    } else {
        out.reserve(k.len() + 4);
        out.push('"');
        out.push_str(k);
        out.push_str("\": ");
    }
}

/// Write `v` pretty-printed, its first line already positioned, nested
/// lines indented from `level`.
pub fn write(out: &mut String, v: &J<'_>, level: usize) {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(n) => push_int(out, *n),
        J::Str(s) => push_str_lit(out, s),
        J::String(s) => push_str_lit(out, s),
        J::Num {
            set: true,
            infinite: false,
            number,
        } if level < NUM_PREFIX_LEVELS => {
            out.push_str(num_prefix(level));
            push_int(out, *number);
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        J::Num {
            set,
            infinite,
            number,
        } => {
            out.push_str("{\n");
            indent(out, level + 1);
            out.push_str(if *set {
                "\"set\": true,\n"
            } else {
                "\"set\": false,\n"
            });
            indent(out, level + 1);
            out.push_str(if *infinite {
                "\"infinite\": true,\n"
            } else {
                "\"infinite\": false,\n"
            });
            indent(out, level + 1);
            out.push_str("\"number\": ");
            push_int(out, *number);
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        J::Arr(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push_str("[\n");
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                write(out, it, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        J::Obj(pairs) => {
            if pairs.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for (i, (k, it)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                push_key(out, k);
                write(out, it, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
    }
}

/// Write `v` on one line, no spaces (the REST API's answers).
pub fn write_compact(out: &mut String, v: &J<'_>) {
    match v {
        J::Null | J::Bool(_) | J::Int(_) | J::Str(_) | J::String(_) => write(out, v, 0),
        J::Num {
            set,
            infinite,
            number,
        } => {
            out.push_str(if *set {
                "{\"set\":true,"
            } else {
                "{\"set\":false,"
            });
            out.push_str(if *infinite {
                "\"infinite\":true,\"number\":"
            } else {
                "\"infinite\":false,\"number\":"
            });
            push_int(out, *number);
            out.push('}');
        }
        J::Arr(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, it);
            }
            out.push(']');
        }
        J::Obj(pairs) => {
            out.push('{');
            for (i, (k, it)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str_lit(out, k);
                out.push(':');
                write_compact(out, it);
            }
            out.push('}');
        }
    }
}

/// The same value as a `serde_json::Value` (for the small outputs).
pub fn to_value(v: &J<'_>) -> serde_json::Value {
    use serde_json::Value;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Int(n) => Value::from(*n),
        J::Str(s) => Value::String((*s).to_string()),
        J::String(s) => Value::String(s.clone()),
        J::Num {
            set,
            infinite,
            number,
        } => serde_json::json!({"set": set, "infinite": infinite, "number": number}),
        J::Arr(items) => Value::Array(items.iter().map(to_value).collect()),
        J::Obj(pairs) => Value::Object(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), to_value(v)))
                .collect(),
        ),
    }
}

/// Streams a top-level object whose first member is a long array.
pub struct Envelope<'o> {
    out: &'o mut String,
    items: usize,
}

impl<'o> Envelope<'o> {
    /// Start `{ "<key>": [`.
    pub fn begin(out: &'o mut String, key: &str) -> Envelope<'o> {
        out.push_str("{\n  ");
        push_str_lit(out, key);
        out.push_str(": [");
        Envelope { out, items: 0 }
    }

    /// Append one array element.
    pub fn item(&mut self, v: &J<'_>) {
        self.out
            .push_str(if self.items == 0 { "\n    " } else { ",\n    " });
        write(self.out, v, 2);
        self.items += 1;
    }

    /// Hand what was written so far to `w` and start over (keeps the
    /// buffer small and hot when the output is large).
    pub fn drain_to(&mut self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        w.write_all(self.out.as_bytes())?;
        self.out.clear();
        Ok(())
    }

    /// Bytes waiting in the buffer.
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Close the array and write the remaining members.
    pub fn finish(self, rest: &[(&str, J<'_>)]) {
        if self.items == 0 {
            self.out.push(']');
        } else {
            self.out.push_str("\n  ]");
        }
        for (k, v) in rest {
            self.out.push_str(",\n  ");
            push_str_lit(self.out, k);
            self.out.push_str(": ");
            write(self.out, v, 1);
        }
        self.out.push_str("\n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_found_wherever_they_are() {
        let slow = |s: &str| s.bytes().any(escaped);
        // Each byte near the ones escaped, at every place of texts either
        // side of a word's length, among plain and multi-byte characters.
        let probes = [
            "\0", "\u{1f}", "\"", "\\", " ", "!", "#", "[", "]", "\u{7f}", "é", "\n",
        ];
        for fill in ["a", "é", "~"] {
            for len in 0..20 {
                for at in 0..=len {
                    for p in probes {
                        let s = format!("{}{p}{}", fill.repeat(at), fill.repeat(len - at));
                        assert_eq!(needs_escape(&s), slow(&s), "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn matches_serde_pretty_layout() {
        let v = J::Obj(vec![
            ("a", J::Int(1)),
            ("b", J::Str("x\"y\n")),
            ("c", J::Arr(vec![])),
            ("d", J::Obj(vec![])),
            ("e", J::strs(&["P", "Q"])),
            ("f", J::num(5)),
            ("g", J::Obj(vec![("h", J::Bool(false)), ("i", J::Null)])),
            ("u", J::Str("日本\u{1}")),
        ]);
        let mut out = String::new();
        write(&mut out, &v, 0);
        let serde = serde_json::to_string_pretty(&to_value(&v)).unwrap();
        // Same text modulo key order (serde's map is sorted; ours is not here).
        let a: serde_json::Value = serde_json::from_str(&out).unwrap();
        let b: serde_json::Value = serde_json::from_str(&serde).unwrap();
        assert_eq!(a, b);
        let mut compact = String::new();
        write_compact(&mut compact, &v);
        assert!(!compact.contains('\n'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&compact).unwrap(),
            b
        );
        let sorted = J::Obj(vec![("a", J::Int(-12)), ("b", J::Arr(vec![J::Int(0)]))]);
        let mut out = String::new();
        write(&mut out, &sorted, 0);
        assert_eq!(
            out,
            serde_json::to_string_pretty(&to_value(&sorted)).unwrap()
        );
        for level in [0, 1, 5, 40] {
            let mut out = String::new();
            write(&mut out, &J::num(7), level);
            let pad = "  ".repeat(level);
            assert_eq!(
                out,
                format!("{{\n{pad}  \"set\": true,\n{pad}  \"infinite\": false,\n{pad}  \"number\": 7\n{pad}}}")
            );
        }
    }

    #[test]
    fn envelope_streams() {
        let mut out = String::new();
        let mut e = Envelope::begin(&mut out, "jobs");
        e.item(&J::Obj(vec![("job_id", J::Int(1))]));
        e.item(&J::Obj(vec![("job_id", J::Int(2))]));
        e.finish(&[
            ("errors", J::Arr(vec![])),
            ("meta", J::Obj(vec![("x", J::Int(1))])),
        ]);
        let whole = J::Obj(vec![
            (
                "jobs",
                J::Arr(vec![
                    J::Obj(vec![("job_id", J::Int(1))]),
                    J::Obj(vec![("job_id", J::Int(2))]),
                ]),
            ),
            ("errors", J::Arr(vec![])),
            ("meta", J::Obj(vec![("x", J::Int(1))])),
        ]);
        let mut expect = String::new();
        write(&mut expect, &whole, 0);
        assert_eq!(out, expect);
        let mut out = String::new();
        Envelope::begin(&mut out, "jobs").finish(&[("errors", J::Arr(vec![]))]);
        assert_eq!(out, "{\n  \"jobs\": [],\n  \"errors\": []\n}");
    }
}
