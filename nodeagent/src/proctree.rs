//! Process tree from `/proc/*/stat`: which processes descend from a pid
//! (through ppid chains) or belong to a process group. The parsing and the
//! tree walk are pure; [`scan`] reads the live system.

use std::collections::{HashMap, HashSet};

/// The fields of `/proc/PID/stat` the supervisor needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub state: char,
}

/// Parse one `/proc/PID/stat` line. The command name is in parentheses and
/// may itself contain spaces and parentheses, so fields are taken after the
/// last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid: i32 = text[..open].trim().parse().ok()?;
    let mut rest = text[close + 1..].split_ascii_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid: i32 = rest.next()?.parse().ok()?;
    let pgrp: i32 = rest.next()?.parse().ok()?;
    let session: i32 = rest.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgrp,
        session,
        state,
    })
}

/// Every process whose ppid chain leads to `root` (not `root` itself).
pub fn descendants(procs: &[ProcStat], root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs {
        if p.pid != p.ppid {
            children.entry(p.ppid).or_default().push(p.pid);
        }
    }
    let mut out = Vec::new();
    let mut seen: HashSet<i32> = HashSet::new();
    let mut stack = vec![root];
    seen.insert(root);
    while let Some(p) = stack.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                if seen.insert(k) {
                    out.push(k);
                    stack.push(k);
                }
            }
        }
    }
    out
}

/// The processes of a job: descendants of the supervisor plus members of the
/// job's process group, never the supervisor itself; sorted, unique.
pub fn job_members(procs: &[ProcStat], supervisor: i32, pgid: i32) -> Vec<i32> {
    let mut set: HashSet<i32> = descendants(procs, supervisor).into_iter().collect();
    if pgid > 1 {
        for p in procs {
            if p.pgrp == pgid {
                set.insert(p.pid);
            }
        }
    }
    set.remove(&supervisor);
    set.remove(&0);
    set.remove(&1);
    let mut v: Vec<i32> = set.into_iter().collect();
    v.sort_unstable();
    v
}

/// Read the stat line of every process on the system (races with exiting
/// processes are ignored).
pub fn scan() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{name}/stat")) {
            if let Some(st) = parse_stat(&text) {
                out.push(st);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
1 (systemd) S 0 1 1 0 -1 4194560 1 2 3
100 (droverd) S 1 100 100 0 -1 0
200 (droverd) S 1 200 200 0 -1 0
201 (bash) S 200 201 200 0 -1 0
202 (sleep) S 201 201 200 0 -1 0
203 (weird ) name)) R 201 201 200 0 -1 0
210 (sleep) S 200 210 210 0 -1 0
211 (child of 210) Z 210 210 210 0 -1 0
300 (other) S 1 300 300 0 -1 0
301 (stray) S 300 201 300 0 -1 0
";

    fn procs() -> Vec<ProcStat> {
        FIXTURE.lines().filter_map(parse_stat).collect()
    }

    #[test]
    fn parses_stat_lines() {
        let p = parse_stat("203 (weird ) name)) R 201 201 200 0 -1 0").unwrap();
        assert_eq!(
            p,
            ProcStat {
                pid: 203,
                ppid: 201,
                pgrp: 201,
                session: 200,
                state: 'R'
            }
        );
        assert!(parse_stat("").is_none());
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("12 (x) S").is_none());
        assert!(parse_stat("x (y) S 1 2 3").is_none());
        assert!(parse_stat(") 12 (").is_none());
        assert_eq!(procs().len(), 10);
    }

    #[test]
    fn walks_ppid_chains() {
        let mut d = descendants(&procs(), 200);
        d.sort_unstable();
        assert_eq!(d, vec![201, 202, 203, 210, 211]);
        assert!(descendants(&procs(), 999).is_empty());
        assert_eq!(descendants(&procs(), 1).len(), 9);
    }

    #[test]
    fn job_members_include_process_group() {
        // 301 escaped the tree but is still in the job's process group 201.
        assert_eq!(
            job_members(&procs(), 200, 201),
            vec![201, 202, 203, 210, 211, 301]
        );
        assert_eq!(job_members(&procs(), 200, 0), vec![201, 202, 203, 210, 211]);
    }

    #[test]
    fn cycles_do_not_hang() {
        let procs = vec![
            ProcStat {
                pid: 5,
                ppid: 6,
                pgrp: 5,
                session: 5,
                state: 'S',
            },
            ProcStat {
                pid: 6,
                ppid: 5,
                pgrp: 5,
                session: 5,
                state: 'S',
            },
        ];
        let mut d = descendants(&procs, 5);
        d.sort_unstable();
        assert_eq!(d, vec![6]);
    }

    #[test]
    fn live_scan_sees_self() {
        let me = std::process::id() as i32;
        assert!(scan().iter().any(|p| p.pid == me));
    }
}
