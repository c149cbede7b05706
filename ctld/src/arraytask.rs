//! Pending array tasks addressed one by one (`A_i`) while they are still in
//! the array's meta record, as Slurm 23.11's slurmctld does:
//! * `scontrol update/hold/release A_i` splits the named tasks off into
//!   job records of their own (`update_job_str` → `job_array_split`), unless
//!   they are every task still pending (then the meta record is updated);
//! * `scancel A_i` drops the named pending tasks from the meta record (no
//!   record is left of them; `_signal_pending_job_array_tasks`); the meta
//!   record is cancelled when none is left;
//! * an array with an `aftercorr` dependency has its pending tasks split
//!   out, a few at a time (`CORRESPOND_ARRAY_TASK_CNT`), so each waits for
//!   the corresponding task of the other array only.

use drover_proto::JobState;

use crate::control::Selector;
use crate::ctld::Ctld;
use crate::deps::{self, Kind, Seen, Verdict};
use crate::job::Job;

/// Slurm's `CORRESPOND_ARRAY_TASK_CNT` (`SchedulerParameters=
/// correspond_after_task_cnt`): at most this many tasks of an array with an
/// `aftercorr` dependency are split out and pending at a time.
pub const CORRESPOND_ARRAY_TASK_CNT: usize = 10;

impl Ctld {
    /// The pending tasks of meta record `meta` that `tasks` (ascending)
    /// names.
    fn named_pending(&self, meta: u32, tasks: &[u32]) -> Vec<u32> {
        self.jobs
            .get(&meta)
            .filter(|m| m.is_meta() && m.state() == JobState::Pending)
            .map(|m| {
                m.pending_tasks
                    .iter()
                    .copied()
                    .filter(|t| tasks.binary_search(t).is_ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Before `scontrol update/hold/release` of `sel`: the pending tasks it
    /// names that are still in their meta record become records of their
    /// own, unless they are all the tasks it holds (the meta record is
    /// updated then, as Slurm does). `may`: the caller may change the job
    /// (nothing is split for a refused request).
    pub fn split_for_update(&mut self, sel: &Selector, may: impl Fn(&Job) -> bool) {
        let Selector::Tasks(a, tasks) = sel else {
            return;
        };
        let Some(meta) = self.jobs.get(a) else {
            return;
        };
        if !may(meta) {
            return;
        }
        let named = self.named_pending(*a, tasks);
        let all = self.jobs.get(a).map_or(0, |m| m.pending_tasks.len());
        if named.is_empty() || named.len() == all {
            return;
        }
        for t in named {
            self.split_task(*a, t);
        }
    }

    /// `scancel A_i`: drop the named pending tasks of meta record `meta`.
    /// None of them is left anywhere (`scontrol show job A_i` does not
    /// find it); the accounting record of the array is updated to the tasks
    /// left. With none left the meta record is cancelled.
    pub fn drop_pending_tasks(&mut self, meta: u32, tasks: &[u32], by_uid: u32) {
        let named = self.named_pending(meta, tasks);
        if named.is_empty() {
            return;
        }
        let Some(m) = self.jobs.get_mut(&meta) else {
            return;
        };
        m.pending_tasks.retain(|t| named.binary_search(t).is_err());
        tracing::info!(
            "array {meta}: pending task(s) {} cancelled",
            crate::array::ranges(&named)
        );
        if m.pending_tasks.is_empty() {
            self.cancel_pending(meta, by_uid, "None");
        } else {
            self.log_runtime(meta);
            self.sched_needed = true;
        }
    }

    /// Split out tasks of pending meta record `meta` when its dependency
    /// has an `aftercorr` condition, keeping at most
    /// [`CORRESPOND_ARRAY_TASK_CNT`] split-out tasks pending.
    pub fn split_for_aftercorr(&mut self, meta: u32) -> bool {
        let Some(m) = self.jobs.get(&meta) else {
            return false;
        };
        let corr = m
            .dep
            .as_ref()
            .is_some_and(|d| d.conds.iter().any(|c| c.kind == Kind::AfterCorr));
        if !corr || !m.is_meta() || m.pending_tasks.is_empty() {
            return false;
        }
        let pending_split = self.array_tasks.get(&meta).map_or(0, |v| {
            v.iter()
                .filter(|id| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| j.state() == JobState::Pending)
                })
                .count()
        });
        let room = CORRESPOND_ARRAY_TASK_CNT.saturating_sub(pending_split);
        let take: Vec<u32> = m.pending_tasks.iter().copied().take(room).collect();
        for &t in &take {
            self.split_task(meta, t);
        }
        !take.is_empty()
    }

    /// Task `task` of array `array`, as a dependency sees it: pending in
    /// the meta record, or its own record. None: the array has no such task
    /// (or `array` is no array).
    fn task_seen(&self, array: u32, task: u32) -> Option<Seen> {
        let meta = self
            .jobs
            .get(&array)
            .filter(|j| j.rt().array_job_id == array);
        if let Some(m) = meta {
            if m.is_meta() {
                if m.pending_tasks.binary_search(&task).is_ok() {
                    return Some(Seen::Pending);
                }
            } else if m.rt().array_task_id == task {
                return Some(self.seen_of(m));
            }
        }
        self.array_tasks
            .get(&array)?
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .find(|j| !j.is_meta() && j.rt().array_task_id == task)
            .map(|j| self.seen_of(j))
    }

    /// An `aftercorr` condition of `job` now (Slurm's `_test_job_dependency`
    /// for `SLURM_DEPEND_AFTER_CORRESPOND`): a task waits for the task of
    /// the same index to complete successfully; without such a task, for the
    /// whole job. The meta record itself never fails on it (its tasks are
    /// judged one by one once split out).
    pub(crate) fn corr_verdict(&self, job: &Job, c: &deps::Cond, t: i64) -> Verdict {
        let Some((array, _)) = c.job else {
            return Verdict::Satisfied;
        };
        let rt = job.rt();
        if rt.array_job_id != 0 && !rt.is_array_meta {
            if let Some(s) = self.task_seen(array, rt.array_task_id) {
                return deps::eval_cond(c, &[s], t);
            }
        }
        let whole = deps::eval_cond(c, &self.seen(array, None), t);
        if whole == Verdict::Never && job.is_meta() {
            Verdict::Wait
        } else {
            whole
        }
    }
}
