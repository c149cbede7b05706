//! `sinfo -T/--reservation`: the reservations, in Slurm's
//! `print_sinfo_reservation` layout. Pure.

use drover_proto::ReservationInfo;

use crate::timefmt;

/// The listing: a header (unless `no_header`) sized to the longest name
/// (at least 9), one line per reservation, or Slurm's line for none.
pub fn render(out: &mut String, resvs: &[ReservationInfo], no_header: bool, now: i64) {
    if resvs.is_empty() {
        out.push_str("No reservations in the system\n");
        return;
    }
    let width = resvs
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let line = |out: &mut String, cols: [&str; 6]| {
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:>19}  {:>19}  {:>11}  {}\n",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
        ));
    };
    if !no_header {
        line(
            out,
            [
                "RESV_NAME",
                "STATE",
                "START_TIME",
                "END_TIME",
                "DURATION",
                "NODELIST",
            ],
        );
    }
    for r in resvs {
        let state = if r.start_time <= now && r.end_time >= now {
            "ACTIVE"
        } else {
            "INACTIVE"
        };
        let name = drover_proto::text::printable(&r.name);
        line(
            out,
            [
                &name,
                state,
                &timefmt::make_time_str(r.start_time),
                &timefmt::make_time_str(r.end_time),
                &timefmt::secs2time_str(r.end_time - r.start_time),
                &r.nodes,
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut out = String::new();
        render(&mut out, &[], false, 0);
        assert_eq!(out, "No reservations in the system\n");
        let r = |name: &str, s: i64, e: i64| ReservationInfo {
            name: name.into(),
            nodes: "n[1-2]".into(),
            start_time: s,
            end_time: e,
            ..Default::default()
        };
        let mut out = String::new();
        render(
            &mut out,
            &[
                r("maint", 100, 3700),
                r("a_longer_name", 5000, 5000 + 90_000),
            ],
            false,
            200,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "RESV_NAME         STATE           START_TIME             END_TIME     DURATION  NODELIST"
        );
        assert!(
            lines[1].starts_with("maint            ACTIVE  "),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("     01:00:00  n[1-2]"), "{}", lines[1]);
        assert!(
            lines[2].starts_with("a_longer_name  INACTIVE  "),
            "{}",
            lines[2]
        );
        assert!(lines[2].ends_with("   1-01:00:00  n[1-2]"), "{}", lines[2]);
        let mut out = String::new();
        render(&mut out, &[r("x", 1, 2)], true, 0);
        assert_eq!(out.lines().count(), 1);
    }
}
