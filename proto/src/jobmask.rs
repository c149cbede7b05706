//! Which `JobInfo` fields a listing carries (`GetJobsRequest.fields`).
//!
//! A client names the `JobInfo` field numbers its output, filters and sort
//! read; the controller leaves every other field at its default, which
//! protobuf does not put on the wire. `squeue`'s default listing reads 22
//! of the 73 fields: its answer is about half the bytes to send and decode,
//! with fewer strings to allocate. An empty list means every field (what `details` says), so
//! older clients and other callers see no change. Pure.

use crate::JobInfo;

/// The set of fields kept. Field numbers 1..=99 are bits 1..=99; the few
/// higher ones (steps, oversubscribe, ...) have bits of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobMask {
    bits: u128,
    all: bool,
}

/// A field of `JobInfo` whose value can be set back to its default while
/// keeping its buffer (the controller's scratch record is refilled).
trait Reset {
    fn reset(&mut self);
}

impl Reset for String {
    fn reset(&mut self) {
        self.clear();
    }
}

impl<T> Reset for Vec<T> {
    fn reset(&mut self) {
        self.clear();
    }
}

macro_rules! reset_default {
    ($($t:ty),*) => {$(
        impl Reset for $t {
            fn reset(&mut self) {
                *self = <$t>::default();
            }
        }
    )*};
}
reset_default!(u32, i32, u64, i64, bool);

/// The bit of field number `n`, if `JobInfo` may have such a field.
fn bit(n: u32) -> Option<u32> {
    match n {
        1..=99 => Some(n),
        400 => Some(100),
        600 => Some(101),
        700 => Some(102),
        1610 => Some(103),
        1750 => Some(104),
        _ => None,
    }
}

macro_rules! job_fields {
    ($($field:ident: $name:ident = $num:literal,)*) => {
        /// `JobInfo`'s field numbers, by field name in capitals.
        pub mod num {
            $(
                #[allow(missing_docs)]
                pub const $name: u32 = $num;
            )*
        }

        /// Every field number of `JobInfo`.
        pub const ALL: &[u32] = &[$($num),*];

        impl JobMask {
            /// Set every field not in the mask to its default (strings and
            /// lists keep their buffers).
            pub fn apply(&self, j: &mut JobInfo) {
                if self.all {
                    return;
                }
                // Every field by name: one added to `JobInfo` and not
                // listed below fails to compile.
                let JobInfo { $($field),* } = j;
                $(
                    if !self.has($num) {
                        Reset::reset($field);
                    }
                )*
            }
        }
    };
}

job_fields! {
    job_id: JOB_ID = 1,
    array_job_id: ARRAY_JOB_ID = 2,
    array_task_id: ARRAY_TASK_ID = 3,
    array_pending: ARRAY_PENDING = 4,
    array_max_running: ARRAY_MAX_RUNNING = 5,
    is_array_meta: IS_ARRAY_META = 6,
    state: STATE = 7,
    state_reason: STATE_REASON = 8,
    reason_detail: REASON_DETAIL = 9,
    user_id: USER_ID = 10,
    user_name: USER_NAME = 11,
    group_id: GROUP_ID = 12,
    group_name: GROUP_NAME = 13,
    name: NAME = 14,
    partition: PARTITION = 15,
    account: ACCOUNT = 16,
    qos: QOS = 17,
    priority: PRIORITY = 18,
    nice: NICE = 19,
    time_limit: TIME_LIMIT = 20,
    submit_time: SUBMIT_TIME = 21,
    eligible_time: ELIGIBLE_TIME = 22,
    start_time: START_TIME = 23,
    end_time: END_TIME = 24,
    suspend_time: SUSPEND_TIME = 25,
    nodes: NODES = 26,
    req_nodes: REQ_NODES = 27,
    exc_nodes: EXC_NODES = 28,
    num_nodes: NUM_NODES = 29,
    num_cpus: NUM_CPUS = 30,
    num_tasks: NUM_TASKS = 31,
    cpus_per_task: CPUS_PER_TASK = 32,
    min_memory_mb: MIN_MEMORY_MB = 33,
    mem_per_cpu: MEM_PER_CPU = 34,
    tres_per_node: TRES_PER_NODE = 35,
    tres_req: TRES_REQ = 36,
    tres_alloc: TRES_ALLOC = 37,
    features: FEATURES = 38,
    dependency: DEPENDENCY = 39,
    work_dir: WORK_DIR = 40,
    std_out: STD_OUT = 41,
    std_err: STD_ERR = 42,
    std_in: STD_IN = 43,
    command: COMMAND = 44,
    exit_code: EXIT_CODE = 45,
    exit_signal: EXIT_SIGNAL = 46,
    restart_count: RESTART_COUNT = 47,
    requeue: REQUEUE = 48,
    exclusive: EXCLUSIVE = 49,
    comment: COMMENT = 50,
    batch_host: BATCH_HOST = 51,
    hold: HOLD = 52,
    alloc: ALLOC = 53,
    pre_sus_time: PRE_SUS_TIME = 54,
    submit_host: SUBMIT_HOST = 55,
    reservation: RESERVATION = 56,
    derived_exit_code: DERIVED_EXIT_CODE = 57,
    cancelled_by: CANCELLED_BY = 58,
    min_cpus_per_node: MIN_CPUS_PER_NODE = 59,
    array_spec: ARRAY_SPEC = 60,
    wckey: WCKEY = 61,
    ntasks_per_node: NTASKS_PER_NODE = 62,
    gres_detail: GRES_DETAIL = 63,
    batch_flag: BATCH_FLAG = 64,
    oom: OOM = 65,
    mail_type: MAIL_TYPE = 66,
    mail_user: MAIL_USER = 67,
    time_min: TIME_MIN = 68,
    steps: STEPS = 400,
    oversubscribe: OVERSUBSCRIBE = 600,
    stopped: STOPPED = 700,
    system_comment: SYSTEM_COMMENT = 1610,
    last_changed: LAST_CHANGED = 1750,
}

impl JobMask {
    /// Every field (an empty `fields` list).
    pub fn all() -> JobMask {
        JobMask { bits: 0, all: true }
    }

    /// The fields numbered in `fields`; none listed means all of them.
    /// Numbers `JobInfo` does not have are ignored.
    pub fn of(fields: &[u32]) -> JobMask {
        if fields.is_empty() {
            return JobMask::all();
        }
        let mut bits = 0u128;
        for &n in fields {
            if let Some(b) = bit(n) {
                bits |= 1u128 << b;
            }
        }
        JobMask { bits, all: false }
    }

    /// Whether every field is kept.
    pub fn is_all(&self) -> bool {
        self.all
    }

    /// Whether field number `n` is kept.
    pub fn has(&self, n: u32) -> bool {
        self.all || bit(n).is_some_and(|b| self.bits & (1u128 << b) != 0)
    }
}

/// A record with every field set to a value other than its default
/// (tests of masks and of the code that reads the records).
pub fn every_field_set() -> JobInfo {
    use crate::{GresAlloc, JobState, NodeAlloc, StepInfo};
    let alloc = vec![NodeAlloc {
        node: "n1".into(),
        cpus: 2,
        cpu_ids: vec![0, 1],
        mem_mb: 100,
        gres: vec![GresAlloc {
            name: "gpu".into(),
            r#type: String::new(),
            indices: vec![0],
            ..Default::default()
        }],
        tasks: 1,
    }];
    JobInfo {
        job_id: 17,
        array_job_id: 15,
        array_task_id: 2,
        array_pending: "3-5".into(),
        array_max_running: 2,
        is_array_meta: true,
        state: JobState::Running as i32,
        state_reason: "Priority".into(),
        reason_detail: "held by admin".into(),
        user_id: 1000,
        user_name: "alice".into(),
        group_id: 1001,
        group_name: "staff".into(),
        name: "train".into(),
        partition: "gpu".into(),
        account: "physics".into(),
        qos: "high".into(),
        priority: 4_000_000,
        nice: -5,
        time_limit: 90,
        submit_time: 1_700_000_000,
        eligible_time: 1_700_000_010,
        start_time: 1_700_000_100,
        end_time: 1_700_005_500,
        suspend_time: 1_700_000_200,
        nodes: "n[1-2]".into(),
        req_nodes: "n1".into(),
        exc_nodes: "n9".into(),
        num_nodes: 2,
        num_cpus: 4,
        num_tasks: 3,
        cpus_per_task: 2,
        min_memory_mb: 2048,
        mem_per_cpu: true,
        tres_per_node: "gres/gpu:1".into(),
        tres_req: "cpu=4,mem=4G,node=2,billing=4".into(),
        tres_alloc: "cpu=4,mem=4G,node=2,billing=4,gres/gpu=2".into(),
        features: "fast".into(),
        dependency: "afterok:3".into(),
        work_dir: "/home/alice".into(),
        std_out: "/home/alice/out.txt".into(),
        std_err: "/home/alice/err.txt".into(),
        std_in: "/home/alice/in.txt".into(),
        command: "/home/alice/run.sh".into(),
        exit_code: 3,
        exit_signal: 9,
        restart_count: 1,
        requeue: true,
        exclusive: true,
        comment: "a comment".into(),
        batch_host: "n1".into(),
        hold: 1,
        alloc: alloc.clone(),
        pre_sus_time: 50,
        submit_host: "login1".into(),
        reservation: "maint".into(),
        derived_exit_code: 2,
        cancelled_by: "0".into(),
        min_cpus_per_node: 2,
        array_spec: "1-5%2".into(),
        wckey: "wk".into(),
        ntasks_per_node: 2,
        gres_detail: "gpu(IDX:0)".into(),
        batch_flag: true,
        oom: true,
        mail_type: "END".into(),
        mail_user: "alice@example.org".into(),
        time_min: 30,
        steps: vec![StepInfo {
            step_id: 0,
            name: "step".into(),
            nodelist: "n1".into(),
            alloc,
            ..Default::default()
        }],
        oversubscribe: true,
        stopped: true,
        system_comment: "GPU out of memory".into(),
        last_changed: 1_700_000_300,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// The field numbers of a message's top-level fields, in order.
    fn tags(bytes: &[u8]) -> Vec<u32> {
        let mut buf = bytes;
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (tag, wire) = prost::encoding::decode_key(&mut buf).unwrap();
            prost::encoding::skip_field(wire, tag, &mut buf, Default::default()).unwrap();
            out.push(tag);
        }
        out
    }

    #[test]
    fn every_field_is_set_and_numbered() {
        let mut t = tags(&every_field_set().encode_to_vec());
        t.dedup();
        // Every field is on the wire, and ALL lists exactly them.
        assert_eq!(t, ALL);
    }

    #[test]
    fn keeping_one_field_keeps_that_number_only() {
        for &n in ALL {
            let mut j = every_field_set();
            JobMask::of(&[n]).apply(&mut j);
            let mut t = tags(&j.encode_to_vec());
            t.dedup();
            assert_eq!(t, vec![n], "field {n}");
        }
        assert_eq!(num::NAME, 14);
        assert_eq!(num::LAST_CHANGED, 1750);
    }

    #[test]
    fn empty_means_all_and_unknown_numbers_are_ignored() {
        let mut j = every_field_set();
        JobMask::of(&[]).apply(&mut j);
        assert_eq!(j, every_field_set());
        assert!(JobMask::of(&[]).is_all());
        let m = JobMask::of(&[num::JOB_ID, 5000, 0, 99_999]);
        assert!(!m.is_all());
        assert!(m.has(num::JOB_ID) && !m.has(5000) && !m.has(num::NAME));
        let mut j = every_field_set();
        m.apply(&mut j);
        assert_eq!(
            j,
            JobInfo {
                job_id: 17,
                ..Default::default()
            }
        );
    }

    #[test]
    fn strings_keep_their_buffers() {
        let mut j = every_field_set();
        let cap = j.work_dir.capacity();
        JobMask::of(&[num::JOB_ID]).apply(&mut j);
        assert!(j.work_dir.is_empty());
        assert_eq!(j.work_dir.capacity(), cap);
    }
}
