//! `sacct -P` output (`|`-separated, with its header line) as a workload:
//! what admins export from a real cluster, e.g.
//!
//! ```text
//! sacct -a -P -X -S 2026-01-01 -E 2026-01-08 \
//!   -o JobID,User,Account,Partition,QOS,Submit,Start,End,Timelimit,ReqCPUS,ReqMem,ReqTRES,NNodes,State,ExitCode
//! ```
//!
//! Fields are found by the header's names (any order, any case). Needed:
//! `JobID`, `Submit`; used when present: `User`, `Account`, `Partition`,
//! `QOS`, `Start`, `End` (or `Elapsed`), `Timelimit`, `ReqCPUS` (else
//! `NCPUS`/`AllocCPUS`), `ReqMem` (`4000Mc`/`Mn` suffixes of older
//! versions), `ReqTRES` (else `AllocTRES`: `cpu=`, `mem=`, `node=`,
//! `gres/gpu[:type]=`), `NNodes`/`ReqNodes`, `State`, `ExitCode`,
//! `Dependency`. Steps (`1234.batch`) and jobs without an end (still
//! pending or running when exported) are left out; times are read as UTC
//! (only differences matter).

use std::collections::HashMap;

use drover_conf::datetime::Utc;

use crate::trace::{duration_secs, Mem, Outcome, TraceJob, Workload};

/// Read `text` (named `file` in errors).
pub fn parse(text: &str, file: &str) -> Workload {
    let mut w = Workload::default();
    let mut lines = text.lines().enumerate();
    let header: Vec<String> = loop {
        match lines.next() {
            None => {
                w.bad
                    .push(format!("{file}: no header line (run sacct without -n)"));
                return w;
            }
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((i, l)) => {
                let h: Vec<String> = l
                    .split('|')
                    .map(|f| f.trim().to_ascii_lowercase())
                    .collect();
                if !h.iter().any(|f| f == "jobid") || !h.iter().any(|f| f == "submit") {
                    w.bad.push(format!(
                        "{file}:{}: the header names no JobID or no Submit field (run sacct -P with a header, -o JobID,Submit,...)",
                        i + 1
                    ));
                    return w;
                }
                break h;
            }
        }
    };
    let col: HashMap<&str, usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), i))
        .collect();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('|').collect();
        if fields.len() != header.len() {
            w.bad.push(format!(
                "{file}:{}: {} fields where the header has {}",
                i + 1,
                fields.len(),
                header.len()
            ));
            continue;
        }
        let row = Row { col: &col, fields };
        match job(&row, i + 1) {
            Ok(Some(j)) => w.jobs.push(j),
            Ok(None) => w.ignored += 1,
            Err(e) => w.bad.push(format!("{file}:{}: {e}", i + 1)),
        }
    }
    w.sort();
    w
}

/// A time field: None for `Unknown`, `None`, empty.
fn time(v: &str, what: &str) -> Result<Option<i64>, String> {
    if v.is_empty() || v.eq_ignore_ascii_case("unknown") || v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match drover_conf::parsetime::parse_time(v, true, 0, &Utc) {
        Ok(Some(t)) => Ok(Some(t)),
        _ => Err(format!("{what} '{v}' is not a time")),
    }
}

fn count(v: &str, what: &str) -> Result<Option<u32>, String> {
    if v.is_empty() {
        return Ok(None);
    }
    v.parse::<u32>()
        .map(Some)
        .map_err(|_| format!("{what} '{v}' is not a count"))
}

/// One line's fields, found by header name.
struct Row<'a> {
    col: &'a HashMap<&'a str, usize>,
    fields: Vec<&'a str>,
}

impl<'a> Row<'a> {
    /// The field named `name` (lower case), "" when the header has none.
    fn get(&self, name: &str) -> &'a str {
        self.col.get(name).map_or("", |&c| self.fields[c].trim())
    }
}

fn job(r: &Row, line: usize) -> Result<Option<TraceJob>, String> {
    let get = |name: &str| r.get(name);
    let id = get("jobid");
    if id.is_empty() {
        return Err("empty JobID".into());
    }
    if id.contains('.') {
        return Ok(None); // a step
    }
    // `1234_[5-9]`: tasks never started; `1234_7`: one task.
    let array = match id.split_once('_') {
        Some((a, t)) => {
            if a.parse::<u32>().is_err() {
                return Err(format!("JobID '{id}' is not a job id"));
            }
            match t.parse::<u32>() {
                Ok(t) => Some((a.to_string(), t)),
                Err(_) => return Ok(None), // pending tasks at export
            }
        }
        None => {
            let base = id.split('+').next().unwrap_or("");
            if base.parse::<u32>().is_err() {
                return Err(format!("JobID '{id}' is not a job id"));
            }
            None
        }
    };
    let submit = time(get("submit"), "Submit")?.ok_or("no Submit time")?;
    let start = time(get("start"), "Start")?;
    let mut end = time(get("end"), "End")?;
    if end.is_none() {
        if let (Some(s), Some(e)) = (start, duration_secs_opt(get("elapsed"))?) {
            end = Some(s + e);
        }
    }
    let state_text = get("state");
    let state = state_text
        .split_whitespace()
        .next()
        .unwrap_or("COMPLETED")
        .to_ascii_uppercase();
    let Some(end) = end else {
        // Pending or running when exported: how it would end is unknown.
        return Ok(None);
    };
    let run = start.map(|s| (end - s).max(0));
    let exit = exit_code(get("exitcode"));
    let outcome = match state.as_str() {
        "COMPLETED" | "PREEMPTED" | "REQUEUED" | "RESIZING" | "SUSPENDED" | "RUNNING" => {
            Outcome::Completed
        }
        "CANCELLED" => Outcome::Cancelled,
        "TIMEOUT" | "DEADLINE" => Outcome::Timeout,
        "FAILED" | "NODE_FAIL" | "BOOT_FAIL" | "OUT_OF_MEMORY" => Outcome::Failed(exit.max(1)),
        "PENDING" => return Ok(None),
        other => return Err(format!("State '{other}' is not a job state")),
    };
    let cancel_at = (outcome == Outcome::Cancelled && run.is_none()).then_some(end);
    if run.is_none() && cancel_at.is_none() {
        // Ended without starting and not by a cancel (a failed submit): nothing to replay.
        return Ok(None);
    }
    let tres_text = if get("reqtres").is_empty() {
        get("alloctres")
    } else {
        get("reqtres")
    };
    let tres = drover_ctld::assoc::parse_tres(tres_text).map_err(|e| format!("ReqTRES: {e}"))?;
    let nodes = match count(get("reqnodes"), "ReqNodes")? {
        Some(n) => n,
        None => count(get("nnodes"), "NNodes")?
            .or_else(|| tres.get("node").map(|&n| n as u32))
            .unwrap_or(0),
    };
    let cpus = [get("reqcpus"), get("ncpus"), get("alloccpus")]
        .into_iter()
        .find(|v| !v.is_empty())
        .map(|v| count(v, "CPU count"))
        .transpose()?
        .flatten()
        .or_else(|| tres.get("cpu").map(|&c| c as u32))
        .unwrap_or(1)
        .max(1);
    let mem = match (get("reqmem"), tres.get("mem")) {
        ("", Some(&total)) => Mem::PerNode(total.div_ceil(u64::from(nodes.max(1)))),
        ("", None) => Mem::Default,
        (m, _) => req_mem(m)?,
    };
    let (mut gpus, mut gpu_type) = (0u32, String::new());
    for (k, v) in &tres {
        if k == "gres/gpu" {
            gpus = *v as u32;
        } else if let Some(t) = k.strip_prefix("gres/gpu:") {
            gpu_type = t.to_string();
            gpus = gpus.max(*v as u32);
        }
    }
    let limit = get("timelimit");
    let time_limit = if limit.is_empty() || limit.eq_ignore_ascii_case("partition_limit") {
        None
    } else {
        match drover_conf::units::parse_time_minutes(limit) {
            Ok(Some(m)) => Some(m),
            Ok(None) => Some(u32::MAX),
            Err(e) => return Err(format!("Timelimit: {e}")),
        }
    };
    Ok(Some(TraceJob {
        line,
        id: id.to_string(),
        user: non_empty(get("user"), "unknown"),
        account: get("account").to_string(),
        partition: get("partition").split(',').next().unwrap_or("").to_string(),
        qos: get("qos").to_string(),
        submit,
        nodes,
        cpus,
        mem,
        gpus,
        gpu_type,
        time_limit,
        run,
        outcome,
        cancel_at,
        array,
        dependency: dependency(get("dependency")),
    }))
}

fn duration_secs_opt(v: &str) -> Result<Option<i64>, String> {
    if v.is_empty() {
        return Ok(None);
    }
    duration_secs(v).map_err(|e| format!("Elapsed: {e}"))
}

fn non_empty(v: &str, or: &str) -> String {
    if v.is_empty() {
        or.to_string()
    } else {
        v.to_string()
    }
}

/// `2:0` -> 2; anything else 1.
fn exit_code(v: &str) -> i32 {
    v.split(':')
        .next()
        .and_then(|c| c.parse::<i32>().ok())
        .unwrap_or(1)
}

/// `ReqMem`: `4G`, `4000M`, or older `4000Mc` (per CPU) / `4000Mn` (per node).
fn req_mem(v: &str) -> Result<Mem, String> {
    let (num, per_cpu) = match v.strip_suffix('c') {
        Some(n) => (n, true),
        None => (v.strip_suffix('n').unwrap_or(v), false),
    };
    let mb = drover_conf::units::parse_mem_mb(num).map_err(|e| format!("ReqMem: {e}"))?;
    Ok(match (mb, per_cpu) {
        (0, _) => Mem::Default,
        (m, true) => Mem::PerCpu(m),
        (m, false) => Mem::PerNode(m),
    })
}

/// squeue/sacct show `afterok:12(unfulfilled)`; keep the condition only.
fn dependency(v: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in v.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    if out.eq_ignore_ascii_case("none") || out.eq_ignore_ascii_case("(null)") {
        return String::new();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "JobID|User|Account|Partition|QOS|Submit|Start|End|Timelimit|ReqCPUS|ReqMem|ReqTRES|NNodes|State|ExitCode";

    fn one(line: &str) -> Workload {
        parse(&format!("{HEAD}\n{line}\n"), "t.sacct")
    }

    #[test]
    fn a_completed_job() {
        let w = one("12|alice|phys|batch|normal|2026-01-05T10:00:00|2026-01-05T10:01:40|2026-01-05T11:01:40|02:00:00|4|8G|billing=4,cpu=4,gres/gpu:a100=2,mem=8G,node=1|1|COMPLETED|0:0");
        assert!(w.bad.is_empty(), "{:?}", w.bad);
        let j = &w.jobs[0];
        assert_eq!(j.id, "12");
        assert_eq!((j.user.as_str(), j.account.as_str()), ("alice", "phys"));
        assert_eq!(j.partition, "batch");
        assert_eq!(j.run, Some(3600));
        assert_eq!(j.time_limit, Some(120));
        assert_eq!((j.cpus, j.nodes, j.gpus), (4, 1, 2));
        assert_eq!(j.gpu_type, "a100");
        assert_eq!(j.mem, Mem::PerNode(8192));
        assert_eq!(j.outcome, Outcome::Completed);
        assert_eq!(j.line, 2);
    }

    #[test]
    fn states_arrays_steps_and_old_memory() {
        let text = format!(
            "{HEAD}\n\
             20_3|bob|a|batch|normal|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:05:00|UNLIMITED|1|1000Mc||1|FAILED|3:0\n\
             20_3.batch|bob|a||||2026-01-05T10:00:00|2026-01-05T10:05:00||1|||1|FAILED|3:0\n\
             20_[4-9]|bob|a|batch|normal|2026-01-05T10:00:00|Unknown|Unknown|UNLIMITED|1|1000Mc||1|PENDING|0:0\n\
             21|bob|a|batch|normal|2026-01-05T10:00:00|None|2026-01-05T12:00:00|10|1|||1|CANCELLED by 1000|0:0\n\
             22|bob|a|batch|normal|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:10:00|10|1|||1|TIMEOUT|0:0\n"
        );
        let w = parse(&text, "t");
        assert!(w.bad.is_empty(), "{:?}", w.bad);
        assert_eq!(w.ignored, 2);
        assert_eq!(w.jobs.len(), 3);
        let a = &w.jobs[0];
        assert_eq!(a.array, Some(("20".into(), 3)));
        assert_eq!(a.outcome, Outcome::Failed(3));
        assert_eq!(a.mem, Mem::PerCpu(1000));
        assert_eq!(a.time_limit, Some(u32::MAX));
        let c = &w.jobs[1];
        assert_eq!(c.outcome, Outcome::Cancelled);
        assert_eq!(c.run, None);
        assert_eq!(c.cancel_at, Some(c.submit + 7200));
        assert_eq!(w.jobs[2].outcome, Outcome::Timeout);
    }

    #[test]
    fn bad_lines_name_their_line_and_do_not_stop_the_rest() {
        let text = format!(
            "{HEAD}\n\
             x1|a|a|b|n|2026-01-05T10:00:00|||1|1|||1|COMPLETED|0:0\n\
             2|a|a|b|n|yesterday-ish|||1|1|||1|COMPLETED|0:0\n\
             3|a|a|b|n\n\
             4|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|1|lots|||1|COMPLETED|0:0\n\
             5|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|1|1|12Q||1|COMPLETED|0:0\n\
             6|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|1|1||cpu=x|1|COMPLETED|0:0\n\
             7|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|1|1|||1|EXPLODED|0:0\n\
             8|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|1-|1|||1|COMPLETED|0:0\n\
             9|a|a|b|n|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:00:09|5|1|||1|COMPLETED|0:0\n"
        );
        let w = parse(&text, "t.sacct");
        assert_eq!(w.jobs.len(), 1, "{:?}", w.bad);
        assert_eq!(w.jobs[0].id, "9");
        assert_eq!(w.bad.len(), 8, "{:?}", w.bad);
        for (k, b) in w.bad.iter().enumerate() {
            assert!(b.starts_with(&format!("t.sacct:{}: ", k + 2)), "{b}");
        }
        assert!(w.bad[0].contains("JobID 'x1'"), "{}", w.bad[0]);
        assert!(
            w.bad[2].contains("5 fields where the header has 15"),
            "{}",
            w.bad[2]
        );
    }

    #[test]
    fn no_header_is_refused() {
        let w = parse("12|alice|2026-01-05T10:00:00\n", "t");
        assert_eq!(w.jobs.len(), 0);
        assert!(
            w.bad[0].contains("t:1: the header names no JobID"),
            "{:?}",
            w.bad
        );
        let w = parse("", "t");
        assert!(w.bad[0].contains("no header line"), "{:?}", w.bad);
    }

    #[test]
    fn dependencies_lose_their_annotations() {
        assert_eq!(
            dependency("afterok:12(unfulfilled),afterany:13_2(failed)"),
            "afterok:12,afterany:13_2"
        );
        assert_eq!(dependency("(null)"), "");
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "|",
            "||||",
            "\u{0}|\u{ff}",
            "JobID|Submit\n|\n",
            "JobID|Submit\n1_|x\n",
            "JobID|Submit|ReqMem\n1|2026-01-01T00:00:00|99999999999999999999T\n",
        ] {
            let _ = parse(s, "t");
        }
    }
}
