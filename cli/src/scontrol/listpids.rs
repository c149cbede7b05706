//! `scontrol listpids [JOBID[.STEPID]] [NODENAME]`: the processes of job
//! steps on this host (or NODENAME's agent), in Slurm's columns. The local
//! agent answers; users see their own jobs, root and SlurmUser every job.

use drover_conf::Config;
use drover_proto::{ListPidsRequest, ProcEntry};

/// What to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// 0: every job (`*` or nothing).
    pub job_id: u32,
    /// `batch`, `extern` or a step number.
    pub step: Option<String>,
}

/// Parse `JOBID[.STEPID]` (Slurm's words for bad ones). Pure.
pub fn parse_target(arg: Option<&str>) -> Result<Target, String> {
    let Some(a) = arg.filter(|a| !a.starts_with('*')) else {
        return Ok(Target {
            job_id: 0,
            step: None,
        });
    };
    let (job, step) = match a.split_once('.') {
        Some((j, s)) => (j, Some(s)),
        None => (a, None),
    };
    let job_id = job
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|j| *j > 0)
        .ok_or_else(|| format!("\"{job}\" does not look like a jobid"))?;
    let step = match step {
        None => None,
        Some(s) if s == "batch" || s == "extern" || s.parse::<u32>().is_ok() => Some(s.to_string()),
        Some(s) => return Err(format!("\"{s}\" does not look like a stepid")),
    };
    Ok(Target { job_id, step })
}

pub const HEADER: &str = "PID      JOBID    STEPID   LOCALID GLOBALID";

/// One row: `%-8d %-8u %-8s %-7d %-8d`, `-` for a process that is not a task.
pub fn row(p: &ProcEntry) -> String {
    let id = |v: i32| {
        if v < 0 {
            "-".to_string()
        } else {
            v.to_string()
        }
    };
    format!(
        "{:<8} {:<8} {:<8} {:<7} {:<8}",
        p.pid,
        p.job_id,
        p.step,
        id(p.local_id),
        id(p.global_id)
    )
    .trim_end()
    .to_string()
}

/// The rows for `t`, or Slurm's message when there is nothing. Pure.
pub fn select<'a>(procs: &'a [ProcEntry], t: &Target) -> Result<Vec<&'a ProcEntry>, String> {
    let rows: Vec<&ProcEntry> = procs
        .iter()
        .filter(|p| t.job_id == 0 || p.job_id == t.job_id)
        .filter(|p| t.step.as_ref().is_none_or(|s| *s == p.step))
        .collect();
    if !rows.is_empty() {
        return Ok(rows);
    }
    Err(match (&t.step, t.job_id) {
        (_, 0) => "No job steps exist on this node.".to_string(),
        (None, j) => format!("Job {j} does not exist on this node."),
        (Some(s), j) => format!("StepId={j}.{s} does not exist on this node."),
    })
}

pub async fn run(cfg: &Config, job: Option<&str>, node: Option<&str>) -> i32 {
    let target = match parse_target(job) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let (name, only) = match node {
        Some(n) => (n.to_string(), n.to_string()),
        None => match crate::agentconn::local_node_name(cfg) {
            Some(n) => (n, String::new()),
            None => {
                eprintln!(
                    "scontrol: error: this host is not a node of the configuration: give a NODENAME"
                );
                return 1;
            }
        },
    };
    let mut agent = match crate::agentconn::agent_for("scontrol", cfg, &name) {
        Ok(a) => a,
        Err(rc) => return rc,
    };
    let procs = match agent
        .list_pids(ListPidsRequest {
            job_id: target.job_id,
            node: only,
        })
        .await
    {
        Ok(r) => r.into_inner().procs,
        Err(st) => {
            match crate::conn::classify(&st) {
                crate::conn::RpcError::Connect => {
                    eprintln!("scontrol: error: Unable to contact the node agent of {name}")
                }
                crate::conn::RpcError::Status(m) => eprintln!("scontrol: error: {m}"),
            }
            return 1;
        }
    };
    println!("{HEADER}");
    match select(&procs, &target) {
        Ok(rows) => {
            for p in rows {
                println!("{}", row(p));
            }
            0
        }
        Err(m) => {
            eprintln!("{m}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, job: u32, step: &str, l: i32, g: i32) -> ProcEntry {
        ProcEntry {
            pid,
            job_id: job,
            step: step.into(),
            local_id: l,
            global_id: g,
        }
    }

    #[test]
    fn targets() {
        assert_eq!(parse_target(None).unwrap().job_id, 0);
        assert_eq!(parse_target(Some("*")).unwrap().job_id, 0);
        let t = parse_target(Some("12.batch")).unwrap();
        assert_eq!((t.job_id, t.step.as_deref()), (12, Some("batch")));
        assert_eq!(
            parse_target(Some("12.3")).unwrap().step.as_deref(),
            Some("3")
        );
        assert_eq!(
            parse_target(Some("x")).unwrap_err(),
            "\"x\" does not look like a jobid"
        );
        assert_eq!(
            parse_target(Some("12.y")).unwrap_err(),
            "\"y\" does not look like a stepid"
        );
    }

    #[test]
    fn rows_in_slurms_columns() {
        assert_eq!(
            HEADER,
            format!(
                "{:<8} {:<8} {:<8} {:<7} {:<8}",
                "PID", "JOBID", "STEPID", "LOCALID", "GLOBALID"
            )
        );
        assert_eq!(
            row(&p(4242, 7, "batch", 0, 0)),
            "4242     7        batch    0       0"
        );
        assert_eq!(
            row(&p(4243, 7, "0", -1, -1)),
            "4243     7        0        -       -"
        );
    }

    #[test]
    fn selection_and_messages() {
        let procs = vec![
            p(1, 7, "batch", 0, 0),
            p(2, 7, "0", 0, 0),
            p(3, 8, "batch", 0, 0),
        ];
        let all = Target {
            job_id: 0,
            step: None,
        };
        assert_eq!(select(&procs, &all).unwrap().len(), 3);
        let j7 = parse_target(Some("7")).unwrap();
        assert_eq!(select(&procs, &j7).unwrap().len(), 2);
        let s = parse_target(Some("7.0")).unwrap();
        assert_eq!(select(&procs, &s).unwrap()[0].pid, 2);
        assert_eq!(
            select(&[], &all).unwrap_err(),
            "No job steps exist on this node."
        );
        assert_eq!(
            select(&procs, &parse_target(Some("9")).unwrap()).unwrap_err(),
            "Job 9 does not exist on this node."
        );
        assert_eq!(
            select(&procs, &parse_target(Some("7.5")).unwrap()).unwrap_err(),
            "StepId=7.5 does not exist on this node."
        );
    }
}
