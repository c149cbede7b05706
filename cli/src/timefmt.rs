//! The commands' side of Slurm's time texts: the C library's local time
//! zone (a [`Zone`] for `drover_conf::datetime`), the current time, and the
//! displays of Drover's sentinels (0 = `Unknown`, INFINITE = `UNLIMITED`,
//! out of range = `INVALID`). The parsers and formatters themselves are
//! `drover_conf::units` (durations) and `drover_conf::datetime` (dates).

use drover_conf::datetime::{fmt_iso, Tm, Zone};
use drover_conf::units;
use drover_proto::INFINITE;

/// The C library's local time zone (`TZ`, /etc/localtime).
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Zone for Local {
    fn to_tm(&self, t: i64) -> Tm {
        let Some((year, month, day, hour, min, sec, wday)) = crate::sys::localtime(t) else {
            return Tm::default();
        };
        Tm {
            year,
            month: month.clamp(1, 12) as u32,
            day: day.max(0) as u32,
            hour: hour.max(0) as u32,
            min: min.max(0) as u32,
            sec: sec.max(0) as u32,
            wday: wday.clamp(0, 6) as u32,
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
        crate::sys::mktime(year, month0, day, hour, min, sec)
    }
}

/// Local time of a unix timestamp.
pub fn localtime(t: i64) -> Tm {
    Local.to_tm(t)
}

pub fn now() -> i64 {
    drover_proto::auth::now_secs()
}

/// Slurm's `slurm_make_time_str`: local time as `SLURM_TIME_FORMAT` asks
/// (ISO by default; see [`crate::strftime`]), `Unknown` for 0/INFINITE.
pub fn make_time_str(t: i64) -> String {
    if t == 0 || t == i64::from(INFINITE) || t < 0 {
        return "Unknown".to_string();
    }
    let tm = localtime(t);
    match time_format() {
        None => fmt_iso(&tm),
        Some("relative") => {
            let today = localtime(now());
            crate::strftime::strftime(crate::strftime::relative_fmt(&tm, &today), &tm)
        }
        Some(f) => crate::strftime::strftime(f, &tm),
    }
}

/// `SLURM_TIME_FORMAT`, read once; a bad value is Slurm's complaint (once)
/// and the standard form.
fn time_format() -> Option<&'static str> {
    static FORMAT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FORMAT
        .get_or_init(|| {
            let var = std::env::var("SLURM_TIME_FORMAT").ok();
            match crate::strftime::chosen(var.as_deref()) {
                Ok(f) => f,
                Err(m) => {
                    eprintln!("{}: error: {m}", program());
                    None
                }
            }
        })
        .as_deref()
}

/// The command's name as Slurm prefixes its messages (`squeue`, also when
/// run as `drover squeue`).
fn program() -> String {
    let mut args = std::env::args();
    let first = args.next().unwrap_or_default();
    let base = first.rsplit('/').next().unwrap_or("").to_string();
    if base == "drover" {
        args.next().unwrap_or(base)
    } else {
        base
    }
}

/// squeue/sinfo elapsed style (`M:SS`, `H:MM:SS`, `D-HH:MM:SS`); with
/// `check`, negative or more than a year prints `INVALID` (squeue's rule).
pub fn push_secs_short(out: &mut String, secs: i64, check: bool) {
    if check && !(0..=365 * 24 * 3600).contains(&secs) {
        out.push_str("INVALID");
        return;
    }
    units::push_elapsed(out, secs.max(0) as u64);
}

/// scontrol style: `HH:MM:SS` or `D-HH:MM:SS`; negative is `INVALID`.
pub fn secs2time_str(secs: i64) -> String {
    if secs < 0 {
        return "INVALID".to_string();
    }
    units::format_hms(secs as u64)
}

/// Minutes in scontrol style; INFINITE is `UNLIMITED`.
pub fn mins2time_str(mins: u32) -> String {
    if mins == INFINITE {
        "UNLIMITED".to_string()
    } else {
        secs2time_str(i64::from(mins) * 60)
    }
}

/// A time limit (`-t`, `--time-min`) in minutes, INFINITE for unlimited;
/// None when invalid.
pub fn parse_time_limit(s: &str) -> Option<u32> {
    units::parse_time_minutes(s)
        .ok()
        .map(|m| m.unwrap_or(INFINITE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let mut s = String::new();
        push_secs_short(&mut s, 65, true);
        assert_eq!(s, "1:05");
        s.clear();
        push_secs_short(&mut s, -5, true);
        assert_eq!(s, "INVALID");
        s.clear();
        push_secs_short(&mut s, -5, false);
        assert_eq!(s, "0:00");
        assert_eq!(secs2time_str(5), "00:00:05");
        assert_eq!(secs2time_str(90061), "1-01:01:01");
        assert_eq!(secs2time_str(-1), "INVALID");
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
    fn local_zone_round_trips() {
        let t = 1_700_000_000;
        let tm = localtime(t);
        let back = Local.to_unix(
            tm.year,
            tm.month as i32 - 1,
            tm.day as i32,
            tm.hour as i32,
            tm.min as i32,
            tm.sec as i32,
        );
        assert_eq!(back, Some(t));
        assert_eq!(make_time_str(0), "Unknown");
        assert_eq!(make_time_str(t), fmt_iso(&tm));
        let b = drover_conf::datetime::parse_begin("2030-01-02T03:04:05", t, &Local);
        assert_eq!(
            b.map(|x| fmt_iso(&localtime(x))).as_deref(),
            Some("2030-01-02T03:04:05")
        );
    }
}
