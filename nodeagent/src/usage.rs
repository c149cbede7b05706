//! Live usage of a running job for `sstat`, read from its cgroup (the
//! supervisor's plan names it) — or, without cgroups, from /proc over the
//! processes of the job's session.

use std::path::Path;

use drover_proto::StepStats;

use crate::cgroup::job::JobCgroup;
use crate::cgroup::pool::{Base, BASE_FILE};
use crate::cgroup::Plan;
use crate::stepd::CGROUP_PLAN_FILE;

/// The steps of `job_id` running on `node` (empty when it runs elsewhere or
/// has ended).
pub fn live_steps(jobdir: &Path, job_id: u32, node: &str) -> Vec<StepStats> {
    let Ok(launch) = crate::jobdir::read_launch(jobdir) else {
        return Vec::new();
    };
    if launch.job_id != job_id || (!node.is_empty() && launch.node != node) {
        return Vec::new();
    }
    if jobdir.join(crate::status::STATUS_FILE).exists() {
        return Vec::new(); // ended
    }
    let mut st = StepStats {
        job_id,
        step: "batch".into(),
        node: launch.node.clone(),
        ..Default::default()
    };
    match std::fs::read_to_string(jobdir.join(CGROUP_PLAN_FILE))
        .ok()
        .and_then(|t| Plan::parse(&t).ok())
    {
        Some(plan) => {
            let mut cg = JobCgroup::open(plan);
            if let Ok(t) = std::fs::read_to_string(jobdir.join(BASE_FILE)) {
                cg.base = Base::parse(&t);
            }
            let u = cg.usage();
            let pids = cg.pids();
            // v1 groups carry no CPU counter (no cpuacct): add up the
            // live processes' times.
            st.cpu_usec = u.cpu_usec.unwrap_or_else(|| {
                pids.iter()
                    .filter_map(|p| stat_of(*p))
                    .map(|(t, _)| t * 1_000_000 / clk_tck())
                    .sum()
            });
            st.mem_now_kb = u.mem_now_kb.unwrap_or(0);
            st.mem_peak_kb = u.mem_peak_kb.unwrap_or(0);
            st.ntasks = pids.len() as u32;
            st.pids = pids.into_iter().map(|p| p as u32).collect();
        }
        None => {
            let (cpu, rss, pids) = proc_usage(jobdir);
            st.cpu_usec = cpu;
            st.mem_now_kb = rss;
            st.mem_peak_kb = rss;
            st.ntasks = pids.len() as u32;
            st.pids = pids;
        }
    }
    vec![st]
}

/// Without cgroups: the supervisor's descendants from /proc.
fn proc_usage(jobdir: &Path) -> (u64, u64, Vec<u32>) {
    let Some(sup) = supervisor_pid(jobdir) else {
        return (0, 0, Vec::new());
    };
    let tree = crate::proctree::scan();
    let pids = crate::proctree::descendants(&tree, sup);
    let hz = clk_tck();
    let mut cpu = 0u64;
    let mut rss = 0u64;
    for p in &pids {
        if let Some((ticks, rss_kb)) = stat_of(*p) {
            cpu += ticks * 1_000_000 / hz;
            rss += rss_kb;
        }
    }
    (cpu, rss, pids.into_iter().map(|p| p as u32).collect())
}

/// The supervisor owns the job's socket: find it through /proc/net/unix is
/// costly, so ask the kernel who listens via SO_PEERCRED on a connection.
pub fn supervisor_pid(jobdir: &Path) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let s = crate::stepd_socket::connect(jobdir).ok()?;
    crate::sys::peer_pid(s.as_raw_fd()).filter(|p| *p > 0)
}

fn clk_tck() -> u64 {
    drover_proto::sys::clock_ticks()
}

/// (utime+stime ticks, RSS KiB) of one process from /proc/PID/stat.
fn stat_of(pid: i32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Pure parser of /proc/PID/stat (the command may contain spaces and parens).
pub fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let rest = text.get(text.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the command: state(0) ... utime(11) stime(12) ... rss(21, pages).
    let ut: u64 = f.get(11)?.parse().ok()?;
    let stt: u64 = f.get(12)?.parse().ok()?;
    let rss_pages: u64 = f.get(21)?.parse().ok()?;
    let page = drover_proto::sys::page_size();
    Some((ut + stt, rss_pages * page / 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let line = "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 100 12345678 300 18446744073709551615";
        let (ticks, rss) = parse_stat(line).unwrap();
        assert_eq!(ticks, 300);
        let page = drover_proto::sys::page_size();
        assert_eq!(rss, 300 * page / 1024);
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x)").is_none());
        assert!(parse_stat("1 (x) ").is_none());
    }
}
