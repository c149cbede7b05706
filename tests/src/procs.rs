//! The processes of the test machine, read from `/proc`: CPU time used,
//! and which processes mention a path (leftovers of a test).

use std::fs;

/// CPU time (user + system, all threads) a process has used so far, in
/// seconds, from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at 3.
    let hz = crate::sys::clock_ticks() as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

/// Pids whose command line (arguments joined by spaces) mentions `needle`.
pub fn pids_mentioning(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(mut cmd) = fs::read(format!("/proc/{pid}/cmdline")) {
            // Arguments are NUL-separated: read them as the shell shows
            // them, so "sleep 37.25" matches `sleep 37.25`.
            for b in cmd.iter_mut().filter(|b| **b == 0) {
                *b = b' ';
            }
            if String::from_utf8_lossy(&cmd).contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}
