//! `scancel`: cancel or signal jobs.

use std::io::BufRead;

use drover_proto::{CancelRequest, GetJobsRequest, JobFilter, JobState};

use crate::conn;
use crate::jobids;
use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("account", Some('A'), Arg::Required, "account"),
    opt("batch", Some('b'), Arg::No, "batch"),
    opt("cron", Some('c'), Arg::No, "cron"),
    opt("ctld", None, Arg::No, "ctld"),
    opt("full", Some('f'), Arg::No, "full"),
    opt("hurry", Some('H'), Arg::No, "hurry"),
    opt("interactive", Some('i'), Arg::No, "interactive"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("me", None, Arg::No, "me"),
    opt("name", Some('n'), Arg::Required, "name"),
    opt("jobname", None, Arg::Required, "name"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("qos", Some('q'), Arg::Required, "qos"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("reservation", Some('R'), Arg::Required, "reservation"),
    opt("sibling", None, Arg::Required, "sibling"),
    opt("signal", Some('s'), Arg::Required, "signal"),
    opt("state", Some('t'), Arg::Required, "state"),
    opt("states", None, Arg::Required, "state"),
    opt("user", Some('u'), Arg::Required, "user"),
    opt("users", None, Arg::Required, "user"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("nodelist", Some('w'), Arg::Required, "nodelist"),
    opt("wckey", None, Arg::Required, "wckey"),
    opt("help", None, Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
];

const USAGE: &str = "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]
               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]
               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]
               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey] [--me]
               [job_id[_array_id][.step_id]]
";

/// Options Drover recognises and refuses (`Requested operation not
/// supported on this system`): there is no federation to name a sibling of.
pub const REFUSED: &[&str] = &["sibling"];

/// What scancel was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub ids: Vec<String>,
    pub filter: JobFilter,
    pub signal: u32,
    pub batch: bool,
    pub full: bool,
    pub interactive: bool,
    pub quiet: bool,
    pub verbose: u32,
    /// The filters as Slurm names them in its "No active jobs match"
    /// message (`job_name=x state=RUNNING `); empty without filters.
    pub filters_text: String,
    /// `-R`: only jobs in these reservations (applied here, then by id).
    pub reservations: Option<Vec<String>>,
    /// `--wckey`: only jobs with these wckeys (applied here, then by id).
    pub wckeys: Option<Vec<String>>,
    /// `-M` (or `SLURM_CLUSTERS`): checked against the cluster's name.
    pub clusters: Option<(String, crate::refuse::ClustersFrom)>,
    /// Non-fatal complaints about `SCANCEL_*` values (whole stderr lines).
    pub warnings: Vec<String>,
}

/// The id to cancel one listed job by: `J_T` for an array task, `J_[PENDING]`
/// for an array's pending remainder (its running tasks are records of their
/// own), else `J`.
pub fn cancel_id(j: &drover_proto::JobInfo) -> String {
    if j.array_job_id != 0 && j.is_array_meta {
        let pending = j.array_pending.split('%').next().unwrap_or("");
        format!("{}_[{pending}]", j.array_job_id)
    } else if j.array_job_id != 0 {
        format!("{}_{}", j.array_job_id, j.array_task_id)
    } else {
        j.job_id.to_string()
    }
}

/// `-R` and `--wckey`, which the controller's filter does not know: does a
/// listed job pass them?
pub fn passes_local_filters(r: &Request, j: &drover_proto::JobInfo) -> bool {
    let has = |list: &Option<Vec<String>>, v: &str| {
        list.as_ref().is_none_or(|l| l.iter().any(|x| x == v))
    };
    has(&r.reservations, &j.reservation) && has(&r.wckeys, &j.wckey)
}

impl Request {
    /// Slurm's word for what is signalled: `batch ` (-b), `full ` (-f).
    pub fn job_type(&self) -> &'static str {
        if self.full {
            "full "
        } else if self.batch {
            "batch "
        } else {
            ""
        }
    }

    /// scancel -v's line for one job or step id.
    pub fn verbose_line(&self, id: &str) -> String {
        let what = if id.contains('.') { "step" } else { "job" };
        let kind = if what == "step" { "" } else { self.job_type() };
        if self.signal == 0 {
            format!("scancel: Terminating {kind}{what} {id}")
        } else {
            format!("scancel: Signal {} to {kind}{what} {id}", self.signal)
        }
    }
}

#[derive(Debug)]
pub enum Parsed {
    Run(Box<Request>),
    Help,
    Version,
}

/// `SCANCEL_BATCH` and the like: `true`/`T` or `false`/`F` (any case);
/// anything else is Slurm's complaint (not fatal) and leaves the default.
fn env_bool(name: &str, v: &str, warnings: &mut Vec<String>) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "t" => Some(true),
        "false" | "f" => Some(false),
        _ => {
            warnings.push(format!("scancel: error: Unrecognized {name} value: {v}"));
            None
        }
    }
}

/// A `-t` (or `SCANCEL_STATE`) state: pending, running or suspended.
fn cancel_state(t: &str, from_env: bool) -> Result<JobState, Vec<String>> {
    JobState::parse(t)
        .filter(|st| {
            matches!(
                st,
                JobState::Pending | JobState::Running | JobState::Suspended
            )
        })
        .ok_or_else(|| {
            vec![
                if from_env {
                    format!("Unrecognized SCANCEL_STATE value: {t}")
                } else {
                    format!("Invalid job state specified: {t}")
                },
                "Valid job states are PENDING, RUNNING, and SUSPENDED".to_string(),
            ]
        })
}

/// Parse the command line, with the `SCANCEL_*` variables under it (the
/// command line wins). Errors are complete stderr lines; `Request::warnings`
/// holds the non-fatal ones.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    lookup_uid: &dyn Fn(&str) -> Option<u32>,
    euid: u32,
) -> Result<Parsed, Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("scancel: {e}"),
            "Try \"scancel --help\" for more information".to_string(),
        ]
    })?;
    if p.has("help") || p.has("usage") {
        return Ok(Parsed::Help);
    }
    if p.has("version") {
        return Ok(Parsed::Version);
    }
    crate::refuse::refuse_options("scancel", &p, REFUSED)?;
    let err = |m: String| vec![format!("scancel: error: {m}")];
    let mut warnings = Vec::new();
    let mut eb = |name: &str| env(name).and_then(|v| env_bool(name, &v, &mut warnings));
    let batch = p.has("batch") || eb("SCANCEL_BATCH").unwrap_or(false);
    let full = p.has("full") || eb("SCANCEL_FULL").unwrap_or(false);
    let interactive = p.has("interactive") || eb("SCANCEL_INTERACTIVE").unwrap_or(false);
    let env_verbose = u32::from(eb("SCANCEL_VERBOSE").unwrap_or(false));
    // `-v` counts up from SCANCEL_VERBOSE; `-Q` silences (Slurm's -1).
    let verbose = if p.has("quiet") {
        0
    } else {
        env_verbose + p.count("verbose") as u32
    };
    // The command line's value, else the variable's.
    let val = |key: &str, var: &str| p.value(key).map(str::to_string).or_else(|| env(var));
    let mut r = Request {
        batch,
        full,
        interactive,
        quiet: p.has("quiet"),
        verbose,
        warnings,
        clusters: crate::refuse::clusters_asked(p.value("clusters"), env),
        ..Default::default()
    };
    for a in &p.positional {
        for id in jobids::split_job_list(a) {
            // JOB.STEP: a job step.
            let valid_step = id
                .split_once('.')
                .is_some_and(|(j, s)| j.parse::<u32>().is_ok() && s.parse::<u32>().is_ok());
            if !valid_step && jobids::parse_job_id(&id).is_none() {
                return Err(err(format!("Invalid job id {id}")));
            }
            r.ids.push(id);
        }
    }
    if let Some(s) = p.value("signal") {
        r.signal = crate::sbatch::options::parse_signal(s)
            .ok_or_else(|| vec![format!("Unknown job signal: {s}")])?;
    }
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut filtered = false;
    let user = if p.has("user") || p.has("me") {
        p.value("user").map(str::to_string)
    } else {
        env("SCANCEL_USER")
    };
    if let Some(u) = &user {
        for name in u.split(',').filter(|x| !x.is_empty()) {
            let uid = lookup_uid(name).ok_or_else(|| err(format!("Invalid user name: {name}")))?;
            r.filter.user_ids.push(uid);
        }
        filtered = true;
    }
    if p.has("me") {
        r.filter.user_ids = vec![euid];
        filtered = true;
    }
    let name = val("name", "SCANCEL_NAME");
    if let Some(n) = &name {
        r.filter.names = list(n);
        filtered = true;
    }
    let partition = val("partition", "SCANCEL_PARTITION");
    if let Some(n) = &partition {
        r.filter.partitions = list(n);
        filtered = true;
    }
    // Slurm lowercases account and QOS names.
    let account = val("account", "SCANCEL_ACCOUNT").map(|s| s.to_ascii_lowercase());
    if let Some(n) = &account {
        r.filter.accounts = list(n);
        filtered = true;
    }
    let qos = val("qos", "SCANCEL_QOS").map(|s| s.to_ascii_lowercase());
    if let Some(n) = &qos {
        r.filter.qos = list(n);
        filtered = true;
    }
    if let Some(n) = p.value("nodelist") {
        r.filter.nodes =
            drover_conf::hostlist::expand(n).map_err(|_| err(format!("Invalid node list: {n}")))?;
        filtered = true;
    }
    let (state, state_env) = match p.value("state") {
        Some(s) => (Some(s.to_string()), false),
        None => (env("SCANCEL_STATE"), true),
    };
    if let Some(s) = &state {
        for t in s.split(',').filter(|x| !x.is_empty()) {
            r.filter.states.push(cancel_state(t, state_env)? as i32);
        }
        filtered = true;
    }
    let reservation = p.value("reservation").map(str::to_string);
    if let Some(v) = &reservation {
        r.reservations = Some(list(v));
        filtered = true;
    }
    let wckey = val("wckey", "SCANCEL_WCKEY");
    if let Some(v) = &wckey {
        r.wckeys = Some(list(v));
        filtered = true;
    }
    // In Slurm's order and words (`_filters2str`).
    let mut text = String::new();
    let me = euid.to_string();
    let user_name = if p.has("me") {
        Some(me.as_str())
    } else {
        user.as_deref()
    };
    for (name, v) in [
        ("account", account.as_deref()),
        ("job_name", name.as_deref()),
        ("nodelist", p.value("nodelist")),
        ("partition", partition.as_deref()),
        ("qos", qos.as_deref()),
        ("reservation", reservation.as_deref()),
    ] {
        if let Some(v) = v {
            text.push_str(&format!("{name}={v} "));
        }
    }
    if !r.filter.states.is_empty() {
        let names: Vec<&str> = r
            .filter
            .states
            .iter()
            .map(|s| JobState::try_from(*s).map_or("", |s| s.long_name()))
            .collect();
        text.push_str(&format!("state={} ", names.join(",")));
    }
    for (name, v) in [("user_name", user_name), ("wckey", wckey.as_deref())] {
        if let Some(v) = v {
            text.push_str(&format!("{name}={v} "));
        }
    }
    r.filters_text = text;
    if r.ids.is_empty() && !filtered {
        return Err(err("No job identification provided".into()));
    }
    r.filter.job_ids = r.ids.clone();
    Ok(Parsed::Run(Box::new(r)))
}

/// Per-job failures worth reporting; `already done` is not one.
pub fn error_lines(results: &[drover_proto::JobResult], quiet: bool) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut failed = false;
    for res in results {
        if res.ok {
            continue;
        }
        if res.error.contains("already completing or completed") {
            continue;
        }
        failed = true;
        if !quiet {
            lines.push(format!(
                "scancel: error: Kill job error on job id {}: {}",
                res.job_id, res.error
            ));
        }
    }
    (lines, failed)
}

fn confirm(job: &drover_proto::JobInfo) -> bool {
    eprint!(
        "Cancel job_id={} name={} partition={} [y/n]? ",
        job.job_id, job.name, job.partition
    );
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}

/// The active jobs (pending, running, suspended unless the filter names
/// states) that `filter` matches; a failed call is reported.
async fn active_jobs(
    client: &mut drover_proto::client::Controller,
    filter: &JobFilter,
    details: bool,
) -> Result<Vec<drover_proto::JobInfo>, i32> {
    let mut active = filter.clone();
    if active.states.is_empty() {
        active.states = [JobState::Pending, JobState::Running, JobState::Suspended]
            .iter()
            .map(|s| *s as i32)
            .collect();
    }
    match client
        .get_jobs(GetJobsRequest {
            filter: Some(active),
            details,
            fields: Vec::new(),
        })
        .await
    {
        Ok(resp) => Ok(resp.into_inner().jobs),
        Err(st) => {
            conn::report("scancel", "scancel: error: ", &st);
            Err(1)
        }
    }
}

pub fn run(args: &[String]) -> i32 {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let r = match parse_args(args, &env, &crate::users::uid_of, crate::users::euid()) {
        Ok(Parsed::Run(r)) => r,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return 0;
        }
        Ok(Parsed::Version) => {
            crate::print_version();
            return 0;
        }
        Err(lines) => {
            for l in lines {
                eprintln!("{l}");
            }
            return 1;
        }
    };
    for w in &r.warnings {
        eprintln!("{w}");
    }
    let cfg = match conn::load_config("scancel") {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if let Some((list, from)) = &r.clusters {
        if let Err(m) = crate::refuse::check_clusters(list, *from, &cfg.cluster_name) {
            eprintln!("scancel: error: {m}");
            return 1;
        }
    }
    let rt = match conn::runtime() {
        Ok(rt) => rt,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut client = match conn::client_for("scancel", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let mut filter = r.filter.clone();
        if r.reservations.is_some() || r.wckeys.is_some() {
            // The controller's filter has no reservation or wckey: list the
            // active jobs the other filters match, keep those in the named
            // reservations / with the named wckeys, and cancel them by id.
            let jobs = match active_jobs(&mut client, &filter, true).await {
                Ok(jobs) => jobs,
                Err(rc) => return rc,
            };
            let chosen: Vec<String> = jobs
                .iter()
                .filter(|j| passes_local_filters(&r, j))
                .map(cancel_id)
                .collect();
            if chosen.is_empty() {
                if r.verbose > 0 {
                    eprintln!(
                        "scancel: error: No active jobs match ALL job filters, including: {}",
                        r.filters_text
                    );
                }
                return 0;
            }
            filter = JobFilter {
                job_ids: chosen,
                ..Default::default()
            };
        }
        if r.interactive {
            let jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(filter.clone()),
                    details: false,
                    fields: Vec::new(),
                })
                .await
            {
                Ok(resp) => resp.into_inner().jobs,
                Err(st) => {
                    conn::report("scancel", "scancel: error: ", &st);
                    return 1;
                }
            };
            let chosen: Vec<String> = jobs
                .iter()
                .filter(|j| confirm(j))
                .map(|j| {
                    if j.array_job_id != 0 && !j.is_array_meta {
                        format!("{}_{}", j.array_job_id, j.array_task_id)
                    } else {
                        j.job_id.to_string()
                    }
                })
                .collect();
            if chosen.is_empty() {
                return 0;
            }
            filter = JobFilter {
                job_ids: chosen,
                ..Default::default()
            };
        }
        if r.verbose > 0 && !r.filters_text.is_empty() {
            // With filters, the jobs that match them, or Slurm's note that
            // none does.
            let jobs = match active_jobs(&mut client, &filter, false).await {
                Ok(jobs) => jobs,
                Err(rc) => return rc,
            };
            if jobs.is_empty() {
                eprintln!(
                    "scancel: error: No active jobs match ALL job filters, including: {}",
                    r.filters_text
                );
            }
            for j in &jobs {
                let id = if j.array_job_id != 0 && !j.is_array_meta {
                    format!("{}_{}", j.array_job_id, j.array_task_id)
                } else {
                    j.job_id.to_string()
                };
                eprintln!("{}", r.verbose_line(&id));
            }
        } else if r.verbose > 0 {
            for id in &filter.job_ids {
                eprintln!("{}", r.verbose_line(id));
            }
        }
        let req = CancelRequest {
            filter: Some(filter),
            signal: r.signal,
            batch_only: r.batch,
            full: r.full,
            interactive: false,
        };
        match client.cancel(req).await {
            Ok(resp) => {
                let (lines, failed) = error_lines(&resp.into_inner().results, r.quiet);
                for l in lines {
                    eprintln!("{l}");
                }
                i32::from(failed)
            }
            Err(st) => {
                match conn::classify(&st) {
                    conn::RpcError::Connect => {
                        eprintln!("scancel: error: {}", conn::CONNECT_FAILURE)
                    }
                    conn::RpcError::Status(m) => {
                        if r.quiet {
                            // suppressed
                        } else if r.ids.len() == 1 {
                            eprintln!("scancel: error: Kill job error on job id {}: {m}", r.ids[0]);
                        } else {
                            eprintln!("scancel: error: {m}");
                        }
                    }
                }
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Parsed, Vec<String>> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let lookup = |u: &str| match u {
            "root" => Some(0),
            "alice" => Some(1000),
            _ => None,
        };
        parse_args(&args, &|_| None, &lookup, 1000)
    }

    fn req(a: &[&str]) -> Request {
        match parse(a).unwrap() {
            Parsed::Run(r) => *r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_and_flags_in_any_order() {
        let r = req(&["12", "13_2", "14_[1-3]", "-s", "KILL"]);
        assert_eq!(r.ids, vec!["12", "13_2", "14_[1-3]"]);
        assert_eq!(r.signal, 9);
        let r = req(&["--signal=USR2", "-b", "5"]);
        assert_eq!((r.signal, r.batch), (12, true));
        let r = req(&["-s", "10", "7"]);
        assert_eq!(r.signal, 10);
        let r = req(&["--state=RUNNING", "-u", "root"]);
        assert_eq!(r.filter.user_ids, vec![0]);
        assert_eq!(r.filter.states, vec![JobState::Running as i32]);
        let r = req(&["--me", "-n", "x", "-p", "debug"]);
        assert_eq!(r.filter.user_ids, vec![1000]);
        assert_eq!(r.filter.names, vec!["x"]);
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(&[]).unwrap_err(),
            vec!["scancel: error: No job identification provided"]
        );
        assert_eq!(
            parse(&["abc"]).unwrap_err(),
            vec!["scancel: error: Invalid job id abc"]
        );
        assert_eq!(
            parse(&["-s", "NOPE", "1"]).unwrap_err(),
            vec!["Unknown job signal: NOPE"]
        );
        assert_eq!(
            parse(&["-t", "COMPLETED", "1"]).unwrap_err(),
            vec![
                "Invalid job state specified: COMPLETED",
                "Valid job states are PENDING, RUNNING, and SUSPENDED"
            ]
        );
        assert!(parse(&["-u", "nobody-at-all"]).is_err());
        assert!(parse(&["-t", "COMPLETED"]).is_err());
        assert_eq!(
            parse(&["--bogus"]).unwrap_err()[0],
            "scancel: unrecognized option '--bogus'"
        );
    }

    fn parse_env(a: &[&str], vars: &[(&str, &str)]) -> Result<Parsed, Vec<String>> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let lookup = |u: &str| match u {
            "alice" => Some(1000),
            "bob" => Some(1001),
            _ => None,
        };
        parse_args(&args, &env, &lookup, 1000)
    }

    fn req_env(a: &[&str], vars: &[(&str, &str)]) -> Request {
        match parse_env(a, vars).unwrap() {
            Parsed::Run(r) => *r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn environment_under_command_line() {
        // Each variable is a filter on its own (no id needed) ...
        let r = req_env(
            &[],
            &[
                ("SCANCEL_ACCOUNT", "Physics"),
                ("SCANCEL_NAME", "a"),
                ("SCANCEL_PARTITION", "debug"),
                ("SCANCEL_QOS", "High"),
                ("SCANCEL_STATE", "PENDING"),
                ("SCANCEL_USER", "bob"),
                ("SCANCEL_WCKEY", "w1"),
                ("SCANCEL_BATCH", "T"),
                ("SCANCEL_FULL", "false"),
                ("SCANCEL_INTERACTIVE", "f"),
                ("SCANCEL_VERBOSE", "true"),
            ],
        );
        assert_eq!(r.filter.accounts, vec!["physics"]);
        assert_eq!(r.filter.names, vec!["a"]);
        assert_eq!(r.filter.partitions, vec!["debug"]);
        assert_eq!(r.filter.qos, vec!["high"]);
        assert_eq!(r.filter.states, vec![JobState::Pending as i32]);
        assert_eq!(r.filter.user_ids, vec![1001]);
        assert_eq!(r.wckeys, Some(vec!["w1".to_string()]));
        assert!(r.batch && !r.full && !r.interactive);
        assert_eq!(r.verbose, 1);
        assert_eq!(
            r.filters_text,
            "account=physics job_name=a partition=debug qos=high state=PENDING user_name=bob wckey=w1 "
        );
        // ... and the command line wins.
        let r = req_env(
            &["-n", "b", "-p", "batch", "-u", "alice", "-t", "R"],
            &[
                ("SCANCEL_NAME", "a"),
                ("SCANCEL_PARTITION", "debug"),
                ("SCANCEL_USER", "bob"),
                ("SCANCEL_STATE", "PENDING"),
            ],
        );
        assert_eq!(r.filter.names, vec!["b"]);
        assert_eq!(r.filter.partitions, vec!["batch"]);
        assert_eq!(r.filter.user_ids, vec![1000]);
        assert_eq!(r.filter.states, vec![JobState::Running as i32]);
        let r = req_env(&["--me"], &[("SCANCEL_USER", "bob")]);
        assert_eq!(r.filter.user_ids, vec![1000]);
        // A bad boolean is a complaint, not an error.
        let r = req_env(&["5"], &[("SCANCEL_BATCH", "maybe")]);
        assert!(!r.batch);
        assert_eq!(
            r.warnings,
            vec!["scancel: error: Unrecognized SCANCEL_BATCH value: maybe"]
        );
        assert_eq!(
            parse_env(&["5"], &[("SCANCEL_STATE", "DONE")]).unwrap_err(),
            vec![
                "Unrecognized SCANCEL_STATE value: DONE",
                "Valid job states are PENDING, RUNNING, and SUSPENDED"
            ]
        );
        let r = req_env(&["5"], &[("SLURM_CLUSTERS", "c1")]);
        assert_eq!(
            r.clusters,
            Some(("c1".to_string(), crate::refuse::ClustersFrom::Env))
        );
    }

    #[test]
    fn reservation_and_wckey_filters() {
        let r = req(&["-R", "maint,r2"]);
        assert_eq!(r.filters_text, "reservation=maint,r2 ");
        let mut j = drover_proto::JobInfo {
            job_id: 7,
            reservation: "maint".into(),
            ..Default::default()
        };
        assert!(passes_local_filters(&r, &j));
        j.reservation = "other".into();
        assert!(!passes_local_filters(&r, &j));
        j.reservation.clear();
        assert!(!passes_local_filters(&r, &j));
        let r = req(&["--wckey=w1"]);
        j.wckey = "w1".into();
        assert!(passes_local_filters(&r, &j));
        j.wckey = "w2".into();
        assert!(!passes_local_filters(&r, &j));
        // Without -R/--wckey every job passes.
        assert!(passes_local_filters(&req(&["5"]), &j));
        // Ids to cancel by.
        assert_eq!(cancel_id(&j), "7");
        j.array_job_id = 7;
        j.array_task_id = 3;
        assert_eq!(cancel_id(&j), "7_3");
        j.is_array_meta = true;
        j.array_pending = "4-9%2".into();
        assert_eq!(cancel_id(&j), "7_[4-9]");
    }

    #[test]
    fn ctld_accepted_sibling_refused() {
        assert_eq!(req(&["--ctld", "5"]).ids, vec!["5"]);
        assert_eq!(
            parse(&["--sibling=c2", "5"]).unwrap_err(),
            vec!["scancel: error: --sibling: Requested operation not supported on this system"]
        );
    }

    #[test]
    fn result_lines() {
        let res = vec![
            drover_proto::JobResult {
                job_id: "99".into(),
                ok: false,
                error: "Invalid job id specified".into(),
            },
            drover_proto::JobResult {
                job_id: "5".into(),
                ok: false,
                error: "Job/step already completing or completed".into(),
            },
            drover_proto::JobResult {
                job_id: "6".into(),
                ok: true,
                error: String::new(),
            },
        ];
        let (lines, failed) = error_lines(&res, false);
        assert!(failed);
        assert_eq!(
            lines,
            vec!["scancel: error: Kill job error on job id 99: Invalid job id specified"]
        );
        let (lines, failed) = error_lines(&res, true);
        assert!(failed && lines.is_empty());
    }
}
