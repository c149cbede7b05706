//! Job stamps (`GetJobsSince`): the few fields of a job the controller may
//! change without moving its `last_changed` (priority recalculation,
//! backfill's expected start, eligibility, a suspended job's shown end).
//! A client holding a job's full [`JobInfo`] from a listing taken after
//! its last change patches a newer stamp in and has the job as a fresh
//! `GetJobs` would give it (droverrestd's cache). Pure.

use crate::{JobInfo, JobStamp};

/// May `held`, taken from a listing at controller time `taken_at`, stand
/// for the job `s` stamps (after [`apply`])? Only when its change time is
/// the stamp's and strictly before the listing: a later change in the same
/// second would carry the same `last_changed`.
pub fn usable(held: &JobInfo, taken_at: i64, s: &JobStamp) -> bool {
    held.job_id == s.job_id && held.last_changed == s.last_changed && held.last_changed < taken_at
}

type Fields = (i32, u32, i64, i64, i64, i64, i64, bool, bool);

fn of_info(i: &JobInfo) -> Fields {
    (
        i.state,
        i.priority,
        i.start_time,
        i.end_time,
        i.eligible_time,
        i.suspend_time,
        i.pre_sus_time,
        i.oversubscribe,
        i.stopped,
    )
}

fn of_stamp(s: &JobStamp) -> Fields {
    (
        s.state,
        s.priority,
        s.start_time,
        s.end_time,
        s.eligible_time,
        s.suspend_time,
        s.pre_sus_time,
        s.oversubscribe,
        s.stopped,
    )
}

/// Does `info` already show what `s` stamps?
pub fn agrees(info: &JobInfo, s: &JobStamp) -> bool {
    of_info(info) == of_stamp(s) && info.array_pending == s.array_pending
}

/// Patch `s` into `info`; true when anything changed.
pub fn apply(info: &mut JobInfo, s: &JobStamp) -> bool {
    if agrees(info, s) {
        return false;
    }
    (
        info.state,
        info.priority,
        info.start_time,
        info.end_time,
        info.eligible_time,
        info.suspend_time,
        info.pre_sus_time,
        info.oversubscribe,
        info.stopped,
    ) = of_stamp(s);
    info.array_pending.clone_from(&s.array_pending);
    true
}

/// The stamp of a job as a listing gave it (what the controller would
/// send for it at the same moment).
pub fn of(info: &JobInfo) -> JobStamp {
    JobStamp {
        job_id: info.job_id,
        last_changed: info.last_changed,
        state: info.state,
        priority: info.priority,
        start_time: info.start_time,
        end_time: info.end_time,
        eligible_time: info.eligible_time,
        suspend_time: info.suspend_time,
        pre_sus_time: info.pre_sus_time,
        oversubscribe: info.oversubscribe,
        stopped: info.stopped,
        array_pending: info.array_pending.clone(),
        seq: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_patches_its_fields_and_says_whether_they_moved() {
        let held = JobInfo {
            job_id: 7,
            last_changed: 100,
            priority: 10,
            name: "x".into(),
            ..Default::default()
        };
        let mut s = of(&held);
        let mut j = held.clone();
        assert!(agrees(&j, &s));
        assert!(!apply(&mut j, &s));
        assert_eq!(j, held);
        s.priority = 11;
        s.start_time = 500;
        s.array_pending = "1-3".into();
        assert!(!agrees(&j, &s));
        assert!(apply(&mut j, &s));
        assert!(agrees(&j, &s));
        assert_eq!((j.priority, j.start_time), (11, 500));
        assert_eq!(j.array_pending, "1-3");
        assert_eq!(j.name, "x");
        assert_eq!(of(&j), s);
    }

    #[test]
    fn only_a_copy_taken_after_its_change_is_usable() {
        let held = JobInfo {
            job_id: 7,
            last_changed: 100,
            ..Default::default()
        };
        let s = of(&held);
        assert!(usable(&held, 101, &s));
        // Taken in the second of the change: a later change that second
        // would carry the same time.
        assert!(!usable(&held, 100, &s));
        let moved = JobStamp {
            last_changed: 105,
            ..s.clone()
        };
        assert!(!usable(&held, 101, &moved));
        let other = JobStamp { job_id: 8, ..s };
        assert!(!usable(&held, 101, &other));
    }
}
