//! squeue's rendering of one job record into a line (the field table, its
//! letters, names and titles, is in `fields.rs`, re-exported here). Pure
//! (user/group names come from the records; lookups are the caller's
//! business).

use std::fmt::Write as _;

use drover_proto::{JobInfo, JobState, INFINITE};

use crate::fmtspec::{self, Field, Format};
use crate::timefmt;

pub use super::fields::{
    by_letter, by_name, header, parse_format, parse_long_format, JobField, DEFAULT_FORMAT,
    LONG_FORMAT, START_FORMAT, STATE_ONLY_FORMAT,
};

use JobField as F;

/// `JobInfo.hold` of a job requeued held by `scontrol requeuehold
/// State=SpecialExit`.
pub const SPECIAL_EXIT: u32 = 4;

/// Slurm shows such a job SPECIAL_EXIT (SE) while it pends.
pub fn special_exit(j: &JobInfo, state: JobState) -> bool {
    j.hold == SPECIAL_EXIT && state == JobState::Pending
}

/// One line of output: a job record, possibly narrowed to one array task
/// (`squeue -r`) or to some pending tasks (`-j A_[1-3]`).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub job: &'a JobInfo,
    pub task: Option<u32>,
    pub pending: Option<&'a str>,
}

impl<'a> Row<'a> {
    pub fn new(job: &'a JobInfo) -> Row<'a> {
        Row {
            job,
            task: None,
            pending: None,
        }
    }
}

/// How a record takes part in a job array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayKind<'a> {
    NotArray,
    Task(u32),
    /// The pending remainder (`4-9,12`).
    Meta(&'a str),
}

pub fn array_kind<'a>(row: &Row<'a>) -> ArrayKind<'a> {
    let j = row.job;
    if let Some(t) = row.task {
        return ArrayKind::Task(t);
    }
    if j.array_job_id == 0 {
        ArrayKind::NotArray
    } else if j.is_array_meta {
        ArrayKind::Meta(row.pending.unwrap_or(&j.array_pending))
    } else {
        ArrayKind::Task(j.array_task_id)
    }
}

pub fn state_of(row: &Row<'_>) -> JobState {
    if row.task.is_some() && row.job.is_array_meta {
        JobState::Pending
    } else {
        JobState::try_from(row.job.state).unwrap_or(JobState::Pending)
    }
}

/// Seconds the job has run (Slurm's `job_time_used`).
pub fn time_used(j: &JobInfo, state: JobState, now: i64) -> i64 {
    if j.start_time == 0 || state == JobState::Pending {
        return 0;
    }
    if state == JobState::Suspended {
        return j.pre_sus_time;
    }
    let end = if state == JobState::Running || j.end_time == 0 {
        now
    } else {
        j.end_time
    };
    let used = if j.suspend_time != 0 {
        (end - j.suspend_time) + j.pre_sus_time
    } else {
        end - j.start_time
    };
    used.max(0)
}

/// The reason text (`Priority`, `Resources`, ...).
pub fn reason(j: &JobInfo) -> &str {
    if !j.state_reason.is_empty() {
        &j.state_reason
    } else if !j.reason_detail.is_empty() {
        &j.reason_detail
    } else {
        "None"
    }
}

/// Slurm's `convert_num_unit` with exact conversion, starting at `unit`
/// (0 = none, 2 = MB).
pub fn push_num_unit(out: &mut String, mut n: u64, mut unit: usize) {
    const UNITS: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    if n == 0 {
        out.push('0');
        return;
    }
    while n >= 1024 && n.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        n /= 1024;
        unit += 1;
    }
    let _ = write!(out, "{n}{}", UNITS[unit.min(6)]);
}

fn num(out: &mut String, n: i64) {
    crate::jsonw::push_int(out, n);
}

fn or_null(s: &str) -> &str {
    if s.is_empty() {
        "(null)"
    } else {
        s
    }
}

fn push_time(out: &mut String, t: i64) {
    if t == 0 {
        out.push_str("N/A");
    } else {
        out.push_str(&timefmt::make_time_str(t));
    }
}

fn push_array_id(out: &mut String, row: &Row<'_>) {
    let j = row.job;
    match array_kind(row) {
        ArrayKind::NotArray => {
            num(out, i64::from(j.job_id));
        }
        ArrayKind::Task(t) => {
            num(out, i64::from(j.array_job_id));
            out.push('_');
            num(out, i64::from(t));
        }
        ArrayKind::Meta(p) => {
            num(out, i64::from(j.array_job_id));
            out.push_str("_[");
            out.push_str(p);
            if j.array_max_running > 0 {
                let _ = write!(out, "%{}", j.array_max_running);
            }
            out.push(']');
        }
    }
}

/// Default stdout path when the record has none (Slurm's rule).
fn default_out(j: &JobInfo) -> String {
    if j.array_job_id != 0 {
        format!(
            "{}/slurm-{}_{}.out",
            j.work_dir, j.array_job_id, j.array_task_id
        )
    } else {
        format!("{}/slurm-{}.out", j.work_dir, j.job_id)
    }
}

pub fn std_out_path(j: &JobInfo) -> String {
    if !j.std_out.is_empty() {
        j.std_out.clone()
    } else {
        default_out(j)
    }
}

pub fn std_err_path(j: &JobInfo) -> String {
    if !j.std_err.is_empty() {
        j.std_err.clone()
    } else {
        std_out_path(j)
    }
}

/// Write one field's value into `out`; returns whether long values are cut.
pub fn value(out: &mut String, f: JobField, row: &Row<'_>, now: i64) -> bool {
    let j = row.job;
    let state = state_of(row);
    match f {
        F::Account => out.push_str(or_null(&j.account)),
        F::JobIdRaw => {
            num(out, i64::from(j.job_id));
        }
        F::JobId => push_array_id(out, row),
        F::TresPerNode => out.push_str(if j.tres_per_node.is_empty() {
            "N/A"
        } else {
            &j.tres_per_node
        }),
        F::ExecHost => out.push_str(if j.batch_host.is_empty() {
            "n/a"
        } else {
            &j.batch_host
        }),
        F::MinCpus => {
            let n = if j.min_cpus_per_node > 0 {
                j.min_cpus_per_node
            } else {
                j.cpus_per_task.max(1)
            };
            push_num_unit(out, u64::from(n), 0);
        }
        F::NumCpus => {
            num(out, i64::from(j.num_cpus));
        }
        F::MinTmpDisk => out.push('0'),
        F::NumNodes => {
            num(out, i64::from(j.num_nodes));
        }
        F::EndTime => {
            if j.time_limit == INFINITE && j.end_time > now {
                out.push_str("NONE");
            } else {
                push_time(out, j.end_time);
            }
        }
        F::Dependency => out.push_str(or_null(&j.dependency)),
        F::Features => out.push_str(or_null(&j.features)),
        F::ArrayJobId => {
            let id = if j.array_job_id != 0 {
                j.array_job_id
            } else {
                j.job_id
            };
            num(out, i64::from(id));
        }
        F::GroupName => {
            if j.group_name.is_empty() {
                num(out, i64::from(j.group_id));
            } else {
                out.push_str(&j.group_name);
            }
        }
        F::GroupId => {
            num(out, i64::from(j.group_id));
        }
        F::OverSubscribe => out.push_str(if j.oversubscribe { "OK" } else { "NO" }),
        F::Sockets | F::Cores | F::Threads => out.push('*'),
        F::Name => out.push_str(&j.name),
        F::Comment => out.push_str(or_null(&j.comment)),
        F::ArrayTaskId => match array_kind(row) {
            ArrayKind::NotArray => out.push_str("N/A"),
            ArrayKind::Task(t) => {
                num(out, i64::from(t));
            }
            ArrayKind::Meta(p) => {
                out.push_str(p);
                if j.array_max_running > 0 {
                    let _ = write!(out, "%{}", j.array_max_running);
                }
            }
        },
        F::TimeLimit => match j.time_limit {
            INFINITE => out.push_str("UNLIMITED"),
            m => timefmt::push_secs_short(out, i64::from(m) * 60, false),
        },
        F::TimeLeft => match j.time_limit {
            INFINITE => out.push_str("UNLIMITED"),
            m => timefmt::push_secs_short(out, i64::from(m) * 60 - time_used(j, state, now), false),
        },
        F::MinMemory => push_num_unit(out, j.min_memory_mb, 2),
        F::MinMemoryExact => {
            if j.min_memory_mb == 0 {
                out.push('0');
            } else {
                let _ = write!(out, "{}M", j.min_memory_mb);
            }
        }
        F::TimeUsed => timefmt::push_secs_short(out, time_used(j, state, now), true),
        F::ReqNodes => {
            out.push_str(&j.req_nodes);
            return false;
        }
        F::NodeList => {
            out.push_str(&j.nodes);
            return false;
        }
        F::Command => out.push_str(or_null(&j.command)),
        F::Contiguous => out.push('0'),
        F::Priority => {
            let _ = write!(out, "{:16.14}", f64::from(j.priority) / f64::from(u32::MAX));
        }
        F::PriorityLong => {
            num(out, i64::from(j.priority));
        }
        F::Partition => out.push_str(&j.partition),
        F::Qos => out.push_str(or_null(&j.qos)),
        F::Reason => out.push_str(reason(j)),
        F::ReasonList => {
            let show_reason = state != JobState::Completing
                && matches!(
                    state,
                    JobState::Pending | JobState::Timeout | JobState::Failed
                );
            if show_reason {
                out.push('(');
                out.push_str(reason(j));
                out.push(')');
            } else {
                out.push_str(&j.nodes);
                return false;
            }
        }
        F::SelectJobInfo => {}
        F::StartTime => push_time(out, j.start_time),
        // Slurm's STOPPED flag (scancel -s STOP) shows over RUNNING.
        F::StateCompact if j.stopped => out.push_str("ST"),
        F::State if j.stopped => out.push_str("STOPPED"),
        F::StateCompact if special_exit(j, state) => out.push_str("SE"),
        F::State if special_exit(j, state) => out.push_str("SPECIAL_EXIT"),
        F::StateCompact => out.push_str(state.short_name()),
        F::State => out.push_str(state.long_name()),
        F::UserId => {
            num(out, i64::from(j.user_id));
        }
        F::UserName => {
            if j.user_name.is_empty() {
                num(out, i64::from(j.user_id));
            } else {
                out.push_str(&j.user_name);
            }
        }
        F::Reservation => out.push_str(or_null(&j.reservation)),
        F::SubmitTime => push_time(out, j.submit_time),
        F::Wckey => out.push_str(or_null(&j.wckey)),
        F::Licenses => out.push_str("(null)"),
        F::ExcNodes => {
            out.push_str(&j.exc_nodes);
            return false;
        }
        F::CoreSpec => out.push_str("N/A"),
        F::Nice => {
            num(out, i64::from(j.nice));
        }
        F::SchedNodes => out.push_str("(null)"),
        F::Sct => out.push_str("*:*:*"),
        F::WorkDir => out.push_str(or_null(&j.work_dir)),
        F::NumTasks => {
            num(out, i64::from(j.num_tasks));
        }
        F::StdOut => out.push_str(&std_out_path(j)),
        F::StdErr => out.push_str(&std_err_path(j)),
        F::StdIn => out.push_str(if j.std_in.is_empty() {
            "/dev/null"
        } else {
            &j.std_in
        }),
        F::CpusPerTask => {
            num(out, i64::from(j.cpus_per_task.max(1)));
        }
        F::ExitCode => {
            num(out, i64::from(j.exit_code));
        }
        F::RestartCnt => {
            num(out, i64::from(j.restart_count));
        }
        F::Requeue => {
            num(out, i64::from(u8::from(j.requeue)));
        }
        F::BatchFlag => {
            num(out, i64::from(u8::from(j.batch_flag)));
        }
        F::TresAlloc => out.push_str(if j.tres_alloc.is_empty() {
            &j.tres_req
        } else {
            &j.tres_alloc
        }),
        F::Cluster => {}
        F::EligibleTime => push_time(out, j.eligible_time),
        F::TimeMin => {
            if j.time_min == 0 {
                out.push_str("N/A");
            } else {
                timefmt::push_secs_short(out, i64::from(j.time_min) * 60, false);
            }
        }
        F::MaxNodes => {
            num(out, i64::from(j.num_nodes));
        }
        F::MaxCpus => {
            num(out, i64::from(j.num_cpus));
        }
        F::NtasksPerNode => {
            if j.ntasks_per_node == 0 {
                out.push_str("N/A");
            } else {
                num(out, i64::from(j.ntasks_per_node));
            }
        }
        F::PendingTime => {
            let p = if j.start_time != 0 && state != JobState::Pending {
                j.start_time - j.submit_time
            } else {
                now - j.submit_time
            };
            num(out, p.max(0));
        }
        F::AllocNode => out.push_str(or_null(&j.submit_host)),
        F::MailType => out.push_str(or_null(&j.mail_type)),
        F::MailUser => out.push_str(or_null(&j.mail_user)),
        F::Invalid => {}
    }
    true
}

/// Render the header line (without the newline).
pub fn render_header(out: &mut String, fmt: &Format<JobField>) {
    out.push_str(&fmt.prefix);
    for f in &fmt.fields {
        if f.kind != F::Invalid {
            let cut = !matches!(f.kind, F::NodeList | F::ReasonList | F::SchedNodes);
            fmtspec::push_cell(out, header(f.kind), f.width, f.right, cut);
        }
        out.push_str(&f.suffix);
    }
}

/// Render one record (without the newline), each value written in place.
pub fn render_row(out: &mut String, fmt: &Format<JobField>, row: &Row<'_>, now: i64) {
    out.push_str(&fmt.prefix);
    for Field {
        kind,
        width,
        right,
        suffix,
    } in &fmt.fields
    {
        if *kind != F::Invalid {
            let start = out.len();
            let cut = value(out, *kind, row, now);
            fmtspec::fit_cell(out, start, *width, *right, cut);
        }
        out.push_str(suffix);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn job(id: u32, name: &str, state: JobState) -> JobInfo {
        JobInfo {
            job_id: id,
            name: name.into(),
            user_name: "alice".into(),
            user_id: 1000,
            group_name: "alice".into(),
            group_id: 1000,
            partition: "debug".into(),
            state: state as i32,
            state_reason: if state == JobState::Pending {
                "Priority".into()
            } else {
                "None".into()
            },
            num_nodes: 1,
            num_cpus: 1,
            num_tasks: 1,
            cpus_per_task: 1,
            time_limit: 60,
            priority: 4294901756,
            submit_time: 1_700_000_000,
            work_dir: "/home/alice".into(),
            batch_flag: true,
            ..Default::default()
        }
    }

    fn render(fmt: &str, rows: &[Row<'_>], now: i64) -> String {
        let (f, _) = parse_format(fmt);
        let mut out = String::new();
        render_header(&mut out, &f);
        out.push('\n');
        for r in rows {
            render_row(&mut out, &f, r, now);
            out.push('\n');
        }
        out
    }

    #[test]
    fn default_layout() {
        let now = 1_700_000_100;
        let mut running = job(42, "train.py", JobState::Running);
        running.start_time = now - 65;
        running.nodes = "node[1-2]".into();
        running.num_nodes = 2;
        let pending = job(43, "a very long job name", JobState::Pending);
        let out = render(
            DEFAULT_FORMAT,
            &[Row::new(&pending), Row::new(&running)],
            now,
        );
        let expect = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n\
                      \x20               43     debug a very l    alice PD       0:00      1 (Priority)\n\
                      \x20               42     debug train.py    alice  R       1:05      2 node[1-2]\n";
        assert_eq!(out, expect);
    }

    #[test]
    fn long_layout_and_limits() {
        let now = 1_700_000_100;
        let mut j = job(7, "x", JobState::Running);
        j.start_time = now - 3600;
        j.time_limit = INFINITE;
        j.nodes = "n1".into();
        let out = render(LONG_FORMAT, &[Row::new(&j)], now);
        assert_eq!(
            out.lines().nth(1).unwrap(),
            "                 7     debug        x    alice  RUNNING    1:00:00 UNLIMITED      1 n1"
        );
        let mut j = job(8, "x", JobState::Running);
        j.start_time = now - 30;
        j.time_limit = 1;
        let out = render("%L|%l|%M", &[Row::new(&j)], now);
        assert_eq!(out.lines().nth(1).unwrap(), "0:30|1:00|0:30");
    }

    #[test]
    fn arrays() {
        let mut meta = job(100, "arr", JobState::Pending);
        meta.array_job_id = 100;
        meta.is_array_meta = true;
        meta.array_pending = "4-9".into();
        meta.array_max_running = 2;
        let mut task = job(103, "arr", JobState::Running);
        task.array_job_id = 100;
        task.array_task_id = 3;
        let plain = job(5, "p", JobState::Pending);
        let rows = [Row::new(&meta), Row::new(&task), Row::new(&plain)];
        let out = render("%i|%F|%K|%A", &rows, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "JOBID|ARRAY_JOB_ID|ARRAY_TASK_ID|JOBID");
        assert_eq!(lines[1], "100_[4-9%2]|100|4-9%2|100");
        assert_eq!(lines[2], "100_3|100|3|103");
        assert_eq!(lines[3], "5|5|N/A|5");
        let expanded = Row {
            job: &meta,
            task: Some(5),
            pending: None,
        };
        let out = render("%i %t", &[expanded], 0);
        assert_eq!(out.lines().nth(1).unwrap(), "100_5 PD");
    }

    #[test]
    fn literals_and_widths() {
        let j = job(9, "日本語ジョブ名前", JobState::Pending);
        let out = render("'%i','%5j'|%-3t|%%", &[Row::new(&j)], 0);
        assert_eq!(out.lines().nth(1).unwrap(), "'9','日本語ジョ'|PD |%");
        let out = render(
            "%.3i|%10j|",
            &[Row::new(&job(123456, "ab", JobState::Pending))],
            0,
        );
        assert_eq!(out.lines().nth(1).unwrap(), "123|ab        |");
        let mut held = job(10, "h", JobState::Pending);
        held.state_reason = "JobHeldUser".into();
        let out = render("%R %r", &[Row::new(&held)], 0);
        assert_eq!(out.lines().nth(1).unwrap(), "(JobHeldUser) JobHeldUser");
        let mut nl = job(11, "line\nbreak", JobState::Pending);
        nl.state_reason = String::new();
        let out = render("%j %R", &[Row::new(&nl)], 0);
        assert_eq!(out.lines().nth(1).unwrap(), "line?break (None)");
    }

    #[test]
    fn misc_fields() {
        let mut j = job(12, "m", JobState::Pending);
        j.min_memory_mb = 4096;
        j.tres_per_node = "gres/gpu:2".into();
        j.submit_time = 0;
        let out = render("%m %b %V %a %k %p %Q %y %o %E %S", &[Row::new(&j)], 0);
        assert_eq!(
            out.lines().nth(1).unwrap(),
            "4G gres/gpu:2 N/A (null) (null) 0.99998474051244 4294901756 0 (null) (null) N/A"
        );
        let mut s = String::new();
        push_num_unit(&mut s, 1000, 2);
        assert_eq!(s, "1000M");
        let (f, bad) = parse_long_format("JobArrayID:.10 ,StateCompact:3,Reason");
        assert!(bad.is_empty());
        let mut out = String::new();
        render_header(&mut out, &f);
        assert_eq!(out, "     JOBID ST REASON              ");
    }
}
