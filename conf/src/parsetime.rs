//! Slurm's `parse_time` (src/common/parse_time.c), ported: the texts of
//! `--begin`, `--deadline`, `sacct -S/-E`, `scontrol update StartTime=`.
//! Words and numbers may come in any order, separated by blanks, `-` or
//! `T`: `today`, `tomorrow`, `midnight`, `noon`, `fika` (15:00), `teatime`
//! (16:00), `now[{+|-}N[seconds|minutes|hours|days|weeks]]`,
//! `HH:MM[:SS] [AM|PM]`, `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`,
//! `YYYY-MM-DD`, `uts<unix seconds>`; so `noon-tomorrow`,
//! `2024-05-01T12:00` and `now+1hour` all parse. A time without a date is
//! its soonest occurrence (today when `past`), a date without a year the
//! next one (this year when `past`). Pure: `now` and the zone come in.

use crate::datetime::Zone;

const UNITS: &[(&str, i64)] = &[
    ("seconds", 1),
    ("second", 1),
    ("minutes", 60),
    ("minute", 60),
    ("hours", 3600),
    ("hour", 3600),
    ("days", 86400),
    ("day", 86400),
    ("weeks", 7 * 86400),
    ("week", 7 * 86400),
];

/// The C string view: NUL past the end.
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn starts_ci(b: &[u8], i: usize, word: &str) -> bool {
    b.len() >= i + word.len() && b[i..i + word.len()].eq_ignore_ascii_case(word.as_bytes())
}

fn digit(c: u8) -> Option<i64> {
    c.is_ascii_digit().then(|| i64::from(c - b'0'))
}

/// `{+|-}count[unit]` from the sign at `pos`: (last position used, count
/// in seconds).
fn get_delta(b: &[u8], pos: usize) -> Result<(usize, i64), usize> {
    let mut cnt: i64 = 0;
    let mut digits = 0;
    let mut off = pos + 1;
    while off < b.len() && b[off] != b'\n' {
        if b[off].is_ascii_whitespace() {
            off += 1;
            continue;
        }
        if let Some((name, mult)) = UNITS.iter().find(|(n, _)| starts_ci(b, off, n)) {
            off += name.len();
            cnt = cnt.checked_mul(*mult).ok_or(off - 1)?;
            break;
        }
        match digit(b[off]) {
            Some(d) => {
                cnt = cnt
                    .checked_mul(10)
                    .and_then(|c| c.checked_add(d))
                    .ok_or(off)?;
                digits += 1;
                off += 1;
            }
            None => return Err(off.saturating_sub(1)),
        }
    }
    if digits == 0 {
        return Err(pos);
    }
    Ok((off - 1, cnt))
}

/// `HH:MM[:SS] [AM|PM]` at `pos`: (last position used, h, m, s).
fn get_time(b: &[u8], pos: usize) -> Result<(usize, i64, i64, i64), usize> {
    let mut off = pos;
    let mut hr = digit(at(b, off)).ok_or(off)?;
    off += 1;
    if at(b, off) != b':' {
        hr = hr * 10 + digit(at(b, off)).ok_or(off)?;
        off += 1;
    }
    if hr > 23 || at(b, off) != b':' {
        return Err(off);
    }
    off += 1;
    let two = |off: &mut usize| -> Result<i64, usize> {
        let a = digit(at(b, *off)).ok_or(*off)?;
        let c = digit(at(b, *off + 1)).ok_or(*off + 1)?;
        *off += 2;
        Ok(a * 10 + c)
    };
    let min = two(&mut off)?;
    if min > 59 {
        return Err(off - 2);
    }
    let mut sec = 0;
    if at(b, off) == b':' {
        off += 1;
        sec = two(&mut off)?;
        if sec > 59 {
            return Err(off - 2);
        }
    }
    while at(b, off).is_ascii_whitespace() && off < b.len() {
        off += 1;
    }
    if starts_ci(b, off, "pm") {
        hr += 12;
        if hr > 23 {
            if hr == 24 {
                hr = 12;
            } else {
                return Err(off);
            }
        }
        off += 2;
    } else if starts_ci(b, off, "am") {
        if hr > 11 {
            if hr == 12 {
                hr = 0;
            } else {
                return Err(off);
            }
        }
        off += 2;
    }
    Ok((off - 1, hr, min, sec))
}

/// A date at `pos`: (last position used, month 0-11, day, year or None).
fn get_date(b: &[u8], pos: usize) -> Result<(usize, i64, i64, Option<i64>), usize> {
    let mut off = pos;
    if b.len() >= pos + 7 && at(b, pos + 4) == b'-' && at(b, pos + 7) == b'-' {
        let mut yr = 0;
        for _ in 0..4 {
            yr = yr * 10 + digit(at(b, off)).ok_or(off)?;
            off += 1;
        }
        off += 1;
        let mut mon = digit(at(b, off)).ok_or(off)?;
        off += 1;
        if let Some(d) = digit(at(b, off)) {
            mon = mon * 10 + d;
            off += 1;
        }
        if !(1..=12).contains(&mon) {
            return Err(off.saturating_sub(2));
        }
        off += 1;
        let mut day = digit(at(b, off)).ok_or(off)?;
        off += 1;
        if let Some(d) = digit(at(b, off)) {
            day = day * 10 + d;
            off += 1;
        }
        if !(1..=31).contains(&day) {
            return Err(off.saturating_sub(2));
        }
        return Ok((off - 1, mon - 1, day, Some(yr)));
    }
    let mut mon = digit(at(b, off)).ok_or(off)?;
    off += 1;
    if let Some(d) = digit(at(b, off)) {
        mon = mon * 10 + d;
        off += 1;
    }
    if !(1..=12).contains(&mon) {
        return Err(off.saturating_sub(2));
    }
    if matches!(at(b, off), b'.' | b'/') {
        off += 1;
    }
    let mut day = digit(at(b, off)).ok_or(off)?;
    off += 1;
    if let Some(d) = digit(at(b, off)) {
        day = day * 10 + d;
        off += 1;
    }
    if !(1..=31).contains(&day) {
        return Err(off.saturating_sub(2));
    }
    if matches!(at(b, off), b'.' | b'/') {
        off += 1;
    }
    let mut year = None;
    if let Some(a) = digit(at(b, off)) {
        off += 1;
        let c = digit(at(b, off)).ok_or(off)?;
        off += 1;
        year = Some(2000 + a * 10 + c);
    }
    Ok((off - 1, mon - 1, day, year))
}

/// Parse a Slurm time text; `Err(pos)` where Slurm would say
/// `Invalid time specification (pos=POS): TEXT`. `Ok(None)`: nothing given
/// (Slurm's time 0).
pub fn parse_time(s: &str, past: bool, now: i64, zone: &dyn Zone) -> Result<Option<i64>, usize> {
    let b = s.as_bytes();
    if starts_ci(b, 0, "uts") {
        let n: i64 = s[3..].parse().map_err(|_| 0usize)?;
        return if n < 1_000_000 { Err(0) } else { Ok(Some(n)) };
    }
    let today = zone.to_tm(now);
    let tomorrow = zone.to_tm(now + 86400);
    let (mut hour, mut minute, mut second) = (-1i64, -1i64, 0i64);
    let (mut month, mut mday, mut year): (i64, i64, Option<i64>) = (-1, -1, None);
    let mut pos = 0usize;
    while pos < b.len() && b[pos] != b'\n' {
        let c = b[pos];
        if c == b' ' || c == b'\t' || c == b'-' || c == b'T' {
            pos += 1;
            continue;
        }
        let words: [(&str, Option<(i64, i64)>); 6] = [
            ("today", None),
            ("tomorrow", None),
            ("midnight", Some((0, 0))),
            ("noon", Some((12, 0))),
            ("fika", Some((15, 0))),
            ("teatime", Some((16, 0))),
        ];
        if let Some((w, clock)) = words.iter().find(|(w, _)| starts_ci(b, pos, w)) {
            match (w, clock) {
                (_, Some((h, m))) => {
                    (hour, minute, second) = (*h, *m, 0);
                }
                (&"today", None) => {
                    (month, mday, year) = (
                        i64::from(today.month) - 1,
                        i64::from(today.day),
                        Some(i64::from(today.year)),
                    );
                }
                _ => {
                    (month, mday, year) = (
                        i64::from(tomorrow.month) - 1,
                        i64::from(tomorrow.day),
                        Some(i64::from(tomorrow.year)),
                    );
                }
            }
            pos += w.len();
            continue;
        }
        if starts_ci(b, pos, "now") {
            let mut delta = 0i64;
            let mut i = pos + 3;
            loop {
                match at(b, i) {
                    b'+' | b'-' => {
                        let (end, d) = get_delta(b, i)?;
                        delta = if at(b, i) == b'-' { -d } else { d };
                        i = end;
                        break;
                    }
                    b' ' | b'\t' => i += 1,
                    0 | b'\n' => {
                        i -= 1;
                        break;
                    }
                    _ => return Err(i),
                }
            }
            let later = zone.to_tm(now.checked_add(delta).ok_or(i)?);
            month = i64::from(later.month) - 1;
            mday = i64::from(later.day);
            year = Some(i64::from(later.year));
            hour = i64::from(later.hour);
            minute = i64::from(later.min);
            second = i64::from(later.sec);
            pos = i + 1;
            continue;
        }
        if !c.is_ascii_digit() {
            return Err(pos);
        }
        if at(b, pos + 1) == b':' || at(b, pos + 2) == b':' {
            let (end, h, m, sec) = get_time(b, pos)?;
            (hour, minute, second) = (h, m, sec);
            pos = end + 1;
            continue;
        }
        let (end, mo, d, y) = get_date(b, pos)?;
        (month, mday) = (mo, d);
        if y.is_some() {
            year = y;
        }
        pos = end + 1;
    }
    if hour == -1 && month == -1 {
        return Ok(None);
    }
    let (th, tm) = (i64::from(today.hour), i64::from(today.min));
    let (tmon, tday) = (i64::from(today.month) - 1, i64::from(today.day));
    if hour == -1 {
        (hour, minute) = (0, 0);
    } else if month == -1 {
        let t = if past || hour > th || (hour == th && minute > tm) {
            today
        } else {
            tomorrow
        };
        (month, mday, year) = (
            i64::from(t.month) - 1,
            i64::from(t.day),
            Some(i64::from(t.year)),
        );
    }
    let year = match year {
        Some(y) => y,
        None if past => i64::from(today.year) - i64::from(month > tmon),
        None => {
            let later = (month, mday, hour, minute) > (tmon, tday, th, tm);
            i64::from(today.year) + i64::from(!later)
        }
    };
    let i = |v: i64| i32::try_from(v).map_err(|_| pos);
    zone.to_unix(
        i(year)?,
        i(month)?,
        i(mday)?,
        i(hour)?,
        i(minute)?,
        i(second)?,
    )
    .map(Some)
    .ok_or(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datetime::{fmt_iso, Utc};

    /// 2023-11-14T22:13:20Z, a Tuesday.
    const NOW: i64 = 1_700_000_000;

    fn iso(s: &str, past: bool) -> String {
        match parse_time(s, past, NOW, &Utc) {
            Ok(Some(t)) => fmt_iso(&Utc.to_tm(t)),
            Ok(None) => "zero".into(),
            Err(p) => format!("err@{p}"),
        }
    }

    #[test]
    fn every_form_of_the_man_page() {
        let f = |s| iso(s, false);
        assert_eq!(f("now"), "2023-11-14T22:13:20");
        assert_eq!(f("now+1hour"), "2023-11-14T23:13:20");
        assert_eq!(f("now + 60"), "2023-11-14T22:14:20");
        assert_eq!(f("now+2days"), "2023-11-16T22:13:20");
        assert_eq!(f("now-1week"), "2023-11-07T22:13:20");
        assert_eq!(f("noon-tomorrow"), "2023-11-15T12:00:00");
        assert_eq!(f("noon tomorrow"), "2023-11-15T12:00:00");
        assert_eq!(f("teatime"), "2023-11-15T16:00:00");
        assert_eq!(f("fika today"), "2023-11-14T15:00:00");
        assert_eq!(f("midnight"), "2023-11-15T00:00:00");
        assert_eq!(f("23:00"), "2023-11-14T23:00:00");
        assert_eq!(f("22:13"), "2023-11-15T22:13:00");
        assert_eq!(f("4:30 PM"), "2023-11-15T16:30:00");
        assert_eq!(f("12:00am"), "2023-11-15T00:00:00");
        assert_eq!(f("2030-01-02T03:04:05"), "2030-01-02T03:04:05");
        assert_eq!(f("2030-01-02"), "2030-01-02T00:00:00");
        assert_eq!(f("123124"), "2024-12-31T00:00:00");
        assert_eq!(f("12/25"), "2023-12-25T00:00:00");
        // A date already past this year is next year's.
        assert_eq!(f("01/02"), "2024-01-02T00:00:00");
        assert_eq!(f("12.25.24"), "2024-12-25T00:00:00");
        assert_eq!(f("12/25/24-10:30"), "2024-12-25T10:30:00");
        assert_eq!(f("tomorrow"), "2023-11-15T00:00:00");
        assert_eq!(f("uts1700000100"), "2023-11-14T22:15:00");
        assert_eq!(f(""), "zero");
        for bad in [
            "garbage",
            "25:00",
            "13:00pm",
            "2030-13-01",
            "13/45",
            "now+",
            "now+5parsecs",
            "12:00 someday",
            "now*2",
        ] {
            assert!(f(bad).starts_with("err@"), "{bad}: {}", f(bad));
        }
        assert_eq!(f("now+5parsecs"), "err@4");
    }

    #[test]
    fn past_means_today_and_this_year() {
        assert_eq!(iso("00:00", true), "2023-11-14T00:00:00");
        assert_eq!(iso("00:00", false), "2023-11-15T00:00:00");
        assert_eq!(iso("12/25", true), "2022-12-25T00:00:00");
        assert_eq!(iso("01/02", true), "2023-01-02T00:00:00");
    }
}
