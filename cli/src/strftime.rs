//! `SLURM_TIME_FORMAT`: how every command prints a time (Slurm's
//! `slurm_make_time_str`): unset or `standard` is ISO 8601
//! (`2024-01-31T12:00:00`), `relative` is Slurm's space-saving form
//! relative to today (`Ystday 20:13`, `12:26:38`, `Tomorr 03:22`,
//! `Sat 02:17`, `18 Jun 13:14`, `19 Jan 2003`), anything else with a `%`
//! is a strftime(3) format. Pure.

use std::fmt::Write;

use drover_conf::datetime::Tm;

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Day of the year, 1-366.
pub fn yday(tm: &Tm) -> u32 {
    const CUM: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let m = (tm.month.clamp(1, 12) - 1) as usize;
    CUM[m] + tm.day + u32::from(m >= 2 && leap(tm.year))
}

/// The format the variable asks for: `None` for ISO (unset, empty or
/// `standard`), `Err` (Slurm's complaint, then ISO) for text without `%`
/// or of 32 bytes or more.
pub fn chosen(var: Option<&str>) -> Result<Option<String>, String> {
    match var {
        None | Some("") | Some("standard") => Ok(None),
        Some(f) if f == "relative" || (f.contains('%') && f.len() < 32) => Ok(Some(f.to_string())),
        Some(f) => Err(format!("invalid SLURM_TIME_FORMAT = '{f}'")),
    }
}

/// Slurm's `_relative_date_fmt`: the strftime format for `when` as seen
/// from `today`.
pub fn relative_fmt(when: &Tm, today: &Tm) -> &'static str {
    let num = |t: &Tm| 1000 * i64::from(t.year) + i64::from(yday(t)) - 1;
    let distance = num(when) - num(today);
    match distance {
        -1 => "Ystday %H:%M",
        0 => "%H:%M:%S",
        1 => "Tomorr %H:%M",
        d if !(-365..=365).contains(&d) => "%-d %b %Y",
        d if !(-1..=6).contains(&d) => "%-d %b %H:%M",
        _ => "%a %H:%M",
    }
}

/// strftime(3) for the conversions Slurm sites use; an unknown one is
/// copied as it is.
pub fn strftime(fmt: &str, tm: &Tm) -> String {
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // glibc's `-` flag: no padding.
        let mut c = chars.next();
        let mut pad = true;
        if c == Some('-') {
            pad = false;
            c = chars.next();
        }
        let two = |out: &mut String, v: u32| {
            if pad {
                let _ = write!(out, "{v:02}");
            } else {
                let _ = write!(out, "{v}");
            }
        };
        let h12 = if tm.hour.is_multiple_of(12) {
            12
        } else {
            tm.hour % 12
        };
        match c {
            Some('Y') => {
                let _ = write!(out, "{}", tm.year);
            }
            Some('y') => two(&mut out, tm.year.rem_euclid(100) as u32),
            Some('C') => two(&mut out, (tm.year / 100) as u32),
            Some('m') => two(&mut out, tm.month),
            Some('d') => two(&mut out, tm.day),
            Some('e') => {
                let _ = write!(out, "{:>2}", tm.day);
            }
            Some('H') => two(&mut out, tm.hour),
            Some('k') => {
                let _ = write!(out, "{:>2}", tm.hour);
            }
            Some('I') => two(&mut out, h12),
            Some('l') => {
                let _ = write!(out, "{h12:>2}");
            }
            Some('M') => two(&mut out, tm.min),
            Some('S') => two(&mut out, tm.sec),
            Some('p') => out.push_str(if tm.hour < 12 { "AM" } else { "PM" }),
            Some('P') => out.push_str(if tm.hour < 12 { "am" } else { "pm" }),
            Some('b') | Some('h') => {
                out.push_str(&MONTHS[(tm.month.clamp(1, 12) - 1) as usize][..3])
            }
            Some('B') => out.push_str(MONTHS[(tm.month.clamp(1, 12) - 1) as usize]),
            Some('a') => out.push_str(&DAYS[(tm.wday % 7) as usize][..3]),
            Some('A') => out.push_str(DAYS[(tm.wday % 7) as usize]),
            Some('u') => {
                let _ = write!(out, "{}", if tm.wday == 0 { 7 } else { tm.wday });
            }
            Some('w') => {
                let _ = write!(out, "{}", tm.wday);
            }
            Some('j') => {
                if pad {
                    let _ = write!(out, "{:03}", yday(tm));
                } else {
                    let _ = write!(out, "{}", yday(tm));
                }
            }
            Some('F') => out.push_str(&strftime("%Y-%m-%d", tm)),
            Some('T') => out.push_str(&strftime("%H:%M:%S", tm)),
            Some('R') => out.push_str(&strftime("%H:%M", tm)),
            Some('D') => out.push_str(&strftime("%m/%d/%y", tm)),
            Some('r') => out.push_str(&strftime("%I:%M:%S %p", tm)),
            Some('c') => out.push_str(&strftime("%a %b %e %H:%M:%S %Y", tm)),
            Some('x') => out.push_str(&strftime("%m/%d/%y", tm)),
            Some('X') => out.push_str(&strftime("%H:%M:%S", tm)),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                if !pad {
                    out.push('-');
                }
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tm(year: i32, month: u32, day: u32, hour: u32, min: u32, sec: u32, wday: u32) -> Tm {
        Tm {
            year,
            month,
            day,
            hour,
            min,
            sec,
            wday,
        }
    }

    #[test]
    fn formats() {
        let t = tm(2024, 3, 5, 14, 7, 9, 2);
        assert_eq!(strftime("%FT%T", &t), "2024-03-05T14:07:09");
        assert_eq!(strftime("%a %b %-d %I:%M%p %%", &t), "Tue Mar 5 02:07PM %");
        assert_eq!(strftime("%j %e %y %D %R", &t), "065  5 24 03/05/24 14:07");
        assert_eq!(strftime("%Q", &t), "%Q");
        assert_eq!(yday(&tm(2023, 3, 1, 0, 0, 0, 0)), 60);
        assert_eq!(yday(&tm(2024, 12, 31, 0, 0, 0, 0)), 366);
    }

    #[test]
    fn choice_and_relative() {
        assert_eq!(chosen(None), Ok(None));
        assert_eq!(chosen(Some("standard")), Ok(None));
        assert_eq!(chosen(Some("relative")), Ok(Some("relative".into())));
        assert_eq!(chosen(Some("%H:%M")), Ok(Some("%H:%M".into())));
        assert_eq!(
            chosen(Some("iso")),
            Err("invalid SLURM_TIME_FORMAT = 'iso'".into())
        );
        let today = tm(2024, 3, 5, 12, 0, 0, 2);
        let rel = |t: &Tm| strftime(relative_fmt(t, &today), t);
        assert_eq!(rel(&tm(2024, 3, 5, 8, 1, 2, 2)), "08:01:02");
        assert_eq!(rel(&tm(2024, 3, 4, 20, 13, 0, 1)), "Ystday 20:13");
        assert_eq!(rel(&tm(2024, 3, 6, 3, 22, 0, 3)), "Tomorr 03:22");
        assert_eq!(rel(&tm(2024, 3, 9, 2, 17, 0, 6)), "Sat 02:17");
        assert_eq!(rel(&tm(2024, 6, 18, 13, 14, 0, 2)), "18 Jun 13:14");
        assert_eq!(rel(&tm(2003, 1, 19, 0, 0, 0, 0)), "19 Jan 2003");
    }
}
