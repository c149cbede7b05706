//! Which `JobInfo` fields a listing reads (`GetJobsRequest.fields`): those
//! its format prints, its sort orders by and its client-side filters test,
//! plus what every row needs (ids, array shape, state). The controller
//! leaves the rest off the wire, so a default `squeue` over 10,000 jobs
//! receives and decodes a fraction of the bytes and strings. Pure.

use drover_proto::jobmask::num as n;

use super::args::Params;
use super::format::JobField;

/// What every row reads: its id and array shape (`array_kind`), its state
/// (`state_of`, SPECIAL_EXIT from `hold`, STOPPED), and the sort's
/// tie-breaks (start time, then id).
const ALWAYS: &[u32] = &[
    n::JOB_ID,
    n::ARRAY_JOB_ID,
    n::ARRAY_TASK_ID,
    n::ARRAY_PENDING,
    n::ARRAY_MAX_RUNNING,
    n::IS_ARRAY_META,
    n::STATE,
    n::HOLD,
    n::STOPPED,
    n::START_TIME,
];

/// What `format::time_used` reads.
const TIME_USED: &[u32] = &[n::START_TIME, n::END_TIME, n::SUSPEND_TIME, n::PRE_SUS_TIME];

/// The fields `format::value` reads for `f` (besides [`ALWAYS`]).
pub fn of_field(f: JobField, out: &mut Vec<u32>) {
    use JobField as F;
    let add: &[u32] = match f {
        F::Account => &[n::ACCOUNT],
        F::TresPerNode => &[n::TRES_PER_NODE],
        F::ExecHost => &[n::BATCH_HOST],
        F::MinCpus => &[n::MIN_CPUS_PER_NODE, n::CPUS_PER_TASK],
        F::NumCpus | F::MaxCpus => &[n::NUM_CPUS],
        F::NumNodes | F::MaxNodes => &[n::NUM_NODES],
        F::EndTime => &[n::TIME_LIMIT, n::END_TIME],
        F::Dependency => &[n::DEPENDENCY],
        F::Features => &[n::FEATURES],
        F::GroupName => &[n::GROUP_NAME, n::GROUP_ID],
        F::GroupId => &[n::GROUP_ID],
        F::OverSubscribe => &[n::OVERSUBSCRIBE],
        F::Name => &[n::NAME],
        F::Comment => &[n::COMMENT],
        F::TimeLimit => &[n::TIME_LIMIT],
        F::TimeLeft => {
            out.extend_from_slice(TIME_USED);
            &[n::TIME_LIMIT]
        }
        F::MinMemory | F::MinMemoryExact => &[n::MIN_MEMORY_MB],
        F::TimeUsed => TIME_USED,
        F::ReqNodes => &[n::REQ_NODES],
        F::NodeList => &[n::NODES],
        F::Command => &[n::COMMAND],
        F::Priority | F::PriorityLong => &[n::PRIORITY],
        F::Partition => &[n::PARTITION],
        F::Qos => &[n::QOS],
        F::Reason => &[n::STATE_REASON, n::REASON_DETAIL],
        F::ReasonList => &[n::STATE_REASON, n::REASON_DETAIL, n::NODES],
        F::StartTime => &[n::START_TIME],
        F::UserId => &[n::USER_ID],
        F::UserName => &[n::USER_NAME, n::USER_ID],
        F::Reservation => &[n::RESERVATION],
        F::SubmitTime => &[n::SUBMIT_TIME],
        F::Wckey => &[n::WCKEY],
        F::ExcNodes => &[n::EXC_NODES],
        F::Nice => &[n::NICE],
        F::WorkDir => &[n::WORK_DIR],
        F::NumTasks => &[n::NUM_TASKS],
        F::StdOut => &[n::STD_OUT, n::WORK_DIR],
        F::StdErr => &[n::STD_ERR, n::STD_OUT, n::WORK_DIR],
        F::StdIn => &[n::STD_IN],
        F::CpusPerTask => &[n::CPUS_PER_TASK],
        F::ExitCode => &[n::EXIT_CODE],
        F::RestartCnt => &[n::RESTART_COUNT],
        F::Requeue => &[n::REQUEUE],
        F::BatchFlag => &[n::BATCH_FLAG],
        F::TresAlloc => &[n::TRES_ALLOC, n::TRES_REQ],
        F::EligibleTime => &[n::ELIGIBLE_TIME],
        F::TimeMin => &[n::TIME_MIN],
        F::NtasksPerNode => &[n::NTASKS_PER_NODE],
        F::PendingTime => &[n::START_TIME, n::SUBMIT_TIME],
        F::AllocNode => &[n::SUBMIT_HOST],
        F::MailType => &[n::MAIL_TYPE],
        F::MailUser => &[n::MAIL_USER],
        // Ids and state are always there; the rest print constants.
        F::JobIdRaw
        | F::JobId
        | F::ArrayJobId
        | F::ArrayTaskId
        | F::StateCompact
        | F::State
        | F::MinTmpDisk
        | F::Sockets
        | F::Cores
        | F::Threads
        | F::Contiguous
        | F::SelectJobInfo
        | F::Licenses
        | F::CoreSpec
        | F::SchedNodes
        | F::Sct
        | F::Cluster
        | F::Invalid => &[],
    };
    out.extend_from_slice(add);
}

/// The fields `sort::key_of` reads for sort key `c` (besides [`ALWAYS`]).
fn of_sort_key(c: char, out: &mut Vec<u32>) {
    let add: &[u32] = match c {
        'B' => &[n::BATCH_HOST],
        'C' => &[n::NUM_CPUS],
        'D' => &[n::NUM_NODES],
        'e' => &[n::END_TIME],
        'g' => &[n::GROUP_NAME],
        'G' => &[n::GROUP_ID],
        'j' => &[n::NAME],
        'l' => &[n::TIME_LIMIT],
        'L' => {
            out.extend_from_slice(TIME_USED);
            &[n::TIME_LIMIT]
        }
        'm' => &[n::MIN_MEMORY_MB],
        'M' => TIME_USED,
        'N' => &[n::NODES],
        'p' | 'Q' => &[n::PRIORITY],
        'P' => &[n::PARTITION],
        'q' => &[n::QOS],
        'u' => &[n::USER_NAME],
        'U' => &[n::USER_ID],
        'v' => &[n::RESERVATION],
        'V' => &[n::SUBMIT_TIME],
        'a' => &[n::ACCOUNT],
        _ => &[],
    };
    out.extend_from_slice(add);
}

/// The `JobInfo` field numbers the listing `p` asks for; empty (every
/// field) for `--json` and `-s`, which print whole records.
pub fn wanted(p: &Params) -> Vec<u32> {
    if p.json || p.steps {
        return Vec::new();
    }
    let mut out = ALWAYS.to_vec();
    for f in &p.format.fields {
        of_field(f.kind, &mut out);
    }
    for c in p.sort.chars() {
        of_sort_key(c, &mut out);
    }
    // Client-side filters (`filter::filter`).
    let tests: [(bool, u32); 7] = [
        (p.accounts.is_some(), n::ACCOUNT),
        (p.qos.is_some(), n::QOS),
        (p.nodes.is_some(), n::NODES),
        (p.users.is_some(), n::USER_ID),
        (p.reservation.is_some(), n::RESERVATION),
        (p.names.is_some(), n::NAME),
        (
            p.partitions.is_some() || !p.hidden_partitions.is_empty(),
            n::PARTITION,
        ),
    ];
    out.extend(tests.iter().filter(|(on, _)| *on).map(|(_, f)| *f));
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::render;
    use crate::squeue::tests::params;
    use drover_proto::jobmask::{every_field_set, JobMask};
    use drover_proto::{JobInfo, JobState};

    /// A queue whose records differ in every field, in every state and
    /// array shape, so a field left out of a mask changes some output.
    fn queue() -> Vec<JobInfo> {
        let states = [
            JobState::Pending,
            JobState::Running,
            JobState::Suspended,
            JobState::Completed,
            JobState::Failed,
            JobState::Completing,
            JobState::Timeout,
            JobState::Cancelled,
        ];
        let mut seed = 0x2545_f491_u64;
        let mut next = move |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % m
        };
        let mut v = Vec::new();
        for i in 0..48u32 {
            let mut j = every_field_set();
            let r = |k: u64| k as u32;
            j.job_id = 100 + i;
            j.state = states[i as usize % states.len()] as i32;
            match i % 4 {
                0 => {
                    j.array_job_id = 0;
                    j.is_array_meta = false;
                }
                1 => {
                    j.array_job_id = 90 + i % 3;
                    j.is_array_meta = true;
                    j.state = JobState::Pending as i32;
                    j.array_pending = format!("{}-{}", i, i + 2);
                    j.array_max_running = r(next(3));
                }
                2 => {
                    j.array_job_id = 90 + i % 3;
                    j.is_array_meta = false;
                    j.array_task_id = i;
                }
                _ => {
                    j.array_job_id = 0;
                    j.is_array_meta = false;
                }
            }
            j.hold = [0, 1, 4][next(3) as usize];
            j.stopped = next(4) == 0;
            j.state_reason = ["Priority", "Resources", "", "JobHeldUser"][next(4) as usize].into();
            j.reason_detail = format!("detail{}", next(3));
            j.user_id = 1000 + r(next(2));
            j.user_name = ["alice", "bob", ""][next(3) as usize].into();
            j.group_id = 100 + r(next(3));
            j.group_name = ["staff", "", "users"][next(3) as usize].into();
            j.name = format!("job{}", next(5));
            j.partition = ["debug", "gpu", "debug,gpu", "long"][next(4) as usize].into();
            j.account = format!("acct{}", next(3));
            j.qos = ["normal", "high", ""][next(3) as usize].into();
            j.priority = r(next(1_000_000));
            j.nice = r(next(20)) as i32 - 10;
            j.time_limit = [30, 60, 1440, drover_proto::INFINITE][next(4) as usize];
            j.submit_time = 1_700_000_000 - next(5000) as i64;
            j.eligible_time = j.submit_time + next(10) as i64;
            j.start_time = [0, 1_699_999_000, 1_700_000_050, 1_700_009_000][next(4) as usize];
            j.end_time = [0, 1_700_000_090, 1_700_020_000][next(3) as usize];
            j.suspend_time = [0, 1_700_000_060][next(2) as usize];
            j.pre_sus_time = next(100) as i64;
            j.nodes = ["", "n1", "n[1-2]", "n3"][next(4) as usize].into();
            j.req_nodes = format!("n{}", next(4));
            j.exc_nodes = format!("n{}", next(4) + 5);
            j.num_nodes = 1 + r(next(4));
            j.num_cpus = 1 + r(next(64));
            j.num_tasks = 1 + r(next(8));
            j.cpus_per_task = r(next(3));
            j.min_memory_mb = [0, 1024, 1500, 4096][next(4) as usize];
            j.tres_per_node = ["", "gres/gpu:1"][next(2) as usize].into();
            j.tres_req = format!("cpu={}", next(9));
            j.tres_alloc = ["", "cpu=2"][next(2) as usize].into();
            j.features = ["", "fast"][next(2) as usize].into();
            j.dependency = ["", "afterok:3"][next(2) as usize].into();
            j.work_dir = format!("/home/u{}", next(3));
            j.std_out = ["", "/o/out"][next(2) as usize].into();
            j.std_err = ["", "/o/err"][next(2) as usize].into();
            j.std_in = ["", "/i/in"][next(2) as usize].into();
            j.command = ["", "/bin/x"][next(2) as usize].into();
            j.exit_code = r(next(3)) as i32;
            j.restart_count = r(next(3));
            j.requeue = next(2) == 0;
            j.comment = ["", "c"][next(2) as usize].into();
            j.batch_host = format!("n{}", next(3));
            j.submit_host = format!("login{}", next(3));
            j.reservation = ["", "maint"][next(2) as usize].into();
            j.min_cpus_per_node = r(next(4));
            j.wckey = ["", "wk"][next(2) as usize].into();
            j.ntasks_per_node = r(next(3));
            j.batch_flag = next(2) == 0;
            j.mail_type = ["", "END"][next(2) as usize].into();
            j.mail_user = ["", "a@b"][next(2) as usize].into();
            j.time_min = r(next(3)) * 10;
            j.oversubscribe = next(2) == 0;
            v.push(j);
        }
        v
    }

    fn rendered(p: &Params, jobs: &[JobInfo]) -> String {
        let mut out = String::new();
        render(&mut out, p, jobs, 1_700_000_100);
        out
    }

    /// The listing `args` prints the same from records masked to
    /// `wanted` as from whole records.
    fn same_output(args: &[&str]) {
        let p = params(args);
        let fields = wanted(&p);
        assert!(!fields.is_empty(), "{args:?}");
        let full = queue();
        let mut masked = full.clone();
        let mask = JobMask::of(&fields);
        masked.iter_mut().for_each(|j| mask.apply(j));
        assert_ne!(full, masked, "{args:?}: the mask keeps everything");
        assert_eq!(rendered(&p, &full), rendered(&p, &masked), "{args:?}");
    }

    #[test]
    fn every_format_letter_renders_the_same_from_its_fields() {
        for c in ('a'..='z').chain('A'..='Z') {
            if crate::squeue::format::by_letter(c).is_some() {
                let f = format!("%{c}|%.5{c}");
                same_output(&["-t", "all", "-o", &f]);
            }
        }
    }

    #[test]
    fn every_long_field_renders_the_same_from_its_fields() {
        let names = [
            "numtasks",
            "account",
            "jobid",
            "gres",
            "tres-per-node",
            "batchhost",
            "mincpus",
            "numcpus",
            "mintmpdisk",
            "numnodes",
            "endtime",
            "dependency",
            "feature",
            "features",
            "arrayjobid",
            "groupname",
            "groupid",
            "oversubscribe",
            "shared",
            "sockets",
            "jobarrayid",
            "cores",
            "name",
            "threads",
            "comment",
            "arraytaskid",
            "timelimit",
            "timeleft",
            "minmemory",
            "timeused",
            "reqnodes",
            "nodelist",
            "command",
            "contiguous",
            "priority",
            "partition",
            "qos",
            "prioritylong",
            "reason",
            "reasonlist",
            "selectjobinfo",
            "starttime",
            "statecompact",
            "state",
            "userid",
            "username",
            "reservation",
            "submittime",
            "wckey",
            "licenses",
            "excnodes",
            "corespec",
            "nice",
            "schednodes",
            "sct",
            "workdir",
            "stdout",
            "stderr",
            "stdin",
            "cpuspertask",
            "cpus-per-task",
            "exit_code",
            "exitcode",
            "restartcnt",
            "requeue",
            "batchflag",
            "tres",
            "tres-alloc",
            "cluster",
            "eligibletime",
            "mintime",
            "maxnodes",
            "maxcpus",
            "ntpernode",
            "pendingtime",
            "allocnodes",
            "mailtype",
            "mailuser",
        ];
        let mut seen = 0;
        for name in names {
            if crate::squeue::format::by_name(name).is_some() {
                seen += 1;
                same_output(&["-t", "all", "-O", &format!("{name}:12,{name}")]);
            }
        }
        assert_eq!(seen, names.len(), "unknown long names");
    }

    #[test]
    fn every_sort_key_orders_the_same_from_its_fields() {
        for c in "BCDegGiAjlLmMNpQPqStTuUvVa".chars() {
            for s in [format!("{c}"), format!("-{c},i")] {
                same_output(&["-t", "all", "-o", "%i", &format!("--sort={s}")]);
            }
        }
    }

    #[test]
    fn filters_and_the_default_listings_agree() {
        for args in [
            &[][..],
            &["-l"],
            &["-r"],
            &["-t", "all", "-r"],
            &["-A", "acct1"],
            &["-q", "high"],
            &["-w", "n2"],
            &["-u", "bob"],
            &["--me"],
            &["-R", "maint"],
            &["-n", "job3"],
            &["-p", "gpu"],
            &["-j", "100,105,90"],
            &["-j", "90_3"],
            &["-t", "PD", "--format=%i %r %T"],
            &["-t", "SE"],
            &["--start"],
        ] {
            same_output(args);
        }
        let mut p = params(&[]);
        p.hidden_partitions = vec!["gpu".into()];
        let full = queue();
        let mut masked = full.clone();
        let mask = JobMask::of(&wanted(&p));
        masked.iter_mut().for_each(|j| mask.apply(j));
        assert_eq!(rendered(&p, &full), rendered(&p, &masked));
    }

    #[test]
    fn default_format_asks_for_few_fields_and_json_for_all() {
        let f = wanted(&params(&[]));
        for want in [
            n::NAME,
            n::USER_NAME,
            n::PARTITION,
            n::NUM_NODES,
            n::PRIORITY,
        ] {
            assert!(f.contains(&want), "{want}");
        }
        for not in [n::WORK_DIR, n::ACCOUNT, n::SUBMIT_HOST, n::LAST_CHANGED] {
            assert!(!f.contains(&not), "{not}");
        }
        assert!(f.len() < 25, "{f:?}");
        assert!(wanted(&params(&["--json"])).is_empty());
        assert!(wanted(&params(&["-s"])).is_empty());
    }
}
