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

/// Parse the command line. Errors are complete stderr lines.
pub fn parse_args(
    args: &[String],
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
    let err = |m: String| vec![format!("scancel: error: {m}")];
    let mut r = Request {
        batch: p.has("batch"),
        full: p.has("full"),
        interactive: p.has("interactive"),
        quiet: p.has("quiet"),
        verbose: p.count("verbose") as u32,
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
            .ok_or_else(|| err(format!("Invalid job signal: {s}")))?;
    }
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut filtered = false;
    if let Some(u) = p.value("user") {
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
    if let Some(n) = p.value("name") {
        r.filter.names = list(n);
        filtered = true;
    }
    if let Some(n) = p.value("partition") {
        r.filter.partitions = list(n);
        filtered = true;
    }
    if let Some(n) = p.value("account") {
        r.filter.accounts = list(n);
        filtered = true;
    }
    if let Some(n) = p.value("qos") {
        r.filter.qos = list(n);
        filtered = true;
    }
    if let Some(n) = p.value("nodelist") {
        r.filter.nodes =
            drover_conf::hostlist::expand(n).map_err(|_| err(format!("Invalid node list: {n}")))?;
        filtered = true;
    }
    if let Some(s) = p.value("state") {
        for t in s.split(',').filter(|x| !x.is_empty()) {
            let st = JobState::parse(t)
                .filter(|st| {
                    matches!(
                        st,
                        JobState::Pending | JobState::Running | JobState::Suspended
                    )
                })
                .ok_or_else(|| err(format!("Invalid job state specified: {t}")))?;
            r.filter.states.push(st as i32);
        }
        filtered = true;
    }
    if p.has("reservation") || p.has("wckey") {
        filtered = true;
    }
    // In Slurm's order and words (`_filters2str`).
    let mut text = String::new();
    let me = euid.to_string();
    let user_name = if p.has("me") {
        Some(me.as_str())
    } else {
        p.value("user")
    };
    for (name, v) in [
        ("account", p.value("account")),
        ("job_name", p.value("name")),
        ("nodelist", p.value("nodelist")),
        ("partition", p.value("partition")),
        ("qos", p.value("qos")),
        ("reservation", p.value("reservation")),
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
    for (name, v) in [("user_name", user_name), ("wckey", p.value("wckey"))] {
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

pub fn run(args: &[String]) -> i32 {
    let r = match parse_args(args, &crate::users::uid_of, crate::users::euid()) {
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
    let cfg = match conn::load_config("scancel") {
        Ok(c) => c,
        Err(rc) => return rc,
    };
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
        if r.interactive {
            let jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(filter.clone()),
                    details: false,
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
            let mut active = filter.clone();
            if active.states.is_empty() {
                active.states = [JobState::Pending, JobState::Running, JobState::Suspended]
                    .iter()
                    .map(|s| *s as i32)
                    .collect();
            }
            let jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(active),
                    details: false,
                })
                .await
            {
                Ok(resp) => resp.into_inner().jobs,
                Err(st) => {
                    conn::report("scancel", "scancel: error: ", &st);
                    return 1;
                }
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
        parse_args(&args, &lookup, 1000)
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
            vec!["scancel: error: Invalid job signal: NOPE"]
        );
        assert!(parse(&["-u", "nobody-at-all"]).is_err());
        assert!(parse(&["-t", "COMPLETED"]).is_err());
        assert_eq!(
            parse(&["--bogus"]).unwrap_err()[0],
            "scancel: unrecognized option '--bogus'"
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
