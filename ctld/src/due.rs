//! Jobs that fall due at a time, in time order: finished jobs by their end
//! (purged `MinJobAge` seconds later) and pending jobs by their begin time
//! (`--begin`: the scheduler is woken when it passes). The once-a-second
//! tick (`end.rs`) then costs what is due, not a walk over every job record
//! (100,000 finished or pending jobs made that walk ~15 ms a second on the
//! project's VM).
//!
//! `Ctld::sync_queue`, which every logged change of a job calls, notes the
//! job here. An entry is only a hint: the tick checks the job as it is when
//! its entry comes up (a requeued job is no longer finished, a begin time
//! may have moved: its new time has its own entry), so a stale entry costs
//! a look-up, nothing more. A pending job is synced again at every change
//! of its priority (the age factor grows), so its begin time is pushed
//! only when it differs from the one noted; a finished job is synced again
//! only by an operation on it (update, requeue), each of which is logged
//! anyway.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use drover_proto::JobState;
use rustc_hash::FxHashMap;

use crate::job::Job;

type Heap = BinaryHeap<Reverse<(i64, u32)>>;

#[derive(Debug, Default)]
pub struct Due {
    /// (end time, id) of finished jobs.
    ended: Heap,
    /// (begin time, id) of pending jobs with a begin time.
    begins: Heap,
    /// The begin time last pushed for each such job.
    begin_noted: FxHashMap<u32, i64>,
}

/// Pop every entry at or before `until`, ids in time order.
fn pop_until(heap: &mut Heap, until: i64) -> Vec<u32> {
    let mut out = Vec::new();
    while let Some(Reverse((at, id))) = heap.peek().copied() {
        if at > until {
            break;
        }
        heap.pop();
        out.push(id);
    }
    out
}

impl Due {
    /// Note job `id` as it is now (after a logged change).
    pub fn note(&mut self, id: u32, job: &Job) {
        let state = job.state();
        let begin = job.spec().begin_time;
        if state == JobState::Pending && begin != 0 {
            if self.begin_noted.insert(id, begin) != Some(begin) {
                self.begins.push(Reverse((begin, id)));
            }
            return;
        }
        self.begin_noted.remove(&id);
        if state.is_final() {
            self.ended.push(Reverse((job.rt().end_time, id)));
        }
    }

    /// A job gone from the table (purged): nothing to remember of it.
    pub fn forget(&mut self, id: u32) {
        self.begin_noted.remove(&id);
    }

    /// Jobs noted as finished at or before `until`, taken off.
    pub fn ended_by(&mut self, until: i64) -> Vec<u32> {
        pop_until(&mut self.ended, until)
    }

    /// Jobs noted as pending to begin at or before `t`, taken off.
    pub fn begun_by(&mut self, t: i64) -> Vec<u32> {
        // Their noted times stay until they leave the pending state: a
        // later sync of the same begin time pushes nothing again.
        pop_until(&mut self.begins, t)
    }

    /// Entries held (finished, begin times, begin times noted).
    #[cfg(test)]
    pub fn len(&self) -> (usize, usize, usize) {
        (self.ended.len(), self.begins.len(), self.begin_noted.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_up_in_time_order_and_once() {
        let mut h = Heap::new();
        for (at, id) in [(30, 3), (10, 1), (20, 2), (10, 4)] {
            h.push(Reverse((at, id)));
        }
        assert_eq!(pop_until(&mut h, 5), Vec::<u32>::new());
        assert_eq!(pop_until(&mut h, 20), vec![1, 4, 2]);
        assert_eq!(pop_until(&mut h, 20), Vec::<u32>::new());
        assert_eq!(pop_until(&mut h, i64::MAX), vec![3]);
        assert!(h.is_empty());
    }
}
