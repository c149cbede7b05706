//! sacct's command line: flags to a query and an output layout. Pure (the
//! caller passes the effective uid, `now` and a user lookup).

use crate::timefmt::Local;
use drover_conf::datetime::{midnight, parse_query_time};
use drover_proto::acct::JobQuery;
use drover_proto::JobState;

use super::fields::{self, Col};
use super::filter::{self, Local as LocalFilter};
use super::output::Mode;
use crate::opts::{self, opt, Arg, OptDef};

const TABLE: &[OptDef] = &[
    opt("allusers", Some('a'), Arg::No, "allusers"),
    opt("accounts", Some('A'), Arg::Required, "accounts"),
    opt("account", None, Arg::Required, "accounts"),
    opt("brief", Some('b'), Arg::No, "brief"),
    opt("duplicates", Some('D'), Arg::No, "duplicates"),
    opt("endtime", Some('E'), Arg::Required, "endtime"),
    opt("helpformat", Some('e'), Arg::No, "helpformat"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("jobs", Some('j'), Arg::Required, "jobs"),
    opt("long", Some('l'), Arg::No, "long"),
    opt("allclusters", Some('L'), Arg::No, "allclusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("noheader", Some('n'), Arg::No, "noheader"),
    opt("nodelist", Some('N'), Arg::Required, "nodelist"),
    opt("format", Some('o'), Arg::Required, "format"),
    opt("parsable", Some('p'), Arg::No, "parsable"),
    opt("parsable2", Some('P'), Arg::No, "parsable2"),
    opt("qos", Some('q'), Arg::Required, "qos"),
    opt("partition", Some('r'), Arg::Required, "partition"),
    opt("state", Some('s'), Arg::Required, "state"),
    opt("starttime", Some('S'), Arg::Required, "starttime"),
    opt("truncate", Some('T'), Arg::No, "truncate"),
    opt("user", Some('u'), Arg::Required, "user"),
    opt("uid", None, Arg::Required, "user"),
    opt("usage", None, Arg::No, "help"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("allocations", Some('X'), Arg::No, "allocations"),
    opt("name", None, Arg::Required, "name"),
    opt("json", None, Arg::Optional, "json"),
    opt("noconvert", None, Arg::No, "noconvert"),
    opt("array", None, Arg::No, "array"),
    opt("completion", Some('c'), Arg::No, "completion"),
    opt("batch-script", Some('B'), Arg::No, "batch-script"),
    opt("constraints", Some('C'), Arg::Required, "constraints"),
    opt("delimiter", None, Arg::Required, "delimiter"),
    opt("federation", None, Arg::No, "federation"),
    opt("help-fields", None, Arg::No, "helpformat"),
    opt("env-vars", None, Arg::No, "env-vars"),
    opt("file", Some('f'), Arg::Required, "file"),
    opt("flags", Some('F'), Arg::Required, "flags"),
    opt("gid", Some('g'), Arg::Required, "gid"),
    opt("group", None, Arg::Required, "gid"),
    opt("local", None, Arg::No, "local"),
    opt("nnodes", Some('i'), Arg::Required, "nnodes"),
    opt("ncpus", Some('I'), Arg::Required, "ncpus"),
    opt("timelimit-min", Some('k'), Arg::Required, "timelimit-min"),
    opt("timelimit-max", Some('K'), Arg::Required, "timelimit-max"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("units", None, Arg::Required, "units"),
    opt("fields", None, Arg::Required, "format"),
    opt("reason", Some('R'), Arg::Required, "reason"),
    opt("use-local-uid", None, Arg::No, "use-local-uid"),
    opt("", Some('U'), Arg::No, "help"),
    opt("wckeys", Some('W'), Arg::Required, "wckeys"),
    opt("whole-hetjob", None, Arg::Optional, "whole-hetjob"),
    opt("associations", Some('x'), Arg::Required, "associations"),
    opt("yaml", None, Arg::Optional, "yaml"),
];

/// Options Drover recognises and refuses (`Requested operation not
/// supported on this system`): the database keeps no batch scripts or
/// environments, no job-completion log, no scheduler flags or association
/// ids per job; limit ranges, truncation, the array form and `--units` are
/// not done.
pub const REFUSED: &[&str] = &[
    "array",
    "associations",
    "batch-script",
    "completion",
    "constraints",
    "env-vars",
    "file",
    "flags",
    "timelimit-max",
    "timelimit-min",
    "truncate",
    "units",
    "yaml",
];

/// What to ask and how to print.
#[derive(Debug, Clone, PartialEq)]
pub struct Opts {
    pub query: JobQuery,
    pub cols: Vec<Col>,
    pub mode: Mode,
    pub noheader: bool,
    pub json: bool,
    /// `-j J.S`: (job id as given, step) pairs; such a job shows only
    /// those steps (unless it was asked for whole as well).
    pub steps: Vec<(String, String)>,
    /// `--delimiter` for `-p`/`-P` (`|` by default).
    pub delimiter: String,
    /// `-g`, `-W`, `-i`, `-I`, `-R`, `-D`: applied to the records returned.
    pub local: LocalFilter,
    /// `-v`: lines for standard error before the query.
    pub verbose_lines: Vec<String>,
    /// `--noconvert`: sizes in their recorded unit.
    pub noconvert: bool,
}

#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    Help,
    Version,
    HelpFormat,
    Run(Box<Opts>),
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().trim_matches('"').trim_matches('\''))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn parse(
    args: &[String],
    euid: u32,
    now: i64,
    lookup_uid: &dyn Fn(&str) -> Option<u32>,
) -> Result<Parsed, Vec<String>> {
    parse_env(
        args,
        euid,
        now,
        lookup_uid,
        &|k| std::env::var(k).ok(),
        &|g| drover_proto::sysdb::group_gid(g),
    )
}

/// `parse` with the environment (`SACCT_FORMAT`, ...) and group names
/// given.
pub fn parse_env(
    args: &[String],
    euid: u32,
    now: i64,
    lookup_uid: &dyn Fn(&str) -> Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
    lookup_gid: &dyn Fn(&str) -> Option<u32>,
) -> Result<Parsed, Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("sacct: {e}"),
            "Try \"sacct --help\" for more information".to_string(),
        ]
    })?;
    if p.has("help") {
        return Ok(Parsed::Help);
    }
    if p.has("version") {
        return Ok(Parsed::Version);
    }
    if p.has("helpformat") {
        return Ok(Parsed::HelpFormat);
    }
    crate::refuse::refuse_options("sacct", &p, REFUSED)?;
    let fatal = |m: String| vec![format!("sacct: error: {m}")];
    let mut local = LocalFilter {
        duplicates: p.has("duplicates"),
        ..Default::default()
    };
    if let Some(v) = p.value("gid") {
        let mut gids = Vec::new();
        for g in list(v) {
            let gid = if g.bytes().all(|b| b.is_ascii_digit()) {
                g.parse().ok()
            } else {
                lookup_gid(&g)
            };
            match gid {
                Some(n) => gids.push(n),
                None => return Err(fatal(format!("Invalid group id: {g}"))),
            }
        }
        local.gids = Some(gids);
    }
    if let Some(v) = p.value("wckeys") {
        local.wckeys = Some(list(v));
    }
    if let Some(v) = p.value("reason") {
        local.reasons = Some(list(v));
    }
    if let Some(v) = p.value("nnodes") {
        local.nnodes = Some(filter::range(v, "requested node range").map_err(|e| {
            vec![
                format!("sacct: error: {e}"),
                format!("sacct: error: invalid node range -i '{v}'"),
            ]
        })?);
    }
    if let Some(v) = p.value("ncpus") {
        local.ncpus = Some(filter::range(v, "requested cpu range").map_err(|e| {
            vec![
                format!("sacct: error: {e}"),
                format!("sacct: error: invalid cpu range -i '{v}'"),
            ]
        })?);
    }
    let mut q = JobQuery::default();
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    // -j may repeat; positional words are job ids too (`sacct -j 1 2`).
    for f in p.opts.iter().filter(|f| f.key == "jobs") {
        for id in list(f.value.as_deref().unwrap_or("")) {
            let base = id.split('.').next().unwrap_or("").to_string();
            let ok = base
                .split('_')
                .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(fatal(format!("Invalid job id: {id}")));
            }
            if let Some((_, step)) = id.split_once('.') {
                steps.push((base.clone(), step.to_string()));
            } else {
                whole.push(base.clone());
            }
            q.job_ids.push(base);
        }
    }
    steps.retain(|(b, _)| !whole.contains(b));
    let all_users = p.has("allusers");
    if let Some(v) = p.value("user") {
        for u in list(v) {
            match lookup_uid(&u) {
                Some(uid) => q.uids.push(uid),
                None => return Err(fatal(format!("Invalid user id: {u}"))),
            }
        }
    } else if !all_users && euid != 0 {
        q.uids.push(euid);
    }
    if let Some(v) = p.value("accounts") {
        q.accounts = list(v);
    }
    if let Some(v) = p.value("partition") {
        q.partitions = list(v);
    }
    if let Some(v) = p.value("name") {
        q.names = list(v);
    }
    if let Some(v) = p.value("qos") {
        q.qos = list(v);
    }
    if let Some(v) = p.value("nodelist") {
        q.nodes = drover_conf::hostlist::expand(v)
            .map_err(|e| fatal(format!("Invalid node list: {e}")))?;
    }
    let states_given = p.value("state").is_some();
    if let Some(v) = p.value("state") {
        for s in list(v) {
            let st = match s.to_ascii_uppercase().as_str() {
                "CANCELED" => Some(JobState::Cancelled),
                other => JobState::parse(other),
            };
            match st {
                Some(st) => q.states.push(st as i32),
                None => return Err(fatal(format!("Invalid job state specified: {s}"))),
            }
        }
    }
    let start = match p.value("starttime") {
        Some(v) => Some(
            parse_query_time(v, now, &Local)
                .ok_or_else(|| fatal(format!("Invalid time specification: {v}")))?,
        ),
        None => None,
    };
    let end = match p.value("endtime") {
        Some(v) => Some(
            parse_query_time(v, now, &Local)
                .ok_or_else(|| fatal(format!("Invalid time specification: {v}")))?,
        ),
        None => None,
    };
    let ids_given = !q.job_ids.is_empty();
    q.start = match start {
        Some(s) => s.max(1),
        None if ids_given => 0,
        None if states_given => now,
        None => midnight(now, &Local),
    };
    q.end = match end {
        Some(e) => e,
        None if ids_given && start.is_none() => 0,
        None => now,
    };
    if q.end != 0 && q.start > q.end {
        return Err(fatal(format!(
            "Start time ({}) requested is after end time ({}).",
            crate::timefmt::make_time_str(q.start),
            crate::timefmt::make_time_str(q.end)
        )));
    }
    // -v: Slurm's note of what is asked for, on standard error.
    let mut verbose_lines = Vec::new();
    if p.has("verbose") {
        let states = if q.states.is_empty() {
            "Eligible".to_string()
        } else {
            q.states
                .iter()
                .map(|s| JobState::try_from(*s).map_or("UNKNOWN", |s| s.long_name()))
                .collect::<Vec<_>>()
                .join(",")
        };
        let ctime = |t: i64| drover_conf::datetime::fmt_ctime(&crate::timefmt::localtime(t));
        let from = if q.start == 0 {
            "Epoch 0".to_string()
        } else {
            ctime(q.start)
        };
        let to = ctime(if q.end == 0 { now } else { q.end });
        verbose_lines.push(if from == to {
            format!("sacct: Jobs {states} at the time instant {from}")
        } else {
            format!("sacct: Jobs {states} in the time window from {from} to {to}")
        });
    }
    q.no_steps = p.has("allocations");
    if p.has("allclusters") {
        q.all_clusters = true;
    }
    if let Some(v) = p.value("clusters") {
        let cl = list(v);
        if cl
            .iter()
            .any(|c| c.eq_ignore_ascii_case("all") || c == "-1")
        {
            q.all_clusters = true;
        } else {
            q.clusters = cl;
        }
    }
    let format = if let Some(v) = p.value("format") {
        v.to_string()
    } else if p.has("long") {
        fields::LONG_FORMAT.to_string()
    } else if p.has("brief") {
        fields::BRIEF_FORMAT.to_string()
    } else if let Some(env) = env("SACCT_FORMAT") {
        env
    } else {
        fields::DEFAULT_FORMAT.to_string()
    };
    let cols = fields::parse_format(&format)
        .map_err(|bad| fatal(format!("Invalid field requested: \"{bad}\"")))?;
    let mode = if p.has("parsable2") {
        Mode::Parsable2
    } else if p.has("parsable") {
        Mode::Parsable
    } else {
        Mode::Table
    };
    Ok(Parsed::Run(Box::new(Opts {
        query: q,
        cols,
        mode,
        noheader: p.has("noheader"),
        json: p.has("json"),
        steps,
        delimiter: p.value("delimiter").unwrap_or("|").to_string(),
        local,
        verbose_lines,
        noconvert: p.has("noconvert"),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &[&str], euid: u32) -> Result<Opts, Vec<String>> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let lookup = |u: &str| match u {
            "alice" => Some(1000),
            n => n.parse().ok(),
        };
        match parse(&args, euid, 1_700_000_000, &lookup)? {
            Parsed::Run(o) => Ok(*o),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let o = run(&[], 0).unwrap();
        assert!(o.query.uids.is_empty());
        assert_eq!(o.query.start, midnight(1_700_000_000, &Local));
        assert_eq!(o.query.end, 1_700_000_000);
        assert_eq!(o.cols.len(), 7);
        assert_eq!(o.mode, Mode::Table);
        // A user sees their own jobs unless -a.
        assert_eq!(run(&[], 1000).unwrap().query.uids, vec![1000]);
        assert!(run(&["-a"], 1000).unwrap().query.uids.is_empty());
    }

    #[test]
    fn flags() {
        let o = run(
            &[
                "-j",
                "12,13_4",
                "-X",
                "-n",
                "-P",
                "-o",
                "jobid,state%20",
                "-u",
                "alice",
            ],
            0,
        )
        .unwrap();
        assert_eq!(o.query.job_ids, vec!["12", "13_4"]);
        assert!(o.query.no_steps && o.noheader);
        assert_eq!(o.mode, Mode::Parsable2);
        assert_eq!(o.query.uids, vec![1000]);
        assert_eq!(o.query.start, 0);
        assert_eq!(o.query.end, 0);
        let o = run(&["-s", "CD,failed,OOM", "-S", "2023-11-01", "-E", "now"], 0).unwrap();
        assert_eq!(o.query.states.len(), 3);
        assert!(o.query.start > 0 && o.query.start < 1_700_000_000);
        let o = run(&["-S", "now-2hours"], 0).unwrap();
        assert_eq!(o.query.start, 1_700_000_000 - 7200);
        assert!(run(&["-o", "nope"], 0).unwrap_err()[0].contains("Invalid field requested"));
        assert!(run(&["-s", "XX"], 0).is_err());
        assert!(run(&["-j", "abc"], 0).is_err());
        assert!(run(&["--bogus"], 0).is_err());
        assert!(run(&["-u", "nosuchuser"], 0).is_err());
        let o = run(&["--clusters", "all", "-p", "-l"], 0).unwrap();
        assert!(o.query.all_clusters);
        assert_eq!(o.mode, Mode::Parsable);
        assert!(o.cols.len() > 30);
    }

    #[test]
    fn local_filters_delimiter_and_environment() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parse_with = |a: &[&str], vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let env = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let gid = |g: &str| (g == "staff").then_some(50);
            match parse_env(&args(a), 0, 1_700_000_000, &|u| u.parse().ok(), &env, &gid) {
                Ok(Parsed::Run(o)) => Ok(*o),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e),
            }
        };
        let o = parse_with(
            &[
                "-g",
                "staff,7",
                "-W",
                "w1",
                "-i",
                "2-4",
                "-I",
                "8",
                "-R",
                "Resources",
                "-D",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(o.local.gids, Some(vec![50, 7]));
        assert_eq!(o.local.wckeys, Some(vec!["w1".to_string()]));
        assert_eq!(o.local.nnodes, Some((2, 4)));
        assert_eq!(o.local.ncpus, Some((8, 8)));
        assert_eq!(o.local.reasons, Some(vec!["Resources".to_string()]));
        assert!(o.local.duplicates);
        assert_eq!(o.delimiter, "|");
        assert!(o.verbose_lines.is_empty());
        let o = parse_with(
            &[
                "-v",
                "-s",
                "CD,F",
                "-S",
                "2023-11-01T00:00",
                "-E",
                "2023-11-02T00:00",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            o.verbose_lines,
            vec!["sacct: Jobs COMPLETED,FAILED in the time window from Wed Nov 01 00:00:00 2023 to Thu Nov 02 00:00:00 2023"]
        );
        let o = parse_with(&["-v", "-j", "5"], &[]).unwrap();
        assert!(o.verbose_lines[0]
            .starts_with("sacct: Jobs Eligible in the time window from Epoch 0 to "));
        assert!(!parse_with(&[], &[]).unwrap().local.duplicates);
        assert_eq!(
            parse_with(&["--delimiter=,", "-P"], &[]).unwrap().delimiter,
            ","
        );
        assert_eq!(
            parse_with(&["--group=nogroup"], &[]).unwrap_err(),
            vec!["sacct: error: Invalid group id: nogroup"]
        );
        assert_eq!(
            parse_with(&["-i", "x"], &[]).unwrap_err(),
            vec![
                "sacct: error: Invalid numeric value \"x\" for requested node range.",
                "sacct: error: invalid node range -i 'x'"
            ]
        );
        // SACCT_FORMAT under -o; --fields is -o.
        let o = parse_with(&[], &[("SACCT_FORMAT", "jobid,state")]).unwrap();
        assert_eq!(o.cols.len(), 2);
        let o = parse_with(&["--fields=jobid"], &[("SACCT_FORMAT", "jobid,state")]).unwrap();
        assert_eq!(o.cols.len(), 1);
        // Accepted with the same effect on a cluster without federation or
        // heterogeneous jobs.
        for a in [
            "--federation",
            "--local",
            "--use-local-uid",
            "--whole-hetjob",
            "--whole-hetjob=no",
        ] {
            assert!(parse_with(&[a], &[]).is_ok(), "{a}");
        }
    }
}
