//! `sreport`: usage reports from droverdbd's hourly roll-up:
//! `cluster utilization`, `cluster AccountUtilizationByUser`,
//! `user topusage`, with `-t hours|minutes|seconds|percent` and
//! `start=`/`end=` ranges.

use std::collections::BTreeMap;

use drover_proto::acct::{AssocSet, GetAssocsRequest, UsageRequest, UsageResponse};

use crate::sacct::output::{cell, Mode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Minutes,
    Hours,
    Percent,
}

impl Unit {
    fn parse(s: &str) -> Option<Unit> {
        Some(match s.to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "seconds" => Unit::Seconds,
            "m" | "min" | "mins" | "minutes" => Unit::Minutes,
            "h" | "hour" | "hours" => Unit::Hours,
            "p" | "per" | "percent" => Unit::Percent,
            _ => return None,
        })
    }
    fn label(self) -> &'static str {
        match self {
            Unit::Seconds => "CPU Seconds",
            Unit::Minutes => "CPU Minutes",
            Unit::Hours => "CPU Hours",
            Unit::Percent => "Percentage of Total",
        }
    }
    /// A number of CPU-seconds in this unit (`total` for percentages).
    fn show(self, secs: u64, total: u64) -> String {
        match self {
            Unit::Seconds => secs.to_string(),
            Unit::Minutes => (secs / 60).to_string(),
            Unit::Hours => (secs / 3600).to_string(),
            Unit::Percent => {
                if total == 0 {
                    "0.00%".into()
                } else {
                    format!("{:.2}%", secs as f64 * 100.0 / total as f64)
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    Utilization,
    AccountByUser,
    TopUsage(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Opts {
    pub report: Report,
    pub unit: Unit,
    pub start: i64,
    pub end: i64,
    pub mode: Mode,
    pub noheader: bool,
    pub cluster: Option<String>,
    pub accounts: Vec<String>,
    pub users: Vec<String>,
}

/// Parse the command line. `now` for default ranges (yesterday).
pub fn parse(args: &[String], now: i64) -> Result<Opts, String> {
    let mut unit = Unit::Minutes;
    let mut mode = Mode::Table;
    let mut noheader = false;
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-n" | "--noheader" => noheader = true,
            "-P" | "--parsable2" => mode = Mode::Parsable2,
            "-p" | "--parsable" => mode = Mode::Parsable,
            "-t" => {
                let v = it.next().ok_or("-t needs a unit")?;
                unit = Unit::parse(v).ok_or_else(|| format!("Unknown time format: {v}"))?;
            }
            s if s.starts_with("-t") && s.len() > 2 => {
                unit = Unit::parse(&s[2..])
                    .ok_or_else(|| format!("Unknown time format: {}", &s[2..]))?;
            }
            s if s.starts_with("--time-format=") || s.starts_with("--tres=") => {
                if let Some(v) = s.strip_prefix("--time-format=") {
                    unit = Unit::parse(v).ok_or_else(|| format!("Unknown time format: {v}"))?;
                }
            }
            s if s.starts_with('-')
                && s.len() > 1
                && s.chars().skip(1).all(|c| "nPp".contains(c)) =>
            {
                for c in s.chars().skip(1) {
                    match c {
                        'n' => noheader = true,
                        'P' => mode = Mode::Parsable2,
                        _ => mode = Mode::Parsable,
                    }
                }
            }
            s if s.starts_with('-') => return Err(format!("unrecognized option '{s}'")),
            _ => words.push(a.clone()),
        }
    }
    let midnight = drover_conf::datetime::midnight(now, &crate::timefmt::Local);
    let mut start = midnight - 86400;
    let mut end = midnight;
    let mut cluster = None;
    let mut top = 10;
    let mut accounts = Vec::new();
    let mut users = Vec::new();
    let mut plain = Vec::new();
    for w in &words {
        match w.split_once('=') {
            Some((k, v)) => match k.to_ascii_lowercase().as_str() {
                "start" => {
                    start = drover_conf::datetime::parse_query_time(v, now, &crate::timefmt::Local)
                        .ok_or_else(|| format!("Invalid time specification: {v}"))?
                }
                "end" => {
                    end = drover_conf::datetime::parse_query_time(v, now, &crate::timefmt::Local)
                        .ok_or_else(|| format!("Invalid time specification: {v}"))?
                }
                "cluster" | "clusters" => cluster = Some(v.to_string()),
                "topcount" => top = v.parse().map_err(|_| format!("Invalid TopCount: {v}"))?,
                "accounts" | "account" => accounts = v.split(',').map(str::to_string).collect(),
                "users" | "user" => users = v.split(',').map(str::to_string).collect(),
                "format" | "tree" | "group" => {}
                other => return Err(format!("Unknown condition: {other}")),
            },
            None => plain.push(w.to_ascii_lowercase()),
        }
    }
    let report = match plain
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["cluster", "utilization"] | ["cluster", "util"] => Report::Utilization,
        ["cluster", "accountutilizationbyuser"] => Report::AccountByUser,
        ["user", "topusage"] | ["user", "top"] => Report::TopUsage(top),
        [] => return Err(
            "No report given: cluster utilization, cluster AccountUtilizationByUser, user topusage"
                .into(),
        ),
        other => return Err(format!("Unknown report: {}", other.join(" "))),
    };
    if end <= start {
        return Err("Start time is after end time".into());
    }
    Ok(Opts {
        report,
        unit,
        start,
        end,
        mode,
        noheader,
        cluster,
        accounts,
        users,
    })
}

fn table(out: &mut String, cols: &[(&str, i32)], rows: &[Vec<String>], o: &Opts) {
    let line = |out: &mut String, vals: Vec<&str>| {
        let vals: Vec<_> = vals
            .into_iter()
            .map(drover_proto::text::printable)
            .collect();
        match o.mode {
            Mode::Table => {
                for (v, c) in vals.iter().zip(cols) {
                    cell(out, v, c.1, true);
                }
            }
            Mode::Parsable => {
                for v in &vals {
                    out.push_str(v);
                    out.push('|');
                }
            }
            Mode::Parsable2 => out.push_str(&vals.join("|")),
        }
        out.push('\n');
    };
    if !o.noheader {
        line(out, cols.iter().map(|c| c.0).collect());
        if o.mode == Mode::Table {
            for c in cols {
                out.push_str(&"-".repeat(c.1.unsigned_abs() as usize));
                out.push(' ');
            }
            out.push('\n');
        }
    }
    for r in rows {
        line(out, r.iter().map(String::as_str).collect());
    }
}

fn banner(out: &mut String, title: &str, o: &Opts) {
    if o.noheader {
        return;
    }
    let rule = "-".repeat(80);
    let fmt = |t: i64| drover_conf::datetime::fmt_iso(&crate::timefmt::localtime(t));
    out.push_str(&format!(
        "{rule}\n{title} {} - {}\nUsage reported in {}\n{rule}\n",
        fmt(o.start),
        fmt(o.end - 1),
        o.unit.label()
    ));
}

/// Render a report from the daemon's usage and associations. Pure.
pub fn render(o: &Opts, usage: &UsageResponse, set: &AssocSet) -> String {
    let mut out = String::new();
    let cap: BTreeMap<&str, u64> = usage
        .capacity
        .iter()
        .map(|c| (c.cluster.as_str(), c.cpu_secs))
        .collect();
    let mut alloc: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &usage.rows {
        *alloc.entry(r.cluster.as_str()).or_default() += r.cpu_secs;
    }
    match &o.report {
        Report::Utilization => {
            banner(&mut out, "Cluster Utilization", o);
            let mut rows = Vec::new();
            for (c, reported) in &cap {
                let a = alloc.get(c).copied().unwrap_or(0);
                let reported = (*reported).max(a);
                let idle = reported - a;
                rows.push(vec![
                    c.to_string(),
                    o.unit.show(a, reported),
                    o.unit.show(0, reported),
                    o.unit.show(0, reported),
                    o.unit.show(idle, reported),
                    o.unit.show(0, reported),
                    o.unit.show(reported, reported),
                ]);
            }
            let cols = [
                ("Cluster", 9),
                ("Allocated", 14),
                ("Down", 13),
                ("PLND Down", 13),
                ("Idle", 13),
                ("Planned", 10),
                ("Reported", 14),
            ];
            table(&mut out, &cols, &rows, o);
        }
        Report::TopUsage(n) => {
            banner(&mut out, &format!("Top {n} Users"), o);
            let mut users: Vec<(&str, &str, &str, u64)> = usage
                .rows
                .iter()
                .filter(|r| !r.user.is_empty())
                .filter(|r| o.accounts.is_empty() || o.accounts.contains(&r.account))
                .filter(|r| o.users.is_empty() || o.users.contains(&r.user))
                .map(|r| {
                    (
                        r.cluster.as_str(),
                        r.user.as_str(),
                        r.account.as_str(),
                        r.cpu_secs,
                    )
                })
                .collect();
            users.sort_by(|a, b| b.3.cmp(&a.3).then(a.1.cmp(b.1)));
            users.truncate(*n);
            let rows: Vec<Vec<String>> = users
                .iter()
                .map(|(c, u, a, s)| {
                    let total = cap.get(c).copied().unwrap_or(0);
                    vec![
                        c.to_string(),
                        u.to_string(),
                        u.to_string(),
                        a.to_string(),
                        o.unit.show(*s, total),
                        "0".into(),
                    ]
                })
                .collect();
            let cols = [
                ("Cluster", 9),
                ("Login", 9),
                ("Proper Name", 15),
                ("Account", 15),
                ("Used", 10),
                ("Energy", 9),
            ];
            table(&mut out, &cols, &rows, o);
        }
        Report::AccountByUser => {
            banner(&mut out, "Cluster/Account/User Utilization", o);
            // Usage per account, rolled up the tree; users below their account.
            let mut rows = Vec::new();
            for (c, total) in &cap {
                let parent_of = |acct: &str| -> String {
                    set.assocs
                        .iter()
                        .find(|a| a.cluster == *c && a.user.is_empty() && a.account == acct)
                        .map(|a| a.parent.clone())
                        .unwrap_or_default()
                };
                let mut acct_sum: BTreeMap<String, u64> = BTreeMap::new();
                for r in usage.rows.iter().filter(|r| r.cluster == *c) {
                    let mut cur = r.account.clone();
                    for _ in 0..64 {
                        if cur.is_empty() {
                            break;
                        }
                        *acct_sum.entry(cur.clone()).or_default() += r.cpu_secs;
                        cur = parent_of(&cur);
                    }
                }
                let root_total: u64 = usage
                    .rows
                    .iter()
                    .filter(|r| r.cluster == *c)
                    .map(|r| r.cpu_secs)
                    .sum();
                acct_sum.insert("root".into(), root_total);
                // Depth-first from root.
                let mut stack = vec![("root".to_string(), 0usize)];
                while let Some((acct, depth)) = stack.pop() {
                    if !o.accounts.is_empty() && !o.accounts.contains(&acct) && acct != "root" {
                        continue;
                    }
                    let used = acct_sum.get(&acct).copied().unwrap_or(0);
                    let indent = " ".repeat(depth);
                    rows.push(vec![
                        c.to_string(),
                        format!("{indent}{acct}"),
                        String::new(),
                        String::new(),
                        o.unit.show(used, *total),
                        "0".into(),
                    ]);
                    for r in usage
                        .rows
                        .iter()
                        .filter(|r| r.cluster == *c && r.account == acct && !r.user.is_empty())
                        .filter(|r| o.users.is_empty() || o.users.contains(&r.user))
                    {
                        rows.push(vec![
                            c.to_string(),
                            format!("{indent} {acct}"),
                            r.user.clone(),
                            r.user.clone(),
                            o.unit.show(r.cpu_secs, *total),
                            "0".into(),
                        ]);
                    }
                    let mut kids: Vec<String> = set
                        .assocs
                        .iter()
                        .filter(|a| {
                            a.cluster == *c
                                && a.user.is_empty()
                                && a.parent == acct
                                && a.account != acct
                        })
                        .map(|a| a.account.clone())
                        .collect();
                    kids.sort();
                    for k in kids.into_iter().rev() {
                        stack.push((k, depth + 1));
                    }
                }
            }
            let cols = [
                ("Cluster", 9),
                ("Account", 15),
                ("Login", 9),
                ("Proper Name", 15),
                ("Used", 10),
                ("Energy", 9),
            ];
            table(&mut out, &cols, &rows, o);
        }
    }
    out
}

pub fn run(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "Usage: sreport [-n] [-p|-P] [-t hours|minutes|seconds|percent] REPORT [start=TIME] [end=TIME]\n\
             Reports: cluster utilization, cluster AccountUtilizationByUser, user topusage [TopCount=N]"
        );
        return 0;
    }
    if args.iter().any(|a| a == "-V" || a == "--version") {
        crate::print_version();
        return 0;
    }
    let now = crate::timefmt::now();
    let o = match parse(args, now) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sreport: error: {e}");
            return 1;
        }
    };
    let (cfg, rt) = match crate::conn::setup("sreport") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut client = match crate::acctconn::client("sreport", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let req = UsageRequest {
            start: o.start,
            end: o.end,
            cluster: o
                .cluster
                .clone()
                .unwrap_or_else(|| cfg.cluster_name.clone()),
        };
        let usage = match client.get_usage(req).await {
            Ok(r) => r.into_inner(),
            Err(e) => {
                crate::acctconn::report("sreport", &e);
                return 1;
            }
        };
        let set = match client
            .get_assocs(GetAssocsRequest {
                known_version: 0,
                wait_ms: 0,
            })
            .await
        {
            Ok(r) => r.into_inner().set.unwrap_or_default(),
            Err(e) => {
                crate::acctconn::report("sreport", &e);
                return 1;
            }
        };
        print!("{}", render(&o, &usage, &set));
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::{Assoc, ClusterCapacity, UsageRow};

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn usage() -> UsageResponse {
        UsageResponse {
            rows: vec![
                UsageRow {
                    cluster: "lab".into(),
                    account: "ml".into(),
                    user: "alice".into(),
                    cpu_secs: 7200,
                    ..Default::default()
                },
                UsageRow {
                    cluster: "lab".into(),
                    account: "ml".into(),
                    user: "bob".into(),
                    cpu_secs: 3600,
                    ..Default::default()
                },
            ],
            capacity: vec![ClusterCapacity {
                cluster: "lab".into(),
                cpu_secs: 36000,
                gpu_secs: 0,
            }],
        }
    }

    #[test]
    fn parse_reports() {
        let o = parse(
            &args("-t hours cluster utilization start=2024-05-01 end=2024-05-02"),
            1_800_000_000,
        )
        .unwrap();
        assert_eq!(
            (o.report.clone(), o.unit),
            (Report::Utilization, Unit::Hours)
        );
        assert_eq!(o.end - o.start, 86400);
        let o = parse(&args("-nP user topusage TopCount=3"), 1_800_000_000).unwrap();
        assert_eq!(o.report, Report::TopUsage(3));
        assert!(parse(&args("cluster frob"), 0).is_err());
        assert!(parse(&args("-t fortnights cluster utilization"), 0).is_err());
    }

    #[test]
    fn utilization_and_top_users() {
        let mut o = parse(&args("-nP -t hours cluster utilization"), 1_800_000_000).unwrap();
        let set = AssocSet::default();
        assert_eq!(render(&o, &usage(), &set), "lab|3|0|0|7|0|10\n");
        o.unit = Unit::Percent;
        assert_eq!(
            render(&o, &usage(), &set),
            "lab|30.00%|0.00%|0.00%|70.00%|0.00%|100.00%\n"
        );
        let o = parse(&args("-nP -t minutes user topusage"), 1_800_000_000).unwrap();
        assert_eq!(
            render(&o, &usage(), &set),
            "lab|alice|alice|ml|120|0\nlab|bob|bob|ml|60|0\n"
        );
    }

    #[test]
    fn account_tree() {
        let o = parse(
            &args("-nP -t hours cluster AccountUtilizationByUser"),
            1_800_000_000,
        )
        .unwrap();
        let a = |acct: &str, parent: &str| Assoc {
            cluster: "lab".into(),
            account: acct.into(),
            parent: parent.into(),
            ..Default::default()
        };
        let set = AssocSet {
            assocs: vec![a("root", ""), a("science", "root"), a("ml", "science")],
            ..Default::default()
        };
        let text = render(&o, &usage(), &set);
        assert_eq!(
            text,
            "lab|root|||3|0\nlab| science|||3|0\nlab|  ml|||3|0\nlab|   ml|alice|alice|2|0\nlab|   ml|bob|bob|1|0\n"
        );
    }
}
