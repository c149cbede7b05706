//! Starting the batch script: a child that shares the supervisor's memory
//! until exec switches to the user, opens the output files as the user
//! and execs the script.

use std::ffi::CString;
use std::path::Path;

use drover_proto::pattern::{expand_path, PatternVars};
use drover_proto::LaunchRequest;

use super::sys::{self, cstring, strerror, write_fd, CStrArray};
use crate::job_env::{default_stdout_pattern, job_environment, EnvContext};
use crate::sys::task::ChdirPlan;
use crate::sys::task_pid::{self, Envp};

/// Where the script's standard streams go and where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoPaths {
    pub work_dir: String,
    pub stdin: String,
    pub stdout: String,
    /// None = the same open file as stdout.
    pub stderr: Option<String>,
    pub append: bool,
}

/// Expand the `--output/--error/--input` patterns of a launch (pure).
pub fn io_paths(req: &LaunchRequest) -> IoPaths {
    let spec = req.spec.clone().unwrap_or_default();
    let info = req.info.clone().unwrap_or_default();
    let work_dir = if !spec.work_dir.is_empty() {
        spec.work_dir.clone()
    } else if !info.work_dir.is_empty() {
        info.work_dir.clone()
    } else {
        "/tmp".to_string()
    };
    let is_array = info.array_job_id != 0;
    let user = if req.user_name.is_empty() {
        info.user_name.clone()
    } else {
        req.user_name.clone()
    };
    let name = if spec.name.is_empty() {
        info.name.clone()
    } else {
        spec.name.clone()
    };
    let vars = PatternVars {
        job_id: req.job_id,
        array_job_id: if is_array {
            info.array_job_id
        } else {
            req.job_id
        },
        array_task_id: is_array.then_some(info.array_task_id),
        job_name: &name,
        node: &req.node,
        user: &user,
        node_id: 0,
        task_id: 0,
        step: "batch",
    };
    let out_pat = if spec.std_out.is_empty() {
        default_stdout_pattern(req)
    } else {
        spec.std_out.as_str()
    };
    let stdout = expand_path(out_pat, &vars, &work_dir);
    let stderr = if spec.std_err.is_empty() {
        None
    } else {
        Some(expand_path(&spec.std_err, &vars, &work_dir)).filter(|e| *e != stdout)
    };
    let stdin = if spec.std_in.is_empty() {
        "/dev/null".to_string()
    } else {
        expand_path(&spec.std_in, &vars, &work_dir)
    };
    IoPaths {
        work_dir,
        stdin,
        stdout,
        stderr,
        append: spec.open_append,
    }
}

/// Slurm's line on a task's stderr when its working directory cannot be
/// entered and it runs in /tmp instead.
pub fn chdir_warning(dir: &str, reason: &str) -> String {
    format!("slurmstepd: error: couldn't chdir to `{dir}': {reason}: going to /tmp instead\n")
}

/// The file mode creation mask the job asked for (`SLURM_UMASK` from sbatch), else 022.
pub fn job_umask(req: &LaunchRequest) -> u32 {
    req.spec
        .as_ref()
        .and_then(|s| {
            s.environment
                .iter()
                .find_map(|e| e.strip_prefix("SLURM_UMASK="))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .filter(|m| *m <= 0o777)
        .unwrap_or(0o022)
}

/// A working directory and Slurm's lines for when it cannot be entered,
/// made before the fork (the child only calls chdir and write).
pub fn chdir_plan(dir: &str) -> ChdirPlan {
    let lines = [
        libc::ENOENT,
        libc::EACCES,
        libc::ENOTDIR,
        libc::ELOOP,
        libc::ENAMETOOLONG,
        libc::EIO,
    ]
    .into_iter()
    .map(|e| (e, chdir_warning(dir, &strerror(e))))
    .collect();
    ChdirPlan {
        dir: CString::new(dir.replace('\0', "")).unwrap_or_default(),
        tmp: c"/tmp".to_owned(),
        lines: std::sync::Arc::new(lines),
        other: std::sync::Arc::new(chdir_warning(dir, "cannot enter it")),
    }
}

/// Everything the child needs, prepared before it starts.
struct Prepared {
    script: CString,
    argv: CStrArray,
    sh_argv: CStrArray,
    sh: CString,
    chdir: ChdirPlan,
    stdin: CString,
    stdout: CString,
    stderr: Option<CString>,
    append: bool,
    uid: u32,
    gid: u32,
    groups: Vec<libc::gid_t>,
    umask: u32,
}

/// What the supervisor adds to a launch: cgroup membership, TaskProlog,
/// and whether CUDA sees only the job's GPUs (device cgroup).
#[derive(Debug, Default)]
pub struct Extras {
    /// Join files (`Version::join_file`) the child writes itself into
    /// before exec.
    pub join: Vec<CString>,
    pub task_prolog: Option<CString>,
    pub local_gpu_index: bool,
}

fn prepare(
    req: &LaunchRequest,
    script: &Path,
    pw: Option<&drover_proto::sysdb::Passwd>,
) -> Result<Prepared, String> {
    let io = io_paths(req);
    let script_text = script.to_string_lossy().into_owned();
    let script_c = cstring(&script_text)?;
    let mut argv = vec![script_c.clone()];
    if let Some(spec) = &req.spec {
        for a in &spec.argv {
            argv.push(cstring(a)?);
        }
    }
    let sh = cstring("/bin/sh")?;
    let mut sh_argv = vec![sh.clone()];
    sh_argv.extend(argv.iter().cloned());
    // The user's groups as initgroups gives them (see sys::creds).
    let groups = crate::sys::creds::job_groups_of(pw, req.gid, &req.groups);
    // A directory with a NUL byte in its name is refused, like the paths.
    cstring(&io.work_dir)?;
    Ok(Prepared {
        script: script_c,
        argv: CStrArray::new(argv),
        sh_argv: CStrArray::new(sh_argv),
        sh,
        chdir: chdir_plan(&io.work_dir),
        stdin: cstring(&io.stdin)?,
        stdout: cstring(&io.stdout)?,
        stderr: io.stderr.as_deref().map(cstring).transpose()?,
        append: io.append,
        uid: req.uid,
        gid: req.gid,
        groups,
        umask: job_umask(req),
    })
}

/// Start the batch script. Returns its pid once the exec succeeded, or the
/// reason it could not start (the child has then been reaped).
///
/// The child shares the supervisor's memory until it execs
/// ([`sys::spawn_shared`]), so everything it needs, its environment
/// included, is made here first. A TaskProlog runs in the child before the
/// script and changes its environment, so with one the child is forked
/// instead (a copy of the supervisor that may allocate).
pub fn spawn_script(
    req: &LaunchRequest,
    script: &Path,
    conf_path: &str,
    extras: &Extras,
) -> Result<i32, String> {
    // One look-up of the user for its groups, home and shell.
    let pw = drover_proto::sysdb::passwd_by_uid(req.uid);
    let p = prepare(req, script, pw.as_ref())?;
    let (home, shell) = match pw {
        Some(p) => (Some(p.dir), Some(p.shell)),
        None => (None, None),
    };
    let ctx = EnvContext {
        task_pid: 0,
        conf_path,
        home: home.as_deref(),
        shell: shell.as_deref(),
        now: super::sys::now_secs(),
        local_gpu_index: extras.local_gpu_index,
        step_gpus_only: false,
    };
    if let Some(prolog) = &extras.task_prolog {
        return fork_with_task_prolog(req, &p, extras, ctx, prolog);
    }
    let mut vars = job_environment(req, &ctx);
    task_pid::reserve(&mut vars);
    let envp = Envp::new(&vars);
    let mut failure = None;
    let pid = sys::spawn_shared(&mut || {
        failure = Some(match setup(&p, extras) {
            Err(f) => f,
            Ok(()) => Failure::Exec(exec_script(&p, &envp)),
        });
    })
    .map_err(|e| format!("fork: {e}"))?;
    match failure {
        None => Ok(pid),
        Some(f) => {
            // Reap the failed child.
            let _ = sys::waitpid(pid, 0);
            Err(f.message(&p, extras))
        }
    }
}

/// [`spawn_script`] with a TaskProlog: the child is forked, runs the
/// prolog as the user and execs the script with the environment the
/// prolog's output made; why it could not comes back on a pipe.
fn fork_with_task_prolog(
    req: &LaunchRequest,
    p: &Prepared,
    extras: &Extras,
    ctx: EnvContext,
    prolog: &CString,
) -> Result<i32, String> {
    let (rd, wr) = sys::pipe_raw().map_err(|e| format!("pipe: {}", strerror(e)))?;
    // The supervisor is single-threaded (sys::fork checks), so the child
    // may allocate freely.
    let pid = match sys::fork() {
        Err(e) => {
            sys::close(rd);
            sys::close(wr);
            return Err(format!("fork: {e}"));
        }
        Ok(sys::Forked::Parent(pid)) => pid,
        Ok(sys::Forked::Child) => 0,
    };
    if pid == 0 {
        sys::close(rd);
        sys::reset_signals(65);
        let failure = match setup(p, extras) {
            Err(f) => f,
            Ok(()) => {
                let ctx = EnvContext {
                    task_pid: drover_proto::sys::getpid() as u32,
                    ..ctx
                };
                let vars = with_task_prolog(job_environment(req, &ctx), prolog);
                Failure::Exec(exec_script(p, &Envp::new(&vars)))
            }
        };
        write_fd(wr, failure.message(p, extras).as_bytes());
        // Leave the child without running the parent's destructors.
        sys::exit_now(127);
    }
    sys::close(wr);
    // Mirrors the child's own call; whichever runs first wins.
    sys::setpgid(pid, pid);
    let mut msg = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = match sys::read_once(rd, &mut buf) {
            Err(libc::EINTR) => continue,
            Err(_) | Ok(0) => break,
            Ok(n) => n,
        };
        msg.extend_from_slice(&buf[..n]);
        if msg.len() > 64 * 1024 {
            break;
        }
    }
    sys::close(rd);
    if msg.is_empty() {
        return Ok(pid);
    }
    // Reap the failed child.
    let _ = sys::waitpid(pid, 0);
    Err(String::from_utf8_lossy(&msg).trim().to_string())
}

/// Run the TaskProlog with the job's environment `vars` (in the child, as
/// the user, its stdout the job's): its `print` lines go to the job's
/// output, its `export`/`unset` lines change the environment returned.
fn with_task_prolog(mut vars: Vec<(String, String)>, prolog: &CString) -> Vec<(String, String)> {
    let env: Vec<CString> = vars
        .iter()
        .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
        .collect();
    match super::hooks::run_task_prolog(prolog, &CStrArray::new(env)) {
        Ok(out) => {
            let o = super::hooks::parse_task_prolog(&out);
            for line in &o.print {
                write_fd(1, format!("{line}\n").as_bytes());
            }
            vars.retain(|(k, _)| !o.unset.contains(k));
            for (k, v) in o.export {
                match vars.iter_mut().find(|(x, _)| *x == k) {
                    Some(slot) => slot.1 = v,
                    None => vars.push((k, v)),
                }
            }
        }
        Err(e) => write_fd(2, format!("drover-stepd: error: {e}\n").as_bytes()),
    }
    vars
}

/// Exec the script (with the shell when it has no `#!` line, as execvp
/// does); returns only on failure, with the errno.
fn exec_script(p: &Prepared, envp: &Envp) -> i32 {
    let e = envp.exec(&p.script, &p.argv);
    if e == libc::ENOEXEC {
        envp.exec(&p.sh, &p.sh_argv);
    }
    e
}

/// Which of the script's standard streams could not be opened.
#[derive(Debug, Clone, Copy)]
enum Stream {
    In,
    Out,
    Err,
}

/// Why the child could not exec the script: made in the child without
/// allocating, put in words by the supervisor.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// Writing itself into `extras.join[file]`.
    Join {
        file: usize,
        errno: i32,
    },
    Switch(crate::sys::creds::SwitchError),
    /// Not root, and the job is another user's.
    NotRoot,
    /// A stream's file; `chdir`: the working directory had failed first.
    Open {
        stream: Stream,
        errno: i32,
        chdir: Option<i32>,
    },
    Dup2(i32),
    Exec(i32),
}

impl Failure {
    fn message(&self, p: &Prepared, extras: &Extras) -> String {
        let chdir_failure =
            |e: i32| format!("chdir({}): {}", p.chdir.dir.to_string_lossy(), strerror(e));
        match *self {
            Failure::Join { file, errno } => format!(
                "cannot join cgroup {}: {}",
                extras
                    .join
                    .get(file)
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default(),
                strerror(errno)
            ),
            Failure::Switch(e) => e.message(p.uid),
            Failure::NotRoot => format!(
                "cannot run the job as uid {}: droverd is not running as root (it runs as uid {})",
                p.uid,
                drover_proto::sys::getuid()
            ),
            Failure::Open { chdir: Some(c), .. } => chdir_failure(c),
            Failure::Open { stream, errno, .. } => {
                let (name, path) = match stream {
                    Stream::In => ("stdin", Some(&p.stdin)),
                    Stream::Out => ("stdout", Some(&p.stdout)),
                    Stream::Err => ("stderr", p.stderr.as_ref()),
                };
                let path = path.map(|c| c.to_string_lossy()).unwrap_or_default();
                format!("Could not open {name} file {path}: {}", strerror(errno))
            }
            Failure::Dup2(e) => format!("dup2: {}", strerror(e)),
            Failure::Exec(e) => format!("execve({}): {}", p.script.to_string_lossy(), strerror(e)),
        }
    }
}

/// In the child, before exec: its own process group, the job's cgroups,
/// the job's user, umask and directory, and the standard streams. Only
/// system calls on `p` and `extras` (see [`sys::spawn_shared`]).
fn setup(p: &Prepared, extras: &Extras) -> Result<(), Failure> {
    sys::setpgid(0, 0);
    // Into the job's cgroups while still root; every process the job
    // starts from here on is inside.
    for (file, f) in extras.join.iter().enumerate() {
        let joined = sys::open(f, libc::O_WRONLY | libc::O_CLOEXEC, 0).and_then(|fd| {
            let r = sys::write_once(fd, b"0");
            sys::close(fd);
            match r {
                Ok(1) => Ok(()),
                Ok(_) => Err(0),
                Err(e) => Err(e),
            }
        });
        if let Err(errno) = joined {
            return Err(Failure::Join { file, errno });
        }
    }
    if drover_proto::sys::is_root() {
        crate::sys::creds::become_user(p.uid, p.gid, &p.groups).map_err(Failure::Switch)?;
    } else if p.uid != drover_proto::sys::getuid() {
        return Err(Failure::NotRoot);
    }
    drover_proto::sys::umask(p.umask);
    let chdir = p.chdir.try_enter().err();
    let open = |stream: Stream, path: &CString, flags: i32| {
        sys::open(path, flags, 0o666).map_err(|errno| Failure::Open {
            stream,
            errno,
            chdir,
        })
    };
    let fd_in = open(Stream::In, &p.stdin, libc::O_RDONLY | libc::O_CLOEXEC)?;
    let mode = libc::O_WRONLY
        | libc::O_CREAT
        | libc::O_CLOEXEC
        | if p.append {
            libc::O_APPEND
        } else {
            libc::O_TRUNC
        };
    let fd_out = open(Stream::Out, &p.stdout, mode)?;
    let fd_err = match &p.stderr {
        None => fd_out,
        Some(path) => open(Stream::Err, path, mode)?,
    };
    sys::dup2_raw(fd_in, 0)
        .and_then(|()| sys::dup2_raw(fd_out, 1))
        .and_then(|()| sys::dup2_raw(fd_err, 2))
        .map_err(Failure::Dup2)?;
    if let Some(e) = chdir {
        write_fd(2, p.chdir.line(e).as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::{JobInfo, JobSpec};

    fn req(spec: JobSpec, info: JobInfo) -> LaunchRequest {
        LaunchRequest {
            job_id: 7,
            spec: Some(spec),
            info: Some(info),
            user_name: "bob".into(),
            node: "n1".into(),
            ..Default::default()
        }
    }

    #[test]
    fn default_paths() {
        let r = req(
            JobSpec {
                work_dir: "/home/bob/".into(),
                ..Default::default()
            },
            JobInfo::default(),
        );
        let io = io_paths(&r);
        assert_eq!(io.stdout, "/home/bob/slurm-7.out");
        assert_eq!(io.stderr, None);
        assert_eq!(io.stdin, "/dev/null");
        assert_eq!(io.work_dir, "/home/bob/");
        assert!(!io.append);
    }

    #[test]
    fn array_and_patterns() {
        let r = req(
            JobSpec {
                work_dir: "/w".into(),
                name: "tr".into(),
                std_err: "err/%x-%u-%N.%j".into(),
                std_in: "in.txt".into(),
                open_append: true,
                ..Default::default()
            },
            JobInfo {
                array_job_id: 5,
                array_task_id: 2,
                ..Default::default()
            },
        );
        let io = io_paths(&r);
        assert_eq!(io.stdout, "/w/slurm-5_2.out");
        assert_eq!(io.stderr.as_deref(), Some("/w/err/tr-bob-n1.7"));
        assert_eq!(io.stdin, "/w/in.txt");
        assert!(io.append);
    }

    #[test]
    fn same_stderr_is_shared() {
        let r = req(
            JobSpec {
                work_dir: "/w".into(),
                std_out: "/abs/o-%j".into(),
                std_err: "/abs/o-%j".into(),
                ..Default::default()
            },
            JobInfo::default(),
        );
        let io = io_paths(&r);
        assert_eq!(io.stdout, "/abs/o-7");
        assert_eq!(io.stderr, None);
        assert_eq!(io_paths(&LaunchRequest::default()).work_dir, "/tmp");
    }

    #[test]
    fn umask_from_environment() {
        let mut r = LaunchRequest::default();
        assert_eq!(job_umask(&r), 0o022);
        r.spec = Some(JobSpec {
            environment: vec!["SLURM_UMASK=0077".into()],
            ..Default::default()
        });
        assert_eq!(job_umask(&r), 0o077);
        r.spec = Some(JobSpec {
            environment: vec!["SLURM_UMASK=zz".into()],
            ..Default::default()
        });
        assert_eq!(job_umask(&r), 0o022);
    }
}
