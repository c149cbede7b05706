//! Turning sbatch options, the script and the submitter's environment into
//! the `JobSpec` sent to the controller. Pure: the caller supplies the
//! environment, directory and host.

use drover_proto::JobSpec;

use super::options::SbatchOpts;

/// What the submission needs from the world outside the options.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The submitter's environment, in order.
    pub env: Vec<(String, String)>,
    /// Absolute current directory.
    pub cwd: String,
    pub host: String,
    pub script: Vec<u8>,
    pub script_args: Vec<String>,
    /// Job name when none is given: the script's base name, `sbatch` for
    /// standard input, `wrap` for `--wrap`.
    pub default_name: String,
    /// What `Command=` shows: the script's absolute path, or the --wrap command.
    pub command: String,
}

/// The script `--wrap` submits.
pub fn wrap_script(cmd: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cmd}\n")
}

/// Check a script as sbatch does; errors are full message lines.
pub fn check_script(script: &[u8]) -> Result<(), Vec<String>> {
    if script.is_empty() {
        return Err(vec!["Batch script is empty!".into()]);
    }
    if !script.starts_with(b"#!") {
        return Err(vec![
            "This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter.".into(),
            "For instance: #!/bin/sh".into(),
        ]);
    }
    if script.windows(2).any(|w| w == b"\r\n") {
        return Err(vec![
            "Batch script contains DOS line breaks (\\r\\n)".into(),
            "instead of expected UNIX line breaks (\\n).".into(),
        ]);
    }
    if script.contains(&0) {
        return Err(vec!["The batch script contains a NULL character".into()]);
    }
    Ok(())
}

/// The environment the job must see, per `--export`.
pub fn export_env(export: Option<&str>, ctx: &Context) -> Vec<String> {
    let reserved = |k: &str| k == "SLURM_SUBMIT_DIR" || k == "SLURM_SUBMIT_HOST";
    let mut out: Vec<String> = exported(export, &ctx.env)
        .into_iter()
        .filter(|kv| !reserved(kv.split('=').next().unwrap_or("")))
        .collect();
    out.push(format!("SLURM_SUBMIT_DIR={}", ctx.cwd));
    out.push(format!("SLURM_SUBMIT_HOST={}", ctx.host));
    out
}

/// `KEY=VALUE` entries of `env` that `--export` passes on (sbatch, srun):
/// `ALL` (the default) everything, `NONE` the `SLURM_*` variables only,
/// `[ALL,]NAME,NAME=VALUE,...` those (with `ALL`, everything) plus the
/// `SLURM_*` variables; an explicit value wins over the environment's.
pub fn exported(export: Option<&str>, env: &[(String, String)]) -> Vec<String> {
    let export = export.unwrap_or("ALL").trim();
    let mut include_all = false;
    let mut names: Vec<&str> = Vec::new();
    let mut assigns: Vec<(String, String)> = Vec::new();
    if export.eq_ignore_ascii_case("ALL") || export.is_empty() {
        include_all = true;
    } else if export.eq_ignore_ascii_case("NONE") || export.eq_ignore_ascii_case("NIL") {
        // only SLURM_* below
    } else {
        for tok in export.split(',') {
            let tok = tok.trim();
            if tok.eq_ignore_ascii_case("ALL") {
                include_all = true;
            } else if tok.eq_ignore_ascii_case("NONE") || tok.is_empty() {
            } else if let Some((k, v)) = tok.split_once('=') {
                assigns.push((k.to_string(), v.to_string()));
            } else {
                names.push(tok);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (k, v) in env {
        if assigns.iter().any(|(a, _)| a == k) {
            continue;
        }
        if include_all || k.starts_with("SLURM_") || names.contains(&k.as_str()) {
            out.push(format!("{k}={v}"));
        }
    }
    for (k, v) in assigns {
        out.push(format!("{k}={v}"));
    }
    out
}

fn join_dir(cwd: &str, p: &str) -> String {
    if p.starts_with('/') {
        p.to_string()
    } else if p == "." || p.is_empty() {
        cwd.to_string()
    } else {
        format!(
            "{}/{}",
            cwd.trim_end_matches('/'),
            p.trim_start_matches("./")
        )
    }
}

/// The job's environment: `--export`'s, with `SLURM_GPU_BIND` for
/// `--gpu-bind` (srun reads it, so the job's steps bind as asked).
fn job_env(o: &SbatchOpts, ctx: &Context) -> Vec<String> {
    let mut env = export_env(o.export.as_deref(), ctx);
    if let Some(b) = &o.gpu_bind {
        env.retain(|kv| !kv.starts_with("SLURM_GPU_BIND="));
        env.push(format!("SLURM_GPU_BIND={b}"));
    }
    env
}

/// Build the JobSpec.
pub fn build(o: &SbatchOpts, ctx: &Context) -> JobSpec {
    let work_dir = match &o.chdir {
        Some(d) => join_dir(&ctx.cwd, d),
        None => ctx.cwd.clone(),
    };
    let (min_nodes, max_nodes) = o.nodes.unwrap_or((0, 0));
    let (gpus, gpus_type) = match &o.gpus {
        Some(g) => (g.count, g.kind.clone()),
        None => (0, String::new()),
    };
    let mut gpus_type = gpus_type;
    let gpus_per_node = match &o.gpus_per_node {
        Some(g) => {
            if gpus_type.is_empty() {
                gpus_type = g.kind.clone();
            }
            g.count
        }
        None => 0,
    };
    let (signal, signal_time, signal_batch_only) = o.signal.unwrap_or((0, 0, false));
    let opt = |x: &Option<String>| x.clone().unwrap_or_default();
    JobSpec {
        name: o
            .job_name
            .clone()
            .unwrap_or_else(|| ctx.default_name.clone()),
        partition: opt(&o.partition),
        account: opt(&o.account),
        qos: opt(&o.qos),
        comment: opt(&o.comment),
        wckey: opt(&o.wckey),
        reservation: opt(&o.reservation),
        time_limit: o.time.unwrap_or(0),
        time_min: 0,
        min_nodes,
        max_nodes,
        ntasks: o.ntasks.unwrap_or(0),
        ntasks_per_node: o.ntasks_per_node.unwrap_or(0),
        cpus_per_task: o.cpus_per_task.unwrap_or(0),
        mem_per_node_mb: o.mem.unwrap_or(0),
        mem_per_cpu_mb: o.mem_per_cpu.unwrap_or(0),
        mem_per_gpu_mb: o.mem_per_gpu.unwrap_or(0),
        gres: opt(&o.gres),
        gpus,
        gpus_type,
        gpus_per_node,
        gpus_per_task: o.gpus_per_task.unwrap_or(0),
        cpus_per_gpu: o.cpus_per_gpu.unwrap_or(0),
        exclusive: o.exclusive.unwrap_or(false),
        oversubscribe: o.oversubscribe,
        constraint: opt(&o.constraint),
        nodelist: opt(&o.nodelist),
        exclude: opt(&o.exclude),
        requeue: o.requeue == Some(true),
        no_requeue: o.requeue == Some(false),
        dependency: opt(&o.dependency),
        array: opt(&o.array),
        begin_time: o.begin.unwrap_or(0),
        nice: o.nice.unwrap_or(0),
        hold: o.hold,
        work_dir,
        std_out: opt(&o.output),
        std_err: opt(&o.error),
        std_in: opt(&o.input),
        open_append: o.open_append == Some(true),
        environment: job_env(o, ctx),
        script: ctx.script.clone(),
        argv: ctx.script_args.clone(),
        submit_host: ctx.host.clone(),
        signal,
        signal_time,
        signal_batch_only,
        mail_type: opt(&o.mail_type),
        mail_user: opt(&o.mail_user),
        ntasks_per_gpu: 0,
        overcommit: false,
        cluster: opt(&o.clusters),
        kill_on_invalid_dep: o.kill_on_invalid_dep == Some(true),
        ntasks_per_core: 0,
        threads_per_core: 0,
        spank: Vec::new(),
        contiguous: false,
        licenses: String::new(),
        deadline: 0,
        priority: o.priority.unwrap_or(0),
        min_cpus_per_node: o.mincpus.unwrap_or(0),
        command: ctx.command.clone(),
        interactive: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            env: vec![
                ("PATH".into(), "/usr/bin".into()),
                ("VIRTUAL_ENV".into(), "/venv".into()),
                ("SLURM_CONF".into(), "/etc/x".into()),
                ("SLURM_SUBMIT_DIR".into(), "/stale".into()),
            ],
            cwd: "/home/a/proj".into(),
            host: "login1".into(),
            script: b"#!/bin/sh\necho hi\n".to_vec(),
            script_args: vec!["x".into()],
            default_name: "run.sh".into(),
            command: "/home/a/proj/run.sh".into(),
        }
    }

    #[test]
    fn script_checks() {
        assert!(check_script(b"#!/bin/sh\necho\n").is_ok());
        assert_eq!(
            check_script(b"").unwrap_err(),
            vec!["Batch script is empty!"]
        );
        let e = check_script(b"echo hi\n").unwrap_err();
        assert_eq!(e[0], "This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter.");
        assert_eq!(e[1], "For instance: #!/bin/sh");
        assert!(check_script(b"#!/bin/sh\r\necho\r\n").is_err());
        assert_eq!(
            wrap_script("echo \"hi\""),
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho \"hi\"\n"
        );
    }

    #[test]
    fn exports() {
        let c = ctx();
        let all = export_env(None, &c);
        assert!(all.contains(&"PATH=/usr/bin".to_string()));
        assert!(all.contains(&"VIRTUAL_ENV=/venv".to_string()));
        assert!(all.contains(&"SLURM_SUBMIT_DIR=/home/a/proj".to_string()));
        assert!(!all.contains(&"SLURM_SUBMIT_DIR=/stale".to_string()));
        assert!(all.contains(&"SLURM_SUBMIT_HOST=login1".to_string()));
        let none = export_env(Some("NONE"), &c);
        assert_eq!(
            none,
            vec![
                "SLURM_CONF=/etc/x",
                "SLURM_SUBMIT_DIR=/home/a/proj",
                "SLURM_SUBMIT_HOST=login1"
            ]
        );
        let some = export_env(Some("PATH,FOO=bar"), &c);
        assert!(some.contains(&"PATH=/usr/bin".to_string()));
        assert!(some.contains(&"FOO=bar".to_string()));
        assert!(!some.iter().any(|e| e.starts_with("VIRTUAL_ENV")));
        let plus = export_env(Some("ALL,PATH=/opt"), &c);
        assert!(plus.contains(&"PATH=/opt".to_string()));
        assert!(!plus.contains(&"PATH=/usr/bin".to_string()));
        assert!(plus.contains(&"VIRTUAL_ENV=/venv".to_string()));
    }

    #[test]
    fn builds_spec() {
        let mut o = SbatchOpts::default();
        for (k, v) in [
            ("time", Some("1:00:00")),
            ("mem", Some("4g")),
            ("nodes", Some("2")),
            ("gpus", Some("a100:2")),
            ("chdir", Some("sub")),
            ("signal", Some("B:USR1@90")),
            ("array", Some("0-9%2")),
            ("no-requeue", None),
            ("gpu-bind", Some("closest")),
        ] {
            o.apply(k, v, 0).unwrap();
        }
        let s = build(&o, &ctx());
        assert_eq!(s.name, "run.sh");
        assert_eq!(s.time_limit, 60);
        assert_eq!(s.mem_per_node_mb, 4096);
        assert_eq!((s.min_nodes, s.max_nodes), (2, 2));
        assert_eq!((s.gpus, s.gpus_type.as_str()), (2, "a100"));
        assert_eq!(s.work_dir, "/home/a/proj/sub");
        assert_eq!(
            (s.signal, s.signal_time, s.signal_batch_only),
            (10, 90, true)
        );
        assert_eq!(s.array, "0-9%2");
        assert!(s.no_requeue && !s.requeue);
        assert_eq!(s.argv, vec!["x"]);
        assert_eq!(s.submit_host, "login1");
        assert!(s
            .environment
            .contains(&"SLURM_GPU_BIND=closest".to_string()));
        o.apply("chdir", Some("/abs"), 0).unwrap();
        o.apply("job-name", Some("n"), 0).unwrap();
        let s = build(&o, &ctx());
        assert_eq!(s.work_dir, "/abs");
        assert_eq!(s.name, "n");
    }
}
