//! A mail's subject line and MailProg's environment, as Slurm 23.11 writes
//! them (`src/slurmctld/agent.c`: `mail_job_info`, `_set_job_time`,
//! `_set_job_term_info`; `job_mgr.c`: `job_common_env_vars`). Pure.

use drover_conf::units::format_hms;
use drover_proto::{JobInfo, JobState};

use super::types::{words, BEGIN, END, FAIL, REQUEUE, TIME100, TIME50, TIME80, TIME90};
use crate::job::Job;

/// How the subject names the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `Slurm Job_id=42 Name=train ...`
    Plain,
    /// `Slurm Array Task Job_id=42_3 (45) Name=train ...` (ARRAY_TASKS).
    Task,
    /// `Slurm Array Summary Job_id=42_* (42) Name=train ...`: the array as
    /// a whole, told by its own record.
    Summary,
}

/// What the array's own record has gathered from its ended tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArrayStats {
    pub ended: u32,
    pub exit_min: u32,
    pub exit_max: u32,
    pub requeued: bool,
}

/// What a mail is about: the job (for a summary, the array's own record),
/// as `job_info` shows it, and the cluster's words for it.
pub struct Facts<'a> {
    pub job: &'a Job,
    pub info: &'a JobInfo,
    pub cluster: &'a str,
    /// `SLURM_JOB_OVERSUBSCRIBE` (Slurm's `job_share_string`).
    pub oversubscribe: &'a str,
    pub array: ArrayStats,
}

/// A wait status (`exit << 8 | signal`) from a job's exit code and signal.
pub fn wait_status(exit_code: i32, exit_signal: i32) -> u32 {
    ((exit_code as u32 & 0xff) << 8) | (exit_signal as u32 & 0x7f)
}

fn exited(s: u32) -> bool {
    s & 0x7f == 0
}

fn signaled(s: u32) -> bool {
    let sig = s & 0x7f;
    sig != 0 && sig != 0x7f
}

fn exit_status(s: u32) -> u32 {
    (s >> 8) & 0xff
}

/// The environment as an ordered list; a name set twice keeps its place.
#[derive(Default)]
struct Env(Vec<(String, String)>);

impl Env {
    fn set(&mut self, k: &str, v: impl ToString) {
        let v = v.to_string();
        match self.0.iter_mut().find(|(n, _)| n == k) {
            Some(e) => e.1 = v,
            None => self.0.push((k.to_string(), v)),
        }
    }
    fn set_some(&mut self, k: &str, v: &str) {
        if !v.is_empty() {
            self.set(k, v);
        }
    }
}

/// `4(x2),2`: CPUs per node, runs compressed (Slurm's
/// `uint32_compressed_to_str`).
pub fn cpus_per_node(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut n = 1;
        while i + n < cpus.len() && cpus[i + n] == cpus[i] {
            n += 1;
        }
        out.push(if n > 1 {
            format!("{}(x{n})", cpus[i])
        } else {
            cpus[i].to_string()
        });
        i += n;
    }
    out.join(",")
}

/// Slurm's `SLURM_ARRAY_TASK_COUNT/MIN/MAX/STEP` of an `--array` text.
fn array_env(env: &mut Env, spec: &str) {
    let Ok(a) = crate::array::parse(spec, crate::array::MAX_ARRAY_SIZE_LIMIT) else {
        return;
    };
    let step = spec
        .split('%')
        .next()
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, s)| s.split(',').next())
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(1);
    env.set("SLURM_ARRAY_TASK_COUNT", a.tasks.len());
    env.set(
        "SLURM_ARRAY_TASK_MIN",
        a.tasks.first().copied().unwrap_or(0),
    );
    env.set("SLURM_ARRAY_TASK_MAX", a.tasks.last().copied().unwrap_or(0));
    env.set("SLURM_ARRAY_TASK_STEP", step);
}

/// `job_common_env_vars`: what every script the controller runs for a job
/// is told (`complete`: the exit codes, for END and FAIL mails).
fn common_env(env: &mut Env, f: &Facts, complete: bool) {
    let (i, spec, rt) = (f.info, f.job.spec(), f.job.rt());
    env.set("SLURM_JOB_ACCOUNT", &i.account);
    if complete {
        let s = wait_status(rt.exit_code, rt.exit_signal);
        let code = if exited(s) { exit_status(s) } else { 0 };
        let sig = if signaled(s) { s & 0x7f } else { 0 };
        env.set("SLURM_JOB_DERIVED_EC", i.derived_exit_code);
        env.set("SLURM_JOB_EXIT_CODE2", format!("{code}:{sig}"));
        env.set("SLURM_JOB_EXIT_CODE", s);
    }
    if rt.array_job_id != 0 && !rt.is_array_meta {
        env.set("SLURM_ARRAY_JOB_ID", rt.array_job_id);
        env.set("SLURM_ARRAY_TASK_ID", rt.array_task_id);
        array_env(env, &spec.array);
    }
    env.set_some("SLURM_CLUSTER_NAME", f.cluster);
    env.set_some("SLURM_JOB_COMMENT", &spec.comment);
    env.set("SLURM_JOB_END_TIME", i.end_time);
    env.set("SLURM_JOB_GID", i.group_id);
    env.set("SLURM_JOB_GROUP", &i.group_name);
    env.set("SLURM_JOBID", i.job_id);
    env.set("SLURM_JOB_ID", i.job_id);
    env.set_some("SLURM_JOB_LICENSES", &spec.licenses);
    env.set("SLURM_JOB_NAME", &i.name);
    // glibc's "%s" of Slurm's NULL node list.
    env.set(
        "SLURM_JOB_NODELIST",
        if i.nodes.is_empty() {
            "(null)"
        } else {
            &i.nodes
        },
    );
    if !rt.alloc.is_empty() {
        let cpus: Vec<u32> = rt.alloc.iter().map(|a| a.cpus).collect();
        env.set("SLURM_JOB_CPUS_PER_NODE", cpus_per_node(&cpus));
        env.set("SLURM_JOB_NUM_NODES", rt.alloc.len());
    }
    env.set("SLURM_JOB_PARTITION", &i.partition);
    env.set_some("SLURM_JOB_RESERVATION", &spec.reservation);
    env.set("SLURM_JOB_RESTART_COUNT", rt.restart_count);
    env.set("SLURM_JOB_START_TIME", rt.start_time);
    env.set("SLURM_JOB_UID", i.user_id);
    env.set("SLURM_JOB_USER", &i.user_name);
    env.set_some("SLURM_WCKEY", &spec.wckey);
    env.set_some("SLURM_JOB_CONSTRAINTS", &spec.constraint);
    env.set("SLURM_JOB_OVERSUBSCRIBE", f.oversubscribe);
    env.set_some("SLURM_JOB_STDERR", &spec.std_err);
    env.set_some("SLURM_JOB_STDIN", &spec.std_in);
    env.set_some("SLURM_JOB_STDOUT", &spec.std_out);
    env.set_some("SLURM_JOB_WORK_DIR", &spec.work_dir);
}

/// Seconds run up to `until`, suspensions left out (Slurm's arithmetic).
fn run_secs(f: &Facts, until: i64) -> i64 {
    let rt = f.job.rt();
    if rt.suspend_time != 0 {
        until - rt.suspend_time + rt.pre_sus_time
    } else {
        until - rt.start_time
    }
}

/// `_set_job_time`: `, Queued time ...` or `, Run time ...`.
fn job_time(env: &mut Env, f: &Facts, kind: u32, now: i64) -> String {
    let rt = f.job.rt();
    let hms = |s: i64| format_hms(s.max(0) as u64);
    if kind == BEGIN && rt.start_time != 0 && rt.submit_time != 0 {
        let t = hms(rt.start_time - rt.submit_time);
        env.set("SLURM_JOB_QUEUED_TIME", &t);
        return format!(", Queued time {t}");
    }
    if matches!(kind, END | FAIL | REQUEUE) && rt.start_time != 0 && rt.end_time != 0 {
        let t = hms(run_secs(f, rt.end_time));
        env.set("SLURM_JOB_RUN_TIME", &t);
        return format!(", Run time {t}");
    }
    if matches!(kind, TIME100 | TIME90 | TIME80 | TIME50) && rt.start_time != 0 {
        let t = hms(run_secs(f, now));
        env.set("SLURM_JOB_RUN_TIME", &t);
        return format!(", Run time {t}");
    }
    String::new()
}

/// `_set_job_term_info`: `, COMPLETED, ExitCode 0` (END and FAIL only).
fn term(env: &mut Env, f: &Facts, kind: u32, form: Form) -> String {
    if !matches!(kind, END | FAIL) {
        return String::new();
    }
    let state = f.job.state().long_name();
    if form == Form::Summary {
        let a = f.array;
        let (min, max) = (a.exit_min, a.exit_max);
        let mut t = if exited(min) && exited(max) {
            let (lo, hi) = (exit_status(min), exit_status(max));
            let st = if lo == 0 && hi > 0 { "Mixed" } else { state };
            env.set("SLURM_JOB_EXIT_CODE_MIN", lo);
            env.set("SLURM_JOB_EXIT_CODE_MAX", hi);
            format!(", {st}, ExitCode [{lo}-{hi}]")
        } else if signaled(max) {
            let sig = max & 0x7f;
            env.set("SLURM_JOB_TERM_SIGNAL_MAX", sig);
            format!(", Mixed, MaxSignal [{sig}]")
        } else if exited(max) {
            let hi = exit_status(max);
            env.set("SLURM_JOB_EXIT_CODE_MAX", hi);
            format!(", Mixed, MaxExitCode [{hi}]")
        } else {
            env.set("SLURM_JOB_EXIT_CODE_MAX", 0);
            format!(", {state}")
        };
        if a.requeued {
            t.push_str(", with requeued tasks");
        }
        return t;
    }
    let rt = f.job.rt();
    let s = wait_status(rt.exit_code, rt.exit_signal);
    if exited(s) {
        let code = exit_status(s);
        env.set("SLURM_JOB_EXIT_CODE_MAX", code);
        format!(", {state}, ExitCode {code}")
    } else {
        env.set("SLURM_JOB_EXIT_CODE_MAX", 0);
        format!(", {state}")
    }
}

/// The subject line and MailProg's environment (`NAME=value`) of mail
/// `kind` (one bit) about `f`, at `now`.
pub fn compose(kind: u32, form: Form, f: &Facts, now: i64) -> (String, Vec<String>) {
    let mut env = Env::default();
    common_env(&mut env, f, matches!(kind, END | FAIL));
    let base = if f.job.state() == JobState::Completing {
        // Slurm's base state of a job still completing is its end state;
        // Drover's COMPLETING is a state of its own: say RUNNING.
        JobState::Running
    } else {
        f.job.state()
    };
    env.set("SLURM_JOB_STATE", base.long_name());
    env.set("SLURM_JOB_MAIL_TYPE", words(kind));
    let time = job_time(&mut env, f, kind, now);
    let term = term(&mut env, f, kind, form);
    let (i, rt) = (f.info, f.job.rt());
    let subject = match form {
        Form::Summary => format!(
            "Slurm Array Summary Job_id={}_* ({}) Name={} {}{term}",
            rt.array_job_id,
            i.job_id,
            i.name,
            words(kind)
        ),
        Form::Task => format!(
            "Slurm Array Task Job_id={}_{} ({}) Name={} {}{time}{term}",
            rt.array_job_id,
            rt.array_task_id,
            i.job_id,
            i.name,
            words(kind)
        ),
        Form::Plain => format!(
            "Slurm Job_id={} Name={} {}{time}{term}",
            i.job_id,
            i.name,
            words(kind)
        ),
    };
    let env = env.0.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    (subject, env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::state::{JobRecord, JobRuntime};
    use drover_proto::{JobSpec, NodeAlloc};

    fn job(state: JobState, exit_code: i32, exit_signal: i32) -> Job {
        Job::from_record(JobRecord {
            job_id: 42,
            spec: Some(Box::new(JobSpec {
                name: "train".into(),
                work_dir: "/home/alice".into(),
                std_out: "out-%j.txt".into(),
                ..Default::default()
            })),
            runtime: Some(JobRuntime {
                state: state as i32,
                submit_time: 1000,
                start_time: 1062,
                end_time: 4662,
                exit_code,
                exit_signal,
                alloc: vec![
                    NodeAlloc {
                        node: "n1".into(),
                        cpus: 4,
                        ..Default::default()
                    },
                    NodeAlloc {
                        node: "n2".into(),
                        cpus: 4,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn info() -> JobInfo {
        JobInfo {
            job_id: 42,
            name: "train".into(),
            user_name: "alice".into(),
            user_id: 1000,
            nodes: "n[1-2]".into(),
            ..Default::default()
        }
    }

    fn facts<'a>(job: &'a Job, info: &'a JobInfo) -> Facts<'a> {
        Facts {
            job,
            info,
            cluster: "lab",
            oversubscribe: "OK",
            array: ArrayStats::default(),
        }
    }

    fn get<'a>(env: &'a [String], k: &str) -> Option<&'a str> {
        env.iter()
            .find_map(|e| e.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
    }

    #[test]
    fn plain_subjects() {
        let i = info();
        let j = job(JobState::Running, 0, 0);
        let (s, env) = compose(BEGIN, Form::Plain, &facts(&j, &i), 2000);
        assert_eq!(s, "Slurm Job_id=42 Name=train Began, Queued time 00:01:02");
        assert_eq!(get(&env, "SLURM_JOB_QUEUED_TIME"), Some("00:01:02"));
        assert_eq!(get(&env, "SLURM_JOB_MAIL_TYPE"), Some("Began"));
        assert_eq!(get(&env, "SLURM_JOB_STATE"), Some("RUNNING"));
        assert_eq!(get(&env, "SLURM_JOB_CPUS_PER_NODE"), Some("4(x2)"));
        assert_eq!(get(&env, "SLURM_JOB_STDOUT"), Some("out-%j.txt"));
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE"), None, "not at BEGIN");

        let j = job(JobState::Completed, 0, 0);
        let (s, env) = compose(END, Form::Plain, &facts(&j, &i), 5000);
        assert_eq!(
            s,
            "Slurm Job_id=42 Name=train Ended, Run time 01:00:00, COMPLETED, ExitCode 0"
        );
        assert_eq!(get(&env, "SLURM_JOB_RUN_TIME"), Some("01:00:00"));
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE_MAX"), Some("0"));
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE2"), Some("0:0"));

        let j = job(JobState::Failed, 3, 0);
        let (s, env) = compose(FAIL, Form::Plain, &facts(&j, &i), 5000);
        assert_eq!(
            s,
            "Slurm Job_id=42 Name=train Failed, Run time 01:00:00, FAILED, ExitCode 3"
        );
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE"), Some("768"));

        // Killed by a signal (the memory limit's 0:125): no ExitCode.
        let j = job(JobState::OutOfMemory, 0, 125);
        let (s, env) = compose(FAIL, Form::Plain, &facts(&j, &i), 5000);
        assert_eq!(
            s,
            "Slurm Job_id=42 Name=train Failed, Run time 01:00:00, OUT_OF_MEMORY"
        );
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE_MAX"), Some("0"));
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE2"), Some("0:125"));

        let j = job(JobState::Running, 0, 0);
        let (s, _) = compose(TIME50, Form::Plain, &facts(&j, &i), 1062 + 1800);
        assert_eq!(
            s,
            "Slurm Job_id=42 Name=train Reached 50% of time limit, Run time 00:30:00"
        );
    }

    #[test]
    fn array_subjects() {
        let i = JobInfo {
            job_id: 45,
            ..info()
        };
        let mut j = job(JobState::Completed, 0, 0);
        j.rt_mut().array_job_id = 42;
        j.rt_mut().array_task_id = 3;
        j.spec_mut().array = "0-9:3".into();
        let (s, env) = compose(END, Form::Task, &facts(&j, &i), 5000);
        assert_eq!(
            s,
            "Slurm Array Task Job_id=42_3 (45) Name=train Ended, Run time 01:00:00, COMPLETED, ExitCode 0"
        );
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_COUNT"), Some("4"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_MAX"), Some("9"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_STEP"), Some("3"));

        let i = info();
        let mut f = facts(&j, &i);
        f.array = ArrayStats {
            ended: 4,
            exit_min: 0,
            exit_max: wait_status(2, 0),
            requeued: true,
        };
        let (s, env) = compose(FAIL, Form::Summary, &f, 5000);
        assert_eq!(
            s,
            "Slurm Array Summary Job_id=42_* (42) Name=train Failed, Mixed, ExitCode [0-2], with requeued tasks"
        );
        assert_eq!(get(&env, "SLURM_JOB_EXIT_CODE_MIN"), Some("0"));
        f.array = ArrayStats {
            ended: 4,
            ..Default::default()
        };
        let (s, _) = compose(END, Form::Summary, &f, 5000);
        assert_eq!(
            s,
            "Slurm Array Summary Job_id=42_* (42) Name=train Ended, COMPLETED, ExitCode [0-0]"
        );
        let (s, _) = compose(BEGIN, Form::Summary, &f, 5000);
        assert_eq!(s, "Slurm Array Summary Job_id=42_* (42) Name=train Began");
        f.array.exit_max = wait_status(0, 9);
        let (s, _) = compose(END, Form::Summary, &f, 5000);
        assert!(s.ends_with("Ended, Mixed, MaxSignal [9]"), "{s}");
    }

    #[test]
    fn compressed_cpus() {
        assert_eq!(cpus_per_node(&[4, 4, 2]), "4(x2),2");
        assert_eq!(cpus_per_node(&[1]), "1");
        assert_eq!(cpus_per_node(&[]), "");
    }
}
