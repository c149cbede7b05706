//! `salloc`: get an allocation, run a command in it (default: the user's
//! shell) on this host with the allocation's `SLURM_*` variables, and give
//! the allocation back when the command exits. Options are sbatch's.

pub mod alloc;
pub mod options;
mod terminal;

use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinHandle;

use crate::conn;
use crate::opts;
use crate::sbatch::{options as sbatch_opts, spec};
use crate::support::{self, Given};

fn err(m: &str) -> i32 {
    eprintln!("salloc: error: {m}");
    support::error_exit()
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

type Waited = JoinHandle<std::io::Result<std::process::ExitStatus>>;

/// The exit code salloc reports for its command.
fn exit_code(st: Result<std::io::Result<std::process::ExitStatus>, tokio::task::JoinError>) -> i32 {
    match st {
        Ok(Ok(s)) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
        }
        _ => 1,
    }
}

/// salloc was told to go (SIGHUP, SIGTERM): end its command first
/// (SIGHUP, then SIGKILL if it is still there after a few seconds).
async fn end_command(pid: Option<i32>, wait: &mut Waited) -> i32 {
    let Some(p) = pid else {
        return 1;
    };
    let _ = drover_proto::sys::kill(p, libc::SIGHUP);
    match tokio::time::timeout(Duration::from_secs(3), &mut *wait).await {
        Ok(st) => exit_code(st),
        Err(_) => {
            let _ = drover_proto::sys::kill(p, libc::SIGKILL);
            exit_code(wait.await)
        }
    }
}

/// Ring the terminal bell (on standard output, when it is a terminal).
fn bell() {
    use std::io::{IsTerminal, Write};
    let mut out = std::io::stdout();
    if out.is_terminal() {
        let _ = out.write_all(b"\x07");
        let _ = out.flush();
    }
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
    // SALLOC_* variables, then the command line over them.
    let mut o = sbatch_opts::SbatchOpts::default();
    let mut set: Vec<(&str, Option<String>)> = Vec::new();
    let env: Vec<(String, String)> = std::env::vars().collect();
    let mut given: Vec<Given> =
        sbatch_opts::env_options_from(options::TABLE, sbatch_opts::SALLOC_ENV_VARS, &env)
            .into_iter()
            .map(|(k, v, var)| Given::new(k, v, Given::from_env(var)))
            .collect();
    for f in &cmdline.opts {
        given.push(Given::new(f.key, f.value.clone(), String::new()));
    }
    if let Some(refused) = support::final_refusal(&given, support::job_refusal) {
        return err(&refused);
    }
    let mut own = options::SallocOpts::default();
    for (i, g) in given.iter().enumerate() {
        if support::overridden(&given, i)
            && support::job_refusal(g.key, g.value.as_deref()).is_some()
        {
            continue;
        }
        let applied = match own.apply(g.key, g.value.as_deref()) {
            Ok(true) => Ok(()),
            Ok(false) => o.apply(g.key, g.value.as_deref(), now),
            Err(e) => Err(e),
        };
        if let Err(e) = applied {
            return err(&e);
        }
        set.push((g.key, g.value.clone()));
    }
    if o.verbose > 0 {
        for l in crate::optdump::defined_options(options::TABLE, &set, o.verbose) {
            eprintln!("salloc: {l}");
        }
    }
    if let Err(e) = o.read_nodefile() {
        return err(&e);
    }
    let argv = command(&cmdline.positional);
    let cwd = match std::env::current_dir() {
        Ok(d) => d.to_string_lossy().into_owned(),
        Err(e) => return err(&format!("getcwd failed: {e}")),
    };
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
    let shape = job_spec.clone();
    let (cfg, rt) = match conn::setup("salloc") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    if let Some(names) = &o.clusters {
        let from_env = !cmdline.has("clusters");
        if let Some(e) = support::cluster_refusal(names, &cfg.cluster_name, from_env) {
            return err(&e);
        }
    }
    let code = rt.block_on(async move {
        let mut ctl = match conn::client_for("salloc", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let asked = std::time::Instant::now();
        let how = alloc::Waiting {
            immediate: own.immediate,
            quiet: o.quiet,
        };
        let job = match alloc::allocate("salloc", &mut ctl, &cfg, job_spec, how).await {
            Ok(j) => j,
            Err(rc) => return rc,
        };
        let id = job.job_id;
        if own.ring(asked.elapsed().as_secs()) {
            bell();
        }
        if own.no_shell {
            return 0;
        }
        if !o.quiet {
            eprintln!("salloc: Nodes {} are ready for job", job.nodes);
        }
        // The shell handles Ctrl-C; salloc must survive it. A closed
        // terminal (SIGHUP) or SIGTERM ends the command and gives the
        // allocation back, as Slurm's salloc does.
        let _int = signal(SignalKind::interrupt());
        let mut hup = signal(SignalKind::hangup()).ok();
        let mut term = signal(SignalKind::terminate()).ok();
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .envs(alloc::alloc_env(&job, &shape, &cfg.cluster_name));
        if let Some(b) = &o.gpu_bind {
            // --gpu-bind: the steps srun starts in the allocation bind so.
            cmd.env("SLURM_GPU_BIND", b);
        }
        if o.chdir.is_some() {
            // -D: the command starts there.
            cmd.current_dir(&shape.work_dir);
        }
        let tty = terminal::Foreground::take();
        terminal::own_group(&mut cmd, tty.as_ref());
        let status = match cmd.spawn() {
            Ok(mut child) => {
                let pid = child.id().map(|p| p as i32);
                if let (Some(t), Some(p)) = (&tty, pid) {
                    t.give(p);
                }
                let mut wait = tokio::spawn(async move { child.wait().await });
                tokio::select! {
                    st = &mut wait => Some(exit_code(st)),
                    _ = alloc::ended(cfg.clone(), id) => {
                        eprintln!("salloc: Job allocation {id} has been revoked.");
                        if let Some(p) = pid {
                            let _ = drover_proto::sys::kill(p, own.kill_signal.unwrap_or(libc::SIGHUP));
                        }
                        None
                    }
                    _ = alloc::recv(&mut hup) => Some(end_command(pid, &mut wait).await),
                    _ = alloc::recv(&mut term) => Some(end_command(pid, &mut wait).await),
                }
            }
            Err(e) => {
                eprintln!("salloc: error: {}: {e}", argv[0]);
                Some(127)
            }
        };
        // The terminal back to salloc, then (on drop) to its parent's group.
        if let Some(t) = &tty {
            t.take_back();
        }
        drop(tty);
        let mut ctl = match conn::client_for("salloc", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        match status {
            Some(code) => {
                if !o.quiet {
                    eprintln!("salloc: Relinquishing job allocation {id}");
                }
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
