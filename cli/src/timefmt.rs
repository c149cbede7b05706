//! Slurm's time texts: durations (`5:00`, `1-00:00:00`), local timestamps
//! (`2024-05-01T12:00:00`), time-limit parsing (`-t 0:5:0`) and `--begin`
//! parsing. Formatting of broken-down times is pure; the conversions to and
//! from unix seconds use the C library's local time zone.

use drover_proto::INFINITE;

/// Broken-down local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tm {
    pub year: i32,
    /// 1-12
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    /// 0 = Sunday
    pub wday: u32,
}

/// Local time of a unix timestamp.
pub fn localtime(t: i64) -> Tm {
    // SAFETY: localtime_r only writes into the tm we pass.
    unsafe {
        let tt: libc::time_t = t as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&tt, &mut tm).is_null() {
            return Tm::default();
        }
        Tm {
            year: tm.tm_year + 1900,
            month: (tm.tm_mon + 1).clamp(1, 12) as u32,
            day: tm.tm_mday.max(0) as u32,
            hour: tm.tm_hour.max(0) as u32,
            min: tm.tm_min.max(0) as u32,
            sec: tm.tm_sec.max(0) as u32,
            wday: tm.tm_wday.clamp(0, 6) as u32,
        }
    }
}

/// Unix time of a local broken-down time (fields may overflow: mktime normalises).
fn mktime(year: i32, month0: i32, day: i32, hour: i32, min: i32, sec: i32) -> Option<i64> {
    // SAFETY: mktime reads and normalises the tm we own.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = year - 1900;
        tm.tm_mon = month0;
        tm.tm_mday = day;
        tm.tm_hour = hour;
        tm.tm_min = min;
        tm.tm_sec = sec;
        tm.tm_isdst = -1;
        let t = libc::mktime(&mut tm);
        if t == -1 {
            None
        } else {
            Some(t as i64)
        }
    }
}

pub fn now() -> i64 {
    drover_proto::auth::now_secs()
}

/// `YYYY-MM-DDTHH:MM:SS`.
pub fn fmt_iso(tm: &Tm) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.year, tm.month, tm.day, tm.hour, tm.min, tm.sec
    )
}

/// Slurm's `slurm_make_time_str`: local ISO time, `Unknown` for 0/INFINITE.
pub fn make_time_str(t: i64) -> String {
    if t == 0 || t == i64::from(INFINITE) || t < 0 {
        "Unknown".to_string()
    } else {
        fmt_iso(&localtime(t))
    }
}

const WDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `Mon Jan 29 10:00:00 2024` (the date line of `squeue -l` / `sinfo -l`).
pub fn fmt_ctime(tm: &Tm) -> String {
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        WDAYS[(tm.wday % 7) as usize],
        MONTHS[((tm.month.clamp(1, 12)) - 1) as usize],
        tm.day,
        tm.hour,
        tm.min,
        tm.sec,
        tm.year
    )
}

/// squeue/sinfo elapsed style: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`.
/// With `check`, negative or > 1 year prints `INVALID` (squeue's rule).
pub fn push_secs_short(out: &mut String, secs: i64, check: bool) {
    if check && !(0..=365 * 24 * 3600).contains(&secs) {
        out.push_str("INVALID");
        return;
    }
    let secs = secs.max(0);
    let (d, h, m, s) = (
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
    );
    let two = |out: &mut String, v: i64| {
        out.push((b'0' + (v / 10) as u8) as char);
        out.push((b'0' + (v % 10) as u8) as char);
    };
    if d > 0 {
        crate::jsonw::push_int(out, d);
        out.push('-');
        two(out, h);
        out.push(':');
    } else if h > 0 {
        crate::jsonw::push_int(out, h);
        out.push(':');
    }
    if d > 0 || h > 0 {
        two(out, m);
    } else {
        crate::jsonw::push_int(out, m);
    }
    out.push(':');
    two(out, s);
}

pub fn secs_short(secs: i64) -> String {
    let mut s = String::new();
    push_secs_short(&mut s, secs, false);
    s
}

/// scontrol style: `HH:MM:SS` or `D-HH:MM:SS`.
pub fn secs2time_str(secs: i64) -> String {
    if secs < 0 {
        return "INVALID".to_string();
    }
    let (d, h, m, s) = (
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// Minutes in scontrol style; INFINITE is `UNLIMITED`.
pub fn mins2time_str(mins: u32) -> String {
    if mins == INFINITE {
        "UNLIMITED".to_string()
    } else {
        secs2time_str(i64::from(mins) * 60)
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn num(s: &str) -> Option<u64> {
    if all_digits(s) && s.len() <= 12 {
        s.parse().ok()
    } else {
        None
    }
}

/// Slurm's `time_str2secs`: `minutes`, `minutes:seconds`,
/// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes`,
/// `days-hours:minutes:seconds`; `UNLIMITED`/`INFINITE`/`-1`.
/// Returns None when invalid, Some(None) for unlimited.
pub fn parse_duration_secs(s: &str) -> Option<Option<u64>> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("unlimited") || s.eq_ignore_ascii_case("infinite") || s == "-1" {
        return Some(None);
    }
    if s.is_empty() {
        return None;
    }
    let secs = if let Some((d, rest)) = s.split_once('-') {
        let d = num(d)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (h, m, sec) = match parts.as_slice() {
            [h] => (num(h)?, 0, 0),
            [h, m] => (num(h)?, num(m)?, 0),
            [h, m, sec] => (num(h)?, num(m)?, num(sec)?),
            _ => return None,
        };
        d * 86400 + h * 3600 + m * 60 + sec
    } else {
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            [m] => num(m)? * 60,
            [m, sec] => num(m)? * 60 + num(sec)?,
            [h, m, sec] => num(h)? * 3600 + num(m)? * 60 + num(sec)?,
            _ => return None,
        }
    };
    Some(Some(secs))
}

/// A time limit in minutes (seconds round up); INFINITE for unlimited.
pub fn parse_time_limit(s: &str) -> Option<u32> {
    match parse_duration_secs(s)? {
        None => Some(INFINITE),
        Some(secs) => {
            let mins = secs.div_ceil(60);
            if mins >= u64::from(INFINITE) {
                None
            } else {
                Some(mins as u32)
            }
        }
    }
}

/// Parse `HH:MM[:SS]` with an optional AM/PM suffix.
fn parse_clock(s: &str) -> Option<(u32, u32, u32)> {
    let lower = s.to_ascii_lowercase();
    let (body, pm, am) = if let Some(b) = lower.strip_suffix("pm") {
        (b.trim().to_string(), true, false)
    } else if let Some(b) = lower.strip_suffix("am") {
        (b.trim().to_string(), false, true)
    } else {
        (lower.clone(), false, false)
    };
    let parts: Vec<&str> = body.split(':').collect();
    let (h, m, sec) = match parts.as_slice() {
        [h, m] => (num(h)?, num(m)?, 0),
        [h, m, sec] => (num(h)?, num(m)?, num(sec)?),
        _ => return None,
    };
    let mut h = h as u32;
    if pm || am {
        if !(1..=12).contains(&h) {
            return None;
        }
        if pm && h != 12 {
            h += 12;
        }
        if am && h == 12 {
            h = 0;
        }
    }
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some((h, m as u32, sec as u32))
}

/// Parse a `--begin` value into unix seconds (local time zone).
/// Accepts `now[+N[seconds|minutes|hours|days|weeks]]`, `HH:MM[:SS][AM|PM]`,
/// `YYYY-MM-DD[THH:MM[:SS]]`, `MM/DD[/YY]`, `midnight`, `noon`, `fika`,
/// `teatime`, `today`, `tomorrow`, and a time of day followed by a date word.
pub fn parse_begin(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("now") {
        let rest = rest.trim();
        if rest.is_empty() {
            return Some(now);
        }
        let rest = rest.strip_prefix('+')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n = num(&digits)? as i64;
        let unit = rest[digits.len()..].trim();
        let mult = match unit {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86400,
            "w" | "week" | "weeks" => 7 * 86400,
            _ => return None,
        };
        return now.checked_add(n.checked_mul(mult)?);
    }
    let today = localtime(now);
    let at = |y: i32, mo: u32, d: u32, h: u32, mi: u32, se: u32| {
        mktime(y, mo as i32 - 1, d as i32, h as i32, mi as i32, se as i32)
    };
    // A time of day, optionally followed by a day word.
    let (clock_part, day_part) = match lower.split_once(char::is_whitespace) {
        Some((a, b)) => (a.to_string(), Some(b.trim().to_string())),
        None => (lower.clone(), None),
    };
    let named = |w: &str| -> Option<(u32, u32, u32)> {
        match w {
            "midnight" => Some((0, 0, 0)),
            "noon" => Some((12, 0, 0)),
            "fika" => Some((15, 0, 0)),
            "teatime" => Some((16, 0, 0)),
            _ => None,
        }
    };
    let clock = parse_clock(&clock_part).or_else(|| named(&clock_part));
    if let Some((h, m, sec)) = clock {
        let day_offset = match day_part.as_deref() {
            None => {
                // Next occurrence of that time (midnight is always tomorrow).
                let t = at(today.year, today.month, today.day, h, m, sec)?;
                if t <= now || clock_part == "midnight" {
                    1
                } else {
                    0
                }
            }
            Some("today") => 0,
            Some("tomorrow") => 1,
            Some(_) => return None,
        };
        return at(today.year, today.month, today.day + day_offset, h, m, sec);
    }
    if day_part.is_some() {
        return None;
    }
    match lower.as_str() {
        "today" => return at(today.year, today.month, today.day, 0, 0, 0),
        "tomorrow" => return at(today.year, today.month, today.day + 1, 0, 0, 0),
        _ => {}
    }
    // YYYY-MM-DD[THH:MM[:SS]]
    let (date, time) = match lower.split_once('t') {
        Some((d, t)) => (d, Some(t)),
        None => (lower.as_str(), None),
    };
    let (h, mi, se) = match time {
        Some(t) => {
            let parts: Vec<&str> = t.split(':').collect();
            match parts.as_slice() {
                [h] => (num(h)? as u32, 0, 0),
                [h, m] => (num(h)? as u32, num(m)? as u32, 0),
                [h, m, s] => (num(h)? as u32, num(m)? as u32, num(s)? as u32),
                _ => return None,
            }
        }
        None => (0, 0, 0),
    };
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let dparts: Vec<&str> = date.split('-').collect();
    if let [y, mo, d] = dparts.as_slice() {
        let (y, mo, d) = (num(y)? as i32, num(mo)? as u32, num(d)? as u32);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || !(1970..=9999).contains(&y) {
            return None;
        }
        return at(y, mo, d, h, mi, se);
    }
    if time.is_some() {
        return None;
    }
    // MM/DD[/YY]
    let sparts: Vec<&str> = date.split('/').collect();
    let (mo, d, y) = match sparts.as_slice() {
        [mo, d] => (num(mo)? as u32, num(d)? as u32, today.year),
        [mo, d, y] => {
            let y = num(y)? as i32;
            (
                num(mo)? as u32,
                num(d)? as u32,
                if y < 100 { 2000 + y } else { y },
            )
        }
        _ => return None,
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    at(y, mo, d, 0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let f = |s: i64| secs_short(s);
        assert_eq!(f(0), "0:00");
        assert_eq!(f(65), "1:05");
        assert_eq!(f(3600), "1:00:00");
        assert_eq!(f(86400 + 61), "1-00:01:01");
        let mut s = String::new();
        push_secs_short(&mut s, -5, true);
        assert_eq!(s, "INVALID");
        assert_eq!(secs2time_str(5), "00:00:05");
        assert_eq!(secs2time_str(90061), "1-01:01:01");
        assert_eq!(mins2time_str(60), "01:00:00");
        assert_eq!(mins2time_str(INFINITE), "UNLIMITED");
        assert_eq!(mins2time_str(2880), "2-00:00:00");
    }

    #[test]
    fn time_limits() {
        assert_eq!(parse_time_limit("30"), Some(30));
        assert_eq!(parse_time_limit("0:5:0"), Some(5));
        assert_eq!(parse_time_limit("0-00:05:00"), Some(5));
        assert_eq!(parse_time_limit("1:30"), Some(2));
        assert_eq!(parse_time_limit("2-0"), Some(2880));
        assert_eq!(parse_time_limit("1-2:3"), Some(1440 + 120 + 3));
        assert_eq!(parse_time_limit("UNLIMITED"), Some(INFINITE));
        assert_eq!(parse_time_limit("infinite"), Some(INFINITE));
        assert_eq!(parse_time_limit("-1"), Some(INFINITE));
        for bad in [
            "",
            "abc",
            "1:2:3:4",
            "1-",
            "-5",
            "1-2:3:4:5",
            "5x",
            ":5",
            "99999999999999",
        ] {
            assert_eq!(parse_time_limit(bad), None, "{bad}");
        }
    }

    #[test]
    fn ctime_and_iso() {
        let tm = Tm {
            year: 2024,
            month: 1,
            day: 9,
            hour: 7,
            min: 5,
            sec: 3,
            wday: 2,
        };
        assert_eq!(fmt_iso(&tm), "2024-01-09T07:05:03");
        assert_eq!(fmt_ctime(&tm), "Tue Jan 09 07:05:03 2024");
        assert_eq!(make_time_str(0), "Unknown");
    }

    #[test]
    fn begin_times() {
        let now = 1_700_000_000;
        assert_eq!(parse_begin("now", now), Some(now));
        assert_eq!(parse_begin("now+60", now), Some(now + 60));
        assert_eq!(parse_begin("now+1hour", now), Some(now + 3600));
        assert_eq!(parse_begin("now+2days", now), Some(now + 2 * 86400));
        assert_eq!(parse_begin("now+5minutes", now), Some(now + 300));
        assert!(parse_begin("now+5parsecs", now).is_none());
        let t = parse_begin("2030-01-02T03:04:05", now).unwrap();
        assert_eq!(fmt_iso(&localtime(t)), "2030-01-02T03:04:05");
        let t = parse_begin("2030-01-02", now).unwrap();
        assert_eq!(fmt_iso(&localtime(t)), "2030-01-02T00:00:00");
        // A clock time is the next occurrence.
        let t = parse_begin("16:00", now).unwrap();
        assert!(t > now && t <= now + 86400 + 3600);
        assert_eq!(localtime(t).hour, 16);
        let t = parse_begin("midnight", now).unwrap();
        assert!(t > now);
        assert_eq!(localtime(t).hour, 0);
        let t = parse_begin("tomorrow", now).unwrap();
        assert!(t > now);
        assert!(parse_begin("noon", now).unwrap() > now);
        assert!(parse_begin("4:30pm", now).is_some());
        for bad in [
            "",
            "garbage",
            "25:00",
            "2030-13-01",
            "13/45",
            "now-5",
            "12:00 someday",
        ] {
            assert!(parse_begin(bad, now).is_none(), "{bad}");
        }
    }
}
