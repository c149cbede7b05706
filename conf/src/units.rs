//! Slurm time-limit and memory-size formats.

/// Parse an unsigned decimal made of ASCII digits only (no sign, no spaces).
fn digits(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid {what} '{s}'"));
    }
    s.parse::<u64>()
        .map_err(|_| format!("{what} '{s}' is too large"))
}

fn is_unlimited_word(s: &str) -> bool {
    s.eq_ignore_ascii_case("unlimited") || s.eq_ignore_ascii_case("infinite")
}

/// Slurm time limit syntax -> `Option<seconds>`; `None` means UNLIMITED.
///
/// Accepted: `minutes`, `minutes:seconds`, `hours:minutes:seconds`,
/// `days-hours`, `days-hours:minutes`, `days-hours:minutes:seconds`
/// (fields need not be padded), `UNLIMITED`/`INFINITE` (any case) and `-1`.
pub fn parse_duration(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty time value".to_string());
    }
    if is_unlimited_word(t) || t == "-1" {
        return Ok(None);
    }
    if !t
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'-' || b == b':')
    {
        return Err(format!("invalid time '{t}'"));
    }
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(digits(d, "days")?), r),
        None => (None, t),
    };
    if rest.contains('-') {
        return Err(format!("invalid time '{t}': more than one '-'"));
    }
    let mut fields = Vec::with_capacity(3);
    for part in rest.split(':') {
        fields.push(digits(part, "time field")?);
    }
    let too_large = || format!("time '{t}' is too large");
    let mul_add = |acc: u64, mul: u64, add: u64| -> Result<u64, String> {
        acc.checked_mul(mul)
            .and_then(|v| v.checked_add(add))
            .ok_or_else(too_large)
    };
    let secs = match (days, fields.as_slice()) {
        (None, [m]) => mul_add(*m, 60, 0)?,
        (None, [m, s]) => mul_add(*m, 60, *s)?,
        (None, [h, m, s]) => mul_add(mul_add(*h, 60, *m)?, 60, *s)?,
        (Some(d), [h]) => mul_add(mul_add(d, 24, *h)?, 3600, 0)?,
        (Some(d), [h, m]) => mul_add(mul_add(mul_add(d, 24, *h)?, 60, *m)?, 60, 0)?,
        (Some(d), [h, m, s]) => mul_add(mul_add(mul_add(d, 24, *h)?, 60, *m)?, 60, *s)?,
        _ => return Err(format!("invalid time '{t}': too many ':' fields")),
    };
    Ok(Some(secs))
}

/// Like [`parse_duration`] but in minutes, rounding seconds up
/// (`"0:30"` -> `Some(1)`). `u32::MAX` minutes is Slurm's INFINITE, so a
/// finite limit stays below it.
pub fn parse_time_minutes(s: &str) -> Result<Option<u32>, String> {
    match parse_duration(s)? {
        None => Ok(None),
        Some(secs) => u32::try_from(secs.div_ceil(60))
            .ok()
            .filter(|m| *m != u32::MAX)
            .map(Some)
            .ok_or_else(|| format!("time '{}' is too large", s.trim())),
    }
}

/// Slurm's `secs2time_str`: `M:SS` below one hour, `H:MM:SS` below one day,
/// `D-HH:MM:SS` otherwise.
pub fn format_elapsed(secs: u64) -> String {
    let mut out = String::with_capacity(12);
    push_elapsed(&mut out, secs);
    out
}

/// [`format_elapsed`] appended to `out` (squeue/sinfo cells: no
/// allocation, no formatting machinery; squeue prints one per row).
pub fn push_elapsed(out: &mut String, secs: u64) {
    let (d, h, m, s) = (
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
    );
    if d > 0 {
        push_u64(out, d);
        out.push('-');
        push_two(out, h);
        out.push(':');
        push_two(out, m);
    } else if h > 0 {
        push_u64(out, h);
        out.push(':');
        push_two(out, m);
    } else {
        push_u64(out, m);
    }
    out.push(':');
    push_two(out, s);
}

/// Two digits, zero padded (`v` < 100).
fn push_two(out: &mut String, v: u64) {
    out.push(char::from(b'0' + (v / 10 % 10) as u8));
    out.push(char::from(b'0' + (v % 10) as u8));
}

/// Decimal digits of `v`.
fn push_u64(out: &mut String, v: u64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// scontrol style: always `HH:MM:SS`, with a `D-` prefix from one day on.
pub fn format_hms(secs: u64) -> String {
    let s = secs % 60;
    let m = (secs / 60) % 60;
    let h = (secs / 3600) % 24;
    let d = secs / 86400;
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A time limit in minutes as squeue/sinfo print it: `None` -> `UNLIMITED`.
pub fn format_limit(minutes: Option<u32>) -> String {
    match minutes {
        None => "UNLIMITED".to_string(),
        Some(m) => format_elapsed(u64::from(m) * 60),
    }
}

/// Memory size with optional unit -> MB: Slurm's `str_to_mbytes`, used by
/// `--mem`, `--mem-per-cpu`, `--mem-per-gpu`, slurm.conf, cgroup.conf and
/// sacctmgr limits alike. Units K, M, G, T (any case, optional trailing `B`);
/// no unit means MB; kilobytes round up to whole MB. `P` is refused, as
/// Slurm refuses it.
pub fn parse_mem_mb(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("invalid memory size '{t}'"));
    }
    let n = num
        .parse::<u64>()
        .map_err(|_| format!("memory size '{t}' is too large"))?;
    let unit = unit.to_ascii_uppercase();
    let unit = match unit.as_str() {
        "KB" | "MB" | "GB" | "TB" => &unit[..1],
        other => other,
    };
    let too_large = || format!("memory size '{t}' is too large");
    match unit {
        "" | "M" => Ok(n),
        "K" => Ok(n.div_ceil(1024)),
        "G" => n.checked_mul(1024).ok_or_else(too_large),
        "T" => n.checked_mul(1024 * 1024).ok_or_else(too_large),
        _ => Err(format!("invalid memory size '{t}': unknown unit")),
    }
}

/// MB -> Slurm display: `4G` when divisible by 1024, else `954M`; 0 -> `0`.
pub fn format_mem_mb(mb: u64) -> String {
    if mb == 0 {
        "0".to_string()
    } else if mb.is_multiple_of(1024) {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_forms() {
        assert_eq!(parse_duration("5"), Ok(Some(300)));
        assert_eq!(parse_duration("5:30"), Ok(Some(330)));
        assert_eq!(parse_duration("1:00:00"), Ok(Some(3600)));
        assert_eq!(parse_duration("04:00:00"), Ok(Some(4 * 3600)));
        assert_eq!(parse_duration("0:5:0"), Ok(Some(300)));
        assert_eq!(parse_duration("2-3"), Ok(Some(2 * 86400 + 3 * 3600)));
        assert_eq!(
            parse_duration("2-3:4"),
            Ok(Some(2 * 86400 + 3 * 3600 + 240))
        );
        assert_eq!(parse_duration("5-00:00:00"), Ok(Some(5 * 86400)));
        assert_eq!(parse_duration("1-1:1:1"), Ok(Some(86400 + 3661)));
        assert_eq!(parse_duration(" 0 "), Ok(Some(0)));
    }

    #[test]
    fn duration_unlimited() {
        for s in ["UNLIMITED", "unlimited", "Infinite", "INFINITE", "-1"] {
            assert_eq!(parse_duration(s), Ok(None), "{s}");
        }
    }

    #[test]
    fn duration_errors() {
        for s in [
            "",
            "abc",
            "1:2:3:4",
            "1-2-3",
            "1-",
            "-",
            ":",
            "1:",
            ":5",
            "1.5",
            "1-2:3:4:5",
            "-2",
            "1 2",
            "99999999999999999999",
            "999999999999999999:0:0",
        ] {
            assert!(parse_duration(s).is_err(), "{s:?} should fail");
        }
    }

    #[test]
    fn minutes_round_up() {
        assert_eq!(parse_time_minutes("0:30"), Ok(Some(1)));
        assert_eq!(parse_time_minutes("0:60"), Ok(Some(1)));
        assert_eq!(parse_time_minutes("1:01"), Ok(Some(2)));
        assert_eq!(parse_time_minutes("0"), Ok(Some(0)));
        assert_eq!(parse_time_minutes("5-00:00:00"), Ok(Some(7200)));
        assert_eq!(parse_time_minutes("UNLIMITED"), Ok(None));
        assert!(parse_time_minutes("99999999999").is_err());
        assert_eq!(parse_time_minutes("4294967294"), Ok(Some(u32::MAX - 1)));
        assert!(parse_time_minutes("4294967295").is_err());
        assert!(parse_time_minutes("x").is_err());
    }

    #[test]
    fn elapsed_format() {
        assert_eq!(format_elapsed(0), "0:00");
        assert_eq!(format_elapsed(5), "0:05");
        assert_eq!(format_elapsed(12 * 60 + 34), "12:34");
        assert_eq!(format_elapsed(3600), "1:00:00");
        assert_eq!(format_elapsed(4 * 3600 + 5), "4:00:05");
        assert_eq!(format_elapsed(86400), "1-00:00:00");
        assert_eq!(format_elapsed(5 * 86400 + 3661), "5-01:01:01");
        let mut s = String::from("x");
        push_elapsed(&mut s, 65);
        assert_eq!(s, "x1:05");
    }

    #[test]
    fn hms_format() {
        assert_eq!(format_hms(0), "00:00:00");
        assert_eq!(format_hms(300), "00:05:00");
        assert_eq!(format_hms(36000 + 61), "10:01:01");
        assert_eq!(format_hms(86400), "1-00:00:00");
        assert_eq!(format_hms(2 * 86400 + 3600), "2-01:00:00");
    }

    #[test]
    fn limit_format() {
        assert_eq!(format_limit(None), "UNLIMITED");
        assert_eq!(format_limit(Some(0)), "0:00");
        assert_eq!(format_limit(Some(30)), "30:00");
        assert_eq!(format_limit(Some(240)), "4:00:00");
        assert_eq!(format_limit(Some(7200)), "5-00:00:00");
    }

    #[test]
    fn mem_parse() {
        assert_eq!(parse_mem_mb("10GB"), Ok(10240));
        assert_eq!(parse_mem_mb("4g"), Ok(4096));
        assert_eq!(parse_mem_mb("954M"), Ok(954));
        assert_eq!(parse_mem_mb("954mb"), Ok(954));
        assert_eq!(parse_mem_mb("1024"), Ok(1024));
        assert_eq!(parse_mem_mb("512K"), Ok(1));
        assert_eq!(parse_mem_mb("1025k"), Ok(2));
        assert_eq!(parse_mem_mb("0"), Ok(0));
        assert_eq!(parse_mem_mb("2T"), Ok(2 * 1024 * 1024));
        assert_eq!(parse_mem_mb(" 8G "), Ok(8192));
        assert_eq!(parse_mem_mb("2048K"), Ok(2));
        assert_eq!(parse_mem_mb("1000k"), Ok(1));
        assert_eq!(parse_mem_mb("1T"), Ok(1024 * 1024));
        assert_eq!(parse_mem_mb("3tb"), Ok(3 * 1024 * 1024));
    }

    #[test]
    fn mem_errors() {
        for s in [
            "",
            "G",
            "abc",
            "10X",
            "10GiB",
            "-5",
            "1.5G",
            "10 G",
            "99999999999999999999",
            "18446744073709551615G",
            "5B",
            "ÄG",
            "1P",
            "2PB",
            "1E",
        ] {
            assert!(parse_mem_mb(s).is_err(), "{s:?} should fail");
        }
    }

    #[test]
    fn mem_format() {
        assert_eq!(format_mem_mb(0), "0");
        assert_eq!(format_mem_mb(4096), "4G");
        assert_eq!(format_mem_mb(954), "954M");
        assert_eq!(format_mem_mb(122880), "120G");
        assert_eq!(format_mem_mb(1), "1M");
    }
}
