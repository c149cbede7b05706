//! `scontrol create|update|delete reservation` and `show reservation`.

use drover_conf::Config;
use drover_proto::{
    DeleteReservationRequest, GetReservationsRequest, ReservationInfo, ReservationRequest,
};

use crate::conn;
use crate::timefmt::{make_time_str, secs2time_str, Local};
use drover_conf::datetime::parse_begin;

/// What to do with reservations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResvOp {
    Create(Vec<String>),
    Update(Vec<String>),
    Delete(String),
    Show(Option<String>),
}

/// Turn local times into epoch seconds so the controller reads one form.
pub fn absolute(words: &[String], now: i64) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Err(format!("Invalid input: {w}"));
        };
        let key = k.trim().to_ascii_lowercase();
        if key == "starttime" || key == "endtime" {
            let t = parse_begin(v, now, &Local)
                .ok_or_else(|| format!("Invalid time specification: {v}"))?;
            out.push(format!("{k}={t}"));
        } else {
            out.push(w.clone());
        }
    }
    Ok(out)
}

fn or_null(v: &[String]) -> String {
    if v.is_empty() {
        "(null)".into()
    } else {
        v.join(",")
    }
}

/// One reservation the way `scontrol show reservation` prints it.
pub fn format_resv(r: &ReservationInfo, now: i64, one_liner: bool) -> String {
    let sep = if one_liner { " " } else { "\n   " };
    let state = if r.start_time <= now && r.end_time > now {
        "ACTIVE"
    } else {
        "INACTIVE"
    };
    let end = if r.end_time >= i64::MAX / 8 {
        "Unknown".to_string()
    } else {
        make_time_str(r.end_time)
    };
    let dur = if r.end_time >= i64::MAX / 8 {
        "UNLIMITED".to_string()
    } else {
        secs2time_str(r.end_time - r.start_time)
    };
    let mut s = format!(
        "ReservationName={} StartTime={} EndTime={end} Duration={dur}",
        drover_proto::text::printable(&r.name),
        make_time_str(r.start_time)
    );
    s.push_str(sep);
    s.push_str(&format!(
        "Nodes={} NodeCnt={} CoreCnt=0 Features=(null) PartitionName={} Flags={}",
        if r.nodes.is_empty() {
            "(null)"
        } else {
            &r.nodes
        },
        r.node_cnt,
        if r.partition.is_empty() {
            "(null)"
        } else {
            &r.partition
        },
        if r.flags.is_empty() {
            String::new()
        } else {
            r.flags.join(",")
        }
    ));
    s.push_str(sep);
    s.push_str(&format!(
        "Users={} Groups=(null) Accounts={} Licenses=(null) State={state} BurstBuffer=(null) Watts=n/a",
        drover_proto::text::printable(&or_null(&r.users)),
        drover_proto::text::printable(&or_null(&r.accounts))
    ));
    s.push_str(sep);
    s.push_str("MaxStartDelay=(null)");
    s.push('\n');
    s
}

pub async fn run(cfg: &Config, op: ResvOp, one_liner: bool, quiet: bool) -> i32 {
    let mut c = match conn::scheduler_for("scontrol", cfg) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    let now = crate::timefmt::now();
    let fail = |what: &str, st: &tonic::Status| {
        if !quiet {
            conn::report("scontrol", what, st);
        }
        1
    };
    match op {
        ResvOp::Create(words) => {
            let args = match absolute(&words, now) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("Error creating the reservation: {e}");
                    return 1;
                }
            };
            match c.create_reservation(ReservationRequest { args }).await {
                Ok(r) => {
                    println!("Reservation created: {}", r.into_inner().name);
                    0
                }
                Err(st) => fail("Error creating the reservation: ", &st),
            }
        }
        ResvOp::Update(words) => {
            let args = match absolute(&words, now) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("Error updating the reservation: {e}");
                    return 1;
                }
            };
            match c.update_reservation(ReservationRequest { args }).await {
                Ok(_) => {
                    println!("Reservation updated.");
                    0
                }
                Err(st) => fail("Error updating the reservation: ", &st),
            }
        }
        ResvOp::Delete(name) => match c
            .delete_reservation(DeleteReservationRequest { name: name.clone() })
            .await
        {
            Ok(_) => 0,
            Err(st) => fail(&format!("Error deleting the reservation {name}: "), &st),
        },
        ResvOp::Show(name) => {
            let req = GetReservationsRequest {
                name: name.clone().unwrap_or_default(),
            };
            match c.get_reservations(req).await {
                Ok(r) => {
                    let r = r.into_inner();
                    if r.reservations.is_empty() {
                        println!("No reservations in the system");
                    }
                    let mut first = true;
                    for x in &r.reservations {
                        if !first && !one_liner {
                            println!();
                        }
                        first = false;
                        print!("{}", format_resv(x, r.now, one_liner));
                    }
                    0
                }
                Err(st) if st.code() == tonic::Code::NotFound => {
                    if !quiet {
                        eprintln!("Reservation {} not found", name.unwrap_or_default());
                    }
                    1
                }
                Err(st) => fail("slurm_load_reservations error: ", &st),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_scontrol() {
        let r = ReservationInfo {
            name: "maint".into(),
            nodes: "n[1-2]".into(),
            node_cnt: 2,
            start_time: 1000,
            end_time: 4600,
            users: vec!["root".into()],
            flags: vec!["MAINT".into()],
            ..Default::default()
        };
        let s = format_resv(&r, 2000, false);
        assert!(s.contains("ReservationName=maint StartTime="), "{s}");
        assert!(s.contains("Duration=01:00:00"));
        assert!(s.contains("\n   Nodes=n[1-2] NodeCnt=2 "));
        assert!(s.contains("Flags=MAINT"));
        assert!(s.contains("Users=root Groups=(null) Accounts=(null)"));
        assert!(s.contains("State=ACTIVE"));
        let w = vec!["StartTime=now".to_string(), "Duration=10".to_string()];
        let a = absolute(&w, 5000).unwrap();
        assert_eq!(a, ["StartTime=5000", "Duration=10"]);
        assert!(absolute(&["StartTime=bogus".to_string()], 0).is_err());
    }
}
