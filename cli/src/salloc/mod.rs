//! `salloc`: get an allocation, run a command in it (default: the user's
//! shell) on this host with the allocation's `SLURM_*` variables, and give
//! the allocation back when the command exits. Options are sbatch's.

pub mod alloc;

use crate::conn;
use crate::opts;
use crate::sbatch::{options, spec};

fn err(m: &str) -> i32 {
    eprintln!("salloc: error: {m}");
    1
}

/// The command to run: the arguments, else `$SHELL`, else the login shell.
fn command(positional: &[String]) -> Vec<String> {
    if !positional.is_empty() {
        return positional.to_vec();
    }
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".to_string());
    vec![shell]
}

pub fn run(args: &[String]) -> i32 {
    let now = crate::timefmt::now();
    let cmdline = match opts::parse(options::TABLE, args, true) {
        Ok(p) => p,
        Err(e) => return err(&e.to_string()),
    };
    if cmdline.has("help") || cmdline.has("usage") {
        println!("Usage: salloc [sbatch options...] [command [args...]]");
        return 0;
    }
    if cmdline.has("version") {
        crate::print_version();
        return 0;
    }
    if opts::het_separator(&cmdline.positional, true) {
        return err(&opts::hetjob_refused());
    }
    let mut o = options::SbatchOpts::default();
    for f in &cmdline.opts {
        if let Err(e) = o.apply(f.key, f.value.as_deref(), now) {
            return err(&e);
        }
    }
    let argv = command(&cmdline.positional);
    let cwd = match std::env::current_dir() {
        Ok(d) => d.to_string_lossy().into_owned(),
        Err(e) => return err(&format!("getcwd failed: {e}")),
    };
    let env: Vec<(String, String)> = std::env::vars().collect();
    let name = std::path::Path::new(&argv[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "interactive".into());
    let ctx = spec::Context {
        env,
        cwd,
        host: drover_proto::auth::hostname(),
        script: Vec::new(),
        script_args: Vec::new(),
        default_name: name,
        command: argv.join(" "),
    };
    let job_spec = spec::build(&o, &ctx);
    let ntasks = job_spec.ntasks;
    let (cfg, rt) = match conn::setup("salloc") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    let code = rt.block_on(async move {
        let mut ctl = match conn::client_for("salloc", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let job = match alloc::allocate("salloc", &mut ctl, job_spec).await {
            Ok(j) => j,
            Err(rc) => return rc,
        };
        let id = job.job_id;
        eprintln!("salloc: Nodes {} are ready for job", job.nodes);
        // The shell handles Ctrl-C; salloc must survive it.
        let _int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .envs(alloc::alloc_env(&job, ntasks, &cfg.cluster_name));
        let status = match cmd.spawn() {
            Ok(mut child) => {
                let pid = child.id().map(|p| p as i32);
                let mut wait = tokio::spawn(async move { child.wait().await });
                let ended = async {
                    let r = ctl
                        .wait_job(drover_proto::WaitJobRequest { job_id: id })
                        .await;
                    (r, ctl)
                };
                tokio::select! {
                    st = &mut wait => {
                        let code = match st {
                            Ok(Ok(s)) => {
                                use std::os::unix::process::ExitStatusExt;
                                s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
                            }
                            _ => 1,
                        };
                        Some(code)
                    }
                    (_r, _c) = ended => {
                        eprintln!("salloc: Job allocation {id} has been revoked.");
                        if let Some(p) = pid {
                            // SAFETY: kill has no memory effects.
                            unsafe { libc::kill(p, libc::SIGHUP) };
                        }
                        None
                    }
                }
            }
            Err(e) => {
                eprintln!("salloc: error: {}: {e}", argv[0]);
                Some(127)
            }
        };
        let mut ctl = match conn::client_for("salloc", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        match status {
            Some(code) => {
                eprintln!("salloc: Relinquishing job allocation {id}");
                if let Err(st) = alloc::release(&mut ctl, id, code).await {
                    conn::report("salloc", "salloc: error: ", &st);
                }
                code
            }
            None => 1,
        }
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(10));
    code
}
