//! `sdiag`: counters of what the controller did since it started. Pure
//! bookkeeping; the owner task updates it and answers `GetDiag` from it.

use std::time::Duration;

use drover_proto::{DiagResponse, JobState};

#[derive(Debug, Default, Clone, PartialEq)]
pub struct DiagStats {
    pub since: i64,
    pub submitted: u32,
    pub started: u32,
    pub completed: u32,
    pub canceled: u32,
    pub failed: u32,
    pub cycle_last_us: u64,
    pub cycle_max_us: u64,
    pub cycles: u64,
    pub cycle_sum_us: u64,
    pub depth_sum: u64,
    pub queue_len: u32,
}

impl DiagStats {
    pub fn new(since: i64) -> DiagStats {
        DiagStats {
            since,
            ..Default::default()
        }
    }

    /// One scheduling cycle: its duration, the jobs it considered and the
    /// pending queue's length.
    pub fn record_cycle(&mut self, took: Duration, depth: usize, queue_len: usize) {
        drover_proto::metrics::SCHED_CYCLE.observe(took);
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.cycle_last_us = us;
        self.cycle_max_us = self.cycle_max_us.max(us);
        self.cycles += 1;
        self.cycle_sum_us = self.cycle_sum_us.saturating_add(us);
        self.depth_sum = self.depth_sum.saturating_add(depth as u64);
        self.queue_len = u32::try_from(queue_len).unwrap_or(u32::MAX);
    }

    /// A job reached a final state. As Slurm: COMPLETED counts as completed,
    /// CANCELLED as canceled, FAILED / NODE_FAIL / OUT_OF_MEMORY /
    /// BOOT_FAIL / DEADLINE as failed; TIMEOUT and PREEMPTED in none.
    pub fn record_end(&mut self, state: JobState) {
        match state {
            JobState::Completed => self.completed += 1,
            JobState::Cancelled => self.canceled += 1,
            JobState::Failed
            | JobState::NodeFail
            | JobState::OutOfMemory
            | JobState::BootFail
            | JobState::Deadline => self.failed += 1,
            _ => {}
        }
    }

    /// The answer, with the current job counts and server threads.
    pub fn response(&self, now: i64, pending: u32, running: u32, threads: u32) -> DiagResponse {
        DiagResponse {
            now,
            since: self.since,
            server_thread_count: threads,
            agent_queue_size: 0,
            dbd_agent_queue_size: 0,
            jobs_submitted: self.submitted,
            jobs_started: self.started,
            jobs_completed: self.completed,
            jobs_canceled: self.canceled,
            jobs_failed: self.failed,
            jobs_pending: pending,
            jobs_running: running,
            cycle_last_us: self.cycle_last_us,
            cycle_max_us: self.cycle_max_us,
            cycle_count: self.cycles,
            cycle_sum_us: self.cycle_sum_us,
            cycle_depth_sum: self.depth_sum,
            queue_len: self.queue_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_and_ends() {
        let mut d = DiagStats::new(100);
        d.record_cycle(Duration::from_micros(300), 4, 10);
        d.record_cycle(Duration::from_micros(100), 2, 3);
        assert_eq!(
            (
                d.cycle_last_us,
                d.cycle_max_us,
                d.cycles,
                d.cycle_sum_us,
                d.depth_sum,
                d.queue_len
            ),
            (100, 300, 2, 400, 6, 3)
        );
        for s in [
            JobState::Completed,
            JobState::Cancelled,
            JobState::Failed,
            JobState::NodeFail,
            JobState::Timeout,
            JobState::Preempted,
        ] {
            d.record_end(s);
        }
        assert_eq!((d.completed, d.canceled, d.failed), (1, 1, 2));
        let r = d.response(200, 5, 6, 2);
        assert_eq!(
            (r.since, r.now, r.jobs_pending, r.jobs_running),
            (100, 200, 5, 6)
        );
        assert_eq!((r.server_thread_count, r.agent_queue_size), (2, 0));
    }
}
