//! Output format specifications shared by squeue and sinfo:
//! `-o "%.18i %9P %-20j|%t"` (letters with width and justification, literal
//! text copied through) and `-O "JobID:.10 ,Name:30,State"` (long names).
//! Also the cell writer with Slurm's padding and truncation rules. Pure.

/// Widths beyond this are clamped (Slurm would happily print a million spaces).
pub const MAX_WIDTH: usize = 65_535;

/// One field of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<K> {
    pub kind: K,
    /// 0 = as wide as the value.
    pub width: usize,
    /// `.` given: right-justify.
    pub right: bool,
    /// Literal text printed after the field.
    pub suffix: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format<K> {
    /// Literal text before the first field.
    pub prefix: String,
    pub fields: Vec<Field<K>>,
}

/// Read literal text up to the next lone `%` (`%%` is a literal percent).
/// Returns the text and the index just after the introducing `%`, if any.
fn literal(chars: &[char], mut i: usize) -> (String, Option<usize>) {
    let mut s = String::new();
    while i < chars.len() {
        if chars[i] == '%' {
            if i + 1 < chars.len() && chars[i + 1] == '%' {
                s.push('%');
                i += 2;
                continue;
            }
            return (s, Some(i + 1));
        }
        s.push(chars[i]);
        i += 1;
    }
    (s, None)
}

/// Parse a `%` format. `lookup` maps field letters; a letter it does not know
/// becomes an `invalid` field whose text (`%` + spec) is printed literally,
/// and is reported in the returned list (Slurm prints an error and goes on).
pub fn parse_percent<K: Clone>(
    fmt: &str,
    lookup: impl Fn(char) -> Option<K>,
    invalid: K,
) -> (Format<K>, Vec<char>) {
    let chars: Vec<char> = fmt.chars().collect();
    let (prefix, mut next) = literal(&chars, 0);
    let mut fields = Vec::new();
    let mut bad = Vec::new();
    while let Some(mut i) = next {
        if i >= chars.len() {
            // A trailing lone '%' is ignored.
            break;
        }
        let start = i;
        // `.` right-justifies; `-` (printf style, used by many scripts)
        // explicitly asks for the default left justification.
        let right = chars[i] == '.';
        if right || chars[i] == '-' {
            i += 1;
        }
        let mut width: usize = 0;
        while i < chars.len() && chars[i].is_ascii_digit() {
            width = width
                .saturating_mul(10)
                .saturating_add(chars[i] as usize - '0' as usize);
            i += 1;
        }
        let width = width.min(MAX_WIDTH);
        let letter = chars.get(i).copied();
        if letter.is_some() {
            i += 1;
        }
        let (suffix, n) = literal(&chars, i);
        next = n;
        match letter.and_then(&lookup) {
            Some(kind) => fields.push(Field {
                kind,
                width,
                right,
                suffix,
            }),
            None => {
                let spec: String = chars[start..i].iter().collect();
                if let Some(c) = letter {
                    bad.push(c);
                }
                fields.push(Field {
                    kind: invalid.clone(),
                    width: 0,
                    right: false,
                    suffix: format!("%{spec}{suffix}"),
                });
            }
        }
    }
    (Format { prefix, fields }, bad)
}

/// Parse a `-O` long format: comma-separated `name[:[.][width][suffix]]`;
/// without a colon the field is 20 wide, left-justified.
pub fn parse_long<K: Clone>(
    fmt: &str,
    lookup: impl Fn(&str) -> Option<K>,
    invalid: K,
) -> (Format<K>, Vec<String>) {
    let mut fields = Vec::new();
    let mut bad = Vec::new();
    for tok in fmt.split(',') {
        if tok.is_empty() {
            continue;
        }
        let (name, width, right, suffix) = match tok.split_once(':') {
            None => (tok, 20, false, String::new()),
            Some((name, spec)) => {
                let (right, spec) = match spec.strip_prefix('.') {
                    Some(s) => (true, s),
                    None => (false, spec),
                };
                let digits: String = spec.chars().take_while(char::is_ascii_digit).collect();
                let width = digits
                    .parse::<usize>()
                    .unwrap_or(if digits.is_empty() { 0 } else { MAX_WIDTH })
                    .min(MAX_WIDTH);
                (name, width, right, spec[digits.len()..].to_string())
            }
        };
        match lookup(&name.trim().to_ascii_lowercase()) {
            Some(kind) => fields.push(Field {
                kind,
                width,
                right,
                suffix,
            }),
            None => {
                bad.push(name.to_string());
                fields.push(Field {
                    kind: invalid.clone(),
                    width,
                    right,
                    suffix,
                });
            }
        }
    }
    (
        Format {
            prefix: String::new(),
            fields,
        },
        bad,
    )
}

/// Append `val` as Slurm's `_print_str` would: `width` 0 prints the value as
/// is; right-justified values are padded on the left (and cut to `width` when
/// `cut`); left-justified values are always cut to `width` and padded on the
/// right. Widths count characters; control characters print as `?` so every
/// record stays on one line.
pub fn push_cell(out: &mut String, val: &str, width: usize, right: bool, cut: bool) {
    let simple = one_column_each(val);
    let len = if simple {
        val.len()
    } else {
        val.chars().count()
    };
    if width == 0 {
        push_clean(out, val, simple, usize::MAX);
        return;
    }
    if right {
        if len >= width {
            push_clean(out, val, simple, if cut { width } else { usize::MAX });
        } else {
            pad(out, width - len);
            push_clean(out, val, simple, usize::MAX);
        }
    } else {
        push_clean(out, val, simple, width);
        if len < width {
            pad(out, width - len);
        }
    }
}

/// Only printable ASCII: one column a byte, nothing to replace.
fn one_column_each(val: &str) -> bool {
    val.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Make the value just written at `out[start..]` a cell, as
/// [`push_cell`] would write it: the renderers write each value in place
/// (no copy through a scratch string), and this pads or cuts it there.
pub fn fit_cell(out: &mut String, start: usize, width: usize, right: bool, cut: bool) {
    let val = &out[start..];
    if !one_column_each(val) {
        let val = out.split_off(start);
        push_cell(out, &val, width, right, cut);
        return;
    }
    let len = val.len();
    if width == 0 {
        return;
    }
    if len >= width {
        if cut || !right {
            out.truncate(start + width);
        }
    } else if !right {
        pad(out, width - len);
    } else if width - len <= SPACES.len() {
        out.insert_str(start, &SPACES[..width - len]);
    } else {
        let val = out.split_off(start);
        pad(out, width - len);
        out.push_str(&val);
    }
}

fn push_clean(out: &mut String, val: &str, simple: bool, max: usize) {
    if simple {
        out.push_str(&val[..val.len().min(max)]);
    } else {
        out.extend(
            val.chars()
                .take(max)
                .map(drover_proto::text::printable_char),
        );
    }
}

const SPACES: &str = "                                                                ";

fn pad(out: &mut String, n: usize) {
    let mut n = n;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letters(c: char) -> Option<char> {
        "ijtPMD".contains(c).then_some(c)
    }

    #[test]
    fn percent_formats() {
        let (f, bad) = parse_percent("%.18i %9P %-20j|%t", letters, '?');
        assert!(bad.is_empty());
        assert_eq!(f.prefix, "");
        assert_eq!(f.fields.len(), 4);
        assert_eq!(
            f.fields[0],
            Field {
                kind: 'i',
                width: 18,
                right: true,
                suffix: " ".into()
            }
        );
        assert_eq!(f.fields[1].width, 9);
        assert!(!f.fields[1].right);
        assert_eq!(f.fields[2].kind, 'j');
        assert_eq!((f.fields[2].width, f.fields[2].right), (20, false));
        assert_eq!(f.fields[2].suffix, "|");
        assert_eq!(f.fields[3].kind, 't');
        let (f, _) = parse_percent("JOB=%i, 100%% %t", letters, '?');
        assert_eq!(f.prefix, "JOB=");
        assert_eq!(f.fields[0].suffix, ", 100% ");
        let (f, bad) = parse_percent("%i %z", letters, '?');
        assert_eq!(bad, vec!['z']);
        assert_eq!(f.fields[1].suffix, "%z");
        let (f, _) = parse_percent("plain", letters, '?');
        assert_eq!(f.prefix, "plain");
        assert!(f.fields.is_empty());
        let (f, _) = parse_percent("%i%", letters, '?');
        assert_eq!(f.fields.len(), 1);
        let (f, _) = parse_percent("%.", letters, '?');
        assert_eq!(f.fields.len(), 1);
        let (f, _) = parse_percent("%i%j", letters, '?');
        assert_eq!(f.fields.len(), 2);
        assert_eq!(f.fields[0].suffix, "");
    }

    #[test]
    fn long_formats() {
        let look = |s: &str| {
            ["jobid", "name", "state"]
                .contains(&s)
                .then(|| s.to_string())
        };
        let (f, bad) = parse_long("JobID:.10 ,Name:30,State,bogus", look, "?".into());
        assert_eq!(bad, vec!["bogus"]);
        assert_eq!(f.fields[0].kind, "jobid");
        assert_eq!((f.fields[0].width, f.fields[0].right), (10, true));
        assert_eq!(f.fields[0].suffix, " ");
        assert_eq!((f.fields[1].width, f.fields[1].right), (30, false));
        assert_eq!(f.fields[2].width, 20);
        let (f, _) = parse_long("reasonlist:0", |_| Some(1), 0);
        assert_eq!(f.fields[0].width, 0);
    }

    #[test]
    fn cells() {
        let c = |v: &str, w, r, cut| {
            let mut s = String::new();
            push_cell(&mut s, v, w, r, cut);
            s
        };
        assert_eq!(c("42", 6, true, true), "    42");
        assert_eq!(c("42", 6, false, true), "42    ");
        assert_eq!(c("averylongname", 8, true, true), "averylon");
        assert_eq!(c("averylongname", 8, false, true), "averylon");
        assert_eq!(c("node[1-100]", 4, true, false), "node[1-100]");
        assert_eq!(c("x", 0, true, true), "x");
        assert_eq!(c("日本語の名前です", 4, false, true), "日本語の");
        assert_eq!(c("日本", 4, true, true), "  日本");
        assert_eq!(c("a\nb", 0, false, true), "a?b");
        assert_eq!(c("", 3, false, true), "   ");
    }
}
