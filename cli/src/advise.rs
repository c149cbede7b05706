//! `drover advise [-u USER] [--since DAYS]`: seff's advice for a user's jobs
//! that ended in the last DAYS days (default 7), from accounting, grouped
//! by what the jobs asked for ("12 jobs asked --mem=64G and peaked under
//! 8G: ask --mem=10G").

use std::collections::BTreeMap;

use drover_conf::units::{format_hms, format_mem_mb};
use drover_proto::acct::{JobQuery, JobRecord};
use drover_proto::INFINITE;

use crate::sacct::fields;
use crate::seff::advice::{advise, round_mem_up, Facts, Rule};
use crate::seff::usage::{self, Usage};

pub const USAGE: &str = "Usage: drover advise [-u USER] [--since DAYS]\n\
  Advice from the jobs of USER (default: you) that ended in the last DAYS days (default 7).";

/// Jobs listed by id under each group, at most.
const IDS_SHOWN: usize = 10;

/// Parsed options.
#[derive(Debug, PartialEq, Eq)]
pub struct Opts {
    pub user: Option<String>,
    pub days: u32,
}

pub fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        user: None,
        days: 7,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("option '{key}' requires an argument"))
        };
        match key {
            "-u" | "--user" => o.user = Some(value()?),
            "--since" => {
                let v = value()?;
                o.days = v
                    .parse::<u32>()
                    .ok()
                    .filter(|d| (1..=3650).contains(d))
                    .ok_or_else(|| format!("invalid --since '{v}': a number of days, 1-3650"))?;
            }
            other => return Err(format!("unrecognized option '{other}'")),
        }
    }
    Ok(o)
}

/// What a job asked for, as the rule sees it (the grouping key).
fn asked(rule: Rule, u: &Usage) -> String {
    match rule {
        Rule::HostOom | Rule::MemoryLow => {
            if u.mem_per_cpu {
                format!("--mem-per-cpu={}", format_mem_mb(u.mem_asked_mb))
            } else {
                format!("--mem={}", format_mem_mb(u.mem_asked_mb))
            }
        }
        Rule::CpuLow => format!("{} CPUs", u.cpus),
        Rule::TimeShort => {
            if u.time_limit_min == INFINITE {
                "--time=UNLIMITED".into()
            } else {
                format!("--time={}", format_hms(u64::from(u.time_limit_min) * 60))
            }
        }
        Rule::GpuOom => {
            if u.gpus == 0 {
                "no GPU".into()
            } else if u.gpu_type.is_empty() {
                "GPU".into()
            } else {
                format!("GPU {}", u.gpu_type)
            }
        }
    }
}

fn jobs_word(n: usize) -> &'static str {
    if n == 1 {
        "job"
    } else {
        "jobs"
    }
}

/// One line for a group of `n` jobs whose worst case is `w`.
fn group_line(rule: Rule, asked: &str, n: usize, w: &Usage, f: &Facts) -> String {
    let advice = advise(w, f).into_iter().find(|a| a.rule == rule);
    let ask = advice
        .as_ref()
        .and_then(|a| a.ask.clone())
        .map(|a| format!(": ask {a}"));
    let jobs = jobs_word(n);
    match rule {
        Rule::HostOom => format!(
            "{n} {jobs} ran out of memory with {asked}{}",
            ask.unwrap_or_else(|| ": no node has more; use less memory per node".into())
        ),
        Rule::MemoryLow => format!(
            "{n} {jobs} asked {asked} and peaked under {}{}",
            format_mem_mb(round_mem_up(w.peak_rss_kb.div_ceil(1024))),
            ask.unwrap_or_default()
        ),
        Rule::CpuLow => format!(
            "{n} {jobs} asked {asked} and kept at most {:.1} busy{}",
            w.busy_cpus,
            ask.unwrap_or_else(|| ": run fewer tasks".into())
        ),
        Rule::TimeShort => format!(
            "{n} {jobs} asked {asked} and ran {} at most{}",
            format_hms(w.elapsed),
            ask.unwrap_or_default()
        ),
        Rule::GpuOom => {
            let text = advice.map(|a| a.text).unwrap_or_default();
            let what = text
                .split_once(": ")
                .map(|(_, t)| t.trim_end_matches('.').to_string())
                .unwrap_or_default();
            format!("{n} {jobs} ran out of GPU memory ({asked}): {what}")
        }
    }
}

/// The report for `user`'s finished jobs: `(job id text, figures)` each,
/// `facts` per partition. Pure.
pub fn report(
    user: &str,
    days: u32,
    jobs: &[(String, Usage)],
    facts: &dyn Fn(&str) -> Facts,
) -> String {
    type Key = (Rule, String, String);
    let mut groups: BTreeMap<Key, Vec<(&str, &Usage)>> = BTreeMap::new();
    for (id, u) in jobs {
        for a in advise(u, &facts(&u.partition)) {
            groups
                .entry((a.rule, asked(a.rule, u), u.partition.clone()))
                .or_default()
                .push((id, u));
        }
    }
    let with_advice: std::collections::BTreeSet<&str> = groups
        .values()
        .flat_map(|v| v.iter().map(|(id, _)| *id))
        .collect();
    let mut o = format!(
        "Jobs of {user} that ended in the last {days} days: {} ({} with advice)\n",
        jobs.len(),
        with_advice.len()
    );
    if groups.is_empty() {
        o.push_str("Nothing to change: every job used most of what it asked for.\n");
        return o;
    }
    let mut list: Vec<(&Key, &Vec<(&str, &Usage)>)> = groups.iter().collect();
    list.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
    for ((rule, asked, part), members) in list {
        let worst = members
            .iter()
            .skip(1)
            .fold(members[0].1.clone(), |w, (_, u)| w.worst(u));
        let line = group_line(*rule, asked, members.len(), &worst, &facts(part));
        let mut ids: Vec<&str> = members.iter().map(|(id, _)| *id).take(IDS_SHOWN).collect();
        ids.dedup();
        let more = members.len().saturating_sub(IDS_SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        o.push_str(&format!("- {line}\n    jobs: {}{more}\n", ids.join(",")));
    }
    o
}

pub fn run(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return 0;
    }
    let opts = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("drover advise: error: {e}\n{USAGE}");
            return 1;
        }
    };
    let (uid, name) = match &opts.user {
        None => {
            let uid = crate::users::uid();
            (uid, crate::users::user_name(uid))
        }
        Some(u) => match u.parse::<u32>().ok().or_else(|| crate::users::uid_of(u)) {
            Some(uid) => (uid, crate::users::user_name(uid)),
            None => {
                eprintln!("drover advise: error: Invalid user: {u}");
                return 1;
            }
        },
    };
    let (cfg, rt) = match crate::conn::setup("advise") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut client = match crate::acctconn::client("advise", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let now = crate::timefmt::now();
        let q = JobQuery {
            uids: vec![uid],
            start: now - i64::from(opts.days) * 86400,
            cluster: cfg.cluster_name.clone(),
            ..Default::default()
        };
        let records = match client.get_jobs(q).await {
            Ok(r) => r.into_inner().jobs,
            Err(e) => {
                crate::acctconn::report("advise", &e);
                return 1;
            }
        };
        let jobs: Vec<(String, Usage)> = records
            .iter()
            .filter(|j: &&JobRecord| j.array_pending.is_empty() && j.end_time > 0)
            .map(|j| (fields::job_id_text(j), usage::of(j, now)))
            .filter(|(_, u)| u.state.is_final())
            .collect();
        let facts = |p: &str| crate::seff::facts(&cfg, p);
        print!("{}", report(&name, opts.days, &jobs, &facts));
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::JobState;

    fn u(peak_mb: u64, state: JobState) -> Usage {
        Usage {
            state,
            host_oom: state == JobState::OutOfMemory,
            gpu_oom: false,
            partition: "debug".into(),
            nodes: 1,
            cpus: 1,
            tasks: 1,
            elapsed: 600,
            cpu_secs: 600,
            busy_cpus: 1.0,
            peak_rss_kb: peak_mb * 1024,
            mem_asked_mb: 64 * 1024,
            mem_per_cpu: false,
            mem_limit_mb: 64 * 1024,
            time_limit_min: 20,
            gpus: 0,
            gpu_type: String::new(),
            gpu_mem_max_mb: 0,
        }
    }

    #[test]
    fn options() {
        let a = |v: &[&str]| parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            a(&["-u", "bob", "--since=30"]),
            Ok(Opts {
                user: Some("bob".into()),
                days: 30
            })
        );
        assert_eq!(a(&[]).unwrap().days, 7);
        assert!(a(&["--since", "0"])
            .unwrap_err()
            .contains("invalid --since '0'"));
        assert!(a(&["-u"])
            .unwrap_err()
            .contains("'-u' requires an argument"));
        assert!(a(&["-x"]).unwrap_err().contains("unrecognized option '-x'"));
    }

    #[test]
    fn groups_jobs_by_what_they_asked() {
        let facts = |_: &str| Facts {
            max_node_mem_mb: Some(256 * 1024),
            gpu_types: Vec::new(),
        };
        let mut jobs: Vec<(String, Usage)> = (1..=12)
            .map(|i| (format!("{i}"), u(1000 + i * 500, JobState::Completed)))
            .collect();
        let mut oom = u(4096, JobState::OutOfMemory);
        oom.mem_asked_mb = 4096;
        oom.mem_limit_mb = 4096;
        jobs.push(("13".into(), oom));
        jobs.push(("14".into(), u(60 * 1024, JobState::Completed)));
        let r = report("alice", 7, &jobs, &facts);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(
            lines[0],
            "Jobs of alice that ended in the last 7 days: 14 (13 with advice)"
        );
        assert_eq!(
            lines[1],
            "- 12 jobs asked --mem=64G and peaked under 7G: ask --mem=9G"
        );
        assert_eq!(lines[2], "    jobs: 1,2,3,4,5,6,7,8,9,10 and 2 more");
        assert_eq!(
            lines[3],
            "- 1 job ran out of memory with --mem=4G: ask --mem=6G"
        );
        assert_eq!(lines[4], "    jobs: 13");
        assert_eq!(lines.len(), 5, "{r}");
        let none = report("bob", 3, &jobs[13..], &facts);
        assert!(none.ends_with("Nothing to change: every job used most of what it asked for.\n"));
    }
}
