//! Fuzz target for the files the agent and its job supervisors hand each
//! other (`JOBDIR/cgroup.plan`, the status file and its one-line form,
//! the hooks file) and the supervisor's control-socket requests. A file
//! may be damaged (a full disk, a crash mid-write): reading it must give an
//! error, never a panic, and what reads back must write out the same.
//! Runs under the fuzzer (`fuzz/`, `bench/fuzz.sh`) and, over the saved
//! inputs, in `cargo test`.

use crate::cgroup::plan::Plan;
use crate::status::JobStatus;
use crate::stepd::{hooks, protocol::Request};

/// The first byte picks the reader; the rest is the file or line.
pub fn agent_files(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let t = String::from_utf8_lossy(body);
    match which % 5 {
        0 => {
            if let Ok(p) = Plan::parse(&t) {
                let once = p.to_text();
                let twice = Plan::parse(&once)
                    .unwrap_or_else(|e| panic!("plan {once:?} does not read back: {e}"))
                    .to_text();
                assert_eq!(once, twice);
            }
        }
        1 => {
            if let Ok(s) = JobStatus::parse(&t) {
                let once = s.to_text();
                let twice = JobStatus::parse(&once)
                    .unwrap_or_else(|e| panic!("status {once:?} does not read back: {e}"))
                    .to_text();
                assert_eq!(once, twice);
            }
        }
        2 => {
            if let Some(s) = JobStatus::parse_done_line(&t) {
                let _ = s.done_line();
            }
        }
        3 => {
            if let Ok(r) = Request::parse(&t) {
                let line = r.to_line();
                assert!(Request::parse(&line).is_ok(), "{line:?} does not read back");
            }
        }
        _ => {
            let h = hooks::Hooks::parse(&t);
            let _ = h.to_text();
            let _ = hooks::parse_task_prolog(&t);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn saved_inputs_replay() {
        assert!(drover_conf::fuzz::replay("agent_files", super::agent_files) > 0);
    }
}
