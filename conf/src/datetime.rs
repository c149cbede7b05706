//! Slurm's date and time texts: the values of `sbatch --begin`/`--deadline`,
//! `sacct -S`/`-E`, `scontrol update StartTime=` (`now+1hour`, `16:00`,
//! `midnight`, `2024-05-01T12:00`, `MM/DD[/YY]`, ...) and the ISO / ctime
//! displays. Pure: the time zone comes in as a [`Zone`] (the commands pass
//! the C library's local zone, tests and daemons may use [`Utc`]).

/// Broken-down time in some zone.
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

/// A time zone: unix seconds to and from broken-down time.
pub trait Zone {
    /// The broken-down time of unix time `t`.
    fn to_tm(&self, t: i64) -> Tm;
    /// The unix time of a broken-down time; fields may overflow (day 32,
    /// hour 24) and are normalised as `mktime` does. `month0` is 0-based.
    fn to_unix(
        &self,
        year: i32,
        month0: i32,
        day: i32,
        hour: i32,
        min: i32,
        sec: i32,
    ) -> Option<i64>;
}

/// Coordinated Universal Time (no daylight saving: pure arithmetic).
#[derive(Debug, Clone, Copy, Default)]
pub struct Utc;

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month 1-12, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

impl Zone for Utc {
    fn to_tm(&self, t: i64) -> Tm {
        let days = t.div_euclid(86_400);
        let secs = t.rem_euclid(86_400);
        let (y, month, day) = civil_from_days(days);
        Tm {
            year: i32::try_from(y).unwrap_or(i32::MAX),
            month,
            day,
            hour: (secs / 3600) as u32,
            min: (secs / 60 % 60) as u32,
            sec: (secs % 60) as u32,
            wday: (days + 4).rem_euclid(7) as u32,
        }
    }

    fn to_unix(
        &self,
        year: i32,
        month0: i32,
        day: i32,
        hour: i32,
        min: i32,
        sec: i32,
    ) -> Option<i64> {
        let months = i64::from(year) * 12 + i64::from(month0);
        let (y, m0) = (months.div_euclid(12), months.rem_euclid(12));
        let days = days_from_civil(y, m0 + 1, 1) + i64::from(day) - 1;
        Some(days * 86_400 + i64::from(hour) * 3600 + i64::from(min) * 60 + i64::from(sec))
    }
}

/// `YYYY-MM-DDTHH:MM:SS`.
pub fn fmt_iso(tm: &Tm) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.year, tm.month, tm.day, tm.hour, tm.min, tm.sec
    )
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

/// Digits only, at most 12 of them.
fn num(s: &str) -> Option<u64> {
    if !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// The `N[unit]` after `now+`: `60`, `5minutes`, `1hour`, `2days`, `1week`
/// (units `s|sec|secs|second|seconds`, `m|min|mins|minute|minutes`,
/// `h|hour|hours`, `d|day|days`, `w|week|weeks`, any case; none: seconds)
/// -> seconds.
pub fn parse_offset(s: &str) -> Option<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = num(&s[..split])? as i64;
    let mult = match s[split..].trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86400,
        "w" | "week" | "weeks" => 7 * 86400,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Parse a `--begin`/`--deadline` value into unix seconds: Slurm's
/// `parse_time` (see [`crate::parsetime`]), looking ahead.
pub fn parse_begin(s: &str, now: i64, zone: &dyn Zone) -> Option<i64> {
    crate::parsetime::parse_time(s.trim(), false, now, zone)
        .ok()
        .flatten()
}

/// A query bound (`sacct -S/-E`): Slurm's `parse_time` looking back (a
/// time of day is today's, a date without a year this year's).
pub fn parse_query_time(s: &str, now: i64, zone: &dyn Zone) -> Option<i64> {
    crate::parsetime::parse_time(s.trim(), true, now, zone)
        .ok()
        .flatten()
}

/// The start (00:00:00) of the day `now` falls in.
pub fn midnight(now: i64, zone: &dyn Zone) -> i64 {
    let tm = zone.to_tm(now);
    now - i64::from(tm.hour * 3600 + tm.min * 60 + tm.sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-14T22:13:20Z, a Tuesday.
    const NOW: i64 = 1_700_000_000;

    fn iso(t: Option<i64>) -> String {
        t.map_or("none".into(), |t| fmt_iso(&Utc.to_tm(t)))
    }

    #[test]
    fn utc_conversions() {
        let tm = Utc.to_tm(NOW);
        assert_eq!(fmt_iso(&tm), "2023-11-14T22:13:20");
        assert_eq!(fmt_ctime(&tm), "Tue Nov 14 22:13:20 2023");
        assert_eq!(fmt_iso(&Utc.to_tm(0)), "1970-01-01T00:00:00");
        assert_eq!(Utc.to_tm(0).wday, 4);
        assert_eq!(fmt_iso(&Utc.to_tm(951_782_400)), "2000-02-29T00:00:00");
        assert_eq!(fmt_iso(&Utc.to_tm(-1)), "1969-12-31T23:59:59");
        assert_eq!(Utc.to_unix(2023, 10, 14, 22, 13, 20), Some(NOW));
        // overflowing fields normalise
        assert_eq!(
            Utc.to_unix(2023, 11, 32, 0, 0, 0),
            Utc.to_unix(2024, 0, 1, 0, 0, 0)
        );
        assert_eq!(
            Utc.to_unix(2024, 1, 29, 24, 0, 0),
            Utc.to_unix(2024, 2, 1, 0, 0, 0)
        );
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("60"), Some(60));
        assert_eq!(parse_offset("1hour"), Some(3600));
        assert_eq!(parse_offset("2DAYS"), Some(2 * 86400));
        assert_eq!(parse_offset("5minutes"), Some(300));
        assert_eq!(parse_offset("1w"), Some(7 * 86400));
        for bad in ["", "hour", "5parsecs", "-5", "1.5h", "9999999999999"] {
            assert_eq!(parse_offset(bad), None, "{bad}");
        }
    }

    #[test]
    fn begin_forms() {
        let p = |s: &str| parse_begin(s, NOW, &Utc);
        assert_eq!(p("now"), Some(NOW));
        assert_eq!(p("now+60"), Some(NOW + 60));
        assert_eq!(p("NOW+1hour"), Some(NOW + 3600));
        assert_eq!(iso(p("2030-01-02T03:04:05")), "2030-01-02T03:04:05");
        assert_eq!(iso(p("2030-01-02")), "2030-01-02T00:00:00");
        assert_eq!(iso(p("12/25")), "2023-12-25T00:00:00");
        assert_eq!(iso(p("12/25/24")), "2024-12-25T00:00:00");
        // a clock time is its next occurrence
        assert_eq!(iso(p("23:00")), "2023-11-14T23:00:00");
        assert_eq!(iso(p("16:00")), "2023-11-15T16:00:00");
        assert_eq!(iso(p("4:30pm")), "2023-11-15T16:30:00");
        assert_eq!(iso(p("12:00am")), "2023-11-15T00:00:00");
        assert_eq!(iso(p("16:00 today")), "2023-11-14T16:00:00");
        assert_eq!(iso(p("10:00 tomorrow")), "2023-11-15T10:00:00");
        assert_eq!(iso(p("midnight")), "2023-11-15T00:00:00");
        assert_eq!(iso(p("noon")), "2023-11-15T12:00:00");
        assert_eq!(iso(p("teatime")), "2023-11-15T16:00:00");
        assert_eq!(iso(p("today")), "2023-11-14T00:00:00");
        assert_eq!(iso(p("tomorrow")), "2023-11-15T00:00:00");
        // month ends roll over
        let dec31 = Utc.to_unix(2023, 11, 31, 23, 0, 0).unwrap();
        assert_eq!(
            iso(parse_begin("tomorrow", dec31, &Utc)),
            "2024-01-01T00:00:00"
        );
    }

    #[test]
    fn begin_errors() {
        for bad in [
            "",
            "garbage",
            "25:00",
            "13:00pm",
            "2030-13-01",
            "2030-01-01T24:00",
            "13/45",
            "2030-01-02T03",
            "now+",
            "now+5parsecs",
            "12:00 someday",
            "1/1/99999",
            "99999999999999/1",
        ] {
            assert_eq!(parse_begin(bad, NOW, &Utc), None, "{bad}");
        }
    }

    #[test]
    fn query_times() {
        let q = |s: &str| parse_query_time(s, NOW, &Utc);
        assert_eq!(q("now-2hours"), Some(NOW - 7200));
        assert_eq!(q("now+1day"), Some(NOW + 86400));
        assert_eq!(iso(q("2023-11-01")), "2023-11-01T00:00:00");
        assert_eq!(q("now-x"), None);
        assert_eq!(iso(Some(midnight(NOW, &Utc))), "2023-11-14T00:00:00");
    }
}
