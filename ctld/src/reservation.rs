//! Advance reservations: `scontrol create|update|delete reservation` and
//! `scontrol show reservation`. Kept in the controller's log; the scheduler
//! sees them as [`ResvSnap`]s (jobs with `--reservation` run inside, others
//! stay out of their nodes for their time).

use crate::refusal::Refusal;
use drover_conf::hostlist;
use drover_proto::state::wal_record::Kind;
use drover_proto::state::WalRecord;
use drover_proto::{JobState, ReservationInfo, INFINITE};

use crate::ctld::Ctld;
use crate::sched::ResvSnap;

/// Flags Drover acts on or accepts.
const FLAGS: &[&str] = &[
    "MAINT",
    "IGNORE_JOBS",
    "OVERLAP",
    "DAILY",
    "WEEKLY",
    "FLEX",
    "MAGNETIC",
    "ANY_NODES",
    "STATIC_ALLOC",
    "PURGE_COMP",
];

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A reservation change from scontrol's words (times already absolute:
/// scontrol sends `StartTime`/`EndTime` as epoch seconds and `Duration`
/// in minutes).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Change {
    pub name: Option<String>,
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// Minutes; INFINITE for UNLIMITED.
    pub duration: Option<u32>,
    pub nodes: Option<String>,
    pub node_cnt: Option<u32>,
    pub users: Option<Vec<String>>,
    pub accounts: Option<Vec<String>>,
    pub flags: Option<Vec<String>>,
    pub partition: Option<String>,
}

pub fn parse_args(args: &[String]) -> Result<Change, String> {
    let mut c = Change::default();
    for a in args {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("Invalid input: {a}"))?;
        let v = v.trim();
        let num = |what: &str| -> Result<i64, String> {
            v.parse::<i64>()
                .map_err(|_| format!("Invalid {what} specification: {v}"))
        };
        match k.trim().to_ascii_lowercase().as_str() {
            "reservationname" | "reservation" | "resv" => c.name = Some(v.to_string()),
            "starttime" => {
                c.start = Some(if v.eq_ignore_ascii_case("now") {
                    0
                } else {
                    num("StartTime")?
                })
            }
            "endtime" => c.end = Some(num("EndTime")?),
            "duration" => {
                c.duration = Some(
                    drover_conf::units::parse_time_minutes(v)
                        .map_err(|_| format!("Invalid duration specification: {v}"))?
                        .unwrap_or(INFINITE),
                )
            }
            "nodes" | "nodelist" => c.nodes = Some(v.to_string()),
            "nodecnt" | "nodecount" => {
                let n = num("NodeCnt")?;
                if n <= 0 {
                    return Err(format!("Invalid NodeCnt specification: {v}"));
                }
                c.node_cnt = Some(n as u32)
            }
            "users" | "user" => c.users = Some(list(v)),
            "accounts" | "account" => c.accounts = Some(list(v)),
            "flags" | "flag" => {
                let f: Vec<String> = list(v).iter().map(|f| f.to_ascii_uppercase()).collect();
                if let Some(bad) = f.iter().find(|f| !FLAGS.contains(&f.as_str())) {
                    return Err(format!("Invalid flag specification: {bad}"));
                }
                c.flags = Some(f)
            }
            "partitionname" | "partition" => c.partition = Some(v.to_string()),
            _ => return Err(format!("Invalid input: {a}")),
        }
    }
    Ok(c)
}

pub fn is_maint(r: &ReservationInfo) -> bool {
    r.flags.iter().any(|f| f == "MAINT")
}

impl Ctld {
    /// Reservations the scheduler sees (expired ones dropped).
    pub fn resv_snaps(&mut self, t: i64) -> Vec<ResvSnap> {
        let expired: Vec<String> = self
            .sched
            .resvs
            .iter()
            .filter(|r| r.end_time <= t)
            .map(|r| r.name.clone())
            .collect();
        for name in expired {
            tracing::info!("reservation {name} ended");
            self.remove_resv(&name);
        }
        self.sched
            .resvs
            .iter()
            .map(|r| ResvSnap {
                name: r.name.clone(),
                nodes: hostlist::expand(&r.nodes)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|n| self.cluster.node_idx(n))
                    .collect(),
                start: r.start_time,
                end: r.end_time,
                users: r.users.clone(),
                accounts: r.accounts.clone(),
                maint: is_maint(r),
            })
            .collect()
    }

    fn remove_resv(&mut self, name: &str) {
        self.sched.resvs.retain(|r| r.name != name);
        self.log(WalRecord {
            kind: Some(Kind::ResvDelete(name.to_string())),
        });
        self.sched_needed = true;
    }

    fn log_resv(&mut self, r: &ReservationInfo) {
        self.log(WalRecord {
            kind: Some(Kind::Resv(r.clone())),
        });
        self.sched_needed = true;
        self.full_pass_needed = true;
    }

    /// Apply a change to `r` and check the result (`create`: a new one).
    fn resolve_resv(
        &self,
        mut r: ReservationInfo,
        c: &Change,
        create: bool,
        t: i64,
    ) -> Result<ReservationInfo, String> {
        if let Some(s) = c.start {
            r.start_time = if s == 0 { t } else { s };
        } else if create {
            r.start_time = t;
        }
        if let Some(e) = c.end {
            r.end_time = e;
        } else if let Some(d) = c.duration {
            r.end_time = if d == INFINITE {
                i64::MAX / 4
            } else {
                r.start_time + i64::from(d) * 60
            };
        } else if create {
            return Err("Duration or EndTime must be specified".into());
        } else if c.start.is_some() {
            // Moving the start keeps the duration.
        }
        if r.end_time <= r.start_time {
            return Err("Invalid reservation time: EndTime must be after StartTime".into());
        }
        if let Some(u) = &c.users {
            r.users = u.clone();
        }
        if let Some(a) = &c.accounts {
            r.accounts = a.clone();
        }
        if r.users.is_empty() && r.accounts.is_empty() {
            return Err("Reservation request lacks users or accounts".into());
        }
        if let Some(f) = &c.flags {
            r.flags = f.clone();
        }
        if let Some(p) = &c.partition {
            if self.cluster.part_idx(p).is_none() {
                return Err(format!("Invalid partition name specified: {p}"));
            }
            r.partition = p.clone();
        }
        let ignore_busy = r
            .flags
            .iter()
            .any(|f| f == "MAINT" || f == "IGNORE_JOBS" || f == "OVERLAP");
        let busy = |i: usize| -> bool {
            let n = &self.cluster.nodes[i];
            if !ignore_busy
                && n.jobs.iter().any(|id| {
                    self.jobs.get(id).is_some_and(|j| {
                        let rt = j.rt();
                        j.state() != JobState::Pending
                            && (rt.time_limit == INFINITE
                                || rt.start_time + i64::from(rt.time_limit) * 60 > r.start_time)
                    })
                })
            {
                return true;
            }
            self.sched.resvs.iter().any(|o| {
                o.name != r.name
                    && !ignore_busy
                    && o.start_time < r.end_time
                    && o.end_time > r.start_time
                    && hostlist::expand(&o.nodes)
                        .unwrap_or_default()
                        .iter()
                        .any(|x| x == n.name())
            })
        };
        if let Some(spec) = &c.nodes {
            let names: Vec<String> = if spec.eq_ignore_ascii_case("ALL") {
                self.cluster
                    .nodes
                    .iter()
                    .map(|n| n.name().to_string())
                    .collect()
            } else {
                hostlist::expand(spec).map_err(|e| format!("Invalid node name specified: {e}"))?
            };
            let mut idx = Vec::new();
            for n in &names {
                let i = self
                    .cluster
                    .node_idx(n)
                    .ok_or_else(|| format!("Invalid node name specified: {n}"))?;
                if busy(i) {
                    return Err("Requested nodes are busy".into());
                }
                idx.push(i);
            }
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            r.nodes = hostlist::compress(&refs);
            r.node_cnt = idx.len() as u32;
        } else if let Some(cnt) = c.node_cnt {
            let pool: Vec<usize> = match self.cluster.part_idx(&r.partition) {
                Some(p) if !r.partition.is_empty() => self.cluster.parts[p].nodes.clone(),
                _ => match self.cluster.default_part {
                    Some(p) => self.cluster.parts[p].nodes.clone(),
                    None => (0..self.cluster.nodes.len()).collect(),
                },
            };
            let mut pick: Vec<usize> = pool
                .into_iter()
                .filter(|&i| self.cluster.nodes[i].usable() && !busy(i))
                .collect();
            if (pick.len() as u32) < cnt {
                return Err("Requested nodes are busy".into());
            }
            pick.truncate(cnt as usize);
            let names: Vec<&str> = pick.iter().map(|&i| self.cluster.nodes[i].name()).collect();
            r.nodes = hostlist::compress(&names);
            r.node_cnt = cnt;
        } else if create {
            return Err("Nodes or NodeCnt must be specified".into());
        }
        Ok(r)
    }

    pub fn create_reservation(&mut self, args: &[String], t: i64) -> Result<String, Refusal> {
        let c = parse_args(args).map_err(Refusal::invalid_argument)?;
        let name = match &c.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => {
                let base = c
                    .users
                    .as_ref()
                    .and_then(|u| u.first().cloned())
                    .or_else(|| c.accounts.as_ref().and_then(|a| a.first().cloned()))
                    .unwrap_or_else(|| "resv".into());
                loop {
                    self.sched.resv_seq += 1;
                    let n = format!("{base}_{}", self.sched.resv_seq);
                    if !self.sched.resvs.iter().any(|r| r.name == n) {
                        break n;
                    }
                }
            }
        };
        if self.sched.resvs.iter().any(|r| r.name == name) {
            return Err(Refusal::already_exists("Duplicate reservation name"));
        }
        let r = ReservationInfo {
            name: name.clone(),
            ..Default::default()
        };
        let r = self
            .resolve_resv(r, &c, true, t)
            .map_err(Refusal::invalid_argument)?;
        tracing::info!("reservation {name} created on {}", r.nodes);
        self.log_resv(&r);
        self.sched.resvs.push(r);
        Ok(name)
    }

    pub fn update_reservation(&mut self, args: &[String], t: i64) -> Result<String, Refusal> {
        let c = parse_args(args).map_err(Refusal::invalid_argument)?;
        let name = c
            .name
            .clone()
            .ok_or_else(|| Refusal::invalid_argument("ReservationName must be specified"))?;
        let Some(pos) = self.sched.resvs.iter().position(|r| r.name == name) else {
            return Err(Refusal::not_found("Reservation request has invalid name"));
        };
        let old = self.sched.resvs[pos].clone();
        let mut c = c;
        if c.start.is_some() && c.end.is_none() && c.duration.is_none() {
            let mins = ((old.end_time - old.start_time) / 60).clamp(1, i64::from(u32::MAX - 1));
            c.duration = Some(mins as u32);
        }
        let r = self
            .resolve_resv(old, &c, false, t)
            .map_err(Refusal::invalid_argument)?;
        self.log_resv(&r);
        self.sched.resvs[pos] = r;
        Ok(name)
    }

    pub fn delete_reservation(&mut self, name: &str) -> Result<String, Refusal> {
        if !self.sched.resvs.iter().any(|r| r.name == name) {
            return Err(Refusal::not_found("Reservation request has invalid name"));
        }
        self.remove_resv(name);
        Ok(name.to_string())
    }

    /// A job may name only a reservation that exists and admits its user
    /// (or account); admins may use any.
    pub fn check_reservation(
        &mut self,
        spec: &drover_proto::JobSpec,
        who: &drover_proto::auth::Identity,
    ) -> Result<(), Refusal> {
        if spec.reservation.is_empty() {
            return Ok(());
        }
        let Some(r) = self.sched.resvs.iter().find(|r| r.name == spec.reservation) else {
            return Err(Refusal::invalid_argument(
                "Requested reservation is invalid",
            ));
        };
        let user = self.names.user(who.uid).to_string();
        let account = if spec.account.is_empty() {
            self.assoc.default_account(&user).unwrap_or("").to_string()
        } else {
            spec.account.clone()
        };
        let ok = r.users.contains(&user) || (!account.is_empty() && r.accounts.contains(&account));
        if !ok && !self.is_admin(who) {
            return Err(Refusal::permission_denied(
                "Access denied to requested reservation",
            ));
        }
        Ok(())
    }

    /// The reservation (if any) holding node `name` at `t`, for node state.
    pub fn node_reservation(&self, name: &str, t: i64) -> Option<&ReservationInfo> {
        self.sched.resvs.iter().find(|r| {
            r.start_time <= t
                && r.end_time > t
                && hostlist::expand(&r.nodes)
                    .unwrap_or_default()
                    .iter()
                    .any(|x| x == name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_scontrol_words() {
        let c = parse_args(&s(&[
            "ReservationName=m1",
            "StartTime=now",
            "Duration=1:00:00",
            "Nodes=n[1-2]",
            "Users=alice,bob",
            "Flags=maint",
        ]))
        .unwrap();
        assert_eq!(c.name.as_deref(), Some("m1"));
        assert_eq!(c.start, Some(0));
        assert_eq!(c.duration, Some(60));
        assert_eq!(c.users.unwrap(), ["alice", "bob"]);
        assert_eq!(c.flags.unwrap(), ["MAINT"]);
        assert!(parse_args(&s(&["Flags=BOGUS"])).is_err());
        assert!(parse_args(&s(&["NodeCnt=0"])).is_err());
        assert!(parse_args(&s(&["Color=red"])).is_err());
        assert!(parse_args(&s(&["Duration=UNLIMITED"])).unwrap().duration == Some(INFINITE));
    }
}
