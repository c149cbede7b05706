//! srun's options (pure): the step request and srun's own I/O behaviour.

use crate::opts::{opt, Arg, OptDef, Parsed};
use drover_proto::StepRequest;

pub const TABLE: &[OptDef] = &[
    opt("ntasks", Some('n'), Arg::Required, "ntasks"),
    opt("nodes", Some('N'), Arg::Required, "nodes"),
    opt("ntasks-per-node", None, Arg::Required, "ntasks-per-node"),
    opt("cpus-per-task", Some('c'), Arg::Required, "cpus-per-task"),
    opt("nodelist", Some('w'), Arg::Required, "nodelist"),
    opt("exclusive", None, Arg::Optional, "exclusive"),
    opt("overlap", None, Arg::No, "overlap"),
    opt("oversubscribe", Some('s'), Arg::No, "oversubscribe"),
    opt("gpus", Some('G'), Arg::Required, "gpus"),
    opt("gpus-per-node", None, Arg::Required, "gpus-per-node"),
    opt("gpus-per-task", None, Arg::Required, "gpus-per-task"),
    opt("gres", None, Arg::Required, "gres"),
    opt("mem", None, Arg::Required, "mem"),
    opt("mem-per-cpu", None, Arg::Required, "mem-per-cpu"),
    opt("label", Some('l'), Arg::No, "label"),
    opt("unbuffered", Some('u'), Arg::No, "unbuffered"),
    opt("output", Some('o'), Arg::Required, "output"),
    opt("error", Some('e'), Arg::Required, "error"),
    opt("input", Some('i'), Arg::Required, "input"),
    opt("job-name", Some('J'), Arg::Required, "job-name"),
    opt(
        "kill-on-bad-exit",
        Some('K'),
        Arg::Optional,
        "kill-on-bad-exit",
    ),
    opt("pty", None, Arg::No, "pty"),
    opt("chdir", Some('D'), Arg::Required, "chdir"),
    opt("jobid", None, Arg::Required, "jobid"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("time", Some('t'), Arg::Required, "time"),
    opt("account", Some('A'), Arg::Required, "account"),
    opt("qos", Some('q'), Arg::Required, "qos"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("mpi", None, Arg::Required, "mpi"),
    opt("export", None, Arg::Required, "export"),
    opt("distribution", Some('m'), Arg::Required, "distribution"),
    opt("cpu-bind", None, Arg::Required, "cpu-bind"),
    opt("gpu-bind", None, Arg::Required, "gpu-bind"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
    opt("version", Some('V'), Arg::No, "version"),
];

/// What srun does besides the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Srun {
    pub req: StepRequest,
    pub label: bool,
    pub kill_on_bad_exit: bool,
    pub pty: bool,
    pub quiet: bool,
    /// `--jobid`, else `SLURM_JOB_ID` from the environment.
    pub job_id: Option<u32>,
    /// Allocation options (srun outside an allocation).
    pub partition: String,
    pub time: String,
    pub account: String,
}

fn num(p: &Parsed, key: &str, spelled: &str) -> Result<u32, String> {
    match p.value(key) {
        None => Ok(0),
        Some(v) => v
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("invalid {spelled} value: {v}")),
    }
}

/// Build srun's request from parsed options, the command and `SLURM_JOB_ID`.
pub fn build(p: &Parsed, env_job_id: Option<&str>) -> Result<Srun, String> {
    let mut s = Srun::default();
    let r = &mut s.req;
    r.ntasks = num(p, "ntasks", "--ntasks")?;
    r.nodes = match p.value("nodes") {
        // "-N 2-4": the minimum is what a step uses.
        Some(v) => v
            .split('-')
            .next()
            .unwrap_or("")
            .trim()
            .parse()
            .map_err(|_| format!("invalid --nodes value: {v}"))?,
        None => 0,
    };
    r.ntasks_per_node = num(p, "ntasks-per-node", "--ntasks-per-node")?;
    if let Some(v) = p.value("cpus-per-task") {
        r.cpus_per_task = crate::sbatch::options::parse_positive(v, "--cpus-per-task")?;
    }
    if let Some(w) = p.value("nodelist") {
        r.nodelist = drover_conf::hostlist::expand(w)
            .map_err(|e| format!("invalid --nodelist value: {w}: {e}"))?;
    }
    r.exclusive = p.has("exclusive");
    r.overlap = p.has("overlap");
    let gpu_count = |key: &str, spelled: &str| -> Result<u32, String> {
        // `[type:]count`
        match p.value(key) {
            None => Ok(0),
            Some(v) => v
                .rsplit(':')
                .next()
                .unwrap_or("")
                .trim()
                .parse()
                .map_err(|_| format!("invalid {spelled} value: {v}")),
        }
    };
    r.gpus = gpu_count("gpus", "--gpus")?;
    r.gpus_per_node = gpu_count("gpus-per-node", "--gpus-per-node")?;
    r.gpus_per_task = gpu_count("gpus-per-task", "--gpus-per-task")?;
    if let Some(m) = p.value("mem") {
        r.mem_mb = drover_conf::units::parse_mem_mb(m)
            .map_err(|_| format!("invalid --mem specification: {m}"))?;
    }
    if let Some(v) = p.value("cpu-bind") {
        drover_proto::bindopt::parse_cpu_bind(v).map_err(|e| {
            format!(
                "{e}\nsrun: fatal: {}",
                drover_proto::bindopt::CPU_BIND_FATAL
            )
        })?;
        r.cpu_bind = v.to_string();
    }
    if let Some(v) = p.value("gpu-bind") {
        drover_proto::bindopt::parse_gpu_bind(v)?;
        r.gpu_bind = v.to_string();
    }
    r.output = p.value("output").unwrap_or("").to_string();
    r.error = p.value("error").unwrap_or("").to_string();
    r.input = p.value("input").unwrap_or("").to_string();
    r.name = p.value("job-name").unwrap_or("").to_string();
    r.cwd = p.value("chdir").unwrap_or("").to_string();
    r.pty = p.has("pty");
    r.argv = p.positional.clone();
    s.label = p.has("label");
    s.pty = r.pty;
    s.quiet = p.has("quiet");
    s.kill_on_bad_exit = match p.last("kill-on-bad-exit") {
        None => false,
        Some(f) => f.value.as_deref().is_none_or(|v| v.trim() != "0"),
    };
    s.partition = p.value("partition").unwrap_or("").to_string();
    s.time = p.value("time").unwrap_or("").to_string();
    s.account = p.value("account").unwrap_or("").to_string();
    let jid = p.value("jobid").or(env_job_id.filter(|v| !v.is_empty()));
    s.job_id = match jid {
        Some(v) => Some(
            v.split(['.', '_'])
                .next()
                .unwrap_or("")
                .trim()
                .parse()
                .map_err(|_| format!("invalid job id: {v}"))?,
        ),
        None => None,
    };
    if s.req.argv.is_empty() {
        return Err("No command given to execute.".into());
    }
    Ok(s)
}

/// The words Slurm uses for a task killed by a signal.
pub fn signal_text(sig: i32) -> String {
    match sig {
        1 => "Hangup".into(),
        2 => "Interrupt".into(),
        3 => "Quit".into(),
        4 => "Illegal instruction".into(),
        6 => "Aborted".into(),
        7 => "Bus error".into(),
        8 => "Floating point exception".into(),
        9 => "Killed".into(),
        11 => "Segmentation fault".into(),
        13 => "Broken pipe".into(),
        15 => "Terminated".into(),
        n => format!("Signal {n}"),
    }
}

/// srun's exit status from the tasks' (exit code, signal): the highest, with
/// 128+signal for a task a signal killed.
pub fn exit_status(results: &[(i32, i32)]) -> i32 {
    results
        .iter()
        .map(|&(c, s)| if s != 0 { 128 + s } else { c })
        .max()
        .unwrap_or(0)
}

/// Prefix complete lines of `buf` with the task label; keep the rest.
pub fn label_lines(buf: &mut Vec<u8>, task: u32, width: usize, flush_all: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let end = if flush_all {
        buf.len()
    } else {
        match buf.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => return out,
        }
    };
    let ready: Vec<u8> = buf.drain(..end).collect();
    for line in ready.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(format!("{task:>width$}: ").as_bytes());
        out.extend_from_slice(line);
    }
    if flush_all && !out.is_empty() && out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opts::parse;

    fn srun(args: &[&str], env: Option<&str>) -> Result<Srun, String> {
        let p = parse(TABLE, args, true).map_err(|e| e.to_string())?;
        build(&p, env)
    }

    #[test]
    fn options_to_request() {
        let s = srun(
            &[
                "-n4", "-N", "2", "-l", "-c2", "--mem=2G", "-K", "sh", "-c", "echo hi",
            ],
            Some("12"),
        )
        .unwrap();
        assert_eq!(s.req.ntasks, 4);
        assert_eq!(s.req.nodes, 2);
        assert_eq!(s.req.cpus_per_task, 2);
        assert_eq!(s.req.mem_mb, 2048);
        assert_eq!(s.req.argv, vec!["sh", "-c", "echo hi"]);
        assert!(s.label && s.kill_on_bad_exit);
        assert_eq!(s.job_id, Some(12));
        let s = srun(&["--jobid=7", "-w", "n[1-2]", "--overlap", "true"], None).unwrap();
        assert_eq!(s.job_id, Some(7));
        assert_eq!(s.req.nodelist, vec!["n1", "n2"]);
        assert!(s.req.overlap);
        assert!(srun(&["hostname"], None).unwrap().job_id.is_none());
        assert!(srun(&["-n", "x", "true"], None).is_err());
        assert!(srun(&["-n1"], Some("3")).is_err());
        assert!(srun(&["--mem=lots", "true"], None).is_err());
        assert!(!srun(&["-K0", "true"], None).unwrap().kill_on_bad_exit);
        let s = srun(
            &["--cpu-bind=v,map_cpu:1,0", "--gpu-bind=single:1", "true"],
            None,
        )
        .unwrap();
        assert_eq!(s.req.cpu_bind, "v,map_cpu:1,0");
        assert_eq!(s.req.gpu_bind, "single:1");
        assert_eq!(
            srun(&["--cpu-bind=bogus", "true"], None).unwrap_err(),
            "unrecognized --cpu-bind argument \"bogus\"\nsrun: fatal: Failed to parse --cpu-bind= values."
        );
        assert_eq!(
            srun(&["--gpu-bind=far", "true"], None).unwrap_err(),
            "Invalid --gpu-bind argument: far"
        );
    }

    #[test]
    fn texts_and_status() {
        assert_eq!(exit_status(&[(0, 0), (2, 0), (1, 0)]), 2);
        assert_eq!(exit_status(&[(0, 0), (0, 9)]), 137);
        assert_eq!(exit_status(&[]), 0);
        assert_eq!(signal_text(9), "Killed");
    }

    #[test]
    fn labels() {
        let mut b = b"a\nb\npart".to_vec();
        assert_eq!(label_lines(&mut b, 3, 1, false), b"3: a\n3: b\n".to_vec());
        assert_eq!(b, b"part".to_vec());
        assert_eq!(label_lines(&mut b, 3, 2, true), b" 3: part\n".to_vec());
        assert!(b.is_empty());
    }
}
