//! `sattach [--input-filter=N] [--output-filter=N] [--error-filter=N]
//! [-l] [-Q] JOBID.STEPID`: attach to a running step's standard I/O. Each
//! node of the step streams its tasks' output from now on (the agents check
//! that the caller owns the job, or is root/SlurmUser); our stdin goes to
//! the tasks (all, or the one of `--input-filter`). sattach ends when the
//! step does.

use std::io::Read;

use drover_proto::{AttachInput, GetJobsRequest, JobFilter};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};
use crate::srun::args::label_lines;
use crate::srun::write_out;

pub const TABLE: &[OptDef] = &[
    opt("error-filter", None, Arg::Required, "error-filter"),
    opt("input-filter", None, Arg::Required, "input-filter"),
    opt("output-filter", None, Arg::Required, "output-filter"),
    opt("label", Some('l'), Arg::No, "label"),
    opt("layout", None, Arg::No, "layout"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", Some('u'), Arg::No, "usage"),
];

const USAGE: &str = "Usage: sattach [options] <jobid.stepid>\n";

/// What to do. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub job_id: u32,
    pub step_id: u32,
    pub input: Option<u32>,
    pub output: Option<u32>,
    pub error: Option<u32>,
    pub label: bool,
    pub quiet: bool,
}

fn task_number(opt: &str, v: Option<&str>) -> Result<Option<u32>, String> {
    match v {
        None => Ok(None),
        Some(t) => t
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("Invalid --{opt} value: {t}")),
    }
}

pub fn build(p: &opts::Parsed) -> Result<Request, String> {
    let [id] = p.positional.as_slice() else {
        return Err(if p.positional.is_empty() {
            "too few arguments: a job step id (JOBID.STEPID) is required".to_string()
        } else {
            "too many arguments: one job step id (JOBID.STEPID) only".to_string()
        });
    };
    let bad = || format!("Invalid job step id: {id}");
    let (j, s) = id.split_once('.').ok_or_else(bad)?;
    let job_id = j.parse().ok().filter(|j| *j > 0).ok_or_else(bad)?;
    let step_id = s.parse().map_err(|_| bad())?;
    Ok(Request {
        job_id,
        step_id,
        input: task_number("input-filter", p.value("input-filter"))?,
        output: task_number("output-filter", p.value("output-filter"))?,
        error: task_number("error-filter", p.value("error-filter"))?,
        label: p.has("label"),
        quiet: p.has("quiet"),
    })
}

/// Whether output of `task` (stderr or not) passes the filters. Pure.
pub fn shown(r: &Request, task: u32, stderr: bool) -> bool {
    let f = if stderr { r.error } else { r.output };
    f.is_none_or(|t| t == task)
}

pub fn run(args: &[String]) -> i32 {
    let p = match opts::parse_command("sattach", USAGE, TABLE, args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let req = match build(&p) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sattach: error: {e}");
            return 1;
        }
    };
    let (cfg, rt) = match conn::setup("sattach") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    rt.block_on(attach(cfg, req))
}

async fn attach(cfg: drover_conf::Config, req: Request) -> i32 {
    let mut ctl = match conn::client_for("sattach", &cfg) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    let jobs = match ctl
        .get_jobs(GetJobsRequest {
            filter: Some(JobFilter {
                job_ids: vec![req.job_id.to_string()],
                ..Default::default()
            }),
            details: false,
            fields: Vec::new(),
        })
        .await
    {
        Ok(r) => r.into_inner().jobs,
        Err(st) => {
            conn::report("sattach", "sattach: error: ", &st);
            return 1;
        }
    };
    let step = jobs.iter().find(|j| j.job_id == req.job_id).and_then(|j| {
        j.steps
            .iter()
            .find(|s| s.step_id == req.step_id && s.end_time == 0)
    });
    let Some(step) = step else {
        eprintln!(
            "sattach: error: Job step {}.{} not found",
            req.job_id, req.step_id
        );
        return 1;
    };
    let width = if req.label {
        step.ntasks.saturating_sub(1).to_string().len()
    } else {
        0
    };
    // One stream per node of the step, all feeding one output queue.
    let (out_tx, mut out_rx) = mpsc::channel::<Result<drover_proto::AttachOutput, String>>(256);
    let mut inputs: Vec<(mpsc::Sender<AttachInput>, Vec<u32>)> = Vec::new();
    for n in &step.layout {
        let mut agent = match crate::agentconn::agent_for("sattach", &cfg, &n.node) {
            Ok(a) => a,
            Err(rc) => return rc,
        };
        let (in_tx, in_rx) = mpsc::channel::<AttachInput>(16);
        let _ = in_tx
            .send(AttachInput {
                job_id: req.job_id,
                step_id: req.step_id,
                node: n.node.clone(),
                ..Default::default()
            })
            .await;
        let mut stream = match agent.attach_step(ReceiverStream::new(in_rx)).await {
            Ok(s) => s.into_inner(),
            Err(st) => {
                let m = conn::classify(&st).message();
                eprintln!("sattach: error: {}: {m}", n.node);
                return 1;
            }
        };
        let tasks: Vec<u32> = n
            .task_ids
            .iter()
            .copied()
            .filter(|t| req.input.is_none_or(|i| i == *t))
            .collect();
        inputs.push((in_tx, tasks));
        let tx = out_tx.clone();
        let node = n.node.clone();
        tokio::spawn(async move {
            loop {
                match stream.message().await {
                    Ok(Some(o)) => {
                        if tx.send(Ok(o)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(st) => {
                        let _ = tx
                            .send(Err(format!("{node}: {}", conn::classify(&st).message())))
                            .await;
                        return;
                    }
                }
            }
        });
    }
    drop(out_tx);
    forward_stdin(req.job_id, req.step_id, inputs);
    let mut bufs: std::collections::HashMap<(u32, bool), Vec<u8>> = Default::default();
    let mut rc = 0;
    while let Some(m) = out_rx.recv().await {
        match m {
            Ok(o) => {
                if !shown(&req, o.task, o.stderr) {
                    continue;
                }
                let out = if req.label {
                    let b = bufs.entry((o.task, o.stderr)).or_default();
                    b.extend_from_slice(&o.data);
                    label_lines(b, o.task, width, false)
                } else {
                    o.data
                };
                write_out(o.stderr, &out);
            }
            Err(e) => {
                if !req.quiet {
                    eprintln!("sattach: error: {e}");
                }
                rc = 1;
            }
        }
    }
    let mut keys: Vec<(u32, bool)> = bufs.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        if let Some(b) = bufs.get_mut(&k) {
            write_out(k.1, &label_lines(b, k.0, width, true));
        }
    }
    rc
}

/// Our stdin to the chosen tasks of every node, from a thread of its own
/// (a read blocks; the thread ends with the process). End of input is not
/// passed on: the step's stdin belongs to its srun.
fn forward_stdin(job_id: u32, step_id: u32, inputs: Vec<(mpsc::Sender<AttachInput>, Vec<u32>)>) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for (tx, tasks) in &inputs {
                for &task in tasks {
                    let m = AttachInput {
                        job_id,
                        step_id,
                        task,
                        data: buf[..n].to_vec(),
                        ..Default::default()
                    };
                    if tx.blocking_send(m).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(args: &[&str]) -> Result<Request, String> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        build(&opts::parse(TABLE, &v, false).unwrap())
    }

    #[test]
    fn step_ids_and_filters() {
        let r = req(&["-l", "--output-filter=1", "--input-filter", "0", "12.3"]).unwrap();
        assert_eq!((r.job_id, r.step_id, r.label), (12, 3, true));
        assert_eq!((r.input, r.output, r.error), (Some(0), Some(1), None));
        assert!(shown(&r, 1, false) && !shown(&r, 0, false));
        assert!(shown(&r, 0, true), "stderr has no filter");
        assert_eq!(req(&["12"]).unwrap_err(), "Invalid job step id: 12");
        assert!(req(&[]).is_err());
        assert!(req(&["12.x"]).is_err());
        assert!(req(&["--output-filter=a", "1.0"]).is_err());
    }
}
