//! Slurm hostlist expressions: `lab-gpu-[01-04,07]`, `a[1-2],b,c[01-03]-ib`,
//! `r[1-2]n[01-02]`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

/// Largest number of names one expression may expand to.
pub const MAX_NAMES: usize = 1_000_000;

/// Longest numeric field handled (keeps every value inside `u64`).
const MAX_DIGITS: usize = 18;

/// Why a hostlist expression could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostlistError {
    pub message: String,
}

impl HostlistError {
    fn new(message: impl Into<String>) -> Self {
        HostlistError {
            message: message.into(),
        }
    }
}

impl fmt::Display for HostlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid hostlist: {}", self.message)
    }
}

impl std::error::Error for HostlistError {}

/// Split `a[1-3],b,c` on the commas that are outside brackets. Pieces are
/// trimmed; empty pieces are dropped.
pub fn split_top_level(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                push_piece(&mut out, &expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    push_piece(&mut out, &expr[start..]);
    out
}

fn push_piece<'a>(out: &mut Vec<&'a str>, piece: &'a str) {
    let p = piece.trim();
    if !p.is_empty() {
        out.push(p);
    }
}

/// One piece of a host name pattern.
enum Segment<'a> {
    Literal(&'a str),
    /// Inclusive ranges with the zero-pad width of each.
    Ranges(Vec<(u64, u64, usize)>),
}

impl Segment<'_> {
    fn count(&self) -> Option<usize> {
        match self {
            Segment::Literal(_) => Some(1),
            Segment::Ranges(rs) => rs.iter().try_fold(0usize, |acc, (lo, hi, _)| {
                let n = usize::try_from(hi - lo).ok()?.checked_add(1)?;
                acc.checked_add(n)
            }),
        }
    }
}

fn check_brackets(expr: &str) -> Result<(), HostlistError> {
    let mut open = false;
    for c in expr.chars() {
        match c {
            '[' if open => return Err(HostlistError::new(format!("nested '[' in '{expr}'"))),
            '[' => open = true,
            ']' if !open => return Err(HostlistError::new(format!("unbalanced ']' in '{expr}'"))),
            ']' => open = false,
            _ => {}
        }
    }
    if open {
        return Err(HostlistError::new(format!("unclosed '[' in '{expr}'")));
    }
    Ok(())
}

fn parse_number(s: &str, whole: &str) -> Result<u64, HostlistError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HostlistError::new(format!("bad range '{whole}'")));
    }
    if s.len() > MAX_DIGITS {
        return Err(HostlistError::new(format!("number too large in '{whole}'")));
    }
    s.parse::<u64>()
        .map_err(|_| HostlistError::new(format!("bad range '{whole}'")))
}

fn parse_ranges(inner: &str) -> Result<Vec<(u64, u64, usize)>, HostlistError> {
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(HostlistError::new(format!("empty range in '[{inner}]'")));
        }
        let (lo_s, hi_s) = item.split_once('-').unwrap_or((item, item));
        let lo = parse_number(lo_s, item)?;
        let hi = parse_number(hi_s, item)?;
        if lo > hi {
            return Err(HostlistError::new(format!(
                "bad range '{item}': start is after end"
            )));
        }
        out.push((lo, hi, lo_s.len()));
    }
    Ok(out)
}

fn parse_pattern(name: &str) -> Result<Vec<Segment<'_>>, HostlistError> {
    let mut segs = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        match rest.find('[') {
            None => {
                segs.push(Segment::Literal(rest));
                break;
            }
            Some(open) => {
                if open > 0 {
                    segs.push(Segment::Literal(&rest[..open]));
                }
                let after = &rest[open + 1..];
                let close = after
                    .find(']')
                    .ok_or_else(|| HostlistError::new(format!("unclosed '[' in '{name}'")))?;
                segs.push(Segment::Ranges(parse_ranges(&after[..close])?));
                rest = &after[close + 1..];
            }
        }
    }
    Ok(segs)
}

fn expand_name(name: &str, out: &mut Vec<String>) -> Result<(), HostlistError> {
    let segs = parse_pattern(name)?;
    let too_many =
        || HostlistError::new(format!("'{name}' expands to more than {MAX_NAMES} names"));
    let mut total = 1usize;
    for s in &segs {
        total = s
            .count()
            .and_then(|c| total.checked_mul(c))
            .ok_or_else(too_many)?;
    }
    if total.checked_add(out.len()).is_none_or(|t| t > MAX_NAMES) {
        return Err(too_many());
    }
    let mut acc = vec![String::new()];
    for seg in &segs {
        match seg {
            Segment::Literal(l) => acc.iter_mut().for_each(|a| a.push_str(l)),
            Segment::Ranges(rs) => {
                let mut next = Vec::new();
                let mut digits = itoa::Buffer::new();
                for a in &acc {
                    for &(lo, hi, width) in rs {
                        for v in lo..=hi {
                            // `{a}{v:0width$}` without the formatter:
                            // 1,000-node lines are expanded by every command.
                            let d = digits.format(v);
                            let mut name = String::with_capacity(a.len() + width.max(d.len()));
                            name.push_str(a);
                            name.extend(std::iter::repeat_n('0', width.saturating_sub(d.len())));
                            name.push_str(d);
                            next.push(name);
                        }
                    }
                }
                acc = next;
            }
        }
    }
    out.extend(acc);
    Ok(())
}

/// Expand a hostlist expression into the names it stands for, in order.
///
/// Commas (and whitespace) outside brackets separate names; inside brackets
/// they separate numbers or `lo-hi` ranges. The zero padding of each range is
/// the width of its lower bound (`[08-10]` -> `08 09 10`).
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    check_brackets(expr)?;
    let mut out = Vec::new();
    for piece in split_top_level(expr) {
        for name in piece.split_whitespace() {
            expand_name(name, &mut out)?;
        }
    }
    Ok(out)
}

/// How many names `expr` stands for, counted without making them.
pub fn count(expr: &str) -> Result<usize, HostlistError> {
    check_brackets(expr)?;
    let mut total = 0usize;
    for piece in split_top_level(expr) {
        for name in piece.split_whitespace() {
            let too_many = || HostlistError::new(format!("'{name}' names too many hosts"));
            let mut n = 1usize;
            for s in &parse_pattern(name)? {
                n = s
                    .count()
                    .and_then(|c| n.checked_mul(c))
                    .ok_or_else(too_many)?;
            }
            total = total.checked_add(n).ok_or_else(too_many)?;
        }
    }
    Ok(total)
}

/// [`expand`], refusing an expression of more than `max` names before any
/// is made.
pub fn expand_at_most(expr: &str, max: usize) -> Result<Vec<String>, HostlistError> {
    let n = count(expr)?;
    if n > max {
        return Err(HostlistError::new(format!(
            "'{expr}' names {n} hosts, more than {max}"
        )));
    }
    expand(expr)
}

/// A name split around its last numeric field.
struct Split<'a> {
    prefix: &'a str,
    digits: &'a str,
    suffix: &'a str,
    value: u64,
}

fn split_name(name: &str) -> Option<Split<'_>> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c == '[' || c == ']' || c == ',' || c.is_whitespace())
    {
        return None;
    }
    let bytes = name.as_bytes();
    let end = bytes.iter().rposition(|b| b.is_ascii_digit())? + 1;
    let start = bytes[..end]
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |p| p + 1);
    let digits = &name[start..end];
    if digits.len() > MAX_DIGITS {
        return None;
    }
    Some(Split {
        prefix: &name[..start],
        digits,
        suffix: &name[end..],
        value: digits.parse().ok()?,
    })
}

/// A numeric field: (value, digit count, zero padded, position in the input).
type NumField = (u64, usize, bool, usize);
/// (prefix, suffix) -> the numeric fields of the names with that shape.
type Groups<'a> = BTreeMap<(&'a str, &'a str), Vec<NumField>>;

fn fmt_num(v: u64, width: usize) -> String {
    format!("{v:0width$}")
}

/// How [`compress_with`] orders its output groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// By prefix, suffix, first number (Slurm's `hostlist_sort`).
    Sorted,
    /// In the order each group's first name was given.
    FirstSeen,
}

/// Compress names into a hostlist expression (the inverse of [`expand`]),
/// sorted the way Slurm's `hostlist_sort` orders them.
///
/// Names are grouped by the text around their last numeric field and by
/// zero-pad width; numbers are sorted and merged into ranges; duplicates are
/// dropped; a group of one name stays bare. Groups are sorted by prefix.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    compress_with(names, Order::Sorted)
}

/// Like [`compress`], but the groups keep the order in which their first
/// name appears (`x,n2,n1` -> `x,n[1-2]`): `scontrol show hostlist`,
/// node lists given in the user's order.
pub fn compress_in_order<S: AsRef<str>>(names: &[S]) -> String {
    compress_with(names, Order::FirstSeen)
}

fn compress_with<S: AsRef<str>>(names: &[S], order: Order) -> String {
    let mut groups: Groups<'_> = BTreeMap::new();
    let mut bare: BTreeMap<&str, usize> = BTreeMap::new();
    for (pos, n) in names.iter().enumerate() {
        let n = n.as_ref();
        match split_name(n) {
            Some(s) => groups.entry((s.prefix, s.suffix)).or_default().push((
                s.value,
                s.digits.len(),
                s.digits.len() > 1 && s.digits.starts_with('0'),
                pos,
            )),
            None => {
                if !n.trim().is_empty() {
                    bare.entry(n).or_insert(pos);
                }
            }
        }
    }
    // Output items keyed for sorting: (prefix, suffix, first value, width),
    // with the position of their first name.
    type Key = (String, String, u64, usize);
    let mut items: Vec<(Key, usize, String)> = Vec::new();
    for (b, pos) in bare {
        items.push(((b.to_string(), String::new(), 0, 0), pos, b.to_string()));
    }
    for ((prefix, suffix), nums) in groups {
        let padded_widths: HashSet<usize> = nums.iter().filter(|n| n.2).map(|n| n.1).collect();
        let mut by_width: BTreeMap<usize, (BTreeSet<u64>, usize)> = BTreeMap::new();
        for (value, len, padded, pos) in nums {
            // width 0 = natural (no padding); otherwise exact digit count
            let width = if padded || padded_widths.contains(&len) {
                len
            } else {
                0
            };
            let e = by_width.entry(width).or_insert((BTreeSet::new(), pos));
            e.0.insert(value);
            e.1 = e.1.min(pos);
        }
        for (width, (values, pos)) in by_width {
            let first = values.first().copied().unwrap_or(0);
            items.push((
                (prefix.to_string(), suffix.to_string(), first, width),
                pos,
                render_group(prefix, suffix, width, &values),
            ));
        }
    }
    match order {
        Order::Sorted => items.sort(),
        Order::FirstSeen => items.sort_by_key(|i| i.1),
    }
    items
        .into_iter()
        .map(|(_, _, s)| s)
        .collect::<Vec<_>>()
        .join(",")
}

/// Order host names the way Slurm's hostlist sort does: by the text around
/// the last number, then by that number (`n2` before `n10`), then bytewise.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |n: &str| match split_name(n) {
        Some(s) => (s.prefix.to_string(), s.suffix.to_string(), Some(s.value)),
        None => (n.to_string(), String::new(), None),
    };
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

fn render_group(prefix: &str, suffix: &str, width: usize, values: &BTreeSet<u64>) -> String {
    if values.len() == 1 {
        let v = values.first().copied().unwrap_or(0);
        return format!("{prefix}{}{suffix}", fmt_num(v, width));
    }
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &v in values {
        match ranges.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(v) => *hi = v,
            _ => ranges.push((v, v)),
        }
    }
    let body = ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                fmt_num(lo, width)
            } else {
                format!("{}-{}", fmt_num(lo, width), fmt_num(hi, width))
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    format!("{prefix}[{body}]{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Vec<String> {
        expand(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn expand_basic() {
        assert_eq!(
            ex("lab-gpu-[01-04,07]"),
            vec![
                "lab-gpu-01",
                "lab-gpu-02",
                "lab-gpu-03",
                "lab-gpu-04",
                "lab-gpu-07"
            ]
        );
        assert_eq!(ex("n1"), vec!["n1"]);
        assert_eq!(ex("localhost"), vec!["localhost"]);
        assert_eq!(ex(""), Vec::<String>::new());
    }

    #[test]
    fn expand_lists_and_suffixes() {
        assert_eq!(
            ex("a[1-2],b,c[01-03]-ib"),
            vec!["a1", "a2", "b", "c01-ib", "c02-ib", "c03-ib"]
        );
        assert_eq!(ex("a, b  c"), vec!["a", "b", "c"]);
    }

    #[test]
    fn expand_multi_bracket() {
        assert_eq!(
            ex("r[1-2]n[01-02]"),
            vec!["r1n01", "r1n02", "r2n01", "r2n02"]
        );
    }

    #[test]
    fn expand_padding() {
        assert_eq!(ex("n[8-10]"), vec!["n8", "n9", "n10"]);
        assert_eq!(ex("n[08-10]"), vec!["n08", "n09", "n10"]);
        assert_eq!(ex("n[001-2]"), vec!["n001", "n002"]);
        assert_eq!(ex("n[0]"), vec!["n0"]);
    }

    #[test]
    fn expand_errors() {
        for s in [
            "n[1-2",
            "n1-2]",
            "n[[1]]",
            "n[]",
            "n[a-b]",
            "n[3-1]",
            "n[1-]",
            "n[-1]",
            "n[1,,2]",
            "n[1-2-3]",
            "n[0-9999999]",
            "n[0-999][0-9999]",
            "n[1234567890123456789]",
        ] {
            assert!(expand(s).is_err(), "{s:?} should fail");
        }
    }

    #[test]
    fn expand_cap_is_exact() {
        assert_eq!(expand("n[1-1000000]").map(|v| v.len()), Ok(MAX_NAMES));
        assert!(expand("n[1-1000000],x").is_err());
    }

    #[test]
    fn error_display() {
        let e = expand("n[1-2").unwrap_err();
        assert!(e.to_string().contains("unclosed"), "{e}");
    }

    #[test]
    fn split() {
        assert_eq!(split_top_level("a[1-3],b,c"), vec!["a[1-3]", "b", "c"]);
        assert_eq!(split_top_level(" a , ,b[1,2] "), vec!["a", "b[1,2]"]);
        assert_eq!(split_top_level(""), Vec::<&str>::new());
    }

    #[test]
    fn compress_basic() {
        assert_eq!(
            compress(&["n1", "n2", "n3", "n5", "gpu01", "gpu02"]),
            "gpu[01-02],n[1-3,5]"
        );
        assert_eq!(compress(&["n1"]), "n1");
        assert_eq!(compress(&["n1", "n1"]), "n1");
        assert_eq!(compress(&["localhost"]), "localhost");
        assert_eq!(compress::<&str>(&[]), "");
        assert_eq!(compress(&["n9", "n10", "n11"]), "n[9-11]");
        assert_eq!(compress(&["n09", "n10", "n11"]), "n[09-11]");
        assert_eq!(compress(&["c01-ib", "c02-ib"]), "c[01-02]-ib");
        assert_eq!(compress(&["n3", "n1", "n2"]), "n[1-3]");
        assert_eq!(compress(&["b", "a"]), "a,b");
    }

    #[test]
    fn compress_in_given_order() {
        assert_eq!(compress_in_order(&["n01", "n02", "x", "n03"]), "n[01-03],x");
        assert_eq!(compress_in_order(&["x", "n2", "n1"]), "x,n[1-2]");
        assert_eq!(compress_in_order(&["b", "a", "b"]), "b,a");
        assert_eq!(
            compress_in_order(&["pfx1", "pfx2", "pfx3", "pfx5", "host2"]),
            "pfx[1-3,5],host2"
        );
        assert_eq!(compress_in_order(&["c02-ib", "c01-ib"]), "c[01-02]-ib");
        assert_eq!(compress_in_order::<&str>(&[]), "");
    }

    #[test]
    fn natural_order() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_cmp("n2", "n10"), Less);
        assert_eq!(natural_cmp("n10", "n2"), Greater);
        assert_eq!(natural_cmp("a9", "b1"), Less);
        assert_eq!(natural_cmp("c2-ib", "c10-ib"), Less);
        assert_eq!(natural_cmp("n", "n1"), Less);
        assert_eq!(natural_cmp("n1", "n1"), Equal);
        let mut v = vec!["n10", "x", "n2", "n1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, vec!["n1", "n2", "n10", "x"]);
    }

    #[test]
    fn compress_round_trips() {
        let names = [
            "n1", "n01", "n001", "n10", "n010", "x", "n2", "r1n1", "r2n1",
        ];
        let c = compress(&names);
        let mut back = ex(&c);
        back.sort();
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(back, want, "{c}");
    }
}

/// Index list in Slurm's range text: `[0, 1, 2, 5, 7, 8]` -> `0-2,5,7-8`
/// (sorted and de-duplicated first). Used for array task ids and device indices.
pub fn ranges(idx: &[u32]) -> String {
    let mut v: Vec<u32> = idx.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut k = 0;
    while k < v.len() {
        let start = v[k];
        let mut end = start;
        while k + 1 < v.len() && end.checked_add(1) == Some(v[k + 1]) {
            k += 1;
            end = v[k];
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&start.to_string());
        if end != start {
            out.push('-');
            out.push_str(&end.to_string());
        }
        k += 1;
    }
    out
}

#[cfg(test)]
mod ranges_tests {
    #[test]
    fn ranges_text() {
        assert_eq!(super::ranges(&[8, 0, 1, 2, 5, 7, 2]), "0-2,5,7-8");
        assert_eq!(super::ranges(&[]), "");
        assert_eq!(super::ranges(&[4]), "4");
        assert_eq!(super::ranges(&[3, 0, 1, 2, 7]), "0-3,7");
        assert_eq!(
            super::ranges(&[u32::MAX, u32::MAX - 1, 0]),
            format!("0,{}-{}", u32::MAX - 1, u32::MAX)
        );
    }

    #[test]
    fn count_agrees_with_expand_and_bounds_it() {
        use super::{count, expand, expand_at_most};
        for e in [
            "n[1-3]",
            "a[1-2],b,c[01-03]-ib",
            "r[1-2]n[01-02]",
            "x y",
            "",
        ] {
            assert_eq!(count(e), Ok(expand(e).unwrap().len()), "{e}");
        }
        assert_eq!(count("x[01-903]y[01-903]"), Ok(903 * 903));
        assert_eq!(count("n[1-1000000000]"), Ok(1_000_000_000));
        assert!(count("n[1-2").is_err());
        assert_eq!(expand_at_most("n[1-4]", 4).map(|v| v.len()), Ok(4));
        let e = expand_at_most("n[1-5]", 4).unwrap_err();
        assert_eq!(e.message, "'n[1-5]' names 5 hosts, more than 4");
    }
}
