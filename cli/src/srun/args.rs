//! srun's options (pure): the step request and srun's own I/O behaviour.

use crate::opts::{Arg, Parsed};
use crate::support::Given;
use drover_proto::StepRequest;

pub use super::table::TABLE;

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
    /// `--immediate[=secs]`: give up creating the step after this many
    /// seconds (1 without a value: at once).
    pub immediate: Option<u64>,
    /// `-t` inside an allocation: the step's own time limit, in seconds.
    pub step_limit: Option<u64>,
    /// `--export`, as given (ALL when absent).
    pub export: Option<String>,
    /// Slurm's warnings about the layout options (`srun: warning: ...`).
    pub warnings: Vec<String>,
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

/// srun's input environment variables (srun(1), INPUT ENVIRONMENT
/// VARIABLES) and the option each stands for, in Slurm's order: a later
/// one overrides an earlier (`SLURM_NTASKS` over `SLURM_NPROCS`,
/// `SRUN_EXPORT_ENV` over `SLURM_EXPORT_ENV`); the command line overrides
/// them all.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("SLURM_ACCOUNT", "account"),
    ("SLURM_CPUS_PER_TASK", "cpus-per-task"),
    ("SLURM_DEPENDENCY", "dependency"),
    ("SLURM_EXPORT_ENV", "export"),
    ("SRUN_EXPORT_ENV", "export"),
    ("SLURM_JOB_NUM_NODES", "nodes"),
    ("SLURM_KILL_BAD_EXIT", "kill-on-bad-exit"),
    ("SLURM_LABELIO", "label"),
    ("SLURM_MPI_TYPE", "mpi"),
    ("SLURM_NPROCS", "ntasks"),
    ("SLURM_NTASKS", "ntasks"),
    ("SLURM_NTASKS_PER_NODE", "ntasks-per-node"),
    ("SLURM_OVERCOMMIT", "overcommit"),
    ("SLURM_OVERLAP", "overlap"),
    ("SLURM_PARTITION", "partition"),
    ("SLURM_QOS", "qos"),
    ("SLURM_REMOTE_CWD", "chdir"),
    ("SLURM_STDERRMODE", "error"),
    ("SLURM_STDINMODE", "input"),
    ("SLURM_STDOUTMODE", "output"),
    ("SLURM_TIMELIMIT", "time"),
    ("SLURM_UNBUFFEREDIO", "unbuffered"),
    ("SLURM_WORKING_DIR", "chdir"),
    ("SRUN_ERROR", "error"),
    ("SRUN_INPUT", "input"),
    ("SRUN_OUTPUT", "output"),
    ("SLURM_ACCTG_FREQ", "acctg-freq"),
    ("SLURM_BCAST", "bcast"),
    ("SLURM_BCAST_EXCLUDE", "bcast-exclude"),
    ("SLURM_BURST_BUFFER", "bb"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SLURM_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SLURM_COMPRESS", "compress"),
    ("SLURM_CONSTRAINT", "constraint"),
    ("SLURM_CORE_SPEC", "core-spec"),
    ("SLURM_CPU_FREQ_REQ", "cpu-freq"),
    ("SLURM_DELAY_BOOT", "delay-boot"),
    ("SLURM_DISABLE_STATUS", "disable-status"),
    ("SLURM_DISTRIBUTION", "distribution"),
    ("SLURM_EPILOG", "epilog"),
    ("SLURM_EXACT", "exact"),
    ("SLURM_EXCLUSIVE", "exclusive"),
    ("SLURM_EXTERNAL_LAUNCHER", "external-launcher"),
    ("SLURM_GPU_BIND", "gpu-bind"),
    ("SLURM_GPU_FREQ", "gpu-freq"),
    ("SLURM_GRES_FLAGS", "gres-flags"),
    ("SLURM_HINT", "hint"),
    ("SLURM_MEM_BIND", "mem-bind"),
    ("SLURM_NCORES_PER_SOCKET", "cores-per-socket"),
    ("SLURM_NETWORK", "network"),
    ("SLURM_NO_KILL", "no-kill"),
    ("SLURM_NSOCKETS_PER_NODE", "sockets-per-node"),
    ("SLURM_NTASKS_PER_CORE", "ntasks-per-core"),
    ("SLURM_NTASKS_PER_GPU", "ntasks-per-gpu"),
    ("SLURM_NTASKS_PER_TRES", "ntasks-per-tres"),
    ("SLURM_OPEN_MODE", "open-mode"),
    ("SLURM_POWER", "power"),
    ("SLURM_PROFILE", "profile"),
    ("SLURM_PROLOG", "prolog"),
    ("SLURM_REQ_SWITCH", "switches"),
    ("SLURM_RESERVATION", "reservation"),
    ("SLURM_RESV_PORTS", "resv-ports"),
    ("SLURM_SEND_LIBS", "send-libs"),
    ("SLURM_SIGNAL", "signal"),
    ("SLURM_SPREAD_JOB", "spread-job"),
    ("SLURM_SRUN_MULTI", "multi-prog"),
    ("SLURM_TASK_EPILOG", "task-epilog"),
    ("SLURM_TASK_PROLOG", "task-prolog"),
    ("SLURM_THREAD_SPEC", "thread-spec"),
    ("SLURM_THREADS", "threads"),
    ("SLURM_THREADS_PER_CORE", "threads-per-core"),
    ("SLURM_TRES_BIND", "tres-bind"),
    ("SLURM_TRES_PER_TASK", "tres-per-task"),
    ("SLURM_USE_MIN_NODES", "use-min-nodes"),
    ("SLURM_WAIT", "wait"),
    ("SLURM_WAIT4SWITCH", "switches"),
    ("SLURM_WCKEY", "wckey"),
    ("SLURMD_DEBUG", "slurmd-debug"),
    ("SRUN_CONTAINER", "container"),
    ("SRUN_CONTAINER_ID", "container-id"),
    ("SLURM_DEBUG", "verbose"),
];

/// srun's refusal of option `key` (crate::support, and srun's own: its
/// `--open-mode` and `-W/--wait`, an MPI type other than `none`, a
/// heterogeneous step).
pub fn srun_refusal(key: &str, value: Option<&str>) -> Option<String> {
    let v = value.unwrap_or("").trim();
    match key {
        "het-group" => Some(crate::opts::hetjob_refused()),
        "open-mode" | "wait" => Some(crate::support::not_supported(&format!("--{key}"))),
        "mpi" => (!v.eq_ignore_ascii_case("none"))
            .then(|| crate::support::not_supported(&format!("--mpi={v}"))),
        _ => crate::support::refusal(key, value),
    }
}

/// The refused option of `p` as finally set (the command line over the
/// input environment), naming the variable for one from the environment.
fn first_refusal(p: &Parsed) -> Option<String> {
    let given: Vec<Given> = p
        .opts
        .iter()
        .map(|f| {
            let origin = if f.spelled.starts_with('-') {
                String::new()
            } else {
                Given::from_env(&f.spelled)
            };
            Given::new(f.key, f.value.clone(), origin)
        })
        .collect();
    crate::support::final_refusal(&given, srun_refusal)
}

/// The options `env` stands for, then the command line's: `Parsed` is
/// last-wins, so the command line overrides the environment. Also says
/// which of `ntasks`/`nodes` came from the environment only.
pub fn with_env(p: &Parsed, env: &[(String, String)]) -> (Parsed, EnvSet) {
    let mut merged = Parsed {
        opts: Vec::new(),
        positional: p.positional.clone(),
    };
    for (var, key) in ENV_VARS {
        let Some((_, val)) = env.iter().find(|(k, _)| k == var) else {
            continue;
        };
        let Some(def) = TABLE.iter().find(|d| d.key == *key) else {
            continue;
        };
        let value = match def.arg {
            // A flag variable: set unless "0" (Slurm's getenv test).
            Arg::No if val.trim() == "0" => continue,
            Arg::No => None,
            Arg::Optional if val.is_empty() => None,
            _ => Some(val.clone()),
        };
        merged.opts.push(crate::opts::Found {
            key: def.key,
            value,
            spelled: var.to_string(),
        });
    }
    let set = EnvSet {
        ntasks: !p.has("ntasks") && merged.has("ntasks"),
        nodes: !p.has("nodes") && merged.has("nodes"),
    };
    merged.opts.extend(p.opts.iter().cloned());
    (merged, set)
}

/// Which layout options were set by the environment only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnvSet {
    pub ntasks: bool,
    pub nodes: bool,
}

/// Slurm's reconciliation of `-n`, `-N` and `--ntasks-per-node` (srun's
/// `_opt_verify`): `(ntasks, nodes, ntasks_per_node, warnings)`, 0 = unset.
pub fn reconcile(
    mut n: u32,
    mut nn: u32,
    mut per: u32,
    by_env: EnvSet,
) -> (u32, u32, u32, Vec<String>) {
    let mut warn = Vec::new();
    if nn > 0 && n > 0 {
        if n < nn {
            warn.push(format!(
                "can't run {n} processes on {nn} nodes, setting nnodes to {n}"
            ));
            nn = n;
        }
        if per > 0 && by_env.ntasks && !by_env.nodes {
            // -N on the command line, the task count from the allocation:
            // the count follows the new node count.
            n = 0;
        } else if per > 0 && per != n / nn {
            if n > per {
                warn.push(format!("can't honor --ntasks-per-node set to {per} which doesn't match the requested tasks {n} with the number of requested nodes {nn}. Ignoring --ntasks-per-node."));
            }
            per = 0;
        }
    }
    if per > 0 && n == 0 && nn > 0 {
        n = nn * per;
    }
    (n, nn, per, warn)
}

/// Build srun's request from parsed options (the command line over the
/// input environment `env`, see [`with_env`]) and the command.
pub fn build(cli: &Parsed, env: &[(String, String)]) -> Result<Srun, String> {
    let (merged, by_env) = with_env(cli, env);
    let p = &merged;
    if let Some(refused) = first_refusal(p) {
        return Err(refused);
    }
    // srun's own knobs Drover's srun matches: -T/--treewidth are fan-out
    // sizes (Drover's agents connect to srun directly).
    for key in ["threads", "treewidth"] {
        if let Some(v) = p.value(key) {
            crate::sbatch::options::parse_positive(v, &format!("--{key}"))?;
        }
    }
    let mut s = Srun::default();
    let r = &mut s.req;
    let ntasks = num(p, "ntasks", "--ntasks")?;
    let nodes = match p.value("nodes") {
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
    let per = num(p, "ntasks-per-node", "--ntasks-per-node")?;
    (r.ntasks, r.nodes, r.ntasks_per_node, s.warnings) = reconcile(ntasks, nodes, per, by_env);
    if let Some(v) = p.value("cpus-per-task") {
        r.cpus_per_task = crate::sbatch::options::parse_positive(v, "--cpus-per-task")?;
    }
    if let Some(w) = p.value("nodelist") {
        r.nodelist = drover_conf::hostlist::expand(w)
            .map_err(|e| format!("invalid --nodelist value: {w}: {e}"))?;
    }
    r.exclusive = p.has("exclusive");
    r.overcommit = p.has("overcommit");
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
    if let Some(f) = p.last("immediate") {
        s.immediate = Some(match f.value.as_deref() {
            None => 1,
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("invalid --immediate value: {v}"))?
                .max(1),
        });
    }
    if !s.time.is_empty() {
        s.step_limit = match drover_conf::units::parse_time_minutes(&s.time) {
            // "A time limit of zero requests that no time limit be imposed."
            Ok(Some(0)) | Ok(None) => None,
            Ok(Some(m)) => Some(u64::from(m) * 60),
            Err(_) => return Err("Invalid --time specification".into()),
        };
    }
    s.export = p.value("export").map(str::to_string);
    let env_var = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let env_job_id = env_var("SLURM_JOB_ID").or_else(|| env_var("SLURM_JOBID"));
    let jid = p.value("jobid").or(env_job_id);
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
    if s.job_id.is_some() {
        step_gres(p, &mut s.req)?;
    }
    if s.req.argv.is_empty() {
        return Err("No command given to execute.".into());
    }
    Ok(s)
}

/// Inside an allocation, the step-level options a step request carries:
/// `--gres=gpu[:type]:N` (per node) is the step's GPUs a node; other GRES
/// and the per-CPU/per-GPU sizes (which Drover's steps do not take) are
/// refused rather than ignored. Outside one they size the allocation.
fn step_gres(p: &Parsed, r: &mut StepRequest) -> Result<(), String> {
    for key in ["mem-per-cpu", "mem-per-gpu", "cpus-per-gpu"] {
        if p.has(key) {
            return Err(crate::support::not_supported(&format!(
                "--{key} for a job step"
            )));
        }
    }
    let Some(gres) = p.value("gres") else {
        return Ok(());
    };
    for item in gres.split(',').map(str::trim) {
        if item.eq_ignore_ascii_case("none") {
            continue;
        }
        let mut parts = item.split(':');
        if parts.next() != Some("gpu") {
            return Err(crate::support::not_supported(&format!(
                "--gres={item} for a job step"
            )));
        }
        let count = match item.rsplit_once(':') {
            Some((_, c)) if c.bytes().all(|b| b.is_ascii_digit()) && !c.is_empty() => c
                .parse::<u32>()
                .map_err(|_| format!("Invalid --gres specification: {gres}"))?,
            Some((_, _)) if item.matches(':').count() > 1 => {
                return Err(format!("Invalid --gres specification: {gres}"))
            }
            _ => 1,
        };
        if r.gpus_per_node == 0 && r.gpus == 0 {
            r.gpus_per_node = count;
        }
    }
    Ok(())
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

    fn srun(args: &[&str], job: Option<&str>) -> Result<Srun, String> {
        let env: Vec<(&str, &str)> = job.map(|j| ("SLURM_JOB_ID", j)).into_iter().collect();
        srun_env(args, &env)
    }

    fn srun_env(args: &[&str], env: &[(&str, &str)]) -> Result<Srun, String> {
        let p = parse(TABLE, args, true).map_err(|e| e.to_string())?;
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        build(&p, &env)
    }

    #[test]
    fn layout_from_the_allocation_environment() {
        let alloc = [
            ("SLURM_JOB_ID", "5"),
            ("SLURM_JOB_NUM_NODES", "2"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_NTASKS_PER_NODE", "2"),
        ];
        let shape = |s: &Srun| (s.req.ntasks, s.req.nodes, s.req.ntasks_per_node);
        // A bare srun: the job's 4 tasks, 2 a node.
        let s = srun_env(&["true"], &alloc).unwrap();
        assert_eq!(shape(&s), (4, 2, 2));
        assert!(s.warnings.is_empty());
        // -N1 on the command line: the count follows (2 on one node).
        assert_eq!(
            shape(&srun_env(&["-N1", "true"], &alloc).unwrap()),
            (2, 1, 2)
        );
        // -n1: one node, with Slurm's warning.
        let s = srun_env(&["-n1", "true"], &alloc).unwrap();
        assert_eq!(shape(&s), (1, 1, 0));
        assert_eq!(
            s.warnings,
            vec!["can't run 1 processes on 2 nodes, setting nnodes to 1"]
        );
        // -n3 over 2 nodes does not match 2 a node: that is dropped, loudly.
        let s = srun_env(&["-n3", "true"], &alloc).unwrap();
        assert_eq!(shape(&s), (3, 2, 0));
        assert!(s.warnings[0].starts_with("can't honor --ntasks-per-node set to 2"));
        // SLURM_NTASKS wins over SLURM_NPROCS; SRUN_OUTPUT over SLURM_STDOUTMODE.
        let s = srun_env(
            &["true"],
            &[
                ("SLURM_NPROCS", "3"),
                ("SLURM_NTASKS", "6"),
                ("SLURM_STDOUTMODE", "a.out"),
                ("SRUN_OUTPUT", "b.out"),
                ("SLURM_LABELIO", "1"),
                ("SLURM_UNBUFFEREDIO", "0"),
            ],
        )
        .unwrap();
        assert_eq!(s.req.ntasks, 6);
        assert_eq!(s.req.output, "b.out");
        assert!(s.label);
        // The command line wins.
        let s = srun_env(
            &["-o", "c.out", "-n2", "true"],
            &[("SRUN_OUTPUT", "b.out"), ("SLURM_NTASKS", "6")],
        )
        .unwrap();
        assert_eq!((s.req.output.as_str(), s.req.ntasks), ("c.out", 2));
        let s = srun_env(&["-I", "-t", "1:30", "--export=ALL,X=1", "true"], &[]).unwrap();
        assert_eq!((s.immediate, s.step_limit), (Some(1), Some(120)));
        assert_eq!(s.export.as_deref(), Some("ALL,X=1"));
        assert_eq!(
            srun(&["--immediate=5", "-t0", "true"], None)
                .unwrap()
                .immediate,
            Some(5)
        );
        assert_eq!(srun(&["-t0", "true"], None).unwrap().step_limit, None);
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
    fn unsupported_options_are_refused_in_slurms_words() {
        const NS: &str = "Requested operation not supported on this system";
        let e = srun(&["--cpu-freq=high", "true"], Some("3")).unwrap_err();
        assert_eq!(e, format!("--cpu-freq is not supported: {NS}"));
        let e = srun(&["--mpi=pmix", "true"], Some("3")).unwrap_err();
        assert_eq!(e, format!("--mpi=pmix is not supported: {NS}"));
        assert!(srun(&["--mpi=none", "-u", "-X", "-T4", "true"], Some("3")).is_ok());
        assert!(srun(&["-T0", "true"], Some("3")).is_err());
        assert_eq!(
            srun(&["-W", "5", "true"], Some("3")).unwrap_err(),
            format!("--wait is not supported: {NS}")
        );
        assert!(srun(&["--het-group=1", "true"], Some("3"))
            .unwrap_err()
            .starts_with("Heterogeneous jobs are not supported"));
        // From the environment: the variable is named; the command line wins.
        let e = srun_env(
            &["true"],
            &[("SLURM_JOB_ID", "3"), ("SLURM_HINT", "nomultithread")],
        )
        .unwrap_err();
        assert_eq!(
            e,
            format!("--hint is not supported: {NS} (from SLURM_HINT in the environment)")
        );
        let env = [("SLURM_JOB_ID", "3"), ("SLURM_DISTRIBUTION", "cyclic")];
        assert!(srun_env(&["true"], &env).is_err());
        assert!(srun_env(&["-m", "block", "true"], &env).is_ok());
        // sbatch --gpu-bind reaches the step through SLURM_GPU_BIND.
        let s = srun_env(
            &["true"],
            &[("SLURM_JOB_ID", "3"), ("SLURM_GPU_BIND", "closest")],
        )
        .unwrap();
        assert_eq!(s.req.gpu_bind, "closest");
    }

    #[test]
    fn step_gres_and_sizes() {
        let s = srun(&["--gres=gpu:a100:2", "true"], Some("3")).unwrap();
        assert_eq!(s.req.gpus_per_node, 2);
        assert_eq!(
            srun(&["--gres=gpu", "true"], Some("3"))
                .unwrap()
                .req
                .gpus_per_node,
            1
        );
        assert!(srun(&["--gres=nic:1", "true"], Some("3")).is_err());
        assert!(srun(&["--mem-per-cpu=1G", "true"], Some("3"))
            .unwrap_err()
            .starts_with("--mem-per-cpu for a job step is not supported"));
        // Outside an allocation they size the allocation srun makes.
        assert!(srun(&["--mem-per-cpu=1G", "--gres=nic:1", "true"], None).is_ok());
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
