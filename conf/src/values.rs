//! Value parsers and small helpers shared by the config parsers.

use std::collections::HashSet;

use crate::error::{ConfError, ConfWarning};
use crate::lexer::Pair;
use crate::units;

/// Canonical spelling of `key` in `table` (case-insensitive lookup).
pub(crate) fn canonical(table: &[&'static str], key: &str) -> Option<&'static str> {
    table.iter().copied().find(|k| k.eq_ignore_ascii_case(key))
}

/// Error for pair `p` under its canonical key name.
pub(crate) fn err(p: &Pair, key: &str, message: impl Into<String>) -> ConfError {
    ConfError::new(p.file.clone(), p.line, key, message)
}

/// Warning for pair `p` under its canonical key name.
pub(crate) fn warn(p: &Pair, key: &str, message: impl Into<String>) -> ConfWarning {
    ConfWarning::new(p.file.clone(), p.line, key, message)
}

/// Emits one "unknown key" warning per distinct (context, key).
#[derive(Default)]
pub(crate) struct UnknownKeys {
    seen: HashSet<String>,
}

impl UnknownKeys {
    pub fn note(&mut self, context: &str, p: &Pair, warnings: &mut Vec<ConfWarning>) {
        let id = format!("{context}\u{0}{}", p.key.to_ascii_lowercase());
        if self.seen.insert(id) {
            let msg = if context.is_empty() {
                "unknown key, ignored".to_string()
            } else {
                format!("unknown {context} key, ignored")
            };
            warnings.push(ConfWarning::new(p.file.clone(), p.line, p.key.clone(), msg));
        }
    }
}

pub(crate) fn parse_bool(v: &str) -> Result<bool, String> {
    let t = v.trim();
    for yes in ["yes", "true", "1", "y"] {
        if t.eq_ignore_ascii_case(yes) {
            return Ok(true);
        }
    }
    for no in ["no", "false", "0", "n"] {
        if t.eq_ignore_ascii_case(no) {
            return Ok(false);
        }
    }
    Err(format!("invalid boolean '{t}' (expected YES or NO)"))
}

pub(crate) fn parse_u64(v: &str) -> Result<u64, String> {
    let t = v.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid number '{t}'"));
    }
    t.parse::<u64>()
        .map_err(|_| format!("number '{t}' is too large"))
}

pub(crate) fn parse_u32(v: &str) -> Result<u32, String> {
    let n = parse_u64(v)?;
    u32::try_from(n).map_err(|_| format!("number '{}' is too large", v.trim()))
}

pub(crate) fn parse_u16(v: &str) -> Result<u16, String> {
    let n = parse_u64(v)?;
    u16::try_from(n).map_err(|_| format!("number '{}' is too large", v.trim()))
}

pub(crate) fn is_unlimited(v: &str) -> bool {
    let t = v.trim();
    t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite")
}

/// A count that may be UNLIMITED/INFINITE (-> None).
pub(crate) fn parse_u32_or_unlimited(v: &str) -> Result<Option<u32>, String> {
    if is_unlimited(v) {
        Ok(None)
    } else {
        parse_u32(v).map(Some)
    }
}

/// Memory limit in MB; UNLIMITED/INFINITE and 0 mean "not set" (None).
pub(crate) fn parse_mem_limit(v: &str) -> Result<Option<u64>, String> {
    if is_unlimited(v) {
        return Ok(None);
    }
    match units::parse_mem_mb(v)? {
        0 => Ok(None),
        n => Ok(Some(n)),
    }
}

/// Comma-separated list; items trimmed, empty items dropped.
pub(crate) fn parse_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Empty value -> None.
pub(crate) fn opt_string(v: &str) -> Option<String> {
    let t = v.trim();
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// Percentage (finite, >= 0).
pub(crate) fn parse_percent(v: &str) -> Result<f64, String> {
    let t = v.trim().trim_end_matches('%');
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("invalid percentage '{}'", v.trim()));
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(format!("invalid percentage '{}'", v.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans() {
        for t in ["YES", "yes", "True", "1", "Y"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["NO", "no", "FALSE", "0", "n"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        assert!(parse_bool("maybe").is_err());
        assert!(parse_bool("").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u32("16"), Ok(16));
        assert_eq!(parse_u32("abc"), Err("invalid number 'abc'".to_string()));
        assert!(parse_u32("4294967296").is_err());
        assert!(parse_u16("70000").is_err());
        assert!(parse_u64("-1").is_err());
        assert!(parse_u64("").is_err());
        assert_eq!(parse_u32_or_unlimited("Unlimited"), Ok(None));
        assert_eq!(parse_u32_or_unlimited("3"), Ok(Some(3)));
    }

    #[test]
    fn mem_limits() {
        assert_eq!(parse_mem_limit("UNLIMITED"), Ok(None));
        assert_eq!(parse_mem_limit("0"), Ok(None));
        assert_eq!(parse_mem_limit("2G"), Ok(Some(2048)));
        assert!(parse_mem_limit("lots").is_err());
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("100"), Ok(100.0));
        assert_eq!(parse_percent("99.5%"), Ok(99.5));
        assert!(parse_percent("NaN").is_err());
        assert!(parse_percent("inf").is_err());
        assert!(parse_percent("-3").is_err());
        assert!(parse_percent("1.2.3").is_err());
    }

    #[test]
    fn lists() {
        assert_eq!(parse_list(" a, b,,c "), vec!["a", "b", "c"]);
        assert!(parse_list("").is_empty());
    }
}
