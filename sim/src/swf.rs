//! The Standard Workload Format of the Parallel Workloads Archive
//! (<https://www.cs.huji.ac.il/labs/parallel/workload/swf.html>): one job a
//! line, 18 whitespace-separated numbers, `-1` for unknown, `;` comments.
//!
//! | # | field | used as |
//! |---|---|---|
//! | 1 | job number | the trace id |
//! | 2 | submit time (s) | submit, plus the header's `UnixStartTime` |
//! | 3 | wait time | when a job cancelled before it ran was cancelled |
//! | 4 | run time (s) | how long it runs |
//! | 5 | allocated processors | CPUs, when 8 is unknown |
//! | 6, 7 | average CPU time, used memory | not used |
//! | 8 | requested processors | CPUs (`-n N`) |
//! | 9 | requested time (s) | time limit (rounded up to minutes) |
//! | 10 | requested memory (KB per processor) | `--mem-per-cpu` |
//! | 11 | status (1 completed, 0 failed, 5 cancelled) | outcome |
//! | 12, 13 | user, group | user `uN`, account `gN` |
//! | 14 | executable | not used |
//! | 15 | queue | partition: the Nth of slurm.conf (1-based), else the default |
//! | 16 | partition | the same, when 15 is unknown |
//! | 17, 18 | preceding job, think time | `--dependency=afterany:17` (think time not modelled) |

use crate::trace::{Mem, Outcome, TraceJob, Workload};

/// Read `text` (named `file` in errors); `partitions` are slurm.conf's
/// partition names in order (queue/partition numbers index them).
pub fn parse(text: &str, file: &str, partitions: &[String]) -> Workload {
    let mut w = Workload::default();
    let mut start = 0i64;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(c) = line.strip_prefix(';') {
            if let Some((k, v)) = c.split_once(':') {
                if k.trim().eq_ignore_ascii_case("UnixStartTime") {
                    match v.trim().parse::<i64>() {
                        Ok(t) => start = t,
                        Err(_) => w.bad.push(format!(
                            "{file}:{}: UnixStartTime '{}' is not a number",
                            i + 1,
                            v.trim()
                        )),
                    }
                }
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        match job(line, i + 1, start, partitions) {
            Ok(Some(j)) => w.jobs.push(j),
            Ok(None) => w.ignored += 1,
            Err(e) => w.bad.push(format!("{file}:{}: {e}", i + 1)),
        }
    }
    w.sort();
    w
}

const NAMES: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

fn job(
    line: &str,
    no: usize,
    start: i64,
    partitions: &[String],
) -> Result<Option<TraceJob>, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() != 18 {
        return Err(format!("{} fields, the format has 18", words.len()));
    }
    let mut f = [0i64; 18];
    for (k, w) in words.iter().enumerate() {
        // Some archives write averages as decimals: whole units suffice.
        let v = w
            .parse::<i64>()
            .ok()
            .or_else(|| {
                w.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .map(|x| x.round() as i64)
            })
            .filter(|v| *v >= -1 && *v < 1 << 40)
            .ok_or_else(|| format!("field {} ({}) '{w}' is not a number", k + 1, NAMES[k]))?;
        f[k] = v;
    }
    let known = |k: usize| (f[k] >= 0).then_some(f[k]);
    let id = known(0).ok_or("field 1 (job number) is unknown")?;
    let submit = known(1).ok_or("field 2 (submit time) is unknown")? + start;
    let cpus = known(7).filter(|&c| c > 0).or(known(4).filter(|&c| c > 0));
    let Some(cpus) = cpus else {
        return Err("no processor count (fields 8 and 5 unknown)".into());
    };
    let cpus = u32::try_from(cpus).map_err(|_| "processor count too large".to_string())?;
    let status = f[10];
    let run = known(3);
    let outcome = match status {
        0 => Outcome::Failed(1),
        5 => Outcome::Cancelled,
        _ => Outcome::Completed,
    };
    let cancel_at = match (outcome, run) {
        (Outcome::Cancelled, None | Some(0)) => Some(submit + known(2).unwrap_or(0)),
        _ => None,
    };
    let run = if cancel_at.is_some() { None } else { run };
    if run.is_none() && cancel_at.is_none() {
        return Ok(None); // never ran, and not a cancel: nothing to replay
    }
    let time_limit = known(8)
        .filter(|&t| t > 0)
        .map(|t| u32::try_from((t + 59) / 60).unwrap_or(u32::MAX - 1));
    let mem = match known(9).filter(|&m| m > 0) {
        Some(kb) => Mem::PerCpu((kb as u64).div_ceil(1024)),
        None => Mem::Default,
    };
    let part = known(14)
        .filter(|&q| q > 0)
        .or(known(15).filter(|&p| p > 0))
        .and_then(|n| partitions.get(n as usize - 1))
        .cloned()
        .unwrap_or_default();
    let dependency = match known(16).filter(|&p| p > 0) {
        Some(p) => format!("afterany:{p}"),
        None => String::new(),
    };
    Ok(Some(TraceJob {
        line: no,
        id: id.to_string(),
        user: format!("u{}", known(11).unwrap_or(0)),
        account: known(12).map(|g| format!("g{g}")).unwrap_or_default(),
        partition: part,
        qos: String::new(),
        submit,
        nodes: 0,
        cpus,
        mem,
        gpus: 0,
        gpu_type: String::new(),
        time_limit,
        run,
        outcome,
        cancel_at,
        array: None,
        dependency,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Vec<String> {
        vec!["batch".into(), "long".into()]
    }

    #[test]
    fn jobs_header_and_fields() {
        let text = "; Version: 2.2\n; UnixStartTime: 1000000\n;\n\
                    1 0 10 3600 8 -1 -1 8 7200 1024 1 3 2 -1 2 -1 -1 -1\n\
                    2 5 -1 100 4 3.5 -1 -1 -1 -1 0 4 -1 -1 -1 -1 1 30\n\
                    3 7 50 -1 -1 -1 -1 2 60 -1 5 4 -1 -1 -1 -1 -1 -1\n";
        let w = parse(text, "t.swf", &parts());
        assert!(w.bad.is_empty(), "{:?}", w.bad);
        assert_eq!(w.jobs.len(), 3);
        let a = &w.jobs[0];
        assert_eq!(
            (a.id.as_str(), a.submit, a.run),
            ("1", 1_000_000, Some(3600))
        );
        assert_eq!(
            (a.cpus, a.time_limit, a.mem),
            (8, Some(120), Mem::PerCpu(1))
        );
        assert_eq!(
            (a.user.as_str(), a.account.as_str(), a.partition.as_str()),
            ("u3", "g2", "long")
        );
        let b = &w.jobs[1];
        assert_eq!(
            (b.cpus, b.outcome, b.time_limit),
            (4, Outcome::Failed(1), None)
        );
        assert_eq!(b.dependency, "afterany:1");
        assert_eq!(b.partition, "");
        let c = &w.jobs[2];
        assert_eq!(
            (c.outcome, c.cancel_at, c.run),
            (Outcome::Cancelled, Some(1_000_057), None)
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        let text = "1 0 10 3600 8 -1 -1 8 7200 1024 1 3 2 -1 2 -1 -1\n\
                    2 0 10 abc 8 -1 -1 8 7200 1024 1 3 2 -1 2 -1 -1 -1\n\
                    3 0 10 60 -1 -1 -1 -1 7200 1024 1 3 2 -1 2 -1 -1 -1\n\
                    4 0 10 60 8 -1 -1 8 7200 1024 1 3 2 -1 2 -1 -1 -7\n\
                    ; UnixStartTime: soon\n\
                    5 0 10 60 8 -1 -1 8 7200 1024 1 3 2 -1 2 -1 -1 -1\n";
        let w = parse(text, "t.swf", &parts());
        assert_eq!(w.jobs.len(), 1);
        assert_eq!(
            w.bad,
            vec![
                "t.swf:1: 17 fields, the format has 18",
                "t.swf:2: field 4 (run time) 'abc' is not a number",
                "t.swf:3: no processor count (fields 8 and 5 unknown)",
                "t.swf:4: field 18 (think time) '-7' is not a number",
                "t.swf:5: UnixStartTime 'soon' is not a number",
            ]
        );
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "",
            ";",
            "1",
            "NaN ".repeat(18).as_str(),
            "inf ".repeat(18).as_str(),
            "99999999999999999999 ".repeat(18).as_str(),
            "1 1 1 1 4294967296 1 1 4294967296 1 1 1 1 1 1 99 99 1 1",
        ] {
            let _ = parse(s, "t", &parts());
        }
    }
}
