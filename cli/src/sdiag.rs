//! `sdiag`: the controller's statistics in Slurm's layout. Figures Drover
//! does not measure print as 0 (see docs/admin-guide.md).

use drover_proto::{DiagRequest, DiagResponse};

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};
use crate::timefmt::localtime;
use drover_conf::datetime::fmt_ctime;

pub const TABLE: &[OptDef] = &[
    opt("all", Some('a'), Arg::No, "all"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
];

const USAGE: &str = "Usage: sdiag [-a] [-M cluster] [-V] [-h]\n";

fn when(t: i64) -> String {
    format!("{} ({t})", fmt_ctime(&localtime(t)))
}

/// The report, as Slurm's sdiag prints it.
pub fn render(r: &DiagResponse) -> String {
    let mut o = String::new();
    let line = "*******************************************************\n";
    o.push_str(line);
    o.push_str(&format!("sdiag output at {}\n", when(r.now)));
    o.push_str(&format!("Data since      {}\n", when(r.since)));
    o.push_str(line);
    o.push_str(&format!(
        "Server thread count:  {}\n",
        r.server_thread_count
    ));
    o.push_str(&format!("Agent queue size:     {}\n", r.agent_queue_size));
    o.push_str("Agent count:          0\n");
    o.push_str("Agent thread count:   0\n");
    o.push_str(&format!(
        "DBD Agent queue size: {}\n\n",
        r.dbd_agent_queue_size
    ));
    o.push_str(&format!("Jobs submitted: {}\n", r.jobs_submitted));
    o.push_str(&format!("Jobs started:   {}\n", r.jobs_started));
    o.push_str(&format!("Jobs completed: {}\n", r.jobs_completed));
    o.push_str(&format!("Jobs canceled:  {}\n", r.jobs_canceled));
    o.push_str(&format!("Jobs failed:    {}\n\n", r.jobs_failed));
    o.push_str(&format!("Job states ts:  {}\n", when(r.now)));
    o.push_str(&format!("Jobs pending:   {}\n", r.jobs_pending));
    o.push_str(&format!("Jobs running:   {}\n", r.jobs_running));
    o.push_str("\nMain schedule statistics (microseconds):\n");
    o.push_str(&format!("\tLast cycle:   {}\n", r.cycle_last_us));
    o.push_str(&format!("\tMax cycle:    {}\n", r.cycle_max_us));
    o.push_str(&format!("\tTotal cycles: {}\n", r.cycle_count));
    if let (Some(mean), Some(depth)) = (
        r.cycle_sum_us.checked_div(r.cycle_count),
        r.cycle_depth_sum.checked_div(r.cycle_count),
    ) {
        o.push_str(&format!("\tMean cycle:   {mean}\n"));
        o.push_str(&format!("\tMean depth cycle:  {depth}\n"));
    }
    let secs = r.now - r.since;
    if secs > 60 {
        o.push_str(&format!(
            "\tCycles per minute: {}\n",
            r.cycle_count / (secs as u64 / 60)
        ));
    }
    o.push_str(&format!("\tLast queue length: {}\n", r.queue_len));
    // Backfill is part of Drover's one scheduling pass (its cycles are the
    // main scheduler's above): no separate figures.
    o.push_str("\nBackfilling stats\n");
    o.push_str("\tTotal backfilled jobs (since last slurm start): 0\n");
    o.push_str("\tTotal backfilled jobs (since last stats cycle start): 0\n");
    o.push_str("\tTotal backfilled heterogeneous job components: 0\n");
    o.push_str("\tTotal cycles: 0\n");
    o.push_str("\tLast cycle when: N/A\n");
    o.push_str("\tLast cycle: 0\n");
    o.push_str("\tMax cycle:  0\n");
    o.push_str("\tLast depth cycle: 0\n");
    o.push_str("\tLast depth cycle (try sched): 0\n");
    o.push_str("\tLast queue length: 0\n");
    o.push_str("\tLast table size: 0\n");
    o
}

pub fn run(args: &[String]) -> i32 {
    let p = match opts::parse_command("sdiag", USAGE, TABLE, args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Some(x) = p.positional.first() {
        eprintln!("sdiag: error: unexpected argument '{x}'");
        eprint!("{USAGE}");
        return 1;
    }
    let (cfg, rt) = match conn::setup("sdiag") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut c = match conn::client_for("sdiag", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        match c.get_diag(DiagRequest {}).await {
            Ok(r) => {
                print!("{}", render(&r.into_inner()));
                0
            }
            Err(st) => {
                conn::report("sdiag", "slurm_get_statistics: ", &st);
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurms_layout() {
        let r = DiagResponse {
            now: 1_000_000,
            since: 1_000_000 - 180,
            server_thread_count: 2,
            jobs_submitted: 5,
            jobs_started: 4,
            jobs_completed: 3,
            jobs_canceled: 1,
            jobs_pending: 1,
            jobs_running: 0,
            cycle_last_us: 50,
            cycle_max_us: 300,
            cycle_count: 6,
            cycle_sum_us: 600,
            cycle_depth_sum: 12,
            queue_len: 1,
            ..Default::default()
        };
        let t = render(&r);
        for want in [
            "Server thread count:  2\n",
            "Agent queue size:     0\n",
            "DBD Agent queue size: 0\n\nJobs submitted: 5\n",
            "Jobs started:   4\nJobs completed: 3\nJobs canceled:  1\nJobs failed:    0\n\n",
            "Jobs pending:   1\nJobs running:   0\n",
            "\nMain schedule statistics (microseconds):\n\tLast cycle:   50\n\tMax cycle:    300\n\tTotal cycles: 6\n\tMean cycle:   100\n\tMean depth cycle:  2\n\tCycles per minute: 2\n\tLast queue length: 1\n",
            "\nBackfilling stats\n",
        ] {
            assert!(t.contains(want), "{want:?} in\n{t}");
        }
        assert!(t.starts_with(
            "*******************************************************\nsdiag output at "
        ));
        assert!(t.contains(&format!("Data since      {}", when(r.since))));
        // No cycle yet: no means (Slurm prints them only after one).
        let none = render(&DiagResponse::default());
        assert!(!none.contains("Mean cycle"));
    }
}
